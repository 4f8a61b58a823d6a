//===- Elementwise.cpp - import of elementwise ONNX operators -------------===//
//
// Add/Sub/Mul/Div/Pow/Where with numpy broadcasting, the unary math ops,
// Not, Cast, CastLike and Identity. Integer arithmetic on constants
// (torch's shape computations) folds on the host; everything else becomes
// one nn op.
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
LogicalResult importNot(ImportContext &ctx) {
  if (const Tensor *c = ctx.constantInput(0); c && isFoldableInteger(*c) &&
                                              c->dtype == DType::Bool)
    return ctx.setConstantOutput(0, foldNot(*c));
  return importUnary<nn::NotOp>(ctx);
}

namespace {

/// Cast's and CastLike's attributes: `saturate` (opset 19) and `round_mode`
/// (opset 24) only change conversions to float 8 types, which are refused
/// as element types, so they are checked for kind and otherwise ignored.
LogicalResult checkCastAttributes(ImportContext &ctx, ArrayRef<StringRef> base) {
  SmallVector<StringRef> known(base.begin(), base.end());
  if (ctx.opset() >= 19)
    known.push_back("saturate");
  if (ctx.opset() >= 24)
    known.push_back("round_mode");
  if (failed(ctx.checkAttributes(known)))
    return failure();
  (void)ctx.intAttr("saturate", 1);
  (void)ctx.stringAttr("round_mode", "up");
  return failure(ctx.failed());
}

/// Binds output 0 to input 0 converted to `to`: folded for constant
/// integers, the input itself when the type already matches.
LogicalResult castInputTo(ImportContext &ctx, DType to) {
  FailureOr<Type> element = ctx.elementType(to);
  if (failed(element))
    return failure();
  // A constant already of the type stays a constant (folds further on).
  if (const Tensor *c = ctx.constantInput(0); c && c->dtype == to && ctx.hasOutput(0))
    return ctx.define(ctx.node().outputs[0], *ctx.lookup(ctx.node().inputs[0]));
  if (const Tensor *c = ctx.constantInput(0);
      c && c->hasData && c->numElements() <= kMaxFoldElements)
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

} // namespace

LogicalResult importCast(ImportContext &ctx) {
  if (failed(checkCastAttributes(ctx, {"to"})))
    return failure();
  if (!ctx.attribute("to"))
    return ctx.error("attribute 'to' is required");
  return castInputTo(ctx, static_cast<DType>(ctx.intAttr("to", 0)));
}

LogicalResult importCastLike(ImportContext &ctx) {
  if (failed(checkCastAttributes(ctx, {})))
    return failure();
  FailureOr<RankedTensorType> target = ctx.inputType(1);
  if (failed(target))
    return failure();
  std::optional<DType> to = dtypeOf(target->getElementType());
  if (!to)
    return ctx.error("target_type has an unsupported element type");
  return castInputTo(ctx, *to);
}

LogicalResult importIdentity(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is required");
  Slot *slot = ctx.lookup(ctx.node().inputs[0]);
  if (const std::vector<Slot> *elements = ctx.sequence(ctx.node().inputs[0]); !slot && elements)
    return ctx.setSequenceOutput(0, *elements);
  if (!slot)
    return ctx.error("input '" + ctx.node().inputs[0] + "' is not defined before this node");
  if (!ctx.hasOutput(0))
    return success();
  return ctx.define(ctx.node().outputs[0], *slot);
}

} // namespace fsdp::onnx
