//===- StallingCommunicator.h - a rank that stops, for tests --------------===//
//
// Tests only. The collective watchdog (runtime/exec/CollectiveWatchdog.h)
// exists for the rank that stops taking part without failing: a stopped
// process, a wedged GPU. Processes can be stopped with SIGSTOP; in-process
// ranks cannot, so this decorator makes one: each rank's communicator is
// wrapped, counts its collective calls (its splits count with it), and
// rank R blocks in its N-th call until any communicator of the group is
// aborted, which wakes it with an error. Everything else is forwarded.
// fsdp-run installs it for in-process ranks when the environment variable
// FSDP_TEST_STALL_COLLECTIVE=R:N is set (documented as a test hook in its
// --help), and the watchdog's unit tests use it directly.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_STALLINGCOMMUNICATOR_H
#define FSDP_RUNTIME_COMM_STALLINGCOMMUNICATOR_H

#include "runtime/comm/Communicator.h"

#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt::comm {

/// Wraps every communicator of `ranks` (rank r at index r): rank `rank`
/// blocks in its `call`-th collective call (1-based: all-gather,
/// reduce-scatter, all-reduce, broadcast and barrier count; split does
/// not) until the group is aborted.
void stallForTesting(std::vector<std::unique_ptr<Communicator>> &ranks, int rank, int64_t call);

/// Reads "R:N" (FSDP_TEST_STALL_COLLECTIVE's form) for a group of `size`
/// ranks; an error names what is wrong.
Status parseStallSpec(const std::string &text, int size, int &rank, int64_t &call);

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_STALLINGCOMMUNICATOR_H
