//===- InProcessRanks.cpp - a plan's ranks as threads, for moving state ---===//
//
// The first failure wins: a rank that fails aborts its executor's groups,
// and the others then fail in their next collective with an "aborted"
// message that says less than the original, so only the first is kept.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/InProcessRanks.h"
#include "runtime/backends/cpu/CpuDevice.h"

#include "runtime/channels/InProcessCommunicator.h"
#include "runtime/device/Device.h"
#include "runtime/plan/plan_generated.h"

#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fsdp::rt {

Status runInProcessRanks(const LoadedPlan &plan, const RankBody &body) {
  const int size = static_cast<int>(plan.plan().world_size());
  std::vector<std::unique_ptr<Communicator>> comms;
  FSDP_RETURN_IF_ERROR(comm::createInProcessGroup(size, comms));
  std::mutex mutex;
  Status first = Status::ok();
  auto rankMain = [&](int rank) {
    std::unique_ptr<Device> device = createCpuDevice();
    std::unique_ptr<Executor> executor;
    Status s = Executor::create(plan, *device, comms[rank].get(), executor);
    if (s)
      s = body(*executor);
    if (s)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (first)
        first = s;
    }
    if (executor)
      executor->abort(s.message());
    else
      comms[rank]->abort(s.message());
  };
  std::vector<std::thread> threads;
  for (int rank = 0; rank < size; ++rank)
    threads.emplace_back(rankMain, rank);
  for (std::thread &t : threads)
    t.join();
  return first;
}

} // namespace fsdp::rt
