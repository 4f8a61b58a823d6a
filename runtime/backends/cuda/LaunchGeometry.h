//===- LaunchGeometry.h - how many threads an elementwise launch gets -----===//
//
// One 1-D launch shape for every elementwise kernel of the CUDA backend,
// the ones nvcc compiles (KernelSupport.cuh's gridFor) and the PTX the
// compiler generates for Fused chains (GeneratedPtx.h): kBlockThreads
// threads a block, one thread per element up to kMaxBlocks blocks, beyond
// which each thread loops grid-stride. Generated kernels loop grid-stride
// over all n elements themselves, so any grid is correct; sharing this
// one keeps the two paths' occupancy alike. Pure host code, no CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_LAUNCHGEOMETRY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_LAUNCHGEOMETRY_H

#include <cstdint>

namespace fsdp::rt::cuda {

inline constexpr int kBlockThreads = 256;
/// Beyond this many blocks the threads loop (grid-stride).
inline constexpr int64_t kMaxBlocks = 8192;

/// Blocks for n elements, one element per thread, at least one block.
inline unsigned elementwiseBlocks(int64_t n) {
  const int64_t blocks = (n + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > kMaxBlocks ? kMaxBlocks : blocks));
}

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_LAUNCHGEOMETRY_H
