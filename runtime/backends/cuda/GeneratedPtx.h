//===- GeneratedPtx.h - a GPU's kernels generated for Fused chains --------===//
//
// Each CUDA device loads the registered PTX (GeneratedPtxRegistry.h) once,
// when it is created: the module text that fits its compute capability,
// compiled by the driver for the GPU, and every registered entry looked up
// then, so a launch is a hash lookup and a cuLaunchKernel. The Fused
// launch (kernels/FusedKernels.cu) runs the generated kernel when its
// program's key is registered and the backend's own kernel otherwise; both
// compute the same bits (FusedOps.h; the generator rounds each product and
// sum separately, as -fmad=false does). A launch on a stream being captured
// into a CUDA graph is captured like any other kernel.
//
// Generated kernel parameters (EmbeddedStep.h): one f32 pointer per input,
// one per result, then the element count n (int64); the kernel covers all
// n elements itself with a grid-stride loop, so it is launched with the
// elementwise kernels' geometry (LaunchGeometry.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTX_H
#define FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTX_H

#include "runtime/backends/cuda/CudaDriverLibrary.h"
#include "runtime/backends/cuda/GeneratedPtxRegistry.h"

#include <memory>
#include <string>
#include <unordered_map>

namespace fsdp::rt::cuda {

class GeneratedPtx {
public:
  /// Loads the registered PTX on GPU `ordinal`, which must be current on
  /// this thread (cudaSetDevice). `out` stays null when nothing is
  /// registered or the GPU gets no generated code (choosePtxModule; `note`
  /// then says why, empty when nothing is registered). A driver that cannot
  /// be opened, a module the driver refuses (its JIT log in the message)
  /// or a registered entry the module lacks is an error.
  static Status load(int ordinal, std::unique_ptr<GeneratedPtx> &out, std::string *note = nullptr);
  ~GeneratedPtx();
  GeneratedPtx(const GeneratedPtx &) = delete;
  GeneratedPtx &operator=(const GeneratedPtx &) = delete;

  /// The kernel generated for the Fused program `key`, or null.
  CUfunction find(uint64_t key) const;
  /// Enqueues `kernel` over n elements on `stream` (n > 0); `op` names the
  /// launch in errors.
  Status launch(CUfunction kernel, CUstream stream, const float *const *inputs, int numInputs,
                float *const *outputs, int numOutputs, int64_t n, const char *op) const;

  /// "sm_80" or "sm_90": the module text loaded.
  const char *target() const { return target_; }
  size_t size() const { return functions_.size(); }

private:
  GeneratedPtx() = default;

  const CudaDriverLibrary *driver_ = nullptr;
  CUmodule module_ = nullptr;
  const char *target_ = "";
  std::unordered_map<uint64_t, CUfunction> functions_;
};

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTX_H
