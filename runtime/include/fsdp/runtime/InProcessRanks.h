//===- InProcessRanks.h - a plan's ranks as threads, for moving state -----===//
//
// Checkpoint tools move state between layouts by running the plans that
// define them: a sharded checkpoint is consolidated by restoring each of its
// rank files into an executor of its own saving plan and gathering
// (Executor::writeState, then readFullState), and it is resharded by
// restoring the consolidated state into each rank of the target plan
// (writeFullState). Both reuse the executor's own shard layout code, so a
// conversion is exact by construction, not by a second implementation of
// the layout. runInProcessRanks gives each rank a thread, a CPU device and
// an executor over one in-process group; no step is ever run, so the
// devices' arenas are reserved but never touched.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_INPROCESSRANKS_H
#define FSDP_RUNTIME_INPROCESSRANKS_H

#include "fsdp/runtime/Executor.h"
#include "fsdp/runtime/PlanFile.h"
#include "fsdp/runtime/Status.h"

#include <functional>

namespace fsdp::rt {

/// Runs `body` on every rank of `plan` (its compiled world size), each with
/// its own executor. The first rank to fail aborts the group, so ranks
/// waiting in a collective return too, and its error is returned.
using RankBody = std::function<Status(Executor &executor)>;
Status runInProcessRanks(const LoadedPlan &plan, const RankBody &body);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_INPROCESSRANKS_H
