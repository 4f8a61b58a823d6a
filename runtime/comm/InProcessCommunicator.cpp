//===- InProcessCommunicator.cpp - ranks as threads of one process --------===//
//
// Every collective runs the same protocol under one mutex: each rank
// publishes (call description, send pointer, local error) in its slot and
// arrives at a generation-counted barrier; once all have arrived, each rank
// judges the published slots (a pure function of them, so every rank reaches
// the same verdict and the same message), computes its own output outside
// the lock by reading the other ranks' buffers in rank order, and arrives at
// a second barrier, after which nobody reads anyone's buffers and slots may
// be overwritten. Only the first barrier can be interrupted by a failure:
// every rank that passed it is already inside the collective and reaches
// the second without waiting on anything else, and letting a rank leave
// early there could free a buffer another rank is still reading.
//
// split is one more collective of this protocol: ranks publish (color,
// key), the first rank past the first barrier forms every new group, and
// each rank takes a communicator for its own. All groups split from one
// createInProcessGroup form a family that shares the mutex, so abort() can
// fail them all at once: a rank that gives up may be the one a sibling or
// parent group is waiting for, and MPI_Abort ends all of them too.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessCommunicator.h"

#include "runtime/comm/CollectiveCall.h"
#include "runtime/comm/RankOrderReduce.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <numeric>

namespace fsdp::rt::comm {

namespace {

struct Group;

/// The groups that descend from one createInProcessGroup call by split.
/// They share one mutex, which keeps abort() (which fails the whole family,
/// like MPI_Abort ends the whole job) free of lock-order questions; the
/// critical sections are a few field updates, the data movement of every
/// collective happens outside it, so groups still run concurrently.
struct Family {
  std::mutex mutex;
  std::vector<std::weak_ptr<Group>> groups; // guarded by mutex
};

/// State shared by the ranks of one group; every field is guarded by
/// family->mutex.
struct Group {
  Group(int n, std::shared_ptr<Family> family)
      : size(n), family(std::move(family)), descs(static_cast<size_t>(n)),
        localErrors(static_cast<size_t>(n)), sends(static_cast<size_t>(n)),
        colors(static_cast<size_t>(n)), keys(static_cast<size_t>(n)),
        splitOut(static_cast<size_t>(n)), worldRanks(static_cast<size_t>(n)) {
    std::iota(worldRanks.begin(), worldRanks.end(), 0);
  }

  /// Waits until every rank has arrived. An interruptible wait gives up
  /// (returns false) when the group fails first.
  bool arrive(std::unique_lock<std::mutex> &lock, bool interruptible) {
    const uint64_t myGeneration = generation;
    if (++arrived == size) {
      arrived = 0;
      ++generation;
      cv.notify_all();
      return true;
    }
    cv.wait(lock, [&] {
      return generation != myGeneration || (interruptible && !failure.empty());
    });
    return generation != myGeneration;
  }

  /// Marks the group failed (the first reason wins) and wakes every waiter.
  void fail(const std::string &reason) {
    if (failure.empty())
      failure = reason;
    cv.notify_all();
  }

  const int size;
  const std::shared_ptr<Family> family;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::string failure; // non-empty once the group has failed, for good
  // Each rank's slot for the current collective.
  std::vector<CallDesc> descs;
  std::vector<std::string> localErrors; // why a rank cannot take part; empty if it can
  std::vector<const void *> sends;
  std::vector<int> colors, keys; // split's arguments
  // split's result for each old rank: its new group and rank there, built
  // once per split by the first rank to get there (splitGeneration).
  std::vector<std::pair<std::shared_ptr<Group>, int>> splitOut;
  uint64_t splitGeneration = ~uint64_t{0};
  // Each rank's rank in the family's first group, how abort() names it.
  std::vector<int> worldRanks;
};

class InProcessCommunicator final : public Communicator {
public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank), inputs_(static_cast<size_t>(group_->size)) {}

  // A rank that goes away must not strand the others in their next call.
  // Only this group fails: the normal end of a run destroys communicators
  // in any order, and the parent may still be in use.
  ~InProcessCommunicator() override {
    std::lock_guard<std::mutex> lock(group_->family->mutex);
    group_->fail(cat("rank ", rank_, " left the group (its communicator was destroyed)"));
  }

  int rank() const override { return rank_; }
  int size() const override { return group_->size; }
  using Communicator::allGather;
  using Communicator::allReduce;
  using Communicator::broadcast;
  using Communicator::reduceScatter;

  Status allGather(const void *send, void *recv, int64_t sendCount, DType dtype) override {
    CallDesc desc{CallKind::AllGather, sendCount, dtype};
    const size_t bytes = byteCount(sendCount, dtype);
    auto *out = static_cast<uint8_t *>(recv);
    // In place (send is this rank's chunk of recv), only that chunk is
    // shared with the readers, and it already holds the right bytes.
    const bool inPlace = bytes > 0 && out && send == out + rank_ * bytes;
    const size_t outBytes = bytes * size();
    return run(desc, send, checkCall(desc, size(), send, recv), [&]() -> Status {
      uint8_t *dst = outputFor(recv, outBytes, !inPlace && overlaps(recv, outBytes, send, bytes));
      for (int s = 0; s < size(); ++s)
        if (bytes > 0 && !(inPlace && s == rank_))
          std::memcpy(dst + s * bytes, group_->sends[s], bytes);
      return Status::ok();
    }, recv, outBytes);
  }

  Status reduceScatter(const void *send, void *recv, int64_t recvCount, DType dtype,
                       ReduceOp op) override {
    CallDesc desc{CallKind::ReduceScatter, recvCount, dtype, op};
    const size_t bytes = byteCount(recvCount, dtype);
    // Others read every chunk of our send but ours; writing exactly over
    // our own chunk is safe since the reduction reads before it stores.
    const bool inPlace =
        bytes > 0 && send && recv == static_cast<const uint8_t *>(send) + rank_ * bytes;
    return run(desc, send, checkCall(desc, size(), send, recv), [&]() -> Status {
      for (int s = 0; s < size(); ++s)
        inputs_[s] = static_cast<const uint8_t *>(group_->sends[s]) + rank_ * bytes;
      void *dst = outputFor(recv, bytes, !inPlace && overlaps(recv, bytes, send, bytes * size()));
      return reduceInRankOrder(inputs_.data(), size(), dst, recvCount, dtype, op);
    }, recv, bytes);
  }

  Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    CallDesc desc{CallKind::AllReduce, count, dtype, op};
    const size_t bytes = byteCount(count, dtype);
    return run(desc, send, checkCall(desc, size(), send, recv), [&]() -> Status {
      for (int s = 0; s < size(); ++s)
        inputs_[s] = group_->sends[s];
      // Every other rank reads all of our send: an aliased output must wait.
      void *dst = outputFor(recv, bytes, overlaps(recv, bytes, send, bytes));
      return reduceInRankOrder(inputs_.data(), size(), dst, count, dtype, op);
    }, recv, bytes);
  }

  Status broadcast(void *buf, int64_t count, DType dtype, int root) override {
    CallDesc desc{CallKind::Broadcast, count, dtype, ReduceOp::Sum, root};
    const size_t bytes = byteCount(count, dtype);
    return run(desc, buf, checkCall(desc, size(), buf, buf), [&]() -> Status {
      if (rank_ != root && bytes > 0)
        std::memcpy(buf, group_->sends[root], bytes);
      return Status::ok();
    }, buf, 0);
  }

  Status barrier() override {
    return run(CallDesc{}, nullptr, Status::ok(), [] { return Status::ok(); }, nullptr, 0);
  }

  Status split(int color, int key, std::unique_ptr<Communicator> &out) override {
    out.reset();
    const CallDesc desc{CallKind::Split};
    std::unique_ptr<Communicator> made;
    Status status = run(desc, nullptr, checkCall(desc, size(), nullptr, nullptr, color), [&] {
      Group &g = *group_;
      std::lock_guard<std::mutex> lock(g.family->mutex);
      if (g.splitGeneration != g.generation)
        buildSplit(g);
      auto [group, rank] = std::move(g.splitOut[rank_]);
      made = std::make_unique<InProcessCommunicator>(std::move(group), rank);
      return Status::ok();
    }, nullptr, 0, color, key);
    if (status.isOk())
      out = std::move(made);
    return status;
  }

  // Fails every group of the family, not just this one: a rank that gives
  // up may be the one that ranks of a sibling or parent group wait for. It
  // is named by its world rank, which means the same in every group.
  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(group_->family->mutex);
    const std::string failure =
        cat("rank ", group_->worldRanks[rank_], " aborted the group: ", reason);
    for (auto &weak : group_->family->groups)
      if (auto group = weak.lock())
        group->fail(failure);
  }

private:
  /// Forms the new groups of the split every rank of `g` has published:
  /// one per color, ranked by (key, old rank), registered in the family so
  /// abort() reaches them. Called once per split, under the family mutex.
  static void buildSplit(Group &g) {
    std::vector<int> order(static_cast<size_t>(g.size));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return g.colors[a] != g.colors[b] ? g.colors[a] < g.colors[b] : g.keys[a] < g.keys[b];
    });
    auto &groups = g.family->groups;
    groups.erase(std::remove_if(groups.begin(), groups.end(),
                                [](const std::weak_ptr<Group> &w) { return w.expired(); }),
                 groups.end());
    for (size_t begin = 0; begin < order.size();) {
      size_t end = begin;
      while (end < order.size() && g.colors[order[end]] == g.colors[order[begin]])
        ++end;
      auto group = std::make_shared<Group>(static_cast<int>(end - begin), g.family);
      groups.push_back(group);
      for (size_t i = begin; i < end; ++i) {
        group->worldRanks[i - begin] = g.worldRanks[order[i]];
        g.splitOut[order[i]] = {group, static_cast<int>(i - begin)};
      }
      begin = end;
    }
    g.splitGeneration = g.generation;
  }

  /// Where the output is computed: recv itself, or scratch copied to recv
  /// after the second barrier when recv overlaps input others still read.
  uint8_t *outputFor(void *recv, size_t bytes, bool aliased) {
    useScratch_ = aliased;
    if (!aliased)
      return static_cast<uint8_t *>(recv);
    if (scratch_.size() < bytes)
      scratch_.resize(bytes);
    return scratch_.data();
  }

  /// The protocol of the file comment, around one rank's `compute`.
  template <typename Compute>
  Status run(const CallDesc &desc, const void *send, const Status &local, Compute &&compute,
             void *recv, size_t outBytes, int color = 0, int key = 0) {
    Group &g = *group_;
    std::unique_lock<std::mutex> lock(g.family->mutex);
    if (!g.failure.empty())
      return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", g.failure));
    g.descs[rank_] = desc;
    g.localErrors[rank_] = local.message();
    g.sends[rank_] = send;
    g.colors[rank_] = color;
    g.keys[rank_] = key;
    if (!g.arrive(lock, /*interruptible=*/true))
      return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", g.failure));
    const std::string verdict = judgeCalls(g.descs, g.localErrors);
    lock.unlock();

    useScratch_ = false;
    Status computed = verdict.empty() ? compute() : Status::error(verdict);

    lock.lock();
    if (!computed.isOk())
      g.fail(computed.message());
    g.arrive(lock, /*interruptible=*/false);
    lock.unlock();
    if (!computed.isOk())
      return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", computed.message()));
    if (useScratch_ && outBytes > 0)
      std::memcpy(recv, scratch_.data(), outBytes);
    return Status::ok();
  }

  std::shared_ptr<Group> group_;
  const int rank_;
  std::vector<const void *> inputs_; // per-call input pointers, kept to avoid allocation
  std::vector<uint8_t> scratch_;     // output of aliased calls, grown on demand
  bool useScratch_ = false;
};

} // namespace

Status createInProcessGroup(int size, std::vector<std::unique_ptr<Communicator>> &ranks) {
  if (size < 1 || size > 4096)
    return Status::error(cat("in-process group: world size ", size, " is outside 1..4096"));
  auto family = std::make_shared<Family>();
  auto group = std::make_shared<Group>(size, family);
  family->groups.push_back(group);
  ranks.clear();
  for (int r = 0; r < size; ++r)
    ranks.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return Status::ok();
}

} // namespace fsdp::rt::comm
