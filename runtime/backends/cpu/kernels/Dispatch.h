//===- Dispatch.h - dtype dispatch and strided loops for CPU kernels ------===//
//
// Shared by the CPU kernel files so each writes its loops once as templates
// over the C++ storage type: `dispatch<Allowed>(dtype, f)` calls `f(T{})`
// with the storage type of a run-time DType (f16 and bf16 get distinct tag
// types, so a template can tell them apart), and reports a dtype outside
// `Allowed` as an error Status instead of instantiating code for it.
// `load`/`store` move between storage and compute types (f16/bf16 compute in
// float and round to nearest even on store). The second half describes an
// elementwise iteration space over an output and its strided (broadcast,
// permuted or sliced) operands, merges dimensions that are contiguous for
// every operand, and walks it row by row, so kernels write one tight inner
// loop that the compiler can vectorize.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H

#include "runtime/support/DType.h"
#include "runtime/support/Half.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <type_traits>
#include <utility>

namespace fsdp::rt::cpu {

// --- Storage and compute types -------------------------------------------------

/// 16-bit float storage: the bit pattern, tagged by format.
struct F16 { uint16_t bits; };
struct BF16 { uint16_t bits; };

/// The type arithmetic on T happens in: float for the 16-bit floats, T
/// itself otherwise (bool included).
template <typename T> struct ComputeTypeOf { using type = T; };
template <> struct ComputeTypeOf<F16> { using type = float; };
template <> struct ComputeTypeOf<BF16> { using type = float; };
template <typename T> using ComputeType = typename ComputeTypeOf<T>::type;

template <typename T>
inline constexpr bool kIsFloatStorage = std::is_floating_point_v<T> ||
                                        std::is_same_v<T, F16> || std::is_same_v<T, BF16>;
template <typename T>
inline constexpr bool kIsIntStorage = std::is_integral_v<T> && !std::is_same_v<T, bool>;

inline float toCompute(F16 v) { return f16ToFloat(v.bits); }
inline float toCompute(BF16 v) { return bf16ToFloat(v.bits); }
template <typename T> inline T toCompute(T v) { return v; }

template <typename T> inline T fromCompute(ComputeType<T> v) {
  if constexpr (std::is_same_v<T, F16>)
    return F16{floatToF16(v)};
  else if constexpr (std::is_same_v<T, BF16>)
    return BF16{floatToBf16(v)};
  else
    return v;
}

template <typename T> inline ComputeType<T> load(const T *p) { return toCompute(*p); }
template <typename T> inline void store(T *p, ComputeType<T> v) { *p = fromCompute<T>(v); }

/// The DType whose storage type is T.
template <typename T> constexpr DType dtypeOf() {
  if constexpr (std::is_same_v<T, float>) return DType::F32;
  else if constexpr (std::is_same_v<T, double>) return DType::F64;
  else if constexpr (std::is_same_v<T, F16>) return DType::F16;
  else if constexpr (std::is_same_v<T, BF16>) return DType::BF16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::I8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::I16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::I64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::U8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::U16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::U32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::U64;
  else {
    static_assert(std::is_same_v<T, bool>, "not a storage type");
    return DType::Bool;
  }
}

// --- Dispatch --------------------------------------------------------------------

/// Sets of dtypes, one bit per DType value.
using DTypeSet = uint32_t;
constexpr DTypeSet bitOf(DType t) { return DTypeSet{1} << static_cast<int>(t); }
inline constexpr DTypeSet kFloatTypes =
    bitOf(DType::F32) | bitOf(DType::F64) | bitOf(DType::F16) | bitOf(DType::BF16);
inline constexpr DTypeSet kSignedIntTypes =
    bitOf(DType::I8) | bitOf(DType::I16) | bitOf(DType::I32) | bitOf(DType::I64);
inline constexpr DTypeSet kUnsignedIntTypes =
    bitOf(DType::U8) | bitOf(DType::U16) | bitOf(DType::U32) | bitOf(DType::U64);
inline constexpr DTypeSet kIntTypes = kSignedIntTypes | kUnsignedIntTypes;
inline constexpr DTypeSet kNumericTypes = kFloatTypes | kIntTypes;
inline constexpr DTypeSet kAllTypes = kNumericTypes | bitOf(DType::Bool);
inline constexpr DTypeSet kIndexTypes = bitOf(DType::I32) | bitOf(DType::I64);

inline Status unsupportedDType(const char *op, DType t) {
  return Status::error(cat(op, ": unsupported element type ", dtypeName(t)));
}

namespace detail {
/// Calls f(T{}); a callback returning void counts as success.
template <typename T, typename F> Status callWith(F &f) {
  if constexpr (std::is_void_v<decltype(f(T{}))>) {
    f(T{});
    return Status::ok();
  } else {
    return f(T{});
  }
}
} // namespace detail

/// Calls f(T{}) with the storage type of `t` when `t` is in Allowed, else
/// returns an error naming `op`. Only the allowed types are instantiated.
template <DTypeSet Allowed, typename F>
Status dispatch(DType t, F &&f, const char *op = "kernel") {
#define FSDP_DISPATCH_CASE(DT, T)                                              \
  case DType::DT:                                                              \
    if constexpr ((Allowed & bitOf(DType::DT)) != 0)                           \
      return detail::callWith<T>(f);                                           \
    break;
  switch (t) {
    FSDP_DISPATCH_CASE(F32, float)
    FSDP_DISPATCH_CASE(F64, double)
    FSDP_DISPATCH_CASE(F16, F16)
    FSDP_DISPATCH_CASE(BF16, BF16)
    FSDP_DISPATCH_CASE(I8, int8_t)
    FSDP_DISPATCH_CASE(I16, int16_t)
    FSDP_DISPATCH_CASE(I32, int32_t)
    FSDP_DISPATCH_CASE(I64, int64_t)
    FSDP_DISPATCH_CASE(U8, uint8_t)
    FSDP_DISPATCH_CASE(U16, uint16_t)
    FSDP_DISPATCH_CASE(U32, uint32_t)
    FSDP_DISPATCH_CASE(U64, uint64_t)
    FSDP_DISPATCH_CASE(Bool, bool)
  }
#undef FSDP_DISPATCH_CASE
  return unsupportedDType(op, t);
}

template <typename F> Status dispatchAll(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kAllTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchNumeric(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kNumericTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchFloat(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kFloatTypes>(t, std::forward<F>(f), op);
}
template <typename F> Status dispatchIndex(DType t, F &&f, const char *op = "kernel") {
  return dispatch<kIndexTypes>(t, std::forward<F>(f), op);
}

/// For kernels that only move elements: calls f(U{}) with the unsigned
/// integer type of the element's size (uint8_t .. uint64_t).
template <typename F> Status dispatchBySize(DType t, F &&f, const char *op = "kernel") {
  switch (dtypeSize(t)) {
  case 1: return detail::callWith<uint8_t>(f);
  case 2: return detail::callWith<uint16_t>(f);
  case 4: return detail::callWith<uint32_t>(f);
  case 8: return detail::callWith<uint64_t>(f);
  }
  return unsupportedDType(op, t);
}

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

/// Runs `loop()` compiled for AVX2 when the CPU has it: 8 float lanes instead
/// of the baseline's (x86-64-v2) 4, for compute-bound loops (exp, erf). AVX2
/// alone adds no fused multiply-add, so the compiler performs exactly the
/// same IEEE operations either way and results are bitwise the same on
/// every x86-64 CPU. The loop body must be inlinable (a lambda).
#if defined(__GNUC__) && defined(__x86_64__)
template <typename Loop> __attribute__((target("avx2"))) void runWithAvx2(const Loop &loop) {
  loop();
}
inline bool cpuHasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif
template <typename Loop> void runWide(const Loop &loop) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (cpuHasAvx2())
    return runWithAvx2(loop);
#endif
  loop();
}

/// out[i] = fn(in[i]) over two contiguous tensors of T's element count,
/// in T's compute type, in one wide (runWide) loop: every unary kernel.
template <typename T, typename Fn> void mapUnary(const TensorRef &in, const TensorRef &out, Fn fn) {
  const T *x = in.as<const T>();
  T *o = out.as<T>();
  const int64_t n = in.numElements();
  runWide([&] {
    for (int64_t i = 0; i < n; ++i)
      store(o + i, fn(load(x + i)));
  });
}

/// Like runWide, but the AVX2 copy may also use FMA instructions: for loops
/// whose only fused multiply-adds are explicit std::fma calls (a libm call
/// per element on the baseline), which round exactly the same either way,
/// in files built with -ffp-contract=off so nothing else gets fused.
#if defined(__GNUC__) && defined(__x86_64__)
template <typename Loop>
__attribute__((target("avx2,fma"))) void runWithAvx2Fma(const Loop &loop) {
  loop();
}
inline bool cpuHasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif
template <typename Loop> void runWideFma(const Loop &loop) {
#if defined(__GNUC__) && defined(__x86_64__)
  if (cpuHasAvx2Fma())
    return runWithAvx2Fma(loop);
#endif
  loop();
}

// --- Strided iteration -------------------------------------------------------------

/// Row-major element strides of a contiguous tensor.
inline void contiguousStrides(const TensorRef &t, int64_t *strides) {
  int64_t s = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= t.dims[i];
  }
}

/// The iteration space of an op writing a contiguous output (operand 0)
/// from N - 1 strided inputs: element (i0..ir) of operand k sits at
/// base[k] + sum(i_d * strides[k][d]). Strides may be 0 (broadcast) or
/// negative (reversed slice).
template <int N> struct StridedLayout {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t base[N] = {};
  int64_t strides[N][kMaxRank] = {};

  /// Drops size-1 dims and merges neighbours that are contiguous for every
  /// operand, so same-shape ops become one row and [B,T,C] + [C] becomes
  /// B*T rows of C. Leaves at least one dim.
  void coalesce() {
    int out = 0; // dims kept so far, outermost first, in [0, out)
    for (int d = 0; d < rank; ++d) {
      if (dims[d] == 1)
        continue;
      bool merge = out > 0;
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k][out - 1] == strides[k][d] * dims[d];
      if (merge) {
        dims[out - 1] *= dims[d];
        for (int k = 0; k < N; ++k)
          strides[k][out - 1] = strides[k][d];
        continue;
      }
      dims[out] = dims[d];
      for (int k = 0; k < N; ++k)
        strides[k][out] = strides[k][d];
      ++out;
    }
    if (out == 0) { // a single element
      dims[0] = 1;
      for (int k = 0; k < N; ++k)
        strides[k][0] = 1;
      out = 1;
    }
    rank = out;
  }

  int64_t numElements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d)
      n *= dims[d];
    return n;
  }
};

/// The layout of `out` (contiguous) computed from `ins` broadcast numpy
/// style to out's shape (inputs align at the trailing dims; size-1 or
/// missing dims get stride 0). Coalesced.
template <int N>
StridedLayout<N> broadcastLayout(const TensorRef &out, const TensorRef *const (&ins)[N - 1]) {
  StridedLayout<N> layout;
  layout.rank = out.rank;
  for (int d = 0; d < out.rank; ++d)
    layout.dims[d] = out.dims[d];
  contiguousStrides(out, layout.strides[0]);
  for (int k = 1; k < N; ++k) {
    const TensorRef &in = *ins[k - 1];
    int64_t inStrides[kMaxRank];
    contiguousStrides(in, inStrides);
    int shift = out.rank - in.rank;
    for (int d = 0; d < out.rank; ++d) {
      int inDim = d - shift;
      layout.strides[k][d] = inDim < 0 || in.dims[inDim] == 1 ? 0 : inStrides[inDim];
    }
  }
  layout.coalesce();
  return layout;
}

/// The slice of `whole` at per-dim `starts` / `steps`, iterated over
/// `part`'s index space: `part` contiguous, `whole` strided (steps may be
/// negative). Operand `wholeOperand` (0 or 1) is the whole, the other one
/// the part, so the same layout reads a slice (slice) or writes one back
/// (slice_grad). Coalesced.
inline StridedLayout<2> sliceLayout(const TensorRef &part, const TensorRef &whole,
                                    const int64_t *starts, const int64_t *steps,
                                    int wholeOperand) {
  int64_t wholeStrides[kMaxRank];
  contiguousStrides(whole, wholeStrides);
  StridedLayout<2> layout;
  layout.rank = part.rank;
  for (int d = 0; d < part.rank; ++d) {
    layout.dims[d] = part.dims[d];
    layout.strides[wholeOperand][d] = wholeStrides[d] * steps[d];
    layout.base[wholeOperand] += starts[d] * wholeStrides[d];
  }
  contiguousStrides(part, layout.strides[1 - wholeOperand]);
  layout.coalesce();
  return layout;
}

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

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_DISPATCH_H
