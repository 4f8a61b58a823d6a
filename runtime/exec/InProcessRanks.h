//===- InProcessRanks.h - a plan's ranks as threads, for moving state -----===//
//
// `fsdp-ckpt convert --format=sharded` writes a checkpoint in a target
// plan's layout by running that plan's ranks: each restores the state
// (restoreCheckpointState, rank 0 reading the source tensor by tensor) and
// saves its shard (saveCheckpoint), the same code a training run saves
// with, so the result is exactly what the plan itself would have written.
// runInProcessRanks gives each rank a thread, a CPU device and an executor
// over one in-process group; no step is ever run, so the devices' arenas
// are reserved but never touched.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_INPROCESSRANKS_H
#define FSDP_RUNTIME_INPROCESSRANKS_H

#include "runtime/exec/Executor.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"

#include <functional>

namespace fsdp::rt {

/// Runs `body` on every rank of `plan` (its compiled world size), each with
/// its own executor. The first rank to fail aborts the group, so ranks
/// waiting in a collective return too, and its error is returned.
using RankBody = std::function<Status(Executor &executor)>;
Status runInProcessRanks(const LoadedPlan &plan, const RankBody &body);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_INPROCESSRANKS_H
