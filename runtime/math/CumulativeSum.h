//===- CumulativeSum.h - one line of a cumulative sum ---------------------===//
//
// ONNX CumSum along one axis, one line (a fixed position before and after
// the axis) at a time: integers add in uint64 (wrapping), floats in
// double, each result rounded once to T, exclusive and reverse as ONNX
// defines them. The CPU kernel walks every line with it and the CUDA
// kernel gives each thread one, so both add in the same order and type:
// the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_CUMULATIVESUM_H
#define FSDP_RUNTIME_MATH_CUMULATIVESUM_H

#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <cstdint>
#include <type_traits>

namespace fsdp::rt {

/// Line `line` of x (seen as outer x len x inner, line = b * inner + c)
/// summed along len into o.
template <typename T>
FSDP_HD_INLINE void cumsumLine(const T *x, T *o, int64_t line, int64_t len, int64_t inner,
                               bool exclusive, bool reverse) {
  using C = ComputeType<T>;
  using Acc = std::conditional_t<std::is_floating_point_v<C>, double, uint64_t>;
  const int64_t b = line / inner, c = line % inner;
  Acc sum = 0;
  for (int64_t step = 0; step < len; ++step) {
    const int64_t k = reverse ? len - 1 - step : step;
    const int64_t at = (b * len + k) * inner + c;
    const Acc v = static_cast<Acc>(load(x + at));
    if (!exclusive)
      sum += v;
    store(o + at, static_cast<C>(sum));
    if (exclusive)
      sum += v;
  }
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_CUMULATIVESUM_H
