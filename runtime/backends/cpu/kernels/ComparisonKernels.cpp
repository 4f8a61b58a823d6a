//===- ComparisonKernels.cpp - comparisons, logic and float classes -------===//
//
// The comparison family of CpuKernels.h: Compare and Logical write bool
// through the same coalesced broadcast layout as the arithmetic kernels
// (Dispatch.h), IsNaN and IsInf test each float element. torch 2.x exports
// run these on activations where SDPA guards its softmax with
// `where(isnan(p), 0, p)`; mask chains on constants fold at import and never
// reach the runtime. f16/bf16 compare after widening to float, which is
// exact, so every dtype gives the comparison of the stored values.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cmath>

namespace fsdp::rt::cpu {
namespace {

/// out[i] = fn(a[i], b[i]) over the broadcast layout, out bool.
template <typename T, typename Fn>
void runPredicate(const TensorRef &a, const TensorRef &b, const TensorRef &out, Fn fn) {
  StridedLayout<3> layout = broadcastLayout<3>(out, {&a, &b});
  bool *po = out.as<bool>();
  const T *pa = a.as<const T>();
  const T *pb = b.as<const T>();
  forEachRow(layout, [&](const int64_t *off, int64_t n, const int64_t *s) {
    bool *o = po + off[0];
    const T *x = pa + off[1];
    const T *y = pb + off[2];
    for (int64_t i = 0; i < n; ++i)
      o[i] = fn(load(x + i * s[1]), load(y + i * s[2]));
  });
}

template <typename T>
void compareTyped(ComparePredicate predicate, const TensorRef &a, const TensorRef &b,
                  const TensorRef &out) {
  using C = ComputeType<T>;
  switch (predicate) {
  case ComparePredicate::Eq: runPredicate<T>(a, b, out, [](C x, C y) { return x == y; }); break;
  case ComparePredicate::Lt: runPredicate<T>(a, b, out, [](C x, C y) { return x < y; }); break;
  case ComparePredicate::Le: runPredicate<T>(a, b, out, [](C x, C y) { return x <= y; }); break;
  case ComparePredicate::Gt: runPredicate<T>(a, b, out, [](C x, C y) { return x > y; }); break;
  case ComparePredicate::Ge: runPredicate<T>(a, b, out, [](C x, C y) { return x >= y; }); break;
  }
}

/// Applies `test` to every element of a float tensor, writing bool.
template <typename Test>
Status classify(const char *op, const TensorRef &in, const TensorRef &out, Test test) {
  FSDP_RETURN_IF_ERROR(requireBoolOut(op, out));
  bool *o = out.as<bool>();
  const int64_t n = in.numElements();
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        const T *x = in.as<const T>();
        for (int64_t i = 0; i < n; ++i)
          o[i] = test(load(x + i));
      },
      op);
}

} // namespace

Status compare(ComparePredicate predicate, const TensorRef &a, const TensorRef &b,
               const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireBoolOut("compare", out));
  if (a.dtype != b.dtype)
    return Status::error(cat("compare: operand element types ", dtypeName(a.dtype), " and ",
                             dtypeName(b.dtype), " differ"));
  if (out.numElements() == 0)
    return Status::ok();
  // Bool compares as bytes (eq only, checked at compile time); any nonzero
  // byte is true, as in Where and Not.
  if (a.dtype == DType::Bool) {
    if (predicate != ComparePredicate::Eq)
      return Status::error("compare: bool operands only compare with eq");
    runPredicate<uint8_t>(a, b, out, [](uint8_t x, uint8_t y) { return (x != 0) == (y != 0); });
    return Status::ok();
  }
  return dispatchNumeric(
      a.dtype, [&](auto tag) { compareTyped<decltype(tag)>(predicate, a, b, out); }, "compare");
}

Status logical(LogicalKind kind, const TensorRef &a, const TensorRef &b, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireBoolOut("logical", out));
  if (a.dtype != DType::Bool || b.dtype != DType::Bool)
    return Status::error("logical: operands must be bool");
  if (out.numElements() == 0)
    return Status::ok();
  // Any nonzero byte is true, as in Where and Not.
  auto run = [&](auto fn) { runPredicate<uint8_t>(a, b, out, fn); };
  switch (kind) {
  case LogicalKind::And: run([](uint8_t x, uint8_t y) { return x != 0 && y != 0; }); break;
  case LogicalKind::Or: run([](uint8_t x, uint8_t y) { return x != 0 || y != 0; }); break;
  case LogicalKind::Xor: run([](uint8_t x, uint8_t y) { return (x != 0) != (y != 0); }); break;
  }
  return Status::ok();
}

Status isNaN(const TensorRef &in, const TensorRef &out) {
  return classify("is_nan", in, out, [](auto x) { return x != x; });
}

Status isInf(const TensorRef &in, bool detectNegative, bool detectPositive,
             const TensorRef &out) {
  return classify("is_inf", in, out, [&](auto x) {
    return std::isinf(x) && (x > 0 ? detectPositive : detectNegative);
  });
}

} // namespace fsdp::rt::cpu
