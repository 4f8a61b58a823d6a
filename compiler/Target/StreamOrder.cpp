//===- StreamOrder.cpp - how async collectives meet the compute stream ----===//
//
// One walk in program order keeps the collectives not yet waited for; each
// compute op that reads one's result or operand owners becomes its waiter.
// Completion points then run backwards (the earliest waiter of this or any
// later collective), and each owner a collective uses is held until the
// later of its last compute reader and that point.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/StreamOrder.h"

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <optional>
#include <vector>

using namespace mlir;

namespace fsdp {

bool isAsyncCollective(Operation *op) {
  auto stream = op->getAttrOfType<IntegerAttr>(dist::kStreamAttr);
  return stream && stream.getInt() == dist::kCommStream;
}

StreamOrder findStreamOrder(Block &body, const BufferViews &views) {
  StreamOrder order;
  auto &asyncOps = order.collectives;
  auto &heldUntil = order.heldUntil;
  llvm::DenseMap<Operation *, size_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  std::vector<Operation *> pending;
  for (Operation &op : body.without_terminator()) {
    if (views.isView(&op) || isa<nn::ConstantOp>(op))
      continue;
    if (isAsyncCollective(&op)) {
      AsyncCollective &async = asyncOps[&op];
      for (Value v : op.getOperands())
        async.roots.push_back(views.rootOf(v));
      async.roots.append(op.result_begin(), op.result_end());
      pending.push_back(&op);
      continue;
    }
    // The communication stream runs in order, so only compute ops wait.
    llvm::SmallDenseSet<Value> reads;
    for (Value v : op.getOperands())
      reads.insert(views.rootOf(v));
    llvm::erase_if(pending, [&](Operation *c) {
      AsyncCollective &async = asyncOps[c];
      if (llvm::none_of(async.roots, [&](Value r) { return reads.count(r); }))
        return false;
      async.waiter = &op;
      return true;
    });
  }
  Operation *earliest = nullptr;
  for (auto it = asyncOps.rbegin(); it != asyncOps.rend(); ++it) {
    Operation *done = it->second.waiter;
    if (earliest && (!done || position[earliest] < position[done]))
      done = earliest;
    it->second.complete = earliest = done;
  }
  // Operand owners (and unread results) stay allocated until the
  // collective is known complete: the later of their last compute reader
  // and that point, or for good when nothing waits for it.
  for (auto &[op, async] : asyncOps) {
    auto extend = [&, waiter = async.complete](Value owner) {
      std::optional<Operation *> current;
      if (auto held = heldUntil.find(owner); held != heldUntil.end())
        current = held->second;
      else if (Operation *last = views.lastUse.lookup(owner))
        current = last;
      if (!current)
        heldUntil[owner] = waiter;
      else if (!*current || !waiter)
        heldUntil[owner] = nullptr;
      else
        heldUntil[owner] = position[*current] >= position[waiter] ? *current : waiter;
    };
    for (Value v : op->getOperands())
      extend(views.rootOf(v));
    for (Value r : op->getResults())
      if (!views.lastUse.count(r))
        extend(r);
  }
  return order;
}

} // namespace fsdp
