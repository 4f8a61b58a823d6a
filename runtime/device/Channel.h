//===- Channel.h - collectives enqueued on a device stream ----------------===//
//
// A Channel is one rank's handle on a group for collectives over device
// memory, in NCCL's model: each call is enqueued on a stream of the
// channel's device (Device.h) and runs in that stream's order, after the
// events it waits on and before the ones recorded after it. Enqueueing
// returns at once; a collective's failure is the stream's (sticky, reported
// by its synchronize). Buffers, counts, in-place layouts and the rank-order
// reduction are Communicator's (runtime/comm/Communicator.h), whose
// calls map one to one onto ncclAllGather, ncclReduceScatter, ncclAllReduce
// and ncclBroadcast; the CPU channel (backends/cpu/CpuChannel.h) runs a
// host Communicator's calls on the stream's worker, the CUDA device's
// (backends/cuda/NcclChannel.h) issues them on NCCL as
// runtime/comm/NcclMapping.h maps them.
//
// A device makes a channel over a host-side group (Device::createChannel),
// the way NCCL bootstraps a communicator over MPI or a store; split() then
// forms sub-groups (ncclCommSplit) and abort() fails the group on every
// rank (ncclCommAbort), so a rank that stops taking part never leaves the
// others waiting. A collective that a failed stream reaches aborts the
// group for the same reason.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_DEVICE_CHANNEL_H
#define FSDP_RUNTIME_DEVICE_CHANNEL_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"

#include <memory>
#include <string>

namespace fsdp::rt {

class Channel {
public:
  virtual ~Channel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Enqueued on `stream`; the arguments are Communicator's.
  virtual Status allGather(Stream &stream, const void *send, void *recv, int64_t sendCount,
                           DType dtype) = 0;
  virtual Status reduceScatter(Stream &stream, const void *send, void *recv, int64_t recvCount,
                               DType dtype, ReduceOp op) = 0;
  virtual Status allReduce(Stream &stream, const void *send, void *recv, int64_t count,
                           DType dtype, ReduceOp op) = 0;
  virtual Status broadcast(Stream &stream, void *buf, int64_t count, DType dtype, int root) = 0;

  /// Collectives enqueued from beginGroup() to endGroup() are issued
  /// together, as NCCL's ncclGroupStart/End (which may fuse them; calls
  /// that use each other's results still run in order). The executor
  /// brackets the collectives it enqueues at one plan point on one stream
  /// with them; every rank must bracket alike. They need not be called:
  /// ungrouped collectives go one by one. Nothing by default (the CPU
  /// channel runs them in order either way).
  virtual Status beginGroup() { return Status::ok(); }
  virtual Status endGroup() { return Status::ok(); }
  /// Whether beginGroup/endGroup change anything: the executor groups
  /// collectives only on channels that launch a group as one (NCCL), and
  /// otherwise issues them one by one, so each keeps its own place in the
  /// stream (the collective watchdog times each on its own).
  virtual bool groupsCalls() const { return false; }

  /// Collective, at once (not on a stream): the ranks passing the same
  /// `color` form a new channel on the same device, ranked by (key, rank).
  virtual Status split(int color, int key, std::unique_ptr<Channel> &out) = 0;
  /// Fails the group on every rank, from any thread; later collectives
  /// fail, and ones in flight return with an error naming `reason`.
  virtual void abort(const std::string &reason) = 0;

  // --- TensorRef forms: counts come from the shapes, checked on the host
  // when enqueued. A rank whose shapes do not fit aborts the group.
  Status allGather(Stream &stream, const TensorRef &send, const TensorRef &recv) {
    FSDP_RETURN_IF_ERROR(checkShapes("allGather", send, recv, size(), 1));
    return allGather(stream, send.data, recv.data, send.numElements(), send.dtype);
  }
  Status reduceScatter(Stream &stream, const TensorRef &send, const TensorRef &recv,
                       ReduceOp op) {
    FSDP_RETURN_IF_ERROR(checkShapes("reduceScatter", send, recv, 1, size()));
    return reduceScatter(stream, send.data, recv.data, recv.numElements(), send.dtype, op);
  }
  Status allReduce(Stream &stream, const TensorRef &send, const TensorRef &recv, ReduceOp op) {
    FSDP_RETURN_IF_ERROR(checkShapes("allReduce", send, recv, 1, 1));
    return allReduce(stream, send.data, recv.data, send.numElements(), send.dtype, op);
  }
  Status broadcast(Stream &stream, const TensorRef &buf, int root) {
    return broadcast(stream, buf.data, buf.numElements(), buf.dtype, root);
  }

private:
  Status checkShapes(const char *collective, const TensorRef &send, const TensorRef &recv,
                     int64_t sendScale, int64_t recvScale) {
    Status s = checkCollectiveShapes(collective, send, recv, sendScale, recvScale, size());
    if (!s)
      abort(s.message());
    return s;
  }
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_DEVICE_CHANNEL_H
