//===- Dispatch.h - dtype dispatch and strided loops for CPU kernels ------===//
//
// Shared by the CPU kernel files so each writes its loops once as templates
// over the C++ storage type (dtype dispatch and load/store come from
// runtime/math/ElementTypes.h, shared with the CUDA kernels). This header
// adds lane folds, wide (AVX2) loops and, in its second half, an
// elementwise iteration space over an output and its strided (broadcast,
// permuted or sliced) operands, merges dimensions that are contiguous for
// every operand, and walks it row by row, so kernels write one tight inner
// loop that the compiler can vectorize.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H

#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/math/ElementTypes.h"
#include "runtime/math/StridedLayout.h"
#include "runtime/support/DType.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <utility>

namespace fsdp::rt::cpu {
// The storage types and dtype dispatch are the backends' shared
// runtime/math/ElementTypes.h; these names keep the CPU kernels' spelling.
using rt::BF16;
using rt::bitOf;
using rt::ComputeType;
using rt::dispatch;
using rt::dispatchAll;
using rt::dispatchBySize;
using rt::dispatchFloat;
using rt::dispatchIndex;
using rt::dispatchNumeric;
using rt::DTypeSet;
using rt::dtypeOf;
using rt::F16;
using rt::fromCompute;
using rt::kAllTypes;
using rt::kFloatTypes;
using rt::kIndexTypes;
using rt::kIntTypes;
using rt::kIsFloatStorage;
using rt::kIsIntStorage;
using rt::kNumericTypes;
using rt::kSignedIntTypes;
using rt::kUnsignedIntTypes;
using rt::load;
using rt::store;
using rt::toCompute;
using rt::unsupportedDType;

// --- Row folds -----------------------------------------------------------------------

/// Independent accumulators of a contiguous row statistic.
constexpr int kLanes = 16;

/// Folds value(0 .. n-1) with `op` through kLanes interleaved accumulators
/// combined by halving: independent chains the compiler can vectorize, in
/// an order fixed by n alone.
template <typename C, typename Value, typename Op>
C laneFold(int64_t n, C init, Value value, Op op) {
  C lanes[kLanes];
  std::fill(lanes, lanes + kLanes, init);
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = op(lanes[l], value(i + l));
  for (int l = 0; i + l < n; ++l)
    lanes[l] = op(lanes[l], value(i + l));
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      lanes[l] = op(lanes[l], lanes[l + width]);
  return lanes[0];
}

template <typename C> C plus(C a, C b) { return a + b; }
template <typename C> C maximum(C a, C b) { return std::max(a, b); }

// --- Wide loops ----------------------------------------------------------------------

/// Runs `loop()` compiled for AVX-512 (16 float lanes) or AVX2 (8) when the
/// CPU has it, instead of the baseline's (x86-64-v2) 4, for compute-bound
/// loops (exp, erf). The backend builds with -ffp-contract=off, so the
/// wider copies perform exactly the same IEEE operations as the baseline
/// (no product is fused into an add it was not written as) and results are
/// bitwise the same on every x86-64 CPU; without -ffast-math no reduction
/// is reordered either. The loop body must be inlinable (a lambda):
/// `flatten` inlines it whatever its size, since a call out of the wide
/// copy would run the baseline's 4-lane code.
#if defined(__GNUC__) && defined(__x86_64__)
#define FSDP_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq"
template <typename Loop>
__attribute__((target(FSDP_AVX512_TARGET), flatten)) void runWithAvx512(const Loop &loop) {
  loop();
}
template <typename Loop> __attribute__((target("avx2"), flatten)) void runWithAvx2(const Loop &loop) {
  loop();
}
#endif

/// Which copy runWide runs: the widest this CPU has, capped by
/// FSDP_CPU_WIDE=baseline|avx2 in the environment (read once; any other
/// value caps nothing, and fsdp-run --help names the copy in use) and by
/// setWideTierCap, so tests can show every copy computes the same bits.
enum class WideTier { Baseline, Avx2, Avx512 };

inline std::atomic<int> &wideTierCap() {
  static std::atomic<int> cap = [] {
    const char *env = std::getenv("FSDP_CPU_WIDE");
    std::string_view v = env ? env : "";
    return static_cast<int>(v == "baseline" ? WideTier::Baseline
                            : v == "avx2"   ? WideTier::Avx2
                                            : WideTier::Avx512);
  }();
  return cap;
}
inline void setWideTierCap(WideTier tier) { wideTierCap() = static_cast<int>(tier); }

/// The copy's name in fsdp-run --help and in tests.
inline const char *wideTierName(WideTier tier) {
  switch (tier) {
  case WideTier::Avx512: return "AVX-512";
  case WideTier::Avx2: return "AVX2";
  case WideTier::Baseline: break;
  }
  return "x86-64-v2";
}

inline WideTier cpuWideTier() {
#if defined(__GNUC__) && defined(__x86_64__)
  static const WideTier has =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")
          ? WideTier::Avx512
      : __builtin_cpu_supports("avx2") ? WideTier::Avx2
                                       : WideTier::Baseline;
#else
  static const WideTier has = WideTier::Baseline;
#endif
  return static_cast<WideTier>(std::min(static_cast<int>(has), wideTierCap().load()));
}

template <typename Loop> void runWide(const Loop &loop) {
#if defined(__GNUC__) && defined(__x86_64__)
  switch (cpuWideTier()) {
  case WideTier::Avx512: return runWithAvx512(loop);
  case WideTier::Avx2: return runWithAvx2(loop);
  case WideTier::Baseline: break;
  }
#endif
  loop();
}

/// Elements per thread at the least where kernels split across the rank's
/// threads (KernelThreads.h): below this a wake-up costs more than the loop.
constexpr int64_t kElementwiseGrain = 8192;

/// Rows (of `len` elements) per thread at the least, for kernels that split
/// rows across the rank's threads: each row's statistics are computed by
/// one thread in their fixed order, so the bits do not depend on the split.
inline int64_t rowGrain(int64_t len) {
  return std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(len, 1));
}

/// out[i] = fn(in[i]) over two contiguous tensors of T's element count,
/// in T's compute type, in wide (runWide) loops over element ranges split
/// across the rank's threads: every unary kernel.
template <typename T, typename Fn> void mapUnary(const TensorRef &in, const TensorRef &out, Fn fn) {
  const T *x = in.as<const T>();
  T *o = out.as<T>();
  (void)parallelFor(0, in.numElements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    runWide([&] {
      for (int64_t i = begin; i < end; ++i)
        store(o + i, fn(load(x + i)));
    });
  });
}

/// Like runWide, but the wide copies may also use FMA instructions: for
/// loops whose only fused multiply-adds are explicit std::fma calls (a libm
/// call per element on the baseline), which round exactly the same either
/// way (-ffp-contract=off fuses nothing else).
#if defined(__GNUC__) && defined(__x86_64__)
template <typename Loop>
__attribute__((target("avx2,fma"), flatten)) void runWithAvx2Fma(const Loop &loop) {
  loop();
}
inline bool cpuHasFma() {
  static const bool has = __builtin_cpu_supports("fma");
  return has;
}
#endif
template <typename Loop> void runWideFma(const Loop &loop) {
#if defined(__GNUC__) && defined(__x86_64__)
  switch (cpuWideTier()) {
  case WideTier::Avx512: return runWithAvx512(loop); // AVX-512F includes FMA
  case WideTier::Avx2:
    if (cpuHasFma())
      return runWithAvx2Fma(loop);
    break;
  case WideTier::Baseline: break;
  }
#endif
  loop();
}

/// The vector register width, in bytes, of the copy a runWideFmaSized loop
/// runs in.
template <int Bytes> using VectorBytes = std::integral_constant<int, Bytes>;

/// runWideFma for loops that block their work into registers:
/// loop(VectorBytes<N>{}) with N the copy's vector width (64 AVX-512, 32
/// AVX2, 16 baseline), so that each copy picks its own register blocking.
/// The blocking may change how many elements advance together, never the
/// operations one element goes through, so the bits stay the same.
template <typename Loop> void runWideFmaSized(const Loop &loop) {
#if defined(__GNUC__) && defined(__x86_64__)
  switch (cpuWideTier()) {
  case WideTier::Avx512:
    return runWithAvx512([&]() __attribute__((always_inline)) { loop(VectorBytes<64>{}); });
  case WideTier::Avx2:
    if (cpuHasFma())
      return runWithAvx2Fma([&]() __attribute__((always_inline)) { loop(VectorBytes<32>{}); });
    break;
  case WideTier::Baseline: break;
  }
#endif
  loop(VectorBytes<16>{});
}

// --- Strided iteration -------------------------------------------------------------

// StridedLayout, broadcastLayout and sliceLayout: runtime/math/StridedLayout.h.
using rt::broadcastLayout;
using rt::contiguousStrides;
using rt::sliceLayout;
using rt::StridedLayout;

/// Calls row(offsets, n, innerStrides) for each run of the innermost dim:
/// offsets[k] is operand k's element offset at the run's start and
/// innerStrides[k] its step within the run. Nothing for an empty space.
template <int N, typename RowFn> void forEachRow(const StridedLayout<N> &layout, RowFn &&row) {
  if (layout.numElements() == 0)
    return;
  int inner = layout.rank - 1;
  int64_t innerStrides[N], offsets[N], index[kMaxRank] = {};
  for (int k = 0; k < N; ++k) {
    innerStrides[k] = layout.strides[k][inner];
    offsets[k] = layout.base[k];
  }
  while (true) {
    row(static_cast<const int64_t *>(offsets), layout.dims[inner],
        static_cast<const int64_t *>(innerStrides));
    // Odometer over the outer dims, updating offsets incrementally.
    int d = inner - 1;
    for (; d >= 0; --d) {
      for (int k = 0; k < N; ++k)
        offsets[k] += layout.strides[k][d];
      if (++index[d] < layout.dims[d])
        break;
      for (int k = 0; k < N; ++k)
        offsets[k] -= layout.strides[k][d] * layout.dims[d];
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

/// The part of `layout` whose outermost index lies in [begin, end): the
/// unit a split of a strided iteration space hands to one thread.
template <int N>
StridedLayout<N> outerPiece(const StridedLayout<N> &layout, int64_t begin, int64_t end) {
  StridedLayout<N> piece = layout;
  piece.dims[0] = end - begin;
  for (int k = 0; k < N; ++k)
    piece.base[k] += begin * layout.strides[k][0];
  return piece;
}

/// forEachRow with the layout's outermost dim split across the rank's
/// threads (KernelThreads.h), pieces of at least `grain` elements: for
/// elementwise kernels, where an element's value does not depend on the
/// piece that computes it.
template <int N, typename RowFn>
void forEachRowParallel(const StridedLayout<N> &layout, int64_t grain, const RowFn &row) {
  const int64_t total = layout.numElements();
  if (total == 0)
    return;
  const int64_t perOuter = total / layout.dims[0];
  (void)parallelFor(
      0, layout.dims[0], std::max<int64_t>(1, grain / perOuter),
      [&](int64_t begin, int64_t end) { forEachRow(outerPiece(layout, begin, end), row); });
}

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H
