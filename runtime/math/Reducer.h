//===- Reducer.h - ReduceSum/Max/Mean's accumulator, shared ---------------===//
//
// What one reduction kind does on storage T, for both backends' reduce
// kernels: the accumulator type (the compute type; integer sums wrap in the
// unsigned type of the same width), the identity of an empty reduction
// (0, -inf or the lowest integer), how a value joins the accumulator (max
// keeps NaN once seen) and how the total is stored (mean divides by the
// count; integer means truncate toward zero). FSDP_HD.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_REDUCER_H
#define FSDP_RUNTIME_MATH_REDUCER_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <limits>
#include <type_traits>

namespace fsdp::rt {

/// The accumulator type and operations of one reduction kind on storage T.
template <ReduceKind Kind, typename T> struct Reducer {
  /// Integer sums wrap in the unsigned type of the same width.
  static constexpr bool kWraps = kIsIntStorage<T> && Kind != ReduceKind::Max;
  using Acc = typename std::conditional_t<kWraps, std::make_unsigned<T>,
                                          ComputeTypeOf<T>>::type;

  FSDP_HD static Acc identity() {
    if constexpr (Kind != ReduceKind::Max)
      return Acc(0);
    else if constexpr (kIsIntStorage<T>)
      return std::numeric_limits<T>::lowest();
    else
      return -std::numeric_limits<Acc>::infinity();
  }
  FSDP_HD static Acc read(const T *p) {
    if constexpr (kWraps)
      return static_cast<Acc>(*p);
    else
      return load(p);
  }
  FSDP_HD static Acc combine(Acc acc, Acc value) {
    if constexpr (Kind == ReduceKind::Max)
      return ((value > acc) | (value != value)) ? value : acc; // NaN sticks
    else
      return acc + value;
  }
  FSDP_HD static void finish(T *dst, Acc acc, int64_t count) {
    if constexpr (Kind == ReduceKind::Mean && kWraps)
      *dst = static_cast<T>(static_cast<T>(acc) / count);
    else if constexpr (Kind == ReduceKind::Mean)
      store(dst, acc / static_cast<Acc>(count));
    else if constexpr (kWraps)
      *dst = static_cast<T>(acc);
    else
      store(dst, acc);
  }
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_REDUCER_H
