//===- StreamOrder.cpp - how async streams meet the compute stream --------===//
//
// One walk in program order keeps the async ops not yet waited for; each
// compute op that reads one's result or operand owners becomes its waiter,
// and each async op that reads a result of the other async stream records
// the wait. Completion points then run backwards (the earliest of its own
// waiter, the completion of the next op of its stream, and that of any
// async op of the other stream that waited for it), and each owner an
// async op uses is held until the later of its last compute reader and
// that point.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/StreamOrder.h"

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <optional>
#include <vector>

using namespace mlir;

namespace fsdp {

int64_t asyncStreamOf(Operation *op) {
  auto stream = op->getAttrOfType<IntegerAttr>(dist::kStreamAttr);
  if (!stream)
    return dist::kComputeStream;
  const int64_t s = stream.getInt();
  return s == dist::kCommStream || s == dist::kCopyStream ? s : dist::kComputeStream;
}

StreamOrder findStreamOrder(Block &body, const BufferViews &views) {
  StreamOrder order;
  auto &asyncOps = order.asyncOps;
  auto &heldUntil = order.heldUntil;
  llvm::DenseMap<Operation *, size_t> position;
  for (Operation &op : body)
    position[&op] = position.size();
  // The op of a stream known complete first: null is never (the end).
  auto earlier = [&](Operation *a, Operation *b) {
    if (!a)
      return b;
    if (!b)
      return a;
    return position[a] < position[b] ? a : b;
  };
  std::vector<Operation *> pending;
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> waitedBy;
  for (Operation &op : body.without_terminator()) {
    if (views.isView(&op) || isa<nn::ConstantOp>(op))
      continue;
    llvm::SmallDenseSet<Value> reads;
    for (Value v : op.getOperands())
      reads.insert(views.rootOf(v));
    if (int64_t stream = asyncStreamOf(&op)) {
      AsyncOp &async = asyncOps[&op];
      async.stream = stream;
      for (Value v : op.getOperands())
        async.roots.push_back(views.rootOf(v));
      async.roots.append(op.result_begin(), op.result_end());
      // A result of the other async stream is ready only once that op is.
      for (Operation *c : pending) {
        if (asyncOps[c].stream == stream)
          continue;
        if (llvm::any_of(c->getResults(), [&](Value r) { return reads.count(r); })) {
          async.waitsFor.push_back(c);
          waitedBy[c].push_back(&op);
        }
      }
      pending.push_back(&op);
      continue;
    }
    // Async streams run in order, so only compute ops wait here.
    llvm::erase_if(pending, [&](Operation *c) {
      AsyncOp &async = asyncOps[c];
      if (llvm::none_of(async.roots, [&](Value r) { return reads.count(r); }))
        return false;
      async.waiter = &op;
      return true;
    });
  }
  // Completion, backwards: a later op of the same stream completes after
  // this one, and so does an op of the other stream that waited for it.
  llvm::DenseMap<int64_t, Operation *> laterComplete;
  llvm::DenseMap<int64_t, bool> seen;
  for (auto it = asyncOps.rbegin(); it != asyncOps.rend(); ++it) {
    AsyncOp &async = it->second;
    Operation *done = async.waiter;
    if (seen[async.stream])
      done = earlier(done, laterComplete[async.stream]);
    for (Operation *consumer : waitedBy.lookup(it->first))
      done = earlier(done, asyncOps[consumer].complete);
    async.complete = done;
    laterComplete[async.stream] = done;
    seen[async.stream] = true;
    order.numStreams = std::max<unsigned>(order.numStreams, async.stream + 1);
  }
  // Operand owners (and unread results) stay allocated until the op is
  // known complete: the later of their last compute reader and that point,
  // or for good when nothing waits for it.
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
