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
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ScheduleCollectives.h"

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

/// The gathers that rebuild one unit for one phase.
struct Item {
  std::string unit;
  int phase = 0; // 0 forward (or the only gather), 1 backward
  SmallVector<Operation *> gathers;
};

class Scheduler {
public:
  Scheduler(func::FuncOp step, const ScheduleOptions &options)
      : step(step), body(step.getBody().front()), options(options) {}
  void run();

private:
  void number();
  /// The shard argument a gather reads (through the bf16 cast), if any.
  BlockArgument shardArgument(Operation *gather) const;
  /// The last op, by position, that reads the item's gathered buffer or a
  /// view or widened copy of it (before the loss, for forward items).
  int64_t release(const Item &item) const;
  int64_t start(const Item &item) const { return pos.lookup(item.gathers.front()); }
  int64_t lastGather(const Item &item) const { return pos.lookup(item.gathers.back()); }
  /// Where the unit starts computing: its gathered buffer's first reader.
  int64_t firstReader(const Item &item) const;
  /// Moves `op` (and its operands' producers after `anchor`) before `anchor`.
  void hoist(Operation *op, Operation *anchor);
  void schedulePhase(std::vector<Item *> &list);
  void prefetchGathers();
  /// The last reader of `v` or of a view of it, other than `except`.
  int64_t lastReader(Value v, Operation *except) const;
  /// Moves each optimizer update up behind the reduction (reduce-scatter
  /// or all-reduce) that follows the one reducing its gradient.
  void overlapOptimizer();

  func::FuncOp step;
  Block &body;
  const ScheduleOptions &options;
  std::vector<Item> items;
  llvm::DenseMap<Operation *, int64_t> pos;
  std::vector<Operation *> opAt;
  int64_t boundary = std::numeric_limits<int64_t>::max();
  Operation *lossOp = nullptr;
};

void Scheduler::number() {
  pos.clear();
  opAt.clear();
  for (Operation &op : body) {
    pos[&op] = static_cast<int64_t>(opAt.size());
    opAt.push_back(&op);
  }
  boundary = lossOp ? pos.lookup(lossOp) : std::numeric_limits<int64_t>::max();
}

BlockArgument Scheduler::shardArgument(Operation *gather) const {
  Value v = gather->getOperand(0);
  while (auto cast = v.getDefiningOp<nn::CastOp>())
    v = cast.getInput();
  return dyn_cast<BlockArgument>(v);
}

int64_t Scheduler::release(const Item &item) const {
  int64_t last = -1, lastBeforeLoss = -1;
  SmallVector<Value> work;
  for (Operation *g : item.gathers)
    work.push_back(g->getResult(0));
  llvm::DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (Operation *user : v.getUsers()) {
      int64_t p = pos.lookup(user);
      last = std::max(last, p);
      if (p <= boundary)
        lastBeforeLoss = std::max(lastBeforeLoss, p);
      // Views and the bf16 widening hold the unit in full too.
      if (isa<dist::FlatViewOp, nn::ReshapeOp, nn::TransposeOp, nn::CastOp>(user))
        work.append(user->result_begin(), user->result_end());
    }
  }
  if (item.phase == 0 && lastBeforeLoss >= 0)
    return lastBeforeLoss;
  return last < 0 ? start(item) : last;
}

int64_t Scheduler::firstReader(const Item &item) const {
  int64_t first = std::numeric_limits<int64_t>::max();
  for (Operation *g : item.gathers)
    for (Operation *user : g->getResult(0).getUsers())
      first = std::min(first, pos.lookup(user));
  return first == std::numeric_limits<int64_t>::max() ? lastGather(item) + 1 : first;
}

void Scheduler::hoist(Operation *op, Operation *anchor) {
  for (Value operand : op->getOperands())
    if (Operation *def = operand.getDefiningOp();
        def && def->getBlock() == &body && anchor->isBeforeInBlock(def))
      hoist(def, anchor);
  op->moveBefore(anchor);
}

void Scheduler::schedulePhase(std::vector<Item *> &list) {
  const int64_t k = options.prefetch;
  for (size_t j = 1; j < list.size(); ++j) {
    number();
    Item &item = *list[j];
    // Issued when unit j - K starts computing (just before its first
    // reader), behind the gather of unit j - 1.
    size_t ahead = j > static_cast<size_t>(k) ? j - k : 0;
    int64_t q = std::max(firstReader(*list[ahead]) - 1, lastGather(*list[j - 1]));
    // The limit: while L other non-root units are in full right after q,
    // wait for the earliest of them to be released.
    while (options.limitAllGathers > 0) {
      int64_t live = 0, nextRelease = std::numeric_limits<int64_t>::max();
      for (Item &other : items) {
        if (&other == &item || start(other) > q)
          continue;
        int64_t r = release(other);
        if (r > q) {
          ++live;
          nextRelease = std::min(nextRelease, r);
        }
      }
      if (live < options.limitAllGathers)
        break;
      q = nextRelease;
    }
    // Never later than the shard stage's place: the gathers and the ops
    // computing their operands (the bf16 cast) that sit after q must all
    // sit after q + 1, the op they move in front of.
    int64_t chainStart = std::numeric_limits<int64_t>::max();
    SmallVector<Operation *> chain(item.gathers.begin(), item.gathers.end());
    while (!chain.empty()) {
      Operation *op = chain.pop_back_val();
      chainStart = std::min(chainStart, pos.lookup(op));
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && def->getBlock() == &body && pos.lookup(def) > q)
          chain.push_back(def);
    }
    if (q + 1 >= chainStart)
      continue;
    Operation *anchor = opAt[q]->getNextNode();
    for (Operation *gather : item.gathers)
      hoist(gather, anchor);
  }
}

int64_t Scheduler::lastReader(Value v, Operation *except) const {
  int64_t last = -1;
  SmallVector<Value> work{v};
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (user == except)
        continue;
      last = std::max(last, pos.lookup(user));
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
    number();
    Value grad = isa<nn::AdamWOp>(update) ? cast<nn::AdamWOp>(update).getGrad()
                                          : cast<nn::SgdOp>(update).getGrad();
    Operation *reduce = grad.getDefiningOp();
    if (!reduce || !isReduction(reduce))
      continue;
    // One reduction of slack (the next unit's backward runs while the
    // gradient is reduced), so the compute stream does not stall on it...
    int64_t q = -1;
    for (int64_t p = pos.lookup(reduce) + 1; p < static_cast<int64_t>(opAt.size()); ++p)
      if (isReduction(opAt[p])) {
        q = p;
        break;
      }
    if (q < 0)
      continue;
    // ...and after every producer of its operands and every other reader
    // of the values it updates in place (parameter and state; the lr and
    // step scalars are only read).
    SmallVector<Value> inPlace;
    if (auto adam = dyn_cast<nn::AdamWOp>(update))
      inPlace = {adam.getParam(), adam.getExpAvg(), adam.getExpAvgSq()};
    else if (auto sgd = cast<nn::SgdOp>(update); sgd.getMomentumBuffer())
      inPlace = {sgd.getParam(), sgd.getMomentumBuffer()};
    else
      inPlace = {sgd.getParam()};
    for (Value operand : update->getOperands())
      if (Operation *def = operand.getDefiningOp(); def && def->getBlock() == &body)
        q = std::max(q, pos.lookup(def));
    for (Value v : inPlace)
      q = std::max(q, lastReader(v, update));
    if (q + 1 < pos.lookup(update))
      update->moveBefore(opAt[q]->getNextNode());
  }
}

void Scheduler::run() {
  // Every collective runs on the communication stream.
  OpBuilder b(step.getContext());
  step.walk([&](Operation *op) {
    if (isa<dist::AllGatherOp, dist::ReduceScatterOp, dist::AllReduceOp>(op))
      op->setAttr(kStreamAttr, b.getI64IntegerAttr(kCommStream));
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
}

void Scheduler::prefetchGathers() {
  // Items: consecutive gathers of one unit in one phase (a unit with
  // several flat buffers gathers each of them).
  llvm::DenseSet<Value> gathered;
  for (Operation &op : body) {
    auto gather = dyn_cast<dist::AllGatherOp>(op);
    if (!gather)
      continue;
    BlockArgument arg = shardArgument(gather);
    if (!arg)
      continue;
    auto unit = step.getArgAttrOfType<DictionaryAttr>(arg.getArgNumber(), kUnitAttr);
    std::string name = unit ? unit.getAs<StringAttr>("name").str() : "";
    if (name.empty() || name == "root")
      continue;
    int phase = gathered.insert(arg).second ? 0 : 1;
    if (items.empty() || items.back().unit != name || items.back().phase != phase)
      items.push_back({name, phase, {}});
    items.back().gathers.push_back(gather);
  }
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<Item *> list;
    for (Item &item : items)
      if (item.phase == phase)
        list.push_back(&item);
    schedulePhase(list);
  }
}

} // namespace

LogicalResult scheduleCollectives(ModuleOp module, const ScheduleOptions &options) {
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

} // namespace fsdp
