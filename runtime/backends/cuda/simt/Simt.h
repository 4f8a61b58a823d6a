//===- Simt.h - CUDA's execution model on the CPU, for the kernels' tests -===//
//
// The CUDA kernels (runtime/backends/cuda/kernels/*.cu) are also compiled
// as host C++ with FSDP_SIMT_EMULATION defined, against this header instead
// of cuda_runtime.h, so every kernel runs and is compared with the CPU
// backend on machines without a GPU (the `cuda-simt` device and the kernel
// tests). It provides what the kernels may use, and nothing else, so a
// kernel that compiles here uses only what is emulated:
//
// - the launch geometry: threadIdx, blockIdx, blockDim, gridDim, warpSize;
// - __shared__ (one copy per block), __syncthreads, __syncwarp;
// - warp shuffles (__shfl_sync, _up, _down, _xor) and votes (__ballot_sync,
//   __any_sync, __all_sync) among the warp's live lanes;
// - atomics on int, unsigned, unsigned long long, float and double;
// - the bit casts and __ldg.
//
// Each CUDA thread of a block is a fiber (Boost.Context) on the launching
// OS thread; blocks run one after another. A fiber runs until it reaches a
// barrier (__syncthreads, or the exchange inside a warp operation), where
// it yields, and the barrier opens when every live thread of its scope has
// arrived (a thread that has returned no longer counts, as on sm_70+). So
// the kernels' cooperation (shared-memory trees, warp reductions, divergent
// exits before a barrier) runs as written, deterministically. A barrier no
// thread can pass is reported and aborts: a kernel bug, not a result.
//
// Emulation semantics are at least as strict as the hardware's where it
// matters for correctness: lanes exchange values only at the exchange, so a
// kernel that relies on implicit warp-synchronous execution fails here.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMT_H
#define FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMT_H

#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

// --- Function and variable qualifiers --------------------------------------------
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
// One copy per block: blocks run one at a time on their OS thread.
#define __shared__ static thread_local

// --- Launch geometry ----------------------------------------------------------------
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern thread_local dim3 blockDim;
extern thread_local dim3 gridDim;
inline constexpr int warpSize = 32;

/// A stream handle; kernels run synchronously at launch under emulation.
struct CUstream_st;
using cudaStream_t = CUstream_st *;

// --- Barriers, warp operations, atomics -------------------------------------------------
void __syncthreads();
void __syncwarp(unsigned mask = 0xffffffffu);
inline void __threadfence() {}

namespace fsdp::simt {
enum class ShuffleMode : uint8_t { Index, Up, Down, Xor };
/// The value `bits` of the lane that `mode` and `operand` select within the
/// calling lane's segment of `width` lanes; the caller's own when that lane
/// is outside the segment or has exited.
uint64_t shuffle(uint64_t bits, ShuffleMode mode, int operand, int width);
/// Every live lane's predicate, as a bit per lane of the warp.
unsigned ballot(bool predicate);

template <typename T> uint64_t toBits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffle of a wide type");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}
template <typename T> T fromBits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}
} // namespace fsdp::simt

template <typename T> T __shfl_sync(unsigned, T v, int srcLane, int width = warpSize) {
  using namespace fsdp::simt;
  return fromBits<T>(shuffle(toBits(v), ShuffleMode::Index, srcLane, width));
}
template <typename T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = warpSize) {
  using namespace fsdp::simt;
  return fromBits<T>(shuffle(toBits(v), ShuffleMode::Up, static_cast<int>(delta), width));
}
template <typename T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = warpSize) {
  using namespace fsdp::simt;
  return fromBits<T>(shuffle(toBits(v), ShuffleMode::Down, static_cast<int>(delta), width));
}
template <typename T> T __shfl_xor_sync(unsigned, T v, int laneMask, int width = warpSize) {
  using namespace fsdp::simt;
  return fromBits<T>(shuffle(toBits(v), ShuffleMode::Xor, laneMask, width));
}
inline unsigned __ballot_sync(unsigned, int predicate) { return fsdp::simt::ballot(predicate != 0); }
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned, int predicate) {
  return fsdp::simt::ballot(predicate == 0) == 0;
}

// Fibers of a block share one OS thread and switch only at barriers, so a
// read-modify-write is atomic as it stands.
template <typename T> T simtAtomicUpdate(T *address, T value, T (*update)(T, T)) {
  T old = *address;
  *address = update(old, value);
  return old;
}
inline int atomicAdd(int *a, int v) { return simtAtomicUpdate<int>(a, v, [](int x, int y) { return x + y; }); }
inline unsigned atomicAdd(unsigned *a, unsigned v) {
  return simtAtomicUpdate<unsigned>(a, v, [](unsigned x, unsigned y) { return x + y; });
}
inline unsigned long long atomicAdd(unsigned long long *a, unsigned long long v) {
  return simtAtomicUpdate<unsigned long long>(
      a, v, [](unsigned long long x, unsigned long long y) { return x + y; });
}
inline float atomicAdd(float *a, float v) {
  return simtAtomicUpdate<float>(a, v, [](float x, float y) { return x + y; });
}
inline double atomicAdd(double *a, double v) {
  return simtAtomicUpdate<double>(a, v, [](double x, double y) { return x + y; });
}
inline int atomicMax(int *a, int v) {
  return simtAtomicUpdate<int>(a, v, [](int x, int y) { return x > y ? x : y; });
}
inline int atomicMin(int *a, int v) {
  return simtAtomicUpdate<int>(a, v, [](int x, int y) { return x < y ? x : y; });
}
inline int atomicExch(int *a, int v) {
  return simtAtomicUpdate<int>(a, v, [](int, int y) { return y; });
}
inline int atomicCAS(int *a, int compare, int v) {
  int old = *a;
  if (old == compare)
    *a = v;
  return old;
}
inline unsigned long long atomicCAS(unsigned long long *a, unsigned long long compare,
                                    unsigned long long v) {
  unsigned long long old = *a;
  if (old == compare)
    *a = v;
  return old;
}

// --- Bit casts and loads --------------------------------------------------------------
inline int __float_as_int(float f) { return __builtin_bit_cast(int, f); }
inline float __int_as_float(int i) { return __builtin_bit_cast(float, i); }
inline unsigned __float_as_uint(float f) { return __builtin_bit_cast(unsigned, f); }
inline float __uint_as_float(unsigned u) { return __builtin_bit_cast(float, u); }
template <typename T> T __ldg(const T *p) { return *p; }

// --- Launch -----------------------------------------------------------------------------
namespace fsdp::simt {

/// Runs `body` once per thread of every block of `grid` x `block`, with the
/// geometry variables set. Returns an error string for a geometry CUDA
/// refuses (an empty grid, more than 1024 threads a block), else nullptr.
const char *runGrid(dim3 grid, dim3 block, void (*body)(void *), void *context);

/// The emulated `kernel<<<grid, block>>>(args...)`: arguments are copied
/// into the parameter types first, as CUDA copies them to the device.
template <typename... Params, typename... Args>
const char *launch(void (*kernel)(Params...), dim3 grid, dim3 block, Args &&...args) {
  struct Call {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> params;
  } call{kernel, {std::forward<Args>(args)...}};
  return runGrid(
      grid, block,
      [](void *context) {
        Call &c = *static_cast<Call *>(context);
        std::apply(c.kernel, c.params);
      },
      &call);
}

} // namespace fsdp::simt

#endif // FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMT_H
