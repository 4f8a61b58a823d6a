//===- UnscaleGradients.cpp - fp16 dynamic loss scaling: unscale, skip ----===//
//
// torch's GradScaler.unscale_ multiplies each gradient by inv_scale and
// sets found_inf when any element is not finite; ShardedGradScaler then
// all-reduces found_inf (a sum: any rank's overflow skips every rank's
// step) and step() skips optimizer.step() when it is set. Here the same
// happens inside the compiled step, per flat group, right after its
// gradient shard is reduced: `g * inv_scale`; the flag is max over the
// shard of is_nan(u - u) (u - u is NaN exactly when u is inf or NaN), the
// groups' flags combine with max, and the world's with one all-reduce sum
// of the 0/1 flag (the CPU communicators have no max; a sum is non-zero
// exactly when some rank's flag is). Gradient clipping (its own pass)
// runs after this one, so it sees unscaled gradients, as torch's recipe
// (unscale_, then clip_grad_norm_) does.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/UnscaleGradients.h"

#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fsdp {
namespace {

/// "optimizer:UNIT" (the update's location) -> "loss_scale:UNIT.what".
Location locFor(OpBuilder &b, Operation *update, StringRef what) {
  std::string unit = "step";
  if (auto name = dyn_cast<NameLoc>(update->getLoc()))
    unit = name.getName().getValue().rsplit(':').second.str();
  return NameLoc::get(b.getStringAttr("loss_scale:" + unit + "." + what.str()));
}

/// The unscaled gradient of `update`, placed right after its gradient is
/// computed, and this rank's flag for it (an f32 scalar, 1 when an
/// element is inf or NaN).
std::pair<Value, Value> unscale(OpBuilder &b, Operation *update, Value invScale) {
  Value grad = update->getOperand(1);
  b.setInsertionPointAfterValue(grad);
  auto type = cast<RankedTensorType>(grad.getType());
  Value unscaled = b.create<nn::MulOp>(locFor(b, update, "unscale"), type, grad, invScale);
  Value zeroOrNaN = b.create<nn::SubOp>(locFor(b, update, "nonfinite"), type, unscaled, unscaled);
  Value mask = b.create<nn::IsNaNOp>(locFor(b, update, "nonfinite"), type.clone(b.getI1Type()),
                                     zeroOrNaN);
  Value flags = b.create<nn::CastOp>(locFor(b, update, "nonfinite"), type, mask);
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    axes.push_back(d);
  Value flag = b.create<nn::ReduceMaxOp>(locFor(b, update, "found_inf"),
                                         RankedTensorType::get({}, b.getF32Type()), flags,
                                         b.getDenseI64ArrayAttr(axes), b.getBoolAttr(false));
  return {unscaled, flag};
}

} // namespace

LogicalResult unscaleGradients(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to unscale (run the train stage first)");
  if (!step.getBody().hasOneBlock())
    return step.emitError("gradient unscaling needs a single-block @train_step");
  Block &body = step.getBody().front();
  Value scale;
  for (BlockArgument arg : body.getArguments()) {
    if (step.getArgAttr(arg.getArgNumber(), nn::kInvLossScaleAttr))
      return step.emitError("@train_step's gradients are already unscaled");
    if (step.getArgAttr(arg.getArgNumber(), nn::kLossScaleAttr))
      scale = arg;
  }
  if (!scale)
    return step.emitError("@train_step has no loss-scale argument (build it with "
                          "fsdp-build-train-step{loss-scale=true})");
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isa<nn::AdamWOp, nn::SgdOp>(op))
      updates.push_back(&op);
  if (updates.empty())
    return step.emitError("@train_step has no optimizer update to unscale the gradients of");

  OpBuilder b(step.getContext());
  auto scalarType = RankedTensorType::get({}, b.getF32Type());
  const unsigned invIndex = step.getNumArguments();
  step.insertArgument(invIndex, scalarType,
                      b.getDictionaryAttr(b.getNamedAttr(nn::kInvLossScaleAttr, b.getUnitAttr())),
                      step.getLoc());
  Value invScale = body.getArgument(invIndex);

  SmallVector<Value> flags;
  for (Operation *update : updates) {
    auto [unscaled, flag] = unscale(b, update, invScale);
    update->setOperand(1, unscaled);
    flags.push_back(flag);
  }
  // The step's flag, before the first update: every group's, then every
  // rank's.
  Operation *first = updates.front();
  for (Operation *update : updates)
    if (update->isBeforeInBlock(first))
      first = update;
  b.setInsertionPoint(first);
  auto stepLoc = [&](StringRef what) {
    return NameLoc::get(b.getStringAttr("loss_scale:" + what.str()));
  };
  Value found = flags.front();
  for (Value flag : ArrayRef(flags).drop_front())
    found = b.create<nn::MaxOp>(stepLoc("found_inf"), scalarType, found, flag);
  auto world = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr);
  const int64_t n = world ? world.getInt() : 1;
  if (n > 1) {
    found = b.create<dist::AllReduceOp>(stepLoc("found_inf.all_reduce"), scalarType, found,
                                        b.getDenseI64ArrayAttr(consecutiveGroups(n)), b.getI64IntegerAttr(n),
                                        b.getStringAttr("sum"));
  }
  for (Operation *update : updates) {
    if (auto adam = dyn_cast<nn::AdamWOp>(update))
      adam.getFoundInfMutable().assign(found);
    else
      cast<nn::SgdOp>(update).getFoundInfMutable().assign(found);
  }

  // The flag is returned for the runtime's scaler.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Value> results(ret.getOperands());
  results.push_back(found);
  SmallVector<DictionaryAttr> attrs;
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    attrs.push_back(step.getResultAttrDict(i) ? step.getResultAttrDict(i)
                                               : b.getDictionaryAttr({}));
  attrs.push_back(b.getDictionaryAttr(
      {b.getNamedAttr(nn::kOutputAttr, b.getStringAttr(kFoundInfOutput)),
       b.getNamedAttr(nn::kFoundInfAttr, b.getUnitAttr())}));
  setStepResults(step, results, attrs);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_UNSCALEGRADIENTSPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct UnscaleGradientsPass : impl::UnscaleGradientsPassBase<UnscaleGradientsPass> {
  using Base::Base;
  void runOnOperation() final {
    if (failed(unscaleGradients(getOperation())))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
