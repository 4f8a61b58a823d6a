//===- StreamOrder.cpp - how async streams meet the compute stream --------===//
//
// One walk in program order keeps the async ops not yet waited for; each
// compute op that reads one's result or operand owners becomes its waiter,
// and each async op that reads a result of the other async stream records
// the wait. Completion points then run backwards (the earliest of its own
// waiter, the completion of the next op of its stream, and that of any
// async op of the other stream that waited for it), and each owner an
// async op uses is held until the later of its last compute reader and
// that point. For host-stream ops the walk also keeps, for the values they
// use, the last compute op and the last op of each other stream that
// touched them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/StreamOrder.h"

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

using namespace mlir;

namespace fsdp {

int64_t asyncStreamOf(Operation *op) {
  auto stream = op->getAttrOfType<IntegerAttr>(dist::kStreamAttr);
  if (!stream)
    return dist::kComputeStream;
  const int64_t s = stream.getInt();
  return s == dist::kCommStream || s == dist::kCopyStream || s == dist::kHostStream
             ? s
             : dist::kComputeStream;
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
  // The later of two ops in program order: null is none (the start).
  auto later = [&](Operation *a, Operation *b) {
    if (!a)
      return b;
    if (!b)
      return a;
    return position[a] < position[b] ? b : a;
  };
  std::vector<Operation *> pending;
  llvm::DenseMap<Operation *, llvm::SmallVector<Operation *>> waitedBy;
  // The owners host-stream ops read or write, and for each the last compute
  // op and the last op of each other async stream that touched it.
  llvm::DenseSet<Value> hostRoots;
  for (Operation &op : body.without_terminator())
    if (asyncStreamOf(&op) == dist::kHostStream)
      for (Value v : op.getOperands())
        hostRoots.insert(views.rootOf(v));
  llvm::DenseMap<Value, Operation *> lastComputeTouch;
  llvm::DenseMap<std::pair<Value, int64_t>, Operation *> lastAsyncTouch;
  auto touch = [&](Operation &op, int64_t stream) {
    auto note = [&](Value root) {
      if (!hostRoots.count(root))
        return;
      if (stream == dist::kComputeStream)
        lastComputeTouch[root] = &op;
      else
        lastAsyncTouch[{root, stream}] = &op;
    };
    for (Value v : op.getOperands())
      note(views.rootOf(v));
    for (Value r : op.getResults())
      note(r);
  };
  // Async ops whose results a host-stream op read: the next compute op
  // waits for them.
  llvm::SmallPtrSet<Operation *, 4> handOff;
  for (Operation &op : body.without_terminator()) {
    if (views.isView(&op) || isa<nn::ConstantOp>(op))
      continue;
    llvm::SmallDenseSet<Value> reads;
    for (Value v : op.getOperands())
      reads.insert(views.rootOf(v));
    auto readsResultOf = [&](Operation *c) {
      return llvm::any_of(c->getResults(), [&](Value r) { return reads.count(r); });
    };
    if (asyncStreamOf(&op) == dist::kHostStream) {
      AsyncOp &async = asyncOps[&op];
      async.stream = dist::kHostStream;
      const int64_t others[] = {dist::kCommStream, dist::kCopyStream};
      Operation *lastOnStream[std::size(others)] = {};
      for (Value v : op.getOperands()) {
        Value root = views.rootOf(v);
        async.roots.push_back(root);
        async.after = later(async.after, lastComputeTouch.lookup(root));
        for (size_t s = 0; s < std::size(others); ++s)
          lastOnStream[s] = later(lastOnStream[s], lastAsyncTouch.lookup({root, others[s]}));
      }
      async.roots.append(op.result_begin(), op.result_end());
      for (Operation *a : lastOnStream)
        if (a) {
          async.waitsFor.push_back(a);
          waitedBy[a].push_back(&op);
        }
      for (Value v : nn::updatedOperands(&op))
        async.writes.push_back(views.rootOf(v));
      async.writes.append(op.result_begin(), op.result_end());
      for (Operation *c : pending)
        if (asyncOps[c].stream != dist::kHostStream && readsResultOf(c))
          handOff.insert(c);
      pending.push_back(&op);
      continue;
    }
    if (int64_t stream = asyncStreamOf(&op)) {
      AsyncOp &async = asyncOps[&op];
      async.stream = stream;
      for (Value v : op.getOperands())
        async.roots.push_back(views.rootOf(v));
      async.roots.append(op.result_begin(), op.result_end());
      // A result of another async stream is ready only once that op is.
      for (Operation *c : pending) {
        if (asyncOps[c].stream == stream)
          continue;
        if (readsResultOf(c)) {
          async.waitsFor.push_back(c);
          waitedBy[c].push_back(&op);
        }
      }
      touch(op, stream);
      pending.push_back(&op);
      continue;
    }
    // Async streams run in order, so only compute ops wait here (for what
    // a host-stream op writes, not what it only reads).
    llvm::erase_if(pending, [&](Operation *c) {
      AsyncOp &async = asyncOps[c];
      const auto &conflicts = async.stream == dist::kHostStream ? async.writes : async.roots;
      if (!handOff.count(c) && llvm::none_of(conflicts, [&](Value r) { return reads.count(r); }))
        return false;
      async.waiter = &op;
      return true;
    });
    handOff.clear();
    touch(op, dist::kComputeStream);
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
