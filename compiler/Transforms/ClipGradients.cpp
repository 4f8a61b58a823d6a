//===- ClipGradients.cpp - gradient norm clipping before the optimizer ----===//
//
// The norm is built from ordinary nn ops right before the first optimizer
// update, where every gradient (or gradient shard) is final:
//   partial(x) = reduce_sum(x * x)            (2-norm)
//              = reduce_max(max(x, -x))       (inf-norm)
// combined over the updates in program order, so a rank's partial is
// ((p0 + p1) + p2) ... . The partials of the ranks are combined in rank
// order: by an fsdp.all_reduce (sum or max) over the shard group on a
// sharded step, whose CPU communicators add in rank order, or, under
// --shard=none, by the step itself over N chunks of each replicated
// gradient, chunk r being exactly the elements rank r would hold as its
// shard under --shard=full at that world size. Padding elements of a
// shard are zeros, which add nothing to a sum of squares and never win a
// max, so the chunks may be shorter than the shards. A gradient that goes
// to host memory (--offload=cpu) is scaled on the device before its copy.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ClipGradients.h"

#include "compiler/Analysis/FlatLayout.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/gradients/GradientBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fsdp {
namespace {

/// One optimizer update and where its gradient comes from.
struct Update {
  Operation *op;
  OpOperand *gradUse;     // the operand reading the device gradient
  dist::ToHostOp toHost;  // its copy to the host under --offload=cpu
  DictionaryAttr unit;    // the updated shard's fsdp.unit, if sharded
};

class Clipper {
public:
  Clipper(func::FuncOp step, const ClipOptions &options)
      : step(step), options(options), body(step.getBody().front()), b(step.getContext()),
        loc(NameLoc::get(b.getStringAttr("fsdp:clip_grad_norm"))), g(b, loc) {}
  LogicalResult run();

private:
  LogicalResult collectUpdates();
  Value partial(Value x);
  Value combine(Value acc, Value next);
  Value chunkPartials(int64_t rank, int64_t worldSize);
  Value allReduce(Value local, int64_t worldSize, int64_t groupSize);

  func::FuncOp step;
  const ClipOptions &options;
  Block &body;
  OpBuilder b;
  Location loc;
  nn::GradientBuilder g; // builds at b's insertion point, at `loc`
  SmallVector<Update> updates;
  Type element;
};

LogicalResult Clipper::collectUpdates() {
  for (Operation &op : body) {
    if (!isa<nn::AdamWOp, nn::SgdOp>(op))
      continue;
    Update u{&op, &op.getOpOperand(1), {}, {}};
    if ((u.toHost = op.getOperand(1).getDefiningOp<dist::ToHostOp>()))
      u.gradUse = &u.toHost->getOpOperand(0);
    if (auto arg = dyn_cast<BlockArgument>(op.getOperand(0)); arg && arg.getOwner() == &body)
      u.unit = step.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(), dist::kUnitAttr);
    Type type = cast<RankedTensorType>(u.gradUse->get().getType()).getElementType();
    if (!isa<FloatType>(type))
      return op.emitOpError("gradient clipping needs a float gradient, not ") << type;
    if (element && type != element)
      return op.emitOpError("gradient clipping needs one gradient element type; this is ")
             << type << ", an earlier one " << element;
    element = type;
    if (!updates.empty() && static_cast<bool>(u.unit) != static_cast<bool>(updates[0].unit))
      return op.emitOpError("gradient clipping needs every update sharded, or none");
    updates.push_back(u);
  }
  if (updates.empty())
    return step.emitError("no optimizer update to clip (run fsdp-apply-optimizer)");
  // Every gradient must be final where the norm is computed.
  Operation *first = updates.front().op;
  for (const Update &u : updates)
    if (Operation *def = u.gradUse->get().getDefiningOp();
        def && def->getBlock() == &body && !def->isBeforeInBlock(first))
      return u.op->emitOpError("its gradient is computed after the first optimizer update; "
                               "gradient clipping needs every gradient before any update");
  return success();
}

Value Clipper::partial(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  Value terms = options.infNorm ? b.create<nn::MaxOp>(loc, type, x, g.neg(x)).getResult()
                                : g.mul(x, x);
  if (type.getRank() == 0)
    return terms;
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    axes.push_back(i);
  auto scalar = RankedTensorType::get({}, element);
  if (options.infNorm)
    return b.create<nn::ReduceMaxOp>(loc, scalar, terms, b.getDenseI64ArrayAttr(axes),
                                     b.getBoolAttr(false));
  return g.reduceSum(terms, axes, /*keepdims=*/false);
}

Value Clipper::combine(Value acc, Value next) {
  if (!acc)
    return next;
  return options.infNorm ? b.create<nn::MaxOp>(loc, acc.getType(), acc, next).getResult()
                         : g.add(acc, next);
}

/// Rank `rank`'s partial under --shard=none: over the chunk of each
/// replicated flat gradient that a --shard=full step of `worldSize` ranks
/// gives it (fsdp-shard-parameters{align-shards} sizes).
Value Clipper::chunkPartials(int64_t rank, int64_t worldSize) {
  Value acc;
  for (const Update &u : updates) {
    Value grad = u.gradUse->get();
    auto type = cast<RankedTensorType>(grad.getType());
    int64_t flat = cast<IntegerAttr>(u.unit.get("flat_numel")).getInt();
    int64_t shard =
        computeFlatLayout({flat}, worldSize, parameterAlignment(element), true).shardNumel;
    int64_t begin = rank * shard, end = std::min((rank + 1) * shard, type.getNumElements());
    if (begin >= end)
      continue; // that shard is padding only: its partial is +0
    Value chunk = grad;
    if (begin > 0 || end < type.getNumElements())
      chunk = b.create<nn::SliceOp>(loc, RankedTensorType::get({end - begin}, element), grad,
                                    b.getDenseI64ArrayAttr({begin}), b.getDenseI64ArrayAttr({end}),
                                    b.getDenseI64ArrayAttr({1}));
    acc = combine(acc, partial(chunk));
  }
  return acc ? acc : g.scalar(element, 0.0);
}

Value Clipper::allReduce(Value local, int64_t worldSize, int64_t groupSize) {
  // Consecutive shard groups, as the shards' gathers use.
  return b.create<dist::AllReduceOp>(
      NameLoc::get(b.getStringAttr("fsdp:clip_grad_norm.all_reduce")), local.getType(), local,
      b.getDenseI64ArrayAttr(consecutiveGroups(worldSize)), b.getI64IntegerAttr(groupSize),
      b.getStringAttr(options.infNorm ? "max" : "sum"));
}

LogicalResult Clipper::run() {
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto name = step.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
        name && name.getValue() == kGradNormOutput)
      return step.emitError("@train_step already outputs ") << kGradNormOutput;
  if (failed(collectUpdates()))
    return failure();
  b.setInsertionPoint(updates.front().op);

  int64_t worldSize = 1, groupSize = 1;
  if (auto world = step->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(
          dist::kWorldSizeAttr))
    worldSize = world.getInt();
  if (updates.front().unit) {
    groupSize = cast<IntegerAttr>(updates.front().unit.get("group_size")).getInt();
    for (const Update &u : updates)
      if (cast<IntegerAttr>(u.unit.get("group_size")).getInt() != groupSize)
        return u.op->emitOpError("gradient clipping needs one shard group size for every unit");
  }

  Value total;
  if (updates.front().unit && groupSize == 1 && worldSize > 1) {
    for (int64_t r = 0; r < worldSize; ++r)
      total = combine(total, chunkPartials(r, worldSize));
  } else {
    for (const Update &u : updates)
      total = combine(total, partial(u.gradUse->get()));
    if (groupSize > 1)
      total = allReduce(total, worldSize, groupSize);
  }
  Value norm = options.infNorm ? total : b.create<nn::SqrtOp>(loc, total.getType(), total);

  if (options.maxNorm > 0) {
    // torch: clip_coef = max_norm / (total_norm + 1e-6), clamped to 1.
    // One statement per op: argument evaluation order would reorder them.
    Value maxNorm = g.scalar(element, options.maxNorm);
    Value eps = g.scalar(element, 1e-6);
    Value coef = g.div(maxNorm, g.add(norm, eps));
    Value one = g.scalar(element, 1.0);
    coef = b.create<nn::MinOp>(loc, coef.getType(), coef, one);
    for (const Update &u : updates)
      u.gradUse->set(g.mul(u.gradUse->get(), coef));
    for (const Update &u : updates)
      if (u.toHost)
        u.toHost->moveBefore(u.op); // copies the scaled gradient
  }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  unsigned index = step.getNumResults();
  step.insertResult(index, norm.getType(),
                    b.getDictionaryAttr(b.getNamedAttr(nn::kOutputAttr,
                                                       b.getStringAttr(kGradNormOutput))));
  ret->insertOperands(ret->getNumOperands(), norm);
  return success();
}

} // namespace

LogicalResult clipGradients(ModuleOp module, const ClipOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to clip (run the train stage first)");
  if (!step.getBody().hasOneBlock())
    return step.emitError("gradient clipping needs a single-block @train_step");
  if (options.maxNorm < 0)
    return module.emitError("clip max-norm must be > 0 (0: only compute the norm), not ")
           << options.maxNorm;
  return Clipper(step, options).run();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_CLIPGRADIENTSPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct ClipGradientsPass : impl::ClipGradientsPassBase<ClipGradientsPass> {
  using Base::Base;
  void runOnOperation() final {
    if (normType != "2" && normType != "inf") {
      getOperation().emitError("norm-type must be 2 or inf, not '") << normType << "'";
      return signalPassFailure();
    }
    ClipOptions o;
    o.maxNorm = maxNorm;
    o.infNorm = normType == "inf";
    if (failed(clipGradients(getOperation(), o)))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
