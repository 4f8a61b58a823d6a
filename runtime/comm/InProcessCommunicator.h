//===- InProcessCommunicator.h - ranks as threads of one process ----------===//
//
// A group of N ranks that are N threads of one process, sharing memory: the
// communicator behind tests and single-machine runs (fsdp-run's default when
// a plan's world size is N). Each collective publishes every rank's buffer
// and call description, meets at a barrier, lets each rank compute its own
// output by reading all ranks' inputs in rank order, and meets again before
// any buffer may be reused. There are no timeouts: a disagreement between
// ranks is detected from the published descriptions, and a rank that stops
// taking part aborts the group (destroying a rank's communicator does so
// too), so no rank ever waits forever on a rank that will not come.
// split() builds further in-process groups (the shard and replica groups of
// hybrid sharding); abort() on any group of that family fails all of them,
// as MPI_Abort would, while destroying a communicator fails only its own
// group, so communicators may be torn down in any order.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_INPROCESSCOMMUNICATOR_H
#define FSDP_RUNTIME_COMM_INPROCESSCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>
#include <vector>

namespace fsdp::rt::comm {

/// Creates the `size` communicators of one new group into `ranks` (rank i
/// at index i). Hand each to its own thread; they may be destroyed in any
/// order, and the group lives until the last one is.
Status createInProcessGroup(int size, std::vector<std::unique_ptr<Communicator>> &ranks);

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_INPROCESSCOMMUNICATOR_H
