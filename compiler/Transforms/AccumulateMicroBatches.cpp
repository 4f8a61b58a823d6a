//===- AccumulateMicroBatches.cpp - K micro-batches per optimizer step ----===//
//
// The rewrite, on the sharded (or unsharded) @train_step:
//   1. Targets. Per optimizer update, the value accumulated across
//      micro-batches: its gradient operand under `each` (the reduced shard),
//      or the packed flat gradient the reduction reads (fsdp.flatten) under
//      `last`; an unsharded step has no reduction and accumulates the
//      gradient itself. The loss before its rank average is a target too.
//   2. The micro-batch. Every op the targets need (their backward slice),
//      except constants and persistent all-gathers: a persistent buffer
//      holds its shard in place and is gathered once per step (grad-op and
//      the root unit keep their copy across micro-batches, as FSDP's
//      SHARD_GRAD_OP does); every other all-gather is repeated per
//      micro-batch, as FSDP re-gathers per forward and backward.
//   3. Unrolling. Inputs become K*b rows; micro-batch k reads rows
//      [k*b, (k+1)*b) through an nn.slice. Micro-batch 0 is the original
//      ops; micro-batches 1..K-1 are clones placed in order after its last
//      op, each target summed into its accumulator right after the clone
//      computing it, so at most one micro-batch's activations are live.
//      Clones of the op marking the forward loss for evaluation lose that
//      mark: the eval pass runs micro-batch 0's forward. Dropout clones get
//      a seed of their own per micro-batch (the masks differ, as torch's
//      would across K forward passes).
//   4. The end. Each accumulator times 1/K replaces its target where the
//      rest of the step read it; ops of the original step that read a
//      target and sat inside micro-batch 0 (the `last` reductions) move
//      behind the last micro-batch.
// Sums run in micro-batch order on every rank, and the reductions are the
// shard stage's, so --shard=full, grad-op and none still compute the same
// bits at one world size and accumulation mode.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/AccumulateMicroBatches.h"

#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/gradients/GradientBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace fsdp {
namespace {

/// Attributes marking the forward loss for an evaluation pass: kept on
/// micro-batch 0 only.
constexpr llvm::StringLiteral kEvalMarks[] = {"fsdp.eval_loss", "nn.forward_loss"};

/// One optimizer update and what accumulates for it.
struct Group {
  std::string name;
  Operation *update = nullptr;
  Value target;
  bool last = false;
};

class Accumulator {
public:
  Accumulator(func::FuncOp step, const AccumulateOptions &options)
      : step(step), options(options), body(step.getBody().front()), b(step.getContext()) {}
  LogicalResult run();

private:
  LogicalResult findGroups();
  LogicalResult sliceInputs();
  void collectMicroBatch();

  func::FuncOp step;
  const AccumulateOptions &options;
  Block &body;
  OpBuilder b;
  std::vector<Group> groups;
  Value loss;                         // the local loss, before any rank average
  SmallVector<std::pair<BlockArgument, Value>> inputs; // argument, micro-batch 0's slice
  llvm::SetVector<Operation *> microBatch;             // in program order
};

/// The name of the flat group (or parameter) an update writes.
std::string groupName(func::FuncOp step, Value param) {
  auto arg = dyn_cast<BlockArgument>(param);
  if (!arg)
    return "?";
  if (auto unit = step.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(), dist::kUnitAttr))
    if (auto name = unit.getAs<StringAttr>("name"))
      return name.str();
  if (auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParamAttr))
    return name.str();
  return "?";
}

LogicalResult Accumulator::findGroups() {
  for (Operation &op : body) {
    if (!isa<nn::AdamWOp, nn::SgdOp>(op))
      continue;
    Group g;
    g.update = &op;
    g.name = groupName(step, op.getOperand(0));
    g.last = options.reduce == AccumReduceKind::Last ||
             llvm::is_contained(options.lastUnits, g.name);
    g.target = op.getOperand(1);
    if (g.last) {
      // Back through the reduction chain (casts for bf16 reduction, the
      // reduce-scatter or all-reduce, hybrid's replica all-reduce) to the
      // packed flat gradient.
      // An unsharded step reduces nothing: the gradient itself is summed.
      Value v = g.target;
      bool reduced = false;
      while (Operation *def = v.getDefiningOp()) {
        if (isa<dist::FlattenOp>(def))
          break;
        if (!isa<nn::CastOp, dist::ReduceScatterOp, dist::AllReduceOp>(def)) {
          if (reduced)
            return op.emitError("accumulating '")
                   << g.name << "' unsharded: its gradient is not a reduction of fsdp.flatten";
          v = g.target;
          break;
        }
        reduced |= !isa<nn::CastOp>(def);
        v = def->getOperand(0);
      }
      g.target = v;
    }
    groups.push_back(std::move(g));
  }
  if (groups.empty())
    return step.emitError("gradient accumulation needs optimizer updates (nn.adamw, nn.sgd) "
                          "in @train_step");
  for (const std::string &name : options.lastUnits)
    if (llvm::none_of(groups, [&](const Group &g) { return g.name == name; }))
      return step.emitError("last-units names '") << name << "', which is no flat group of the step";
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0)
    return step.emitError("the step returns no loss");
  loss = ret.getOperand(0);
  if (auto mean = loss.getDefiningOp<dist::AllReduceOp>())
    loss = mean.getInput();
  if (!loss.getDefiningOp())
    return step.emitError("the step's loss is not computed in it");
  return success();
}

LogicalResult Accumulator::sliceInputs() {
  const int64_t k = options.microBatches;
  b.setInsertionPointToStart(&body);
  for (BlockArgument arg : body.getArguments()) {
    auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kInputAttr);
    if (!name)
      continue;
    auto type = cast<RankedTensorType>(arg.getType());
    if (type.getRank() == 0)
      return step.emitError("input '") << name.getValue()
                                      << "' has no batch dimension to split into micro-batches";
    SmallVector<int64_t> shape(type.getShape());
    shape[0] *= k;
    arg.setType(type.clone(shape));
    Value slice = b.create<nn::SliceOp>(
        NameLoc::get(b.getStringAttr("accum:" + name.getValue() + ".micro_batch0")), type, arg,
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 0)),
        b.getDenseI64ArrayAttr(type.getShape()),
        b.getDenseI64ArrayAttr(SmallVector<int64_t>(type.getRank(), 1)));
    arg.replaceAllUsesExcept(slice, slice.getDefiningOp());
    inputs.push_back({arg, slice});
  }
  if (inputs.empty())
    return step.emitError("gradient accumulation needs a batch input (nn.input)");
  SmallVector<Type> types(step.getArgumentTypes());
  for (auto [arg, slice] : inputs)
    types[arg.getArgNumber()] = arg.getType();
  step.setType(FunctionType::get(step.getContext(), types, step.getResultTypes()));
  return success();
}

void Accumulator::collectMicroBatch() {
  llvm::DenseSet<Operation *> needed;
  SmallVector<Value> work{loss};
  for (const Group &g : groups)
    work.push_back(g.target);
  while (!work.empty()) {
    Operation *def = work.pop_back_val().getDefiningOp();
    if (!def || def->getBlock() != &body || !needed.insert(def).second)
      continue;
    auto gather = dyn_cast<dist::AllGatherOp>(def);
    if (isa<nn::ConstantOp>(def) || (gather && gather.getPersistent()))
      continue;
    work.append(def->operand_begin(), def->operand_end());
  }
  for (Operation &op : body) {
    auto gather = dyn_cast<dist::AllGatherOp>(op);
    if (needed.count(&op) && !isa<nn::ConstantOp>(op) && !(gather && gather.getPersistent()))
      microBatch.insert(&op);
  }
}

LogicalResult Accumulator::run() {
  const int64_t k = options.microBatches;
  if (failed(findGroups()) || failed(sliceInputs()))
    return failure();
  collectMicroBatch();
  if (microBatch.empty())
    return step.emitError("the step's loss and gradients depend on no batch computation");
  // Micro-batch 0 is in program order; its clones go right after it.
  Operation *tail = microBatch.back()->getNextNode();

  // The targets (and the loss) by value, and their running sums.
  SmallVector<Value> targets{loss};
  for (const Group &g : groups)
    targets.push_back(g.target);
  llvm::DenseMap<Value, Value> sum; // target of micro-batch 0 -> its running sum
  for (Value t : targets)
    sum[t] = t;
  llvm::DenseSet<Operation *> accumulations;

  b.setInsertionPoint(tail);
  for (int64_t m = 1; m < k; ++m) {
    IRMapping mapping;
    for (auto &[arg, slice] : inputs) {
      auto type = cast<RankedTensorType>(slice.getType());
      SmallVector<int64_t> starts(type.getRank(), 0), ends(type.getShape());
      starts[0] = m * type.getDimSize(0);
      ends[0] = starts[0] + type.getDimSize(0);
      auto sliceOp = slice.getDefiningOp<nn::SliceOp>();
      Operation *clone = b.clone(*sliceOp);
      clone->setAttr("starts", b.getDenseI64ArrayAttr(starts));
      clone->setAttr("ends", b.getDenseI64ArrayAttr(ends));
      std::string locName = "accum:" +
                            step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kInputAttr)
                                .getValue()
                                .str() +
                            ".micro_batch" + std::to_string(m);
      clone->setLoc(NameLoc::get(b.getStringAttr(locName)));
      mapping.map(slice, clone->getResult(0));
    }
    for (Operation *op : microBatch) {
      if (isa<nn::SliceOp>(op) && mapping.contains(op->getResult(0)))
        continue; // the input slices, made above
      Operation *clone = b.clone(*op, mapping);
      for (StringRef mark : kEvalMarks)
        clone->removeAttr(mark);
      if (isa<dist::AllGatherOp>(clone))
        clone->setAttr(dist::kMicroBatchAttr, b.getI64IntegerAttr(m));
      // A dropout mask is a function of its seed, the step and the element:
      // each micro-batch draws its own (its recomputed copies, cloned with
      // it, the same one).
      // A fused attention's dropout (and its gradient's, which draws the
      // same bits again) likewise.
      auto reseed = [&](std::optional<int64_t> old) {
        uint64_t seed = static_cast<uint64_t>(old.value_or(0));
        seed ^= static_cast<uint64_t>(m) * 0x9E3779B97F4A7C15ull;
        return b.getI64IntegerAttr(static_cast<int64_t>(seed >> 1));
      };
      if (auto dropout = dyn_cast<nn::DropoutOp>(clone))
        dropout.setSeedAttr(reseed(dropout.getSeed()));
      if (auto attention = dyn_cast<nn::AttentionOp>(clone); attention && !attention.getDropoutP().isZero())
        attention.setSeedAttr(reseed(attention.getSeed()));
      if (auto grad = dyn_cast<nn::AttentionGradOp>(clone); grad && !grad.getDropoutP().isZero())
        grad.setSeedAttr(reseed(grad.getSeed()));
      for (auto [old, now] : llvm::zip(op->getResults(), clone->getResults())) {
        auto it = sum.find(old);
        if (it == sum.end())
          continue;
        nn::GradientBuilder g(b, NameLoc::get(b.getStringAttr("accum:sum")));
        it->second = g.add(it->second, now);
        accumulations.insert(it->second.getDefiningOp());
      }
    }
  }

  // Each sum times 1/K (one constant per element type) stands for its
  // target in the rest of the step.
  llvm::DenseMap<Value, Value> finals;
  llvm::DenseMap<Type, Value> inverseK;
  for (Value t : targets) {
    nn::GradientBuilder g(b, NameLoc::get(b.getStringAttr("accum:mean")));
    Type element = cast<RankedTensorType>(t.getType()).getElementType();
    Value &scale = inverseK[element];
    if (!scale)
      scale = g.scalarLike(t, 1.0 / static_cast<double>(k));
    Value mean = g.mul(sum[t], scale);
    finals[t] = mean;
    t.replaceUsesWithIf(mean, [&](OpOperand &use) {
      Operation *user = use.getOwner();
      return !microBatch.contains(user) && !accumulations.count(user) &&
             user != mean.getDefiningOp();
    });
  }
  // Ops of micro-batch 0's span that now read a final (the `last`
  // reductions) follow it, in their order.
  llvm::DenseSet<Value> moved;
  for (auto &[t, mean] : finals)
    moved.insert(mean);
  SmallVector<Operation *> toMove;
  for (Operation &op : body) {
    if (&op == tail)
      break;
    if (microBatch.contains(&op))
      continue;
    if (llvm::any_of(op.getOperands(), [&](Value v) { return moved.count(v); })) {
      toMove.push_back(&op);
      moved.insert(op.result_begin(), op.result_end());
    }
  }
  for (Operation *op : toMove)
    op->moveBefore(tail);

  ModuleOp module = step->getParentOfType<ModuleOp>();
  module->setAttr(dist::kGradAccumAttr, b.getI64IntegerAttr(k));
  SmallVector<NamedAttribute> choices;
  for (const Group &g : groups)
    choices.push_back(b.getNamedAttr(g.name, b.getStringAttr(g.last ? "last" : "each")));
  module->setAttr(dist::kAccumulationAttr, b.getDictionaryAttr(choices));
  return success();
}

} // namespace

LogicalResult accumulateMicroBatches(ModuleOp module, const AccumulateOptions &options) {
  if (options.microBatches < 1)
    return module.emitError("micro-batches must be >= 1, not ") << options.microBatches;
  if (options.reduce == AccumReduceKind::Auto)
    return module.emitError("reduce=auto is chosen by fsdp-opt (--accum-reduce=auto); the pass "
                            "takes each or last");
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to accumulate (run the train stage first)");
  if (!step.getBody().hasOneBlock())
    return step.emitError("gradient accumulation needs a single-block @train_step");
  if (module->hasAttr(dist::kGradAccumAttr))
    return step.emitError("@train_step already accumulates micro-batches");
  if (options.microBatches == 1)
    return success();
  return Accumulator(step, options).run();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_ACCUMULATEMICROBATCHESPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct AccumulateMicroBatchesPass
    : impl::AccumulateMicroBatchesPassBase<AccumulateMicroBatchesPass> {
  using Base::Base;
  void runOnOperation() final {
    AccumulateOptions o;
    o.microBatches = microBatches;
    o.reduce = reduce;
    o.lastUnits.assign(lastUnits.begin(), lastUnits.end());
    if (failed(accumulateMicroBatches(getOperation(), o)))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
