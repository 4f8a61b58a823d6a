//===- ElementCount.h - overflow-checked element count of a shape ---------===//
//
// The number of elements of a shape whose dimensions come from an untrusted
// file (an ONNX model, a .mlir module): a dimension of 0 makes the count 0
// however large the others are, and a product past int64 is reported
// rather than wrapped. Header-only so that the ONNX reader, which links
// neither MLIR nor the runtime, counts the same way as the nn dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_ELEMENTCOUNT_H
#define FSDP_RUNTIME_SUPPORT_ELEMENTCOUNT_H

#include <cstdint>
#include <optional>

namespace fsdp {

/// The product of `dims` (any range of int64), or nullopt when it does not
/// fit int64. A zero dimension anywhere gives 0, even after huge ones.
template <typename Dims> std::optional<int64_t> checkedElementCount(const Dims &dims) {
  for (int64_t d : dims)
    if (d == 0)
      return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n))
      return std::nullopt;
  return n;
}

/// checkedElementCount saturated at INT64_MAX, for callers that compare the
/// count with a limit: a hostile shape then fails the limit.
template <typename Dims> int64_t saturatedElementCount(const Dims &dims) {
  return checkedElementCount(dims).value_or(INT64_MAX);
}

} // namespace fsdp

#endif // FSDP_RUNTIME_SUPPORT_ELEMENTCOUNT_H
