//===- RecomputeActivations.cpp - activation checkpointing ----------------===//
//
// Works by op positions in the one block of @train_step: everything at or
// before the loss op is forward, everything after it backward (the same
// boundary the shard stage uses). Regions are found in one forward scan;
// each region is then analyzed on its own (which of its values to drop,
// the ops those need, what that frees and costs) and every block is
// reported; the selected ones are rewritten: one clone of each needed op
// at the region's first backward use, and the backward uses redirected to
// the clones. Regions never share ops and a clone only reads clones of its
// own region or values that stay saved, so all regions can be analyzed on
// the IR before any rewrite and rewritten in any order.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/RecomputeActivations.h"

#include "compiler/Analysis/OpCost.h"
#include "compiler/Analysis/TrainableParameters.h"
#include "compiler/Analysis/WrapPolicy.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/fsdp/FSDPDialect.h"
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


/// A block's forward ops: positions [begin, end).
struct Region {
  std::string name;
  unsigned begin = 0, end = 0;
};

/// What checkpointing a region does: the values the backward stops
/// reading, the region's ops that recompute them, and the block's report.
struct RegionPlan {
  SmallVector<Value> dropped;
  llvm::DenseSet<Operation *> needed;
  BlockRecompute report;
};

/// Ops whose outputs selective checkpointing keeps: the expensive ones
/// (matmuls; attention scores are matmuls), the attention probabilities of
/// an unfused attention, and a fused nn.attention's output and log-sum-exp
/// (B·H·Tq·(Dv + 1) values for the op that costs most to recompute, as
/// torch's selective policies keep SDPA's outputs).
bool isSavedBySelective(Operation *op) {
  return isa<nn::MatMulOp, nn::GemmOp, nn::SoftmaxOp, nn::AttentionOp>(op);
}

class Recomputer {
public:
  Recomputer(func::FuncOp step, const RecomputeOptions &options)
      : step(step), options(options), body(step.getBody().front()) {}
  FailureOr<RecomputeResult> run();

private:
  LogicalResult findRegions();
  RegionPlan analyze(const Region &region) const;
  void rewrite(const Region &region, const RegionPlan &plan);
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

RegionPlan Recomputer::analyze(const Region &region) const {
  auto inRegion = [&](Operation *op) {
    auto it = order.find(op);
    return it != order.end() && it->second >= region.begin && it->second < region.end;
  };
  auto readByBackward = [&](Value v) {
    return llvm::any_of(v.getUsers(), [&](Operation *user) { return isBackward(user); });
  };
  const bool selective = options.policy == CkptKind::Selective;
  RegionPlan plan;
  plan.report.name = region.name;

  // Which values stay saved and which the backward reads from a copy.
  // Constants are no activations: the plan keeps them in their own region.
  llvm::DenseSet<Value> saved;
  uint64_t droppedBytes = 0;
  for (unsigned pos = region.begin; pos < region.end; ++pos) {
    Operation *op = ops[pos];
    bool constant = op->hasTrait<OpTrait::ConstantLike>();
    bool keepAll = constant || !isMemoryEffectFree(op) || op->getNumRegions() != 0 ||
                   (selective && isSavedBySelective(op));
    for (Value v : op->getResults()) {
      bool keep = keepAll, backward = false;
      for (Operation *user : v.getUsers()) {
        if (isBackward(user))
          backward = true;
        else if (!inRegion(user)) // a later forward op, or the return
          keep = true;
      }
      if (backward && !constant)
        plan.report.heldBytes += tensorBytes(v.getType());
      if (keep) {
        saved.insert(v);
      } else if (backward) {
        plan.dropped.push_back(v);
        droppedBytes += tensorBytes(v.getType());
      }
    }
  }
  if (plan.dropped.empty())
    return plan;

  // The region's ops the dropped values depend on through unsaved values.
  SmallVector<Operation *> worklist;
  for (Value v : plan.dropped)
    worklist.push_back(v.getDefiningOp());
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!plan.needed.insert(op).second)
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && inRegion(def) && !saved.count(operand))
        worklist.push_back(def);
  }

  // The price: each clone once. What the clones read from outside the
  // recomputation must now live until the block's backward; values a
  // gradient reads anyway, arguments and constants cost nothing more.
  const DeviceProfile &device = deviceProfile(options.device);
  llvm::DenseSet<Value> extended;
  uint64_t extendedBytes = 0;
  for (unsigned pos = region.begin; pos < region.end; ++pos) {
    Operation *op = ops[pos];
    if (!plan.needed.count(op))
      continue; // in program order, so the sums do not depend on hashing
    InstructionCost cost = opCost(op, device);
    plan.report.flops += cost.flops;
    plan.report.bytesMoved += cost.bytes;
    plan.report.seconds += cost.seconds;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || plan.needed.count(def) || def->hasTrait<OpTrait::ConstantLike>() ||
          readByBackward(operand) || !extended.insert(operand).second)
        continue;
      extendedBytes += tensorBytes(operand.getType());
    }
  }
  plan.report.freedBytes = droppedBytes > extendedBytes ? droppedBytes - extendedBytes : 0;
  return plan;
}

void Recomputer::rewrite(const Region &region, const RegionPlan &plan) {
  if (plan.dropped.empty())
    return;
  // Clone the needed ops in program order before the first backward reader.
  Operation *firstUse = nullptr;
  for (Value v : plan.dropped)
    for (Operation *user : v.getUsers())
      if (isBackward(user) && (!firstUse || order.lookup(user) < order.lookup(firstUse)))
        firstUse = user;
  OpBuilder b(firstUse);
  IRMapping mapping;
  StringAttr name = b.getStringAttr(region.name);
  for (unsigned pos = region.begin; pos < region.end; ++pos)
    if (plan.needed.count(ops[pos]))
      b.clone(*ops[pos], mapping)->setAttr(dist::kRecomputeAttr, name);
  for (Value v : plan.dropped)
    v.replaceUsesWithIf(mapping.lookup(v),
                        [&](OpOperand &use) { return isBackward(use.getOwner()); });
}

FailureOr<RecomputeResult> Recomputer::run() {
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, dist::kUnitAttr))
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
  // Every block is analyzed before any is rewritten (see the file comment).
  RecomputeResult result;
  SmallVector<RegionPlan> plans;
  for (const Region &region : regions) {
    plans.push_back(analyze(region));
    result.blocks.push_back(plans.back().report);
  }
  if (!options.blocks) {
    for (auto [region, plan] : llvm::zip(regions, plans))
      rewrite(region, plan);
    return result;
  }
  for (int64_t index : *options.blocks)
    if (index < 0 || index >= static_cast<int64_t>(regions.size()))
      return step.emitError("block ") << index << " to checkpoint does not exist (the model has "
                                      << regions.size() << " blocks)";
  llvm::SmallDenseSet<int64_t> rewritten;
  for (int64_t index : *options.blocks)
    if (rewritten.insert(index).second)
      rewrite(regions[index], plans[index]);
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

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_RECOMPUTEACTIVATIONSPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct RecomputeActivationsPass
    : impl::RecomputeActivationsPassBase<RecomputeActivationsPass> {
  using Base::Base;
  void runOnOperation() final {
    RecomputeOptions o;
    o.policy = ckpt;
    o.device = device;
    // An empty list is no list: a pass option prints (and so reproduces)
    // an empty list as absent, and only --ckpt=auto's pricing, which calls
    // recomputeActivations itself, wants to rewrite no block.
    if (!blocks.empty())
      o.blocks.emplace(blocks.begin(), blocks.end());
    if (failed(recomputeActivations(getOperation(), o)))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
