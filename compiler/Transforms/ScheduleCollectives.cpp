//===- ScheduleCollectives.cpp - async collectives and all-gather prefetch ===//
//
// The shard stage leaves each unit's all-gather right before the unit's
// first use. Here the gathers of one phase (forward: first gather of each
// shard argument; backward: the re-gather of --shard=full) form a list of
// items, one per unit in program order; item j moves to just before the
// first reader of item max(j - K, 0), where that unit starts computing (and
// never before item j - 1's gather, so the communication stream still
// gathers in use order). The limit walks that
// point forward, release by release, while L non-root units would be in
// full there. The root unit is gathered once at the top and is neither
// moved nor counted (it is live for the whole step anyway).
//
// For the limit, a forward item is "in full" from its gather to its last
// reader before the loss: under --shard=full that is where its copy dies;
// under --shard=grad-op the copy is kept for the backward whatever the
// schedule does, so only its forward use is counted.
//
// Positions are order keys that stay valid while ops move (OpOrder): a
// moved op takes a key between its new neighbours', so no move renumbers
// the step and the stage stays linear in its length.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ScheduleCollectives.h"

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <limits>

using namespace mlir;

namespace fsdp {
namespace {

/// Program order that survives moves: ops are numbered once, sparsely, and
/// an op moved before another takes the key halfway between its new
/// neighbours' (all are renumbered only when that gap is used up).
/// Renumbering after every move would make scheduling quadratic in the
/// length of the step.
class OpOrder {
public:
  explicit OpOrder(Block &body) : body(body) { renumber(); }
  /// Whether `a` comes before `b`; a null op comes before every op.
  bool before(Operation *a, Operation *b) const {
    return b && (!a || key.lookup(a) < key.lookup(b));
  }
  /// The later of two ops (null when both are).
  Operation *later(Operation *a, Operation *b) const { return before(a, b) ? b : a; }
  void moveBefore(Operation *op, Operation *anchor) {
    op->moveBefore(anchor);
    Operation *prev = op->getPrevNode();
    uint64_t lo = prev ? key.lookup(prev) : 0, hi = key.lookup(anchor);
    if (hi - lo < 2)
      return renumber();
    key[op] = lo + (hi - lo) / 2;
  }

private:
  void renumber() {
    // As far apart as 64 bits allow: about 64 - log2(ops) halvings at one
    // place before the next renumbering.
    uint64_t stride = std::numeric_limits<uint64_t>::max() / (body.getOperations().size() + 1);
    uint64_t next = 0;
    for (Operation &op : body)
      key[&op] = next += stride;
  }
  Block &body;
  llvm::DenseMap<Operation *, uint64_t> key;
};

/// The gathers that rebuild one unit for one phase.
struct Item {
  std::string unit;
  int phase = 0; // 0 forward (or the only gather), 1 backward
  /// The micro-batch under --grad-accum (fsdp.micro_batch; 0 without):
  /// gathers are prefetched within their micro-batch, never into the one
  /// before, which would hold them through its backward.
  int64_t microBatch = 0;
  SmallVector<Operation *> gathers;
  /// The last reader of the gathered buffer (see Scheduler::lastUse); null
  /// when nothing reads it. Only gathers and their operands' producers
  /// move, never a reader, so it is found once.
  Operation *lastUse = nullptr;
};

class Scheduler {
public:
  Scheduler(func::FuncOp step, const ScheduleCollectivesPassOptions &options)
      : step(step), body(step.getBody().front()), options(options), order(body) {}
  void run();

private:
  /// The shard argument a gather reads (through the bf16 cast), if any.
  BlockArgument shardArgument(Operation *gather) const;
  /// The last op that reads the item's gathered buffer or a view or
  /// widened copy of it (before the loss, for forward items).
  Operation *lastUse(const Item &item) const;
  /// Where the item's copy is released: its last use, else its first gather.
  Operation *release(const Item &item) const {
    return item.lastUse ? item.lastUse : item.gathers.front();
  }
  /// Where the unit starts computing: its gathered buffer's first reader.
  Operation *firstReader(const Item &item) const;
  /// Moves `op` (and its operands' producers after `anchor`) before `anchor`.
  void hoist(Operation *op, Operation *anchor);
  void schedulePhase(std::vector<Item *> &list);
  void prefetchGathers();
  /// The last reader of `v` or of a view of it, other than `except`.
  Operation *lastReader(Value v, Operation *except) const;
  /// Moves each optimizer update up behind the reduction (reduce-scatter
  /// or all-reduce) that follows the one reducing its gradient.
  void overlapOptimizer();
  /// Puts on the host stream every update that reads host memory only and
  /// whose results are only the step's in-place updates.
  void updateOnHost();

  func::FuncOp step;
  Block &body;
  const ScheduleCollectivesPassOptions &options;
  OpOrder order;
  std::vector<Item> items;
  Operation *lossOp = nullptr;
};

BlockArgument Scheduler::shardArgument(Operation *gather) const {
  Value v = gather->getOperand(0);
  while (auto cast = v.getDefiningOp<nn::CastOp>())
    v = cast.getInput();
  return dyn_cast<BlockArgument>(v);
}

Operation *Scheduler::lastUse(const Item &item) const {
  Operation *last = nullptr, *lastBeforeLoss = nullptr;
  SmallVector<Value> work;
  for (Operation *g : item.gathers)
    work.push_back(g->getResult(0));
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      last = order.later(last, user);
      if (!lossOp || !order.before(lossOp, user))
        lastBeforeLoss = order.later(lastBeforeLoss, user);
      // Views and the bf16 widening hold the unit in full too.
      if (isa<dist::FlatViewOp, nn::ReshapeOp, nn::TransposeOp, nn::CastOp>(user))
        work.append(user->result_begin(), user->result_end());
    }
  }
  return item.phase == 0 && lastBeforeLoss ? lastBeforeLoss : last;
}

Operation *Scheduler::firstReader(const Item &item) const {
  Operation *first = nullptr;
  for (Operation *g : item.gathers)
    for (Operation *user : g->getResult(0).getUsers())
      if (!first || order.before(user, first))
        first = user;
  return first;
}

void Scheduler::hoist(Operation *op, Operation *anchor) {
  for (Value operand : op->getOperands())
    if (Operation *def = operand.getDefiningOp();
        def && def->getBlock() == &body && order.before(anchor, def))
      hoist(def, anchor);
  order.moveBefore(op, anchor);
}

void Scheduler::schedulePhase(std::vector<Item *> &list) {
  const int64_t k = options.prefetch;
  for (size_t j = 1; j < list.size(); ++j) {
    Item &item = *list[j];
    // Issued when unit j - K starts computing (just before its first
    // reader), behind the gather of unit j - 1.
    const Item &ahead = *list[j > static_cast<size_t>(k) ? j - k : 0];
    Operation *reader = firstReader(ahead);
    Operation *q = order.later(reader ? reader->getPrevNode() : ahead.gathers.back(),
                               list[j - 1]->gathers.back());
    // The limit: while L other non-root units are in full right after q,
    // wait for the earliest of them to be released.
    while (options.limitAllGathers > 0) {
      int64_t live = 0;
      Operation *nextRelease = nullptr;
      for (Item &other : items) {
        if (&other == &item || order.before(q, other.gathers.front()))
          continue;
        Operation *r = release(other);
        if (order.before(q, r)) {
          ++live;
          if (!nextRelease || order.before(r, nextRelease))
            nextRelease = r;
        }
      }
      if (live < options.limitAllGathers)
        break;
      q = nextRelease;
    }
    // Never later than the shard stage's place: the gathers and the ops
    // computing their operands (the bf16 cast) that sit after q must all
    // sit after the op following q, the op they move in front of.
    Operation *chainStart = nullptr;
    SmallVector<Operation *> chain(item.gathers.begin(), item.gathers.end());
    while (!chain.empty()) {
      Operation *op = chain.pop_back_val();
      if (!chainStart || order.before(op, chainStart))
        chainStart = op;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &body && order.before(q, def))
          chain.push_back(def);
    }
    Operation *anchor = q->getNextNode();
    if (!order.before(q, chainStart) || chainStart == anchor)
      continue;
    for (Operation *gather : item.gathers)
      hoist(gather, anchor);
  }
}

Operation *Scheduler::lastReader(Value v, Operation *except) const {
  Operation *last = nullptr;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == except)
        continue;
      last = order.later(last, user);
      // Values sharing v's bytes in the plan: views of it, and a persistent
      // all-gather's buffer, which holds v as this rank's chunk.
      auto gather = dyn_cast<dist::AllGatherOp>(user);
      if (isa<dist::FlatViewOp, nn::ReshapeOp, nn::TransposeOp, nn::SliceOp>(user) ||
          (gather && gather.getPersistent()))
        work.append(user->result_begin(), user->result_end());
    }
  }
  return last;
}

void Scheduler::overlapOptimizer() {
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (isa<nn::AdamWOp, nn::SgdOp>(op))
      updates.push_back(&op);
  auto isReduction = [](Operation *op) { return isa<dist::ReduceScatterOp, dist::AllReduceOp>(op); };
  for (Operation *update : updates) {
    Value grad = isa<nn::AdamWOp>(update) ? cast<nn::AdamWOp>(update).getGrad()
                                          : cast<nn::SgdOp>(update).getGrad();
    Operation *reduce = grad.getDefiningOp();
    // Under --offload=cpu it reads the reduced gradient's copy to the host.
    if (auto toHost = dyn_cast_or_null<dist::ToHostOp>(reduce))
      reduce = toHost.getInput().getDefiningOp();
    if (!reduce || !isReduction(reduce))
      continue;
    // One reduction of slack (the next unit's backward runs while the
    // gradient is reduced), so the compute stream does not stall on it...
    Operation *q = reduce->getNextNode();
    while (q && !isReduction(q))
      q = q->getNextNode();
    if (!q)
      continue;
    // ...and after every producer of its operands and every other reader
    // of the values it updates in place (parameter and state; the lr and
    // step scalars are only read).
    for (Value operand : update->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && def->getBlock() == &body)
        q = order.later(q, def);
    for (Value v : nn::updatedOperands(update))
      q = order.later(q, lastReader(v, update));
    if (order.before(q, update) && q->getNextNode() != update)
      order.moveBefore(update, q->getNextNode());
  }
}

void Scheduler::updateOnHost() {
  // Nothing later in the step may read what a host update writes: the
  // device streams never wait for the host stream within a step (the
  // runtime's end-of-step synchronize orders the next step after it), so
  // its results must be returned, written in place, and nothing else.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto onlyUpdated = [&](Value result) {
    return llvm::all_of(result.getUses(), [&](OpOperand &use) {
      return use.getOwner() == ret &&
             step.getResultAttr(use.getOperandNumber(), nn::kUpdateAttr);
    });
  };
  OpBuilder b(step.getContext());
  for (Operation &op : body)
    if (isa<nn::AdamWOp, nn::SgdOp>(op) && llvm::all_of(op.getOperands(), dist::isInHostMemory) &&
        llvm::all_of(op.getResults(), onlyUpdated))
      op.setAttr(dist::kStreamAttr, b.getI64IntegerAttr(dist::kHostStream));
}

void Scheduler::run() {
  // Every collective runs on the communication stream, and every offload
  // copy (--offload=cpu) on the copy stream, so host transfers overlap
  // compute and collectives; a to_device moves up with the gather that
  // reads it (prefetch below), a to_host runs while the backward goes on,
  // and the update reading it runs on the host stream (updateOnHost).
  OpBuilder b(step.getContext());
  step.walk([&](Operation *op) {
    if (isa<dist::AllGatherOp, dist::ReduceScatterOp, dist::AllReduceOp>(op))
      op->setAttr(dist::kStreamAttr, b.getI64IntegerAttr(dist::kCommStream));
    else if (isa<dist::ToDeviceOp, dist::ToHostOp>(op))
      op->setAttr(dist::kStreamAttr, b.getI64IntegerAttr(dist::kCopyStream));
  });
  // The loss: what the averaged loss all-reduce that the step returns reads.
  Operation *ret = body.getTerminator();
  for (Value v : ret->getOperands())
    if (auto reduce = v.getDefiningOp<dist::AllReduceOp>())
      if (Operation *def = reduce.getInput().getDefiningOp()) {
        lossOp = def;
        break;
      }
  if (options.prefetch > 0)
    prefetchGathers();
  overlapOptimizer();
  updateOnHost();
}

void Scheduler::prefetchGathers() {
  // Items: consecutive gathers of one unit in one phase (a unit with
  // several flat buffers gathers each of them).
  llvm::DenseSet<std::pair<Value, int64_t>> gathered;
  int64_t microBatches = 1;
  for (Operation &op : body) {
    auto gather = dyn_cast<dist::AllGatherOp>(op);
    if (!gather)
      continue;
    BlockArgument arg = shardArgument(gather);
    if (!arg)
      continue;
    auto unit = step.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(), dist::kUnitAttr);
    std::string name = unit ? unit.getAs<StringAttr>("name").str() : "";
    if (name.empty() || name == "root")
      continue;
    auto mbAttr = gather->getAttrOfType<IntegerAttr>(dist::kMicroBatchAttr);
    int64_t mb = mbAttr ? mbAttr.getInt() : 0;
    microBatches = std::max(microBatches, mb + 1);
    int phase = gathered.insert({arg, mb}).second ? 0 : 1;
    if (items.empty() || items.back().unit != name || items.back().phase != phase ||
        items.back().microBatch != mb)
      items.push_back({name, phase, mb, {}, nullptr});
    items.back().gathers.push_back(gather);
  }
  for (Item &item : items)
    item.lastUse = lastUse(item);
  for (int64_t mb = 0; mb < microBatches; ++mb)
    for (int phase = 0; phase < 2; ++phase) {
      std::vector<Item *> list;
      for (Item &item : items)
        if (item.phase == phase && item.microBatch == mb)
          list.push_back(&item);
      schedulePhase(list);
    }
}

} // namespace

LogicalResult scheduleCollectives(ModuleOp module, const ScheduleCollectivesPassOptions &options) {
  if (options.prefetch < 0)
    return module.emitError("prefetch must be >= 0, not ") << options.prefetch;
  if (options.limitAllGathers < 0)
    return module.emitError("limit-all-gathers must be >= 0 (0: no limit), not ")
           << options.limitAllGathers;
  auto step = module.lookupSymbol<func::FuncOp>("train_step");
  if (!step || step.getBody().empty())
    return success(); // forward plans and unsharded steps have no collectives
  if (!step.getBody().hasOneBlock())
    return step.emitError("collectives can only be scheduled in a single-block step");
  Scheduler(step, options).run();
  return success();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_SCHEDULECOLLECTIVESPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct ScheduleCollectivesPass
    : impl::ScheduleCollectivesPassBase<ScheduleCollectivesPass> {
  using Base::Base;
  void runOnOperation() final {
    if (failed(scheduleCollectives(getOperation(), {prefetch, limitAllGathers})))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
