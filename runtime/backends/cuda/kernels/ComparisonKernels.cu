//===- ComparisonKernels.cu - comparisons, logic and float classes ---------===//
//
// The comparison family of CudaKernels.h: Compare and Logical write bool
// through the broadcast layout (one thread per result element), IsNaN and
// IsInf test each float element. Predicates are exact on every machine
// (f16/bf16 widen to float exactly), so results are the CPU's bits. The
// predicate is a template parameter, so each instantiation is a plain
// comparison with no switch per element. Bool operands are bytes, and any
// nonzero byte is true, as in the CPU's Where and Not.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/OperandChecks.h"

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// Logical ops and bool equality, as predicates on bytes.
enum class BytePredicate : uint8_t { Eq, And, Or, Xor };

template <ComparePredicate P, typename T>
__global__ void compareKernel(bool *out, const T *a, const T *b, StridedLayout<3> layout,
                              int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    auto x = load(a + layout.offset(1, i));
    auto y = load(b + layout.offset(2, i));
    bool r;
    if constexpr (P == ComparePredicate::Eq)
      r = x == y;
    else if constexpr (P == ComparePredicate::Lt)
      r = x < y;
    else if constexpr (P == ComparePredicate::Le)
      r = x <= y;
    else if constexpr (P == ComparePredicate::Gt)
      r = x > y;
    else
      r = x >= y;
    out[layout.offset(0, i)] = r;
  }
}

template <BytePredicate P>
__global__ void byteKernel(bool *out, const uint8_t *a, const uint8_t *b,
                           StridedLayout<3> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    bool x = a[layout.offset(1, i)] != 0, y = b[layout.offset(2, i)] != 0;
    bool r;
    if constexpr (P == BytePredicate::Eq)
      r = x == y;
    else if constexpr (P == BytePredicate::And)
      r = x && y;
    else if constexpr (P == BytePredicate::Or)
      r = x || y;
    else
      r = x != y;
    out[layout.offset(0, i)] = r;
  }
}

/// IsNaN when `nan`, else IsInf of the detected signs.
template <typename T>
__global__ void classifyKernel(bool *out, const T *in, int64_t n, bool nan, bool negative,
                               bool positive) {
  FSDP_GRID_STRIDE(i, n) {
    auto x = load(in + i);
    out[i] = nan ? x != x : (std::isinf(x) && (x > 0 ? positive : negative));
  }
}

template <ComparePredicate P, typename T>
Status launchCompare(const KernelContext &ctx, const TensorRef &a, const TensorRef &b,
                     const TensorRef &out) {
  const int64_t n = out.numElements();
  return launchElementwise(ctx, "compare", n, compareKernel<P, T>, out.as<bool>(),
                           a.as<const T>(), b.as<const T>(),
                           broadcastLayout<3>(out, {&a, &b}), n);
}

template <BytePredicate P>
Status launchBytes(const KernelContext &ctx, const char *op, const TensorRef &a,
                   const TensorRef &b, const TensorRef &out) {
  const int64_t n = out.numElements();
  return launchElementwise(ctx, op, n, byteKernel<P>, out.as<bool>(), a.as<const uint8_t>(),
                           b.as<const uint8_t>(), broadcastLayout<3>(out, {&a, &b}), n);
}

Status classify(const KernelContext &ctx, const char *op, const TensorRef &in,
                const TensorRef &out, bool nan, bool negative, bool positive) {
  FSDP_RETURN_IF_ERROR(requireBoolOut(op, out));
  const int64_t n = in.numElements();
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, op, n, classifyKernel<T>, out.as<bool>(), in.as<const T>(),
                                 n, nan, negative, positive);
      },
      op);
}

} // namespace

Status compare(const KernelContext &ctx, ComparePredicate predicate, const TensorRef &a,
               const TensorRef &b, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireBoolOut("compare", out));
  if (a.dtype != b.dtype)
    return Status::error(cat("compare: operand element types ", dtypeName(a.dtype), " and ",
                             dtypeName(b.dtype), " differ"));
  if (out.numElements() == 0)
    return Status::ok();
  if (a.dtype == DType::Bool) {
    if (predicate != ComparePredicate::Eq)
      return Status::error("compare: bool operands only compare with eq");
    return launchBytes<BytePredicate::Eq>(ctx, "compare", a, b, out);
  }
  return dispatchNumeric(
      a.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        switch (predicate) {
        case ComparePredicate::Eq: return launchCompare<ComparePredicate::Eq, T>(ctx, a, b, out);
        case ComparePredicate::Lt: return launchCompare<ComparePredicate::Lt, T>(ctx, a, b, out);
        case ComparePredicate::Le: return launchCompare<ComparePredicate::Le, T>(ctx, a, b, out);
        case ComparePredicate::Gt: return launchCompare<ComparePredicate::Gt, T>(ctx, a, b, out);
        case ComparePredicate::Ge: return launchCompare<ComparePredicate::Ge, T>(ctx, a, b, out);
        }
        return Status::error("compare: unknown predicate");
      },
      "compare");
}

Status logical(const KernelContext &ctx, LogicalKind kind, const TensorRef &a, const TensorRef &b,
               const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireBoolOut("logical", out));
  if (a.dtype != DType::Bool || b.dtype != DType::Bool)
    return Status::error("logical: operands must be bool");
  if (out.numElements() == 0)
    return Status::ok();
  switch (kind) {
  case LogicalKind::And: return launchBytes<BytePredicate::And>(ctx, "logical", a, b, out);
  case LogicalKind::Or: return launchBytes<BytePredicate::Or>(ctx, "logical", a, b, out);
  case LogicalKind::Xor: return launchBytes<BytePredicate::Xor>(ctx, "logical", a, b, out);
  }
  return Status::error("logical: unknown op");
}

Status isNaN(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  return classify(ctx, "is_nan", in, out, true, false, false);
}

Status isInf(const KernelContext &ctx, const TensorRef &in, bool detectNegative,
             bool detectPositive, const TensorRef &out) {
  return classify(ctx, "is_inf", in, out, false, detectNegative, detectPositive);
}

FSDP_CUDA_NAMESPACE_END
