//===- InProcessRanks.h - a plan's ranks as threads of this process -------===//
//
// The runtime's one way to run N ranks in one process: N threads over one
// in-process communicator group (runtime/comm/InProcessCommunicator.h).
// fsdp-run runs a plan compiled for N ranks this way unless a launcher
// started it, the step session (fsdp_step.h) keeps the group between calls,
// and fsdp-ckpt convert runs a target plan's ranks to write its shards
// (runInProcessRanks). Each rank keeps its thread for the group's life, so
// a rank's device (a CUDA context, say) is always used from one thread,
// however many jobs the group is given.
//
// The first failure wins: a rank that fails aborts the group so that no
// rank waits for it, and the others then fail in their next collective
// with an "aborted" message that says less than the original, so only the
// first is kept. Aborting is the job's (it knows its executor, whose abort
// also reaches a device's own channels, and when not to: ranks that all
// fail the start-up agreement alike leave nobody waiting).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXEC_INPROCESSRANKS_H
#define FSDP_RUNTIME_EXEC_INPROCESSRANKS_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace fsdp::rt {

class InProcessRanks {
public:
  /// `size` ranks: one new in-process group (rank r's communicator at
  /// index r) and a thread per rank, waiting for jobs.
  static Status create(int size, std::unique_ptr<InProcessRanks> &out);
  /// Stops and joins the threads (no job may be running), then destroys
  /// the communicators.
  ~InProcessRanks();
  InProcessRanks(const InProcessRanks &) = delete;
  InProcessRanks &operator=(const InProcessRanks &) = delete;

  int size() const { return static_cast<int>(comms_.size()); }
  Communicator &comm(int rank) const { return *comms_[rank]; }
  /// The communicators, which a caller may replace by wrappers of them (a
  /// test hook that stalls a rank) before the first job.
  std::vector<std::unique_ptr<Communicator>> &communicators() { return comms_; }

  using Job = std::function<Status(int rank)>;
  /// Runs job(r) on rank r's thread, every rank at once; returns when each
  /// has returned: ok, or the first failure (reported, or returned).
  Status onEveryRank(const Job &job);
  /// Keeps `failure` as the group's first unless one came earlier, and
  /// returns it: a failing job calls this before it aborts the group.
  Status reportFailure(const Status &failure);

private:
  InProcessRanks() = default;
  void loop(int rank);

  std::vector<std::unique_ptr<Communicator>> comms_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  const std::function<void(int)> *job_ = nullptr;
  size_t pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  Status first_ = Status::ok(); // this job's first failure
};

/// Runs `body` on every rank of `plan` (its compiled world size), each with
/// a CPU device and its own executor, on an InProcessRanks group; a rank
/// that fails aborts its executor's groups, and the first failure is
/// returned. fsdp-ckpt convert --format=sharded writes a checkpoint in a
/// target plan's layout this way: each rank restores the state
/// (restoreCheckpointState, rank 0 reading the source tensor by tensor) and
/// saves its shard (saveCheckpoint), the same code a training run saves
/// with. No step is run, so the devices' arenas are reserved, never touched.
using RankBody = std::function<Status(Executor &executor)>;
Status runInProcessRanks(const LoadedPlan &plan, const RankBody &body);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXEC_INPROCESSRANKS_H
