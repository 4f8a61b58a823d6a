//===- Elementwise.cpp - import of elementwise ONNX operators -------------===//
//
// Add/Sub/Mul/Div/Pow/Where with numpy broadcasting, the unary math ops,
// Not, Cast and Identity. Integer arithmetic on constants (torch's shape
// computations) folds on the host; everything else becomes one nn op.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

FailureOr<nn::Shape> broadcastInputs(ImportContext &ctx,
                                     ArrayRef<InputInfo> inputs) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (const InputInfo &input : inputs)
    shapes.push_back(input.shape());
  return nn::broadcastShapes(shapes, ctx.errorFn());
}

template <typename OpTy>
LogicalResult importArithmetic(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  // Types first: constants are only materialized if the op is not folded.
  FailureOr<RankedTensorType> lhsType = ctx.inputType(0), rhsType = ctx.inputType(1);
  if (failed(lhsType) || failed(rhsType))
    return failure();
  if (lhsType->getElementType() != rhsType->getElementType())
    return ctx.error("operand element types differ");
  FailureOr<nn::Shape> shape =
      nn::broadcastShapes({lhsType->getShape(), rhsType->getShape()}, ctx.errorFn());
  if (failed(shape))
    return failure();
  const Tensor *a = ctx.constantInput(0), *b = ctx.constantInput(1);
  if (a && b && isFoldableInteger(*a) && isFoldableInteger(*b) &&
      nn::numElements(*shape) <= kMaxFoldElements &&
      a->dtype != DType::Bool) {
    std::string error;
    std::optional<Tensor> folded = foldBinary(ctx.node().opType, *a, *b, *shape, error);
    if (!folded)
      return ctx.error(error);
    return ctx.setConstantOutput(0, std::move(*folded));
  }
  FailureOr<InputInfo> lhs = getInput(ctx, 0), rhs = getInput(ctx, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto type = ctx.tensorType(*shape, lhs->element());
  return ctx.setOutput(0, ctx.builder().create<OpTy>(ctx.loc(), type, lhs->value, rhs->value));
}

template <typename OpTy>
LogicalResult importUnary(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  return ctx.setOutput(0, ctx.builder().create<OpTy>(ctx.loc(), input->type, input->value));
}

} // namespace

LogicalResult importAdd(ImportContext &ctx) { return importArithmetic<nn::AddOp>(ctx); }
LogicalResult importSub(ImportContext &ctx) { return importArithmetic<nn::SubOp>(ctx); }
LogicalResult importMul(ImportContext &ctx) { return importArithmetic<nn::MulOp>(ctx); }
LogicalResult importDiv(ImportContext &ctx) { return importArithmetic<nn::DivOp>(ctx); }

LogicalResult importPow(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> base = getInput(ctx, 0), exponent = getInput(ctx, 1);
  if (failed(base) || failed(exponent))
    return failure();
  FailureOr<nn::Shape> shape = broadcastInputs(ctx, {*base, *exponent});
  if (failed(shape))
    return failure();
  auto type = ctx.tensorType(*shape, base->element());
  return ctx.setOutput(0, ctx.builder().create<nn::PowOp>(ctx.loc(), type, base->value,
                                                          exponent->value));
}

LogicalResult importWhere(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> cond = getInput(ctx, 0), x = getInput(ctx, 1), y = getInput(ctx, 2);
  if (failed(cond) || failed(x) || failed(y))
    return failure();
  if (x->element() != y->element())
    return ctx.error("x and y element types differ");
  FailureOr<nn::Shape> shape = broadcastInputs(ctx, {*cond, *x, *y});
  if (failed(shape))
    return failure();
  auto type = ctx.tensorType(*shape, x->element());
  return ctx.setOutput(0, ctx.builder().create<nn::WhereOp>(ctx.loc(), type, cond->value,
                                                            x->value, y->value));
}

LogicalResult importNeg(ImportContext &ctx) {
  if (const Tensor *c = ctx.constantInput(0); c && isFoldableInteger(*c) &&
                                              c->dtype != DType::Bool)
    return ctx.setConstantOutput(0, foldNeg(*c));
  return importUnary<nn::NegOp>(ctx);
}
LogicalResult importRelu(ImportContext &ctx) { return importUnary<nn::ReluOp>(ctx); }
LogicalResult importExp(ImportContext &ctx) { return importUnary<nn::ExpOp>(ctx); }
LogicalResult importLog(ImportContext &ctx) { return importUnary<nn::LogOp>(ctx); }
LogicalResult importSqrt(ImportContext &ctx) { return importUnary<nn::SqrtOp>(ctx); }
LogicalResult importErf(ImportContext &ctx) { return importUnary<nn::ErfOp>(ctx); }
LogicalResult importTanh(ImportContext &ctx) { return importUnary<nn::TanhOp>(ctx); }
LogicalResult importSigmoid(ImportContext &ctx) { return importUnary<nn::SigmoidOp>(ctx); }
LogicalResult importNot(ImportContext &ctx) { return importUnary<nn::NotOp>(ctx); }

LogicalResult importCast(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"to"})))
    return failure();
  if (!ctx.attribute("to"))
    return ctx.error("attribute 'to' is required");
  DType to = static_cast<DType>(ctx.intAttr("to", 0));
  FailureOr<Type> element = ctx.elementType(to);
  if (failed(element))
    return failure();
  if (const Tensor *c = ctx.constantInput(0); c && isFoldableInteger(*c))
    if (std::optional<Tensor> folded = foldCast(*c, to))
      return ctx.setConstantOutput(0, std::move(*folded));
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  if (input->element() == *element)
    return ctx.setOutput(0, input->value);
  auto type = ctx.tensorType(input->shape(), *element);
  return ctx.setOutput(0, ctx.builder().create<nn::CastOp>(ctx.loc(), type, input->value));
}

LogicalResult importIdentity(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is required");
  Slot *slot = ctx.lookup(ctx.node().inputs[0]);
  if (!slot)
    return ctx.error("input '" + ctx.node().inputs[0] + "' is not defined before this node");
  if (!ctx.hasOutput(0))
    return success();
  return ctx.define(ctx.node().outputs[0], *slot);
}

} // namespace fsdp::onnx
