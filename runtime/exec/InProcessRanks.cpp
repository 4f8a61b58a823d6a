//===- InProcessRanks.cpp - a plan's ranks as threads of this process -----===//
//
// The threads wait on one condition variable for the next job (a
// generation count tells a new job from a spurious wake-up) and the caller
// waits on another for the last rank to finish it. The first failure of a
// job is kept under the same mutex.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/InProcessRanks.h"

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/device/Device.h"
#include "runtime/plan/plan_generated.h"

namespace fsdp::rt {

Status InProcessRanks::create(int size, std::unique_ptr<InProcessRanks> &out) {
  std::unique_ptr<InProcessRanks> ranks(new InProcessRanks());
  FSDP_RETURN_IF_ERROR(comm::createInProcessGroup(size, ranks->comms_));
  for (int r = 0; r < size; ++r)
    ranks->threads_.emplace_back([group = ranks.get(), r] { group->loop(r); });
  out = std::move(ranks);
  return Status::ok();
}

InProcessRanks::~InProcessRanks() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

Status InProcessRanks::onEveryRank(const Job &job) {
  const std::function<void(int)> run = [&](int r) {
    if (Status s = job(r); !s)
      (void)reportFailure(s);
  };
  std::unique_lock<std::mutex> lock(mutex_);
  first_ = Status::ok();
  job_ = &run;
  pending_ = threads_.size();
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [&] { return pending_ == 0; });
  job_ = nullptr;
  return first_;
}

Status InProcessRanks::reportFailure(const Status &failure) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (first_ && !failure)
    first_ = failure;
  return failure;
}

void InProcessRanks::loop(int rank) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_)
      return;
    seen = generation_;
    const std::function<void(int)> *job = job_;
    lock.unlock();
    (*job)(rank);
    lock.lock();
    if (--pending_ == 0)
      done_.notify_all();
  }
}

Status runInProcessRanks(const LoadedPlan &plan, const RankBody &body) {
  std::unique_ptr<InProcessRanks> ranks;
  FSDP_RETURN_IF_ERROR(InProcessRanks::create(static_cast<int>(plan.plan().world_size()), ranks));
  return ranks->onEveryRank([&](int rank) -> Status {
    std::unique_ptr<Device> device = createCpuDevice();
    std::unique_ptr<Executor> executor;
    Status s = Executor::create(plan, *device, &ranks->comm(rank), executor);
    if (s)
      s = body(*executor);
    if (s)
      return s;
    (void)ranks->reportFailure(s);
    if (executor)
      executor->abort(s.message());
    else
      ranks->comm(rank).abort(s.message());
    return s;
  });
}

} // namespace fsdp::rt
