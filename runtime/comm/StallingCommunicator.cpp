//===- StallingCommunicator.cpp - a rank that stops, for tests ------------===//
//
// The ranks' decorators share one Release (a flag and a condition
// variable): abort() on any of them, or on a communicator split from one,
// sets it before forwarding the abort, so the stalled call wakes whichever
// rank gave up first. The stalled call then fails the way a collective of
// an aborted group does: with an error naming the reason.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/StallingCommunicator.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

namespace fsdp::rt::comm {

namespace {

struct Release {
  std::mutex mutex;
  std::condition_variable cv;
  std::string reason; // non-empty once released
};

class StallingCommunicator final : public Communicator {
public:
  StallingCommunicator(std::unique_ptr<Communicator> inner, std::shared_ptr<Release> release,
                       std::shared_ptr<std::atomic<int64_t>> calls, int64_t stallAt)
      : inner_(std::move(inner)), release_(std::move(release)), calls_(std::move(calls)),
        stallAt_(stallAt) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  using Communicator::allGather;
  using Communicator::allReduce;
  using Communicator::broadcast;
  using Communicator::reduceScatter;

  Status allGather(const void *send, void *recv, int64_t sendCount, DType dtype) override {
    FSDP_RETURN_IF_ERROR(count("allGather"));
    return inner_->allGather(send, recv, sendCount, dtype);
  }
  Status reduceScatter(const void *send, void *recv, int64_t recvCount, DType dtype,
                       ReduceOp op) override {
    FSDP_RETURN_IF_ERROR(count("reduceScatter"));
    return inner_->reduceScatter(send, recv, recvCount, dtype, op);
  }
  Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    FSDP_RETURN_IF_ERROR(this->count("allReduce"));
    return inner_->allReduce(send, recv, count, dtype, op);
  }
  Status broadcast(void *buf, int64_t count, DType dtype, int root) override {
    FSDP_RETURN_IF_ERROR(this->count("broadcast"));
    return inner_->broadcast(buf, count, dtype, root);
  }
  Status barrier() override {
    FSDP_RETURN_IF_ERROR(count("barrier"));
    return inner_->barrier();
  }
  Status split(int color, int key, std::unique_ptr<Communicator> &out) override {
    std::unique_ptr<Communicator> sub;
    FSDP_RETURN_IF_ERROR(inner_->split(color, key, sub));
    out = std::make_unique<StallingCommunicator>(std::move(sub), release_, calls_, stallAt_);
    return Status::ok();
  }
  void abort(const std::string &reason) override {
    {
      std::lock_guard<std::mutex> lock(release_->mutex);
      if (release_->reason.empty())
        release_->reason = reason.empty() ? "aborted" : reason;
    }
    release_->cv.notify_all();
    inner_->abort(reason);
  }

private:
  /// Counts a call; the stalled one waits for the release.
  Status count(const char *call) {
    if (++*calls_ != stallAt_)
      return Status::ok();
    std::unique_lock<std::mutex> lock(release_->mutex);
    release_->cv.wait(lock, [&] { return !release_->reason.empty(); });
    return Status::error(cat(call, " on rank ", rank(),
                             ": stalled for testing (FSDP_TEST_STALL_COLLECTIVE) until the group "
                             "was aborted: ",
                             release_->reason));
  }

  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<Release> release_;
  std::shared_ptr<std::atomic<int64_t>> calls_; // this rank's, shared with its splits
  const int64_t stallAt_;                         // 0: never
};

} // namespace

void stallForTesting(std::vector<std::unique_ptr<Communicator>> &ranks, int rank, int64_t call) {
  auto release = std::make_shared<Release>();
  for (size_t r = 0; r < ranks.size(); ++r)
    ranks[r] = std::make_unique<StallingCommunicator>(
        std::move(ranks[r]), release, std::make_shared<std::atomic<int64_t>>(0),
        static_cast<int>(r) == rank ? call : 0);
}

Status parseStallSpec(const std::string &text, int size, int &rank, int64_t &call) {
  const size_t colon = text.find(':');
  char *end = nullptr;
  const long r = colon == std::string::npos ? -1 : std::strtol(text.c_str(), &end, 10);
  const bool rankOk = colon != std::string::npos && end == text.c_str() + colon && r >= 0 &&
                      r < size;
  const long long n = rankOk ? std::strtoll(text.c_str() + colon + 1, &end, 10) : 0;
  if (!rankOk || *end != '\0' || n < 1 || colon + 1 == text.size())
    return Status::error(cat("FSDP_TEST_STALL_COLLECTIVE='", text,
                             "': expected RANK:N (a rank 0..", size - 1,
                             " and the 1-based collective call it stalls in)"));
  rank = static_cast<int>(r);
  call = n;
  return Status::ok();
}

} // namespace fsdp::rt::comm
