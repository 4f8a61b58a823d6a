//===- LinearAlgebra.cpp - import of MatMul and Gemm ----------------------===//
//
// MatMul keeps numpy semantics in nn.matmul; Gemm keeps alpha, beta and the
// transposes as attributes so the runtime can call one BLAS routine and
// autodiff sees the original form.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {

LogicalResult importMatMul(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> lhs = getInput(ctx, 0), rhs = getInput(ctx, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->element() != rhs->element())
    return ctx.error("operand element types differ");
  FailureOr<nn::Shape> shape = nn::matmulShape(lhs->shape(), rhs->shape(), ctx.errorFn());
  if (failed(shape))
    return failure();
  auto type = ctx.tensorType(*shape, lhs->element());
  return ctx.setOutput(0, ctx.builder().create<nn::MatMulOp>(ctx.loc(), type, lhs->value,
                                                             rhs->value));
}

LogicalResult importGemm(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"alpha", "beta", "transA", "transB"})))
    return failure();
  float alpha = ctx.floatAttr("alpha", 1.0f), beta = ctx.floatAttr("beta", 1.0f);
  bool transA = ctx.intAttr("transA", 0) != 0, transB = ctx.intAttr("transB", 0) != 0;
  FailureOr<InputInfo> a = getInput(ctx, 0), b = getInput(ctx, 1);
  if (failed(a) || failed(b) || ctx.failed())
    return failure();
  Value c;
  std::optional<ArrayRef<int64_t>> cShape;
  if (ctx.hasInput(2)) {
    FailureOr<InputInfo> bias = getInput(ctx, 2);
    if (failed(bias))
      return failure();
    c = bias->value;
    cShape = bias->shape();
  }
  if (a->element() != b->element() || (c && getElementTypeOrSelf(c) != a->element()))
    return ctx.error("operand element types differ");
  FailureOr<nn::Shape> shape =
      nn::gemmShape(a->shape(), b->shape(), cShape, transA, transB, ctx.errorFn());
  if (failed(shape))
    return failure();
  OpBuilder &b_ = ctx.builder();
  auto op = b_.create<nn::GemmOp>(ctx.loc(), ctx.tensorType(*shape, a->element()),
                                  a->value, b->value, c, b_.getF32FloatAttr(alpha),
                                  b_.getF32FloatAttr(beta), b_.getBoolAttr(transA),
                                  b_.getBoolAttr(transB));
  return ctx.setOutput(0, op);
}

} // namespace fsdp::onnx
