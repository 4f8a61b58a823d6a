//===- RankOrderReduce.cpp - deterministic reduction over ranks' buffers --===//
//
// Works in blocks of a few hundred elements: the block's accumulators (in the
// compute type) stay in cache while each rank's input streams through once,
// in rank order, so every element sees exactly ((in0 + in1) + in2) ... (or the max of
// them, NaN if any is NaN) and
// the inner loops are plain contiguous adds the compiler vectorizes without
// changing any element's order of operations.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/RankOrderReduce.h"

#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <algorithm>

namespace fsdp::rt::comm {

namespace {

using cpu::ComputeType;

/// The types a reduction instantiates: what FSDP reduces (gradients in f32,
/// bf16 or f64; counters in i64) plus f16, which costs nothing extra.
constexpr cpu::DTypeSet kReducibleTypes = cpu::bitOf(DType::F32) | cpu::bitOf(DType::F64) |
                                          cpu::bitOf(DType::BF16) | cpu::bitOf(DType::F16) |
                                          cpu::bitOf(DType::I64);

/// max(a, b), NaN if either is (std::max would drop a NaN in `b`).
template <typename C> inline C maxOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    return (a != a || b != b) ? (a != a ? a : b) : (a < b ? b : a);
  else
    return a < b ? b : a;
}

/// a + b; integers wrap instead of overflowing into undefined behaviour.
template <typename C> inline C add(C a, C b) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<std::make_unsigned_t<C>>(a) +
                          static_cast<std::make_unsigned_t<C>>(b));
  else
    return a + b;
}

template <typename T>
void reduceTyped(const void *const *inputs, int numInputs, void *out, int64_t count,
                 ReduceOp op) {
  using C = ComputeType<T>;
  constexpr int64_t kBlock = 256;
  C acc[kBlock];
  const C divisor = static_cast<C>(numInputs);
  T *dst = static_cast<T *>(out);
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t len = std::min(kBlock, count - base);
    const T *first = static_cast<const T *>(inputs[0]) + base;
    for (int64_t j = 0; j < len; ++j)
      acc[j] = cpu::load(first + j);
    for (int s = 1; s < numInputs; ++s) {
      const T *in = static_cast<const T *>(inputs[s]) + base;
      if (op == ReduceOp::Max)
        for (int64_t j = 0; j < len; ++j)
          acc[j] = maxOf(acc[j], static_cast<C>(cpu::load(in + j)));
      else
        for (int64_t j = 0; j < len; ++j)
          acc[j] = add(acc[j], cpu::load(in + j));
    }
    if (op == ReduceOp::Avg)
      for (int64_t j = 0; j < len; ++j)
        acc[j] /= divisor;
    // Stores come last: `out` may be one of the inputs, whose block has
    // been read by now.
    for (int64_t j = 0; j < len; ++j)
      cpu::store(dst + base + j, acc[j]);
  }
}

} // namespace

Status checkReducible(DType dtype, ReduceOp op, const char *collective) {
  if ((kReducibleTypes & cpu::bitOf(dtype)) == 0)
    return Status::error(cat(collective, ": cannot reduce element type ", dtypeName(dtype),
                             " (f32, f64, bf16, f16 and i64 are supported)"));
  if (op == ReduceOp::Avg && !isFloat(dtype))
    return Status::error(cat(collective, ": avg is defined for floating types, not ",
                             dtypeName(dtype)));
  return Status::ok();
}

Status reduceInRankOrder(const void *const *inputs, int numInputs, void *out, int64_t count,
                         DType dtype, ReduceOp op) {
  FSDP_RETURN_IF_ERROR(checkReducible(dtype, op, "reduction"));
  if (numInputs < 1)
    return Status::error("reduction: no inputs");
  return cpu::dispatch<kReducibleTypes>(
      dtype, [&](auto tag) { reduceTyped<decltype(tag)>(inputs, numInputs, out, count, op); },
      "reduction");
}

} // namespace fsdp::rt::comm
