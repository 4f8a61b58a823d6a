//===- ProcessCommunicator.h - collectives of ranks that share no memory --===//
//
// What the MPI and TCP communicators have in common, written once: their
// ranks are processes, so every collective is made of byte moves a
// transport provides (an all-gather, an all-to-all, a broadcast), never of
// the transport's arithmetic. Before each collective the ranks all-gather
// CollectiveCall.h's WireCall and judge it, so a mismatch is the same error
// on every rank (that exchange is also barrier()); reductions are the
// shared rank-order reduction over exchanged chunks, so the bits equal the
// in-process communicator's:
//   reduceScatter  all-to-all of the chunks (rank r receives every rank's
//                  chunk r), then the rank-order reduction
//   allReduce      the same on ceil(count / size) chunks of the (padded)
//                  buffer, then an all-gather of the reduced chunks: the
//                  traffic of a reduce-scatter plus an all-gather
// A failure is kept: every later call on this communicator fails with it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_PROCESSCOMMUNICATOR_H
#define FSDP_RUNTIME_COMM_PROCESSCOMMUNICATOR_H

#include "runtime/comm/CollectiveCall.h"

#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt::comm {

class ProcessCommunicator : public Communicator {
public:
  ProcessCommunicator(int rank, int size);

  int rank() const final { return rank_; }
  int size() const final { return size_; }
  using Communicator::allGather;
  using Communicator::allReduce;
  using Communicator::broadcast;
  using Communicator::reduceScatter;

  Status allGather(const void *send, void *recv, int64_t sendCount, DType dtype) final;
  Status reduceScatter(const void *send, void *recv, int64_t recvCount, DType dtype,
                       ReduceOp op) final;
  Status allReduce(const void *send, void *recv, int64_t count, DType dtype, ReduceOp op) final;
  Status broadcast(void *buf, int64_t count, DType dtype, int root) final;
  Status barrier() final;
  Status split(int color, int key, std::unique_ptr<Communicator> &out) final;

protected:
  // --- The transport's moves; `bytes` is per rank and may be 0.
  /// out (size * bytes) = every rank's `mine`, in rank order. `mine` is
  /// either this rank's own part of out (in place) or disjoint from out.
  virtual Status allGatherBytes(const void *mine, void *out, size_t bytes) = 0;
  /// out's chunk s (bytes) = chunk rank() of rank s's `in` (size chunks);
  /// in and out are disjoint.
  virtual Status allToAllBytes(const void *in, void *out, size_t bytes) = 0;
  /// Every rank's buf = root's.
  virtual Status broadcastBytes(void *buf, size_t bytes, int root) = 0;
  /// This rank's communicator of the ranks passing `color`, ranked by
  /// (key, old rank), once the ranks agreed to split.
  virtual Status splitGroup(int color, int key, std::unique_ptr<Communicator> &out) = 0;

  /// A failure that came from elsewhere (an abort that reached this rank),
  /// which every call reports from then on; empty when there is none.
  virtual std::string pendingFailure() { return {}; }
  /// Called once when a collective fails, after the failure is kept.
  virtual void onFailure() {}

private:
  template <typename Transfer>
  Status run(const CallDesc &desc, const Status &local, Transfer &&transfer);
  Status agree(const CallDesc &desc, const Status &local);
  Status reduceChunks(const void *send, void *recv, int64_t chunk, DType dtype, ReduceOp op);

  int rank_, size_;
  std::string failure_; // non-empty once a collective failed, for good
  // Per-call scratch, kept to avoid allocating on every collective.
  std::vector<WireCall> wire_;
  std::vector<const void *> inputs_;
  std::vector<uint8_t> gathered_, padded_, reduced_, sendCopy_;
};

} // namespace fsdp::rt::comm

#endif // FSDP_RUNTIME_COMM_PROCESSCOMMUNICATOR_H
