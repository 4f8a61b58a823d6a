//===- NcclChannel.h - the CUDA device's channel, on NCCL -----------------===//
//
// The Channel (runtime/device/Channel.h) a CUDA device makes for a host
// group: one NCCL communicator over the group's ranks, each rank on its
// device's GPU, with collectives enqueued on the device's streams. What is
// asked of NCCL is nccl::mapBatch's (runtime/comm/NcclMapping.h), the
// mapping the CPU tests check against the in-process communicator; this
// file only issues it. Built when the CUDA build finds nccl.h; NCCL itself
// is opened at run time (NcclLibrary.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_NCCLCHANNEL_H
#define FSDP_RUNTIME_BACKENDS_CUDA_NCCLCHANNEL_H

#include "runtime/device/Channel.h"

#include <memory>

namespace fsdp::rt::cuda {

/// An NCCL channel of GPU `ordinal` (the caller's CUDA device) over the
/// ranks of `group`. Collective over `group`: every rank calls it, and
/// every rank gets the same error when any rank cannot take part (no
/// NCCL, no GPU, a failed ncclCommInitRank). `group` need not outlive the
/// channel (the unique id is exchanged once).
Status createNcclChannel(int ordinal, Communicator &group, std::unique_ptr<Channel> &out);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_NCCLCHANNEL_H
