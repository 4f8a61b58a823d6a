//===- OperandChecks.h - operand checks every backend's kernels make -------===//
//
// The small checks and shape products at the top of the kernel families,
// written once for both backends (CPU and CUDA), so a kernel refuses the
// same operands with the same words whichever backend runs it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_OPERANDCHECKS_H
#define FSDP_RUNTIME_BACKENDS_OPERANDCHECKS_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/math/ElementwiseOps.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <optional>

namespace fsdp::rt {

/// The product of dims[begin, end).
inline int64_t dimsProduct(const int64_t *dims, int begin, int end) {
  int64_t n = 1;
  for (int d = begin; d < end; ++d)
    n *= dims[d];
  return n;
}

/// The product of t's dims [from, to).
inline int64_t dimProduct(const TensorRef &t, int from, int to) {
  return dimsProduct(t.dims, from, to);
}

/// A tensor seen around one axis: the dims before it, the axis, the dims
/// after it (softmax, layer norm, cumsum and their gradients loop so).
struct AxisSplit {
  int64_t outer = 1, len = 1, inner = 1;
};

/// `t` split at `axis` for kernel `op`; an error naming both when the axis
/// is outside t's rank.
inline Status splitAtAxis(const char *op, const TensorRef &t, int64_t axis, AxisSplit &out) {
  if (axis < 0 || axis >= t.rank)
    return Status::error(cat(op, ": axis ", axis, " is outside the rank ", t.rank));
  const int a = static_cast<int>(axis);
  out = AxisSplit{dimProduct(t, 0, a), t.dims[a], dimProduct(t, a + 1, t.rank)};
  return Status::ok();
}

/// Every one of perm's `count` entries names a dim of a rank-`rank` tensor.
inline Status requirePermutation(const char *op, const int64_t *perm, int count, int rank) {
  for (int d = 0; d < count; ++d)
    if (perm[d] < 0 || perm[d] >= rank)
      return Status::error(cat(op, ": perm entry ", perm[d], " is outside the rank ", rank));
  return Status::ok();
}

/// `t` has element type `expected`.
inline Status requireDType(const char *op, const TensorRef &t, DType expected) {
  if (t.dtype == expected)
    return Status::ok();
  return Status::error(cat(op, ": element type ", dtypeName(t.dtype), " where ",
                           dtypeName(expected), " was expected"));
}

/// torch's wrapped number in add/sub/mul/div (NNElementwiseOps.td): one
/// operand a bf16/f16 tensor of the result's type, the other one f32
/// element. `op` is the element rule (ElementwiseOps.h), whichever side
/// the scalar was on.
struct WrappedScalarMix {
  WrappedScalarOp op;
  const TensorRef *tensor, *scalar;
};
inline std::optional<WrappedScalarMix> wrappedScalarMix(BinaryKind kind, const TensorRef &a,
                                                        const TensorRef &b, const TensorRef &out) {
  if (out.dtype != DType::BF16 && out.dtype != DType::F16)
    return std::nullopt;
  auto scalar = [](const TensorRef &t) { return t.dtype == DType::F32 && t.numElements() == 1; };
  bool scalarFirst;
  if (a.dtype == out.dtype && scalar(b))
    scalarFirst = false;
  else if (b.dtype == out.dtype && scalar(a))
    scalarFirst = true;
  else
    return std::nullopt;
  const TensorRef *tensor = scalarFirst ? &b : &a, *value = scalarFirst ? &a : &b;
  switch (kind) {
  case BinaryKind::Add: return WrappedScalarMix{WrappedScalarOp::Add, tensor, value};
  case BinaryKind::Sub:
    return WrappedScalarMix{scalarFirst ? WrappedScalarOp::RSub : WrappedScalarOp::Sub, tensor,
                            value};
  case BinaryKind::Mul: return WrappedScalarMix{WrappedScalarOp::Mul, tensor, value};
  case BinaryKind::Div:
    return WrappedScalarMix{scalarFirst ? WrappedScalarOp::RDiv : WrappedScalarOp::Div, tensor,
                            value};
  default: return std::nullopt;
  }
}

/// A comparison's or classification's result is bool.
inline Status requireBoolOut(const char *op, const TensorRef &out) {
  if (out.dtype == DType::Bool)
    return Status::ok();
  return Status::error(cat(op, ": result element type ", dtypeName(out.dtype),
                           " where bool was expected"));
}

/// `a` and `b` share an element type and count (a gradient and its value).
inline Status requireSameType(const char *op, const TensorRef &a, const TensorRef &b) {
  if (a.dtype == b.dtype && a.numElements() == b.numElements())
    return Status::ok();
  return Status::error(cat(op, ": operands must share the element type and count (",
                           dtypeName(a.dtype), " x ", a.numElements(), " vs ",
                           dtypeName(b.dtype), " x ", b.numElements(), ")"));
}

/// `t` has `like`'s element type and count, named by shape in the error.
inline Status requireLike(const char *op, const TensorRef &t, const TensorRef &like) {
  if (t.dtype == like.dtype && t.numElements() == like.numElements())
    return Status::ok();
  return Status::error(cat(op, ": operand ", shapeText(t), " where ", shapeText(like),
                           " was expected"));
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_OPERANDCHECKS_H
