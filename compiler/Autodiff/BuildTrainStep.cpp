//===- BuildTrainStep.cpp - reverse-mode autodiff of the forward function -===//
//
// Two sweeps over the cloned forward body. Forward: activity analysis marks
// the float values that depend on a trainable parameter ("varied"); only
// those need gradients, so mask and index computations are never
// differentiated. Backward, in reverse op order: each op whose results
// received gradients and which has a varied operand builds its operands'
// gradients through GradientOpInterface; a value used several times (a
// residual stream, tied embeddings, a broadcast bias) accumulates the
// contributions by addition, in reverse use order. A parameter the loss
// does not depend on gets no gradient and, as in torch (grad is None), no
// update.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/BuildTrainStep.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/gradients/GradientBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Regex.h"

using namespace mlir;

namespace fsdp {

void eraseDeadOps(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (isOpTriviallyDead(op))
      op->erase();
}

void setStepResults(func::FuncOp step, ArrayRef<Value> results, ArrayRef<DictionaryAttr> attrs) {
  auto ret = cast<func::ReturnOp>(step.getBody().front().getTerminator());
  OpBuilder(ret).create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  step.setType(FunctionType::get(step.getContext(), step.getArgumentTypes(), types));
  step.setAllResultAttrs(attrs);
}

namespace {

class TrainStepBuilder {
public:
  TrainStepBuilder(func::FuncOp step, const TrainStepOptions &options)
      : step(step), options(options), body(step.getBody().front()) {}

  LogicalResult run();

private:
  void markVaried(ArrayRef<BlockArgument> trainable);
  LogicalResult differentiate(Operation *op, OpBuilder &builder);
  void accumulate(Value value, Value grad, OpBuilder &builder, Location loc);

  func::FuncOp step;
  const TrainStepOptions &options;
  Block &body;
  llvm::DenseSet<Value> varied;
  llvm::DenseMap<Value, Value> grads;
};

void TrainStepBuilder::markVaried(ArrayRef<BlockArgument> trainable) {
  for (BlockArgument arg : trainable)
    varied.insert(arg);
  for (Operation &op : body.without_terminator()) {
    if (llvm::none_of(op.getOperands(), [&](Value v) { return varied.count(v); }))
      continue;
    for (Value result : op.getResults())
      if (nn::isDifferentiable(result))
        varied.insert(result);
  }
}

void TrainStepBuilder::accumulate(Value value, Value grad, OpBuilder &builder, Location loc) {
  Value &slot = grads[value];
  slot = slot ? nn::GradientBuilder(builder, loc).add(slot, grad) : grad;
}

LogicalResult TrainStepBuilder::differentiate(Operation *op, OpBuilder &builder) {
  SmallVector<Value> resultGrads;
  bool any = false;
  for (Value r : op->getResults()) {
    resultGrads.push_back(grads.lookup(r));
    any |= static_cast<bool>(resultGrads.back());
  }
  if (!any || llvm::none_of(op->getOperands(), [&](Value v) { return varied.count(v); }))
    return success();
  auto rule = dyn_cast<nn::GradientOpInterface>(op);
  if (!rule)
    return op->emitOpError("has no gradient rule, but the loss depends on a parameter through it");
  SmallVector<Value> operandGrads;
  if (failed(rule.buildGradients(builder, resultGrads, operandGrads)))
    return failure();
  if (operandGrads.size() != op->getNumOperands())
    return op->emitOpError("gradient rule returned ")
           << operandGrads.size() << " gradients for " << op->getNumOperands() << " operands";
  for (auto [index, operand, grad] : llvm::enumerate(op->getOperands(), operandGrads)) {
    if (!varied.count(operand))
      continue;
    // A rule may decline an operand (class weights of a loss, as in torch),
    // but a parameter must then not flow into it: a silent zero gradient
    // would train the model wrongly.
    if (!grad)
      return op->emitOpError("has no gradient for operand #")
             << index << ", which depends on a trainable parameter; freeze that parameter "
             << "with --freeze=REGEX";
    if (grad.getType() != operand.getType())
      return op->emitOpError("gradient rule built a gradient of type ")
             << grad.getType() << " for an operand of type " << operand.getType();
    accumulate(operand, grad, builder, op->getLoc());
  }
  return success();
}

LogicalResult TrainStepBuilder::run() {
  if (step.getNumResults() != 1)
    return step.emitError("autodiff needs a forward function returning only the loss");
  std::optional<llvm::Regex> freeze;
  if (!options.freezeRegex.empty())
    freeze.emplace(options.freezeRegex, llvm::Regex::NoFlags);

  SmallVector<BlockArgument> trainable;
  SmallVector<std::string> names;
  for (BlockArgument arg : body.getArguments()) {
    auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParamAttr);
    if (!name || !nn::isDifferentiable(arg) || (freeze && freeze->match(name.getValue())))
      continue;
    trainable.push_back(arg);
    names.push_back(name.str());
  }
  if (trainable.empty())
    return step.emitError("the model has no trainable parameters")
           << (freeze ? " (--freeze matched every float parameter)" : "");
  markVaried(trainable);

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Value loss = ret.getOperand(0);
  if (!varied.count(loss))
    return step.emitError("the loss does not depend on any trainable parameter");
  // The op computing the loss marks where an evaluation's forward pass
  // ends (the plan's eval prefix, compiler/Target/EvalPrefix.h).
  if (Operation *lossOp = loss.getDefiningOp())
    lossOp->setAttr(dist::kEvalLossAttr, UnitAttr::get(step.getContext()));
  OpBuilder builder(ret);
  nn::GradientBuilder seed(builder, loss.getLoc());
  // d loss / d loss: 1, or under dynamic loss scaling the step's scale, an
  // f32 argument the runtime writes (torch's backward of loss * scale
  // seeds the loss with exactly the scale).
  Value one = seed.scalarLike(loss, 1.0);
  if (options.lossScale) {
    if (!isa<FloatType>(nn::elementTypeOfValue(loss)))
      return step.emitError("loss scaling needs a float loss, not ")
             << nn::elementTypeOfValue(loss);
    for (BlockArgument arg : body.getArguments())
      if (step.getArgAttr(arg.getArgNumber(), nn::kLossScaleAttr))
        return step.emitError("@forward already has a loss-scale argument");
    unsigned index = step.getNumArguments();
    step.insertArgument(index, RankedTensorType::get({}, builder.getF32Type()),
                        builder.getDictionaryAttr(
                            builder.getNamedAttr(nn::kLossScaleAttr, builder.getUnitAttr())),
                        step.getLoc());
    // torch: loss * scale (an f32 0-dim tensor) is f32, and autograd hands
    // the loss the gradient cast to its own dtype: an f16 loss's seed is
    // the scale rounded to f16 (inf for 65536, so torch's first f16 step
    // overflows and is skipped: GradScaler then halves the scale).
    one = seed.cast(body.getArgument(index), nn::elementTypeOfValue(loss));
  }
  grads[loss] = seed.reshape(one, nn::shapeOfValue(loss));

  SmallVector<Operation *> forwardOps;
  for (Operation &op : body.without_terminator())
    forwardOps.push_back(&op);
  for (Operation *op : llvm::reverse(forwardOps))
    if (failed(differentiate(op, builder)))
      return failure();

  SmallVector<Value> results{loss};
  DictionaryAttr lossAttrs = step.getResultAttrDict(0);
  SmallVector<DictionaryAttr> resultAttrs{lossAttrs ? lossAttrs : builder.getDictionaryAttr({})};
  for (auto [arg, name] : llvm::zip(trainable, names)) {
    Value grad = grads.lookup(arg);
    if (!grad)
      continue; // unused by the loss: no gradient, no update (torch: grad is None)
    results.push_back(grad);
    resultAttrs.push_back(
        builder.getDictionaryAttr(builder.getNamedAttr(nn::kGradAttr, builder.getStringAttr(name))));
  }
  setStepResults(step, results, resultAttrs);
  eraseDeadOps(body);
  return success();
}

} // namespace

LogicalResult buildTrainStep(ModuleOp module, const TrainStepOptions &options) {
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return module.emitError("no @forward function to differentiate");
  if (!forward.getBody().hasOneBlock())
    return forward.emitError("autodiff needs a single-block function");
  if (module.lookupSymbol(kTrainStepName))
    return module.emitError("the module already has a @train_step");
  std::string why;
  if (!options.freezeRegex.empty() && !llvm::Regex(options.freezeRegex).isValid(why))
    return module.emitError("invalid --freeze regex: ") << why;
  func::FuncOp step = forward.clone();
  step.setName(kTrainStepName);
  module.push_back(step);
  if (failed(TrainStepBuilder(step, options).run())) {
    step.erase();
    return failure();
  }
  forward.erase();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_BUILDTRAINSTEPPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct BuildTrainStepPass : impl::BuildTrainStepPassBase<BuildTrainStepPass> {
  using Base::Base;
  void runOnOperation() final {
    if (failed(buildTrainStep(getOperation(), {freeze, lossScale})))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
