//===- OptimizerOperands.h - the optimizer kernels' operand checks --------===//
//
// What both backends' AdamW and SGD kernels require of their operands
// before touching memory: every state tensor and result shaped and typed
// as the parameter, lr an f64 scalar and step an i64 scalar, a momentum
// buffer with both its operand and its result, a found_inf flag (when
// given) an f32 scalar. One check, so the backends
// refuse the same instructions with the same words.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_OPTIMIZEROPERANDS_H
#define FSDP_RUNTIME_BACKENDS_OPTIMIZEROPERANDS_H

#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

namespace fsdp::rt {

inline Status requireLikeParam(const char *op, const char *what, const TensorRef &t,
                               const TensorRef &param) {
  if (t.dtype == param.dtype && t.numElements() == param.numElements())
    return Status::ok();
  return Status::error(cat(op, ": ", what, " must have the parameter's type (",
                           dtypeName(param.dtype), " x ", param.numElements(), "), not ",
                           dtypeName(t.dtype), " x ", t.numElements()));
}

inline Status requireScalar(const char *op, const char *what, const TensorRef &t, DType dtype) {
  if (t.dtype == dtype && t.numElements() == 1 && t.data)
    return Status::ok();
  return Status::error(cat(op, ": ", what, " must be a ", dtypeName(dtype), " scalar"));
}

inline Status checkAdamWOperands(const TensorRef &param, const TensorRef &grad,
                                 const TensorRef &expAvg, const TensorRef &expAvgSq,
                                 const TensorRef &lr, const TensorRef &step,
                                 const TensorRef &paramOut, const TensorRef &expAvgOut,
                                 const TensorRef &expAvgSqOut, const TensorRef *foundInf) {
  const char *op = "adamw";
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "grad", grad, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "exp_avg", expAvg, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "exp_avg_sq", expAvgSq, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "the updated parameter", paramOut, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "the updated exp_avg", expAvgOut, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "the updated exp_avg_sq", expAvgSqOut, param));
  FSDP_RETURN_IF_ERROR(requireScalar(op, "lr", lr, DType::F64));
  if (foundInf)
    FSDP_RETURN_IF_ERROR(requireScalar(op, "found_inf", *foundInf, DType::F32));
  return requireScalar(op, "step", step, DType::I64);
}

inline Status checkSgdOperands(const TensorRef &param, const TensorRef &grad,
                               const TensorRef *momentumBuffer, const TensorRef &lr,
                               const TensorRef &paramOut, const TensorRef *bufferOut,
                               const TensorRef *foundInf) {
  const char *op = "sgd";
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "grad", grad, param));
  FSDP_RETURN_IF_ERROR(requireLikeParam(op, "the updated parameter", paramOut, param));
  if ((momentumBuffer == nullptr) != (bufferOut == nullptr))
    return Status::error("sgd: the momentum buffer needs both its operand and its result");
  if (momentumBuffer) {
    FSDP_RETURN_IF_ERROR(requireLikeParam(op, "momentum_buffer", *momentumBuffer, param));
    FSDP_RETURN_IF_ERROR(requireLikeParam(op, "the updated momentum_buffer", *bufferOut, param));
  }
  if (foundInf)
    FSDP_RETURN_IF_ERROR(requireScalar(op, "found_inf", *foundInf, DType::F32));
  return requireScalar(op, "lr", lr, DType::F64);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_OPTIMIZEROPERANDS_H
