//===- InProcessCommunicator.cpp - ranks as threads of one process --------===//
//
// Every collective runs the same protocol under one group mutex: each rank
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
//===----------------------------------------------------------------------===//

#include "comm/InProcessCommunicator.h"

#include "comm/RankOrderReduce.h"

#include <condition_variable>
#include <cstring>
#include <limits>
#include <mutex>

namespace fsdp::rt::comm {

namespace {

enum class CallKind : uint8_t { AllGather, ReduceScatter, AllReduce, Broadcast, Barrier };

/// What one rank asked for. All ranks must publish equal descriptions; the
/// fields a kind does not use stay at their defaults so they compare equal.
struct CallDesc {
  CallKind kind = CallKind::Barrier;
  int64_t count = 0;
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int root = 0;

  bool operator==(const CallDesc &o) const {
    return kind == o.kind && count == o.count && dtype == o.dtype && op == o.op &&
           root == o.root;
  }

  std::string describe() const {
    switch (kind) {
    case CallKind::AllGather:
      return cat("allGather(", count, " x ", dtypeName(dtype), ")");
    case CallKind::ReduceScatter:
      return cat("reduceScatter(", count, " x ", dtypeName(dtype), ", ", reduceOpName(op), ")");
    case CallKind::AllReduce:
      return cat("allReduce(", count, " x ", dtypeName(dtype), ", ", reduceOpName(op), ")");
    case CallKind::Broadcast:
      return cat("broadcast(", count, " x ", dtypeName(dtype), ", root ", root, ")");
    case CallKind::Barrier:
      return "barrier()";
    }
    return "unknown collective";
  }
};

struct Slot {
  CallDesc desc;
  const void *send = nullptr;
  std::string localError; // why this rank cannot take part; empty if it can
};

/// State shared by the ranks of one group; every field is guarded by mutex.
struct Group {
  explicit Group(int n) : size(n), slots(static_cast<size_t>(n)) {}

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

  /// The verdict on the published slots: empty when the call may proceed.
  std::string judge() const {
    for (int r = 0; r < size; ++r)
      if (!slots[r].localError.empty())
        return cat("rank ", r, " cannot take part: ", slots[r].localError);
    for (int r = 1; r < size; ++r)
      if (!(slots[r].desc == slots[0].desc))
        return cat("ranks disagree: rank 0 called ", slots[0].desc.describe(), " but rank ", r,
                   " called ", slots[r].desc.describe());
    return {};
  }

  const int size;
  std::mutex mutex;
  std::condition_variable cv;
  int arrived = 0;
  uint64_t generation = 0;
  std::string failure; // non-empty once the group has failed, for good
  std::vector<Slot> slots;
};

bool overlaps(const void *a, size_t aBytes, const void *b, size_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

class InProcessCommunicator final : public Communicator {
public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank), inputs_(static_cast<size_t>(group_->size)) {}

  // A rank that goes away must not strand the others in their next call.
  ~InProcessCommunicator() override {
    std::lock_guard<std::mutex> lock(group_->mutex);
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
    return run(desc, send, checkBuffers(desc, send, recv), [&]() -> Status {
      uint8_t *dst = outputFor(recv, outBytes, !inPlace && overlaps(recv, outBytes, send, bytes));
      for (int s = 0; s < size(); ++s)
        if (bytes > 0 && !(inPlace && s == rank_))
          std::memcpy(dst + s * bytes, group_->slots[s].send, bytes);
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
    Status local = checkBuffers(desc, send, recv);
    if (local.isOk())
      local = checkReducible(dtype, op, "reduceScatter");
    return run(desc, send, local, [&]() -> Status {
      for (int s = 0; s < size(); ++s)
        inputs_[s] = static_cast<const uint8_t *>(group_->slots[s].send) + rank_ * bytes;
      void *dst = outputFor(recv, bytes, !inPlace && overlaps(recv, bytes, send, bytes * size()));
      return reduceInRankOrder(inputs_.data(), size(), dst, recvCount, dtype, op);
    }, recv, bytes);
  }

  Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    CallDesc desc{CallKind::AllReduce, count, dtype, op};
    const size_t bytes = byteCount(count, dtype);
    Status local = checkBuffers(desc, send, recv);
    if (local.isOk())
      local = checkReducible(dtype, op, "allReduce");
    return run(desc, send, local, [&]() -> Status {
      for (int s = 0; s < size(); ++s)
        inputs_[s] = group_->slots[s].send;
      // Every other rank reads all of our send: an aliased output must wait.
      void *dst = outputFor(recv, bytes, overlaps(recv, bytes, send, bytes));
      return reduceInRankOrder(inputs_.data(), size(), dst, count, dtype, op);
    }, recv, bytes);
  }

  Status broadcast(void *buf, int64_t count, DType dtype, int root) override {
    CallDesc desc{CallKind::Broadcast, count, dtype, ReduceOp::Sum, root};
    const size_t bytes = byteCount(count, dtype);
    Status local = checkBuffers(desc, buf, buf);
    if (local.isOk() && (root < 0 || root >= size()))
      local = Status::error(cat("broadcast: root ", root, " is outside the group of ", size()));
    return run(desc, buf, local, [&]() -> Status {
      if (rank_ != root && bytes > 0)
        std::memcpy(buf, group_->slots[root].send, bytes);
      return Status::ok();
    }, buf, 0);
  }

  Status barrier() override {
    return run(CallDesc{}, nullptr, Status::ok(), [] { return Status::ok(); }, nullptr, 0);
  }

  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(group_->mutex);
    group_->fail(cat("rank ", rank_, " aborted the group: ", reason));
  }

private:
  static size_t byteCount(int64_t count, DType dtype) {
    return count > 0 ? static_cast<size_t>(count) * dtypeSize(dtype) : 0;
  }

  /// Why this rank's arguments cannot take part, checked before publishing
  /// so that the reason reaches every rank through the slots.
  Status checkBuffers(const CallDesc &desc, const void *send, const void *recv) const {
    const char *name = desc.kind == CallKind::AllGather       ? "allGather"
                       : desc.kind == CallKind::ReduceScatter ? "reduceScatter"
                       : desc.kind == CallKind::AllReduce     ? "allReduce"
                                                              : "broadcast";
    if (dtypeSize(desc.dtype) == 0)
      return Status::error(cat(name, ": invalid element type ", static_cast<int>(desc.dtype)));
    if (desc.count < 0)
      return Status::error(cat(name, ": negative element count ", desc.count));
    // The largest buffer a call touches is count * size elements.
    if (desc.count > std::numeric_limits<int64_t>::max() / 8 / size())
      return Status::error(cat(name, ": element count ", desc.count, " is too large"));
    if (desc.count > 0 && (!send || !recv))
      return Status::error(cat(name, ": null buffer for ", desc.count, " elements"));
    return Status::ok();
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
             void *recv, size_t outBytes) {
    Group &g = *group_;
    std::unique_lock<std::mutex> lock(g.mutex);
    if (!g.failure.empty())
      return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", g.failure));
    g.slots[rank_] = Slot{desc, send, local.message()};
    if (!g.arrive(lock, /*interruptible=*/true))
      return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", g.failure));
    const std::string verdict = g.judge();
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
  auto group = std::make_shared<Group>(size);
  ranks.clear();
  for (int r = 0; r < size; ++r)
    ranks.push_back(std::make_unique<InProcessCommunicator>(group, r));
  return Status::ok();
}

} // namespace fsdp::rt::comm
