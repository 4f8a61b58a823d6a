//===- RecomputeActivations.cpp - activation checkpointing ----------------===//
//
// Works by op positions in the one block of @train_step: everything at or
// before the loss op is forward, everything after it backward (the same
// boundary the shard stage uses). Regions are found in one forward scan;
// each region is then rewritten on its own: which of its values to drop,
// the ops those need, one clone of each at the region's first backward
// use, and the backward uses redirected to the clones. Regions never share
// ops and a clone only reads clones of its own region or values that stay
// saved, so the order regions are rewritten in does not matter.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/RecomputeActivations.h"

#include "compiler/Analysis/TrainableParameters.h"

#include "compiler/Analysis/WrapPolicy.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace fsdp {
namespace {

using Policy = RecomputeOptions::Policy;

/// A block's forward ops: positions [begin, end).
struct Region {
  std::string name;
  unsigned begin = 0, end = 0;
};

/// Ops whose outputs selective checkpointing keeps: the expensive ones
/// (matmuls; attention scores are matmuls) and the attention probabilities.
bool isSavedBySelective(Operation *op) { return isa<nn::MatMulOp, nn::GemmOp, nn::SoftmaxOp>(op); }

class Recomputer {
public:
  Recomputer(func::FuncOp step, const RecomputeOptions &options)
      : step(step), options(options), body(step.getBody().front()) {}
  FailureOr<RecomputeResult> run();

private:
  LogicalResult findRegions();
  void rewrite(const Region &region);
  bool isBackward(Operation *op) const {
    auto it = order.find(op);
    return it != order.end() && it->second > boundary;
  }

  func::FuncOp step;
  const RecomputeOptions &options;
  Block &body;
  llvm::DenseMap<Operation *, unsigned> order; // program order before the rewrite
  SmallVector<Operation *> ops;                // by position
  unsigned boundary = 0;                       // position of the loss op
  SmallVector<Region> regions;
};

LogicalResult Recomputer::findRegions() {
  // Trainable parameters (those with an update), in model order: the
  // parameters the shard stage wraps, so a checkpointed block is a unit.
  std::vector<TrainableParameter> trainable = trainableParameters(step);
  std::vector<WrapUnit> units = formUnits(wrapInfos(trainable), WrapPolicy{});
  if (units.size() < 2)
    return step.emitError("no repeated blocks to checkpoint: no trainable parameter names a "
                          "numbered block (such as 'layers.0.' or 'blocks.3.')");
  llvm::DenseMap<Value, size_t> unitOf;
  for (auto [u, unit] : llvm::enumerate(units))
    for (size_t p : unit.params)
      unitOf[trainable[p].arg] = u;

  // One scan: a region opens at the first op reading a block's parameter
  // and closes before the next op reading another unit's parameter.
  llvm::DenseSet<size_t> started;
  std::optional<size_t> open;
  for (unsigned pos = 0; pos < boundary; ++pos) {
    SmallVector<size_t> reads;
    for (Value operand : ops[pos]->getOperands())
      if (auto it = unitOf.find(operand); it != unitOf.end())
        reads.push_back(it->second);
    if (open && llvm::any_of(reads, [&](size_t u) { return u != *open; })) {
      regions.back().end = pos;
      open.reset();
    }
    if (open)
      continue;
    for (size_t u : reads)
      if (u != 0 && started.insert(u).second) { // unit 0 is the root
        regions.push_back({units[u].name, pos, boundary});
        open = u;
        break;
      }
  }
  return success();
}

void Recomputer::rewrite(const Region &region) {
  auto inRegion = [&](Operation *op) {
    auto it = order.find(op);
    return it != order.end() && it->second >= region.begin && it->second < region.end;
  };
  const bool selective = options.policy == Policy::Selective;

  // Which values stay saved and which the backward reads from a copy.
  llvm::DenseSet<Value> saved;
  SmallVector<Value> dropped;
  for (unsigned pos = region.begin; pos < region.end; ++pos) {
    Operation *op = ops[pos];
    bool keepAll = op->hasTrait<OpTrait::ConstantLike>() || !isMemoryEffectFree(op) ||
                   op->getNumRegions() != 0 || (selective && isSavedBySelective(op));
    for (Value v : op->getResults()) {
      bool keep = keepAll, backward = false;
      for (Operation *user : v.getUsers()) {
        if (isBackward(user))
          backward = true;
        else if (!inRegion(user)) // a later forward op, or the return
          keep = true;
      }
      if (keep)
        saved.insert(v);
      else if (backward)
        dropped.push_back(v);
    }
  }
  if (dropped.empty())
    return;

  // The region's ops the dropped values depend on through unsaved values.
  llvm::DenseSet<Operation *> needed;
  SmallVector<Operation *> worklist;
  for (Value v : dropped)
    worklist.push_back(v.getDefiningOp());
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!needed.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && inRegion(def) && !saved.count(operand))
        worklist.push_back(def);
  }

  // Clone them in program order before the first backward reader.
  Operation *firstUse = nullptr;
  for (Value v : dropped)
    for (Operation *user : v.getUsers())
      if (isBackward(user) && (!firstUse || order.lookup(user) < order.lookup(firstUse)))
        firstUse = user;
  OpBuilder b(firstUse);
  IRMapping mapping;
  StringAttr name = b.getStringAttr(region.name);
  for (unsigned pos = region.begin; pos < region.end; ++pos)
    if (needed.count(ops[pos]))
      b.clone(*ops[pos], mapping)->setAttr(kRecomputeAttr, name);
  for (Value v : dropped)
    v.replaceUsesWithIf(mapping.lookup(v),
                        [&](OpOperand &use) { return isBackward(use.getOwner()); });
}

FailureOr<RecomputeResult> Recomputer::run() {
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, kUnitAttr))
      return step.emitError("@train_step is already sharded (checkpointing runs before the "
                            "shard stage)");
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  Operation *lossOp = ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (!lossOp)
    return step.emitError("the loss (the first result) is not computed by an op of "
                          "@train_step: nothing to checkpoint");
  for (Operation &op : body) {
    order[&op] = ops.size();
    ops.push_back(&op);
  }
  boundary = order.lookup(lossOp);
  if (failed(findRegions()))
    return failure();
  RecomputeResult result;
  result.blocks = static_cast<int64_t>(regions.size());
  size_t count = options.maxBlocks < 0 ? regions.size()
                                       : std::min<size_t>(regions.size(), options.maxBlocks);
  for (size_t i = 0; i < count; ++i)
    rewrite(regions[i]);
  return result;
}

} // namespace

FailureOr<RecomputeResult> recomputeActivations(ModuleOp module,
                                                const RecomputeOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to checkpoint (run the train stage first)");
  if (!step.getBody().hasOneBlock())
    return step.emitError("checkpointing needs a single-block @train_step");
  return Recomputer(step, options).run();
}

} // namespace fsdp
