//===- CpuChannel.h - a host communicator as a channel of the CPU device --===//
//
// The CPU backend's Channel (runtime/device/Channel.h): each collective is
// enqueued on a CPU stream, whose worker makes the matching synchronous
// call of a host Communicator (in-process ranks or MPI, runtime/comm/)
// in the stream's order. The communicators keep their contracts (rank-order
// reduction, mismatches reported on every rank, sticky failures), and the
// stream adds one rule: a collective that a failed stream reaches aborts
// the group with the stream's error instead of being skipped, because the
// other ranks would wait for this one in it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_CPUCHANNEL_H
#define FSDP_RUNTIME_BACKENDS_CPU_CPUCHANNEL_H

#include "runtime/device/Channel.h"

#include <memory>

namespace fsdp::rt::cpu {

/// A channel over `group`, which must outlive it; a channel made by
/// split() owns its sub-communicator.
std::unique_ptr<Channel> createCpuChannel(Communicator &group);

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_CPUCHANNEL_H
