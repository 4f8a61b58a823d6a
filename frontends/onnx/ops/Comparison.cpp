//===- Comparison.cpp - import of comparisons, logic, IsNaN/IsInf, Max/Min -===//
//
// torch 2.x's exporters build attention masks from positions with Equal,
// Less(OrEqual), Greater(OrEqual), And/Or and Max on constants, and guard
// SDPA's softmax with Where(IsNaN(p), 0, p) on activations. Constant operands
// fold on the host (comparisons of floats are exact, so they fold too), so a
// mask chain leaves no ops behind; everything else becomes nn.compare,
// nn.logical, nn.is_nan, nn.is_inf, nn.max or nn.min.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

/// Both inputs' constant values when they can be evaluated on the host.
bool foldableOperands(ImportContext &ctx, const Tensor *&a, const Tensor *&b,
                      ArrayRef<int64_t> shape) {
  a = ctx.constantInput(0);
  b = ctx.constantInput(1);
  return a && b && a->hasData && b->hasData && a->numElements() <= kMaxFoldElements &&
         b->numElements() <= kMaxFoldElements && nn::numElements(shape) <= kMaxFoldElements;
}

/// The broadcast shape of inputs 0 and 1 after checking they share an
/// element type.
FailureOr<nn::Shape> binaryShape(ImportContext &ctx) {
  FailureOr<RankedTensorType> lhs = ctx.inputType(0), rhs = ctx.inputType(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  if (lhs->getElementType() != rhs->getElementType())
    return ctx.error("operand element types differ");
  return nn::broadcastShapes({lhs->getShape(), rhs->getShape()}, ctx.errorFn());
}

/// Equal/Less/... (`predicate`) and And/Or/Xor (`logic`): bool results.
template <typename OpTy>
LogicalResult importPredicate(ImportContext &ctx, StringRef name, bool boolOperands) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<nn::Shape> shape = binaryShape(ctx);
  if (failed(shape))
    return failure();
  Type element = ctx.inputType(0)->getElementType();
  bool isBool = element.isInteger(1);
  if (boolOperands && !isBool)
    return ctx.error("operands must be bool");
  if (!boolOperands && isBool && name != "eq")
    return ctx.error("bool operands are not ordered");
  const Tensor *a, *b;
  if (foldableOperands(ctx, a, b, *shape))
    return ctx.setConstantOutput(0, foldPredicate(name, *a, *b, *shape));
  FailureOr<InputInfo> lhs = getInput(ctx, 0), rhs = getInput(ctx, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  auto type = ctx.tensorType(*shape, ctx.builder().getI1Type());
  return ctx.setOutput(0, ctx.builder().create<OpTy>(ctx.loc(), type,
                                                     ctx.builder().getStringAttr(name),
                                                     lhs->value, rhs->value));
}

LogicalResult importCompare(ImportContext &ctx, StringRef predicate) {
  return importPredicate<nn::CompareOp>(ctx, predicate, /*boolOperands=*/false);
}
LogicalResult importLogic(ImportContext &ctx, StringRef op) {
  return importPredicate<nn::LogicalOp>(ctx, op, /*boolOperands=*/true);
}

/// Max and Min: variadic, chained left to right with broadcasting.
template <typename OpTy> LogicalResult importMinMax(ImportContext &ctx, bool isMax) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  size_t n = ctx.numInputs();
  if (n == 0)
    return ctx.error("needs at least one input");
  // All-constant integer chains (mask lengths, clamped positions) fold.
  std::optional<Tensor> folded;
  for (size_t i = 0; i < n; ++i) {
    const Tensor *c = ctx.constantInput(i);
    if (!c || !isFoldableInteger(*c) || c->dtype == DType::Bool) {
      folded.reset();
      break;
    }
    if (!folded) {
      folded = *c;
      continue;
    }
    FailureOr<nn::Shape> shape = nn::broadcastShapes({folded->dims, c->dims}, ctx.errorFn());
    if (failed(shape))
      return failure();
    if (folded->dtype != c->dtype)
      return ctx.error("operand element types differ");
    if (nn::numElements(*shape) > kMaxFoldElements) {
      folded.reset();
      break;
    }
    folded = foldMinMax(isMax, *folded, *c, *shape);
  }
  if (folded)
    return ctx.setConstantOutput(0, std::move(*folded));
  FailureOr<InputInfo> first = getInput(ctx, 0);
  if (failed(first))
    return failure();
  Value acc = first->value;
  for (size_t i = 1; i < n; ++i) {
    FailureOr<InputInfo> next = getInput(ctx, i);
    if (failed(next))
      return failure();
    if (next->element() != first->element())
      return ctx.error("operand element types differ");
    auto accType = cast<RankedTensorType>(acc.getType());
    FailureOr<nn::Shape> shape =
        nn::broadcastShapes({accType.getShape(), next->shape()}, ctx.errorFn());
    if (failed(shape))
      return failure();
    acc = ctx.builder().create<OpTy>(ctx.loc(), ctx.tensorType(*shape, first->element()), acc,
                                     next->value);
  }
  return ctx.setOutput(0, acc);
}

} // namespace

LogicalResult importEqual(ImportContext &ctx) { return importCompare(ctx, "eq"); }
LogicalResult importLess(ImportContext &ctx) { return importCompare(ctx, "lt"); }
LogicalResult importLessOrEqual(ImportContext &ctx) { return importCompare(ctx, "le"); }
LogicalResult importGreater(ImportContext &ctx) { return importCompare(ctx, "gt"); }
LogicalResult importGreaterOrEqual(ImportContext &ctx) { return importCompare(ctx, "ge"); }
LogicalResult importAnd(ImportContext &ctx) { return importLogic(ctx, "and"); }
LogicalResult importOr(ImportContext &ctx) { return importLogic(ctx, "or"); }
LogicalResult importXor(ImportContext &ctx) { return importLogic(ctx, "xor"); }

LogicalResult importIsNaN(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  if (!isa<FloatType>(input->element()))
    return ctx.error("input must be a float tensor");
  auto type = ctx.tensorType(input->shape(), ctx.builder().getI1Type());
  return ctx.setOutput(0, ctx.builder().create<nn::IsNaNOp>(ctx.loc(), type, input->value));
}

LogicalResult importIsInf(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"detect_negative", "detect_positive"})))
    return failure();
  bool negative = ctx.intAttr("detect_negative", 1) != 0;
  bool positive = ctx.intAttr("detect_positive", 1) != 0;
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input) || ctx.failed())
    return failure();
  if (!isa<FloatType>(input->element()))
    return ctx.error("input must be a float tensor");
  auto type = ctx.tensorType(input->shape(), ctx.builder().getI1Type());
  return ctx.setOutput(0, ctx.builder().create<nn::IsInfOp>(ctx.loc(), type, input->value,
                                                            negative, positive));
}

LogicalResult importMax(ImportContext &ctx) { return importMinMax<nn::MaxOp>(ctx, true); }
LogicalResult importMin(ImportContext &ctx) { return importMinMax<nn::MinOp>(ctx, false); }

} // namespace fsdp::onnx
