//===- Communicator.h - collectives of one rank, NCCL semantics -----------===//
//
// The backend-neutral view one rank has of its group: rank(), size() and the
// collectives FSDP needs (all-gather of parameter shards, reduce-scatter and
// all-reduce of gradients, broadcast, barrier), with NCCL's meaning for
// buffers and counts. The raw forms take (pointer, element count, DType) in
// the argument order of ncclAllGather / ncclReduceScatter / ncclAllReduce /
// ncclBroadcast, so an NCCL communicator maps each call to one NCCL call on
// a stream, and an MPI communicator (Open MPI: MPI_Allgather, MPI_Bcast,
// MPI_Barrier, and reductions done as a gather plus the rank-order
// reduction the CPU communicators share) fits behind the same interface.
// Every call returns a Status: mismatched calls between ranks, unsupported
// types and aborts are errors on every rank, never a hang or an exit. CPU
// communicators reduce in rank order, ((r0 + r1) + r2) + ..., in the type's
// compute type (float for bf16 and f16, rounded to nearest even once at the
// end), so results never depend on timing and a sharded run reproduces an
// unsharded one bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_COMMUNICATOR_H
#define FSDP_RUNTIME_COMM_COMMUNICATOR_H

#include "runtime/support/DType.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fsdp::rt {

/// Reductions across ranks. Avg is Sum followed by one division by size(),
/// the way FSDP averages gradients (and ncclAvg is specified); it is defined
/// for floating types only. Max (ncclMax) is what an inf-norm gradient
/// clip combines; a NaN on any rank makes the result NaN, as torch's max
/// does, so a clip sees every rank's overflow.
enum class ReduceOp : uint8_t { Sum, Avg, Max };

inline const char *reduceOpName(ReduceOp op) {
  return op == ReduceOp::Sum ? "sum" : op == ReduceOp::Avg ? "avg" : "max";
}

/// Whether send and recv fit a collective over `groupSize` ranks: the same
/// dtype, and send.numElements() * sendScale == recv.numElements() *
/// recvScale (the scale is the group size on the side that holds every
/// rank's part). The error names `collective` and both shapes. Shared by
/// the TensorRef forms here and Channel's (runtime/device/Channel.h).
Status checkCollectiveShapes(const char *collective, const TensorRef &send, const TensorRef &recv,
                             int64_t sendScale, int64_t recvScale, int groupSize);

/// One rank's handle on a group. A communicator is used by one thread at a
/// time (the rank's); abort() alone may be called from any thread. Every rank
/// must issue the same collectives in the same order with the same counts,
/// types, ops and roots; a disagreement is reported to every rank.
///
/// Failures are sticky: after a collective fails or the group is aborted,
/// every later call on every rank returns an error, as with NCCL's
/// asynchronous errors, because the ranks no longer agree on where they are.
/// A rank that cannot take part in a collective (it failed to load its
/// input, its shapes are wrong) must call abort() so the others wake with an
/// error instead of waiting for it; the TensorRef forms below do that.
///
/// Buffers of different ranks must not overlap. A rank's receive buffer may
/// alias its own send buffer in NCCL's in-place layouts: allReduce with
/// recv == send, allGather with send == recv + rank * sendCount, and
/// reduceScatter with recv == send + rank * recvCount.
class Communicator {
public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// recv (sendCount * size() elements) = every rank's send, in rank order.
  /// Any element type: the data are only copied.
  virtual Status allGather(const void *send, void *recv, int64_t sendCount, DType dtype) = 0;
  /// send holds size() chunks of recvCount elements; rank r receives the
  /// reduction over ranks of chunk r. Types: f32, f64, bf16, f16, i64.
  virtual Status reduceScatter(const void *send, void *recv, int64_t recvCount, DType dtype,
                               ReduceOp op) = 0;
  /// recv (count elements) = the reduction over ranks of send.
  virtual Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                           ReduceOp op) = 0;
  /// Every rank's buf (count elements) receives root's buf.
  virtual Status broadcast(void *buf, int64_t count, DType dtype, int root) = 0;
  /// Returns once every rank has called barrier().
  virtual Status barrier() = 0;
  /// Collective over this communicator (ncclCommSplit, MPI_Comm_split):
  /// ranks passing the same `color` form one new communicator, ranked by
  /// (key, old rank). Every rank must call it, in the same order relative to
  /// other collectives. Plans use it to build the shard and replica groups
  /// of hybrid sharding.
  virtual Status split(int color, int key, std::unique_ptr<Communicator> &out);
  /// Fails the group: every rank waiting in or later calling a collective
  /// gets an error naming this rank and `reason`. For an MPI communicator
  /// this is MPI_Abort, for NCCL ncclCommAbort.
  virtual void abort(const std::string &reason) = 0;

  // --- TensorRef forms: element counts come from the shapes. A rank whose
  // shapes do not fit the collective aborts the group with the reason, so
  // every rank reports it.
  Status allGather(const TensorRef &send, const TensorRef &recv);
  Status reduceScatter(const TensorRef &send, const TensorRef &recv, ReduceOp op);
  Status allReduce(const TensorRef &send, const TensorRef &recv, ReduceOp op);
  Status broadcast(const TensorRef &buf, int root);

  /// Start-up agreement on a 64-bit value (the plan hash, the world size a
  /// plan was compiled for): OK on every rank when all ranks pass the same
  /// value, otherwise the same error on every rank, naming `what` and which
  /// ranks hold which value. The group stays usable either way.
  Status checkSameOnAllRanks(uint64_t value, const char *what);
  /// Every rank learns whether every rank's `local` succeeded: OK on all
  /// ranks, or on all ranks the error of the first rank that failed ("what
  /// failed on rank R: message", its message broadcast from it), so a rank
  /// whose part failed never leaves the others waiting in a later collective.
  Status agree(const Status &local, const char *what);

protected:
  /// abort(status) and return it: how a rank leaves a collective early
  /// without stranding the others.
  Status abortWith(Status status);

private:
  Status checkShapes(const char *collective, const TensorRef &send, const TensorRef &recv,
                     int64_t sendScale, int64_t recvScale);
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_COMM_COMMUNICATOR_H
