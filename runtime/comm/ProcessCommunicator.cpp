//===- ProcessCommunicator.cpp - collectives over a transport's byte moves ===//
//
// The verdict, the sticky failure and the reductions of ProcessCommunicator.h;
// the transports (MpiCommunicator.cpp, TcpCommunicator.cpp) only move bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/ProcessCommunicator.h"

#include "runtime/comm/RankOrderReduce.h"

#include <cstring>

namespace fsdp::rt::comm {

ProcessCommunicator::ProcessCommunicator(int rank, int size)
    : rank_(rank), size_(size), wire_(static_cast<size_t>(size)),
      inputs_(static_cast<size_t>(size)) {}

/// The exchange and verdict of the file comment, then `transfer`; any
/// failure is kept, so every later call fails the same way on every rank
/// that saw it.
template <typename Transfer>
Status ProcessCommunicator::run(const CallDesc &desc, const Status &local, Transfer &&transfer) {
  if (failure_.empty())
    failure_ = pendingFailure();
  if (failure_.empty()) {
    Status status = agree(desc, local);
    if (status.isOk())
      status = transfer();
    if (status.isOk())
      return status;
    const std::string pending = pendingFailure();
    failure_ = pending.empty() ? status.message() : pending;
    onFailure();
  }
  return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", failure_));
}

Status ProcessCommunicator::agree(const CallDesc &desc, const Status &local) {
  const WireCall mine = toWire(desc, local);
  FSDP_RETURN_IF_ERROR(allGatherBytes(&mine, wire_.data(), sizeof(WireCall)));
  const std::string verdict = judgeWireCalls(wire_.data(), wire_.size());
  return verdict.empty() ? Status::ok() : Status::error(verdict);
}

/// recv (chunk elements) = rank-order reduction of chunk `rank` of every
/// rank's send (size * chunk elements). recv may alias send: the exchange
/// has consumed send before anything is stored.
Status ProcessCommunicator::reduceChunks(const void *send, void *recv, int64_t chunk,
                                         DType dtype, ReduceOp op) {
  const size_t bytes = byteCount(chunk, dtype);
  if (bytes == 0)
    return Status::ok();
  gathered_.resize(bytes * size_);
  FSDP_RETURN_IF_ERROR(allToAllBytes(send, gathered_.data(), bytes));
  for (int s = 0; s < size_; ++s)
    inputs_[s] = gathered_.data() + s * bytes;
  return reduceInRankOrder(inputs_.data(), size_, recv, chunk, dtype, op);
}

Status ProcessCommunicator::allGather(const void *send, void *recv, int64_t sendCount,
                                      DType dtype) {
  const CallDesc desc{CallKind::AllGather, sendCount, dtype};
  return run(desc, checkCall(desc, size_, send, recv), [&]() -> Status {
    const size_t bytes = byteCount(sendCount, dtype);
    auto *out = static_cast<uint8_t *>(recv);
    const auto *mine = static_cast<const uint8_t *>(send);
    // Outside NCCL's in-place layout, received parts must not overwrite
    // the part still being sent.
    if (bytes > 0 && mine != out + rank_ * bytes && overlaps(out, bytes * size_, mine, bytes)) {
      sendCopy_.assign(mine, mine + bytes);
      mine = sendCopy_.data();
    }
    return allGatherBytes(mine, out, bytes);
  });
}

Status ProcessCommunicator::reduceScatter(const void *send, void *recv, int64_t recvCount,
                                          DType dtype, ReduceOp op) {
  const CallDesc desc{CallKind::ReduceScatter, recvCount, dtype, op};
  return run(desc, checkCall(desc, size_, send, recv),
             [&] { return reduceChunks(send, recv, recvCount, dtype, op); });
}

Status ProcessCommunicator::allReduce(const void *send, void *recv, int64_t count, DType dtype,
                                      ReduceOp op) {
  const CallDesc desc{CallKind::AllReduce, count, dtype, op};
  return run(desc, checkCall(desc, size_, send, recv), [&]() -> Status {
    if (count == 0)
      return Status::ok();
    // Reduce-scatter over `size` equal chunks (the last ones padded with
    // zeros, whose reductions nobody reads), then gather the chunks.
    const int64_t chunk = (count + size_ - 1) / size_;
    const size_t bytes = byteCount(count, dtype), chunkBytes = byteCount(chunk, dtype);
    const bool padded = chunkBytes * size_ != bytes;
    if (padded) {
      padded_.assign(chunkBytes * size_, 0);
      std::memcpy(padded_.data(), send, bytes);
      send = padded_.data();
    }
    reduced_.resize(chunkBytes);
    FSDP_RETURN_IF_ERROR(reduceChunks(send, reduced_.data(), chunk, dtype, op));
    void *out = padded ? padded_.data() : recv;
    FSDP_RETURN_IF_ERROR(allGatherBytes(reduced_.data(), out, chunkBytes));
    if (padded)
      std::memcpy(recv, padded_.data(), bytes);
    return Status::ok();
  });
}

Status ProcessCommunicator::broadcast(void *buf, int64_t count, DType dtype, int root) {
  const CallDesc desc{CallKind::Broadcast, count, dtype, ReduceOp::Sum, root};
  return run(desc, checkCall(desc, size_, buf, buf),
             [&] { return broadcastBytes(buf, byteCount(count, dtype), root); });
}

// The agreement exchange is itself the synchronization.
Status ProcessCommunicator::barrier() {
  return run(CallDesc{}, Status::ok(), [] { return Status::ok(); });
}

Status ProcessCommunicator::split(int color, int key, std::unique_ptr<Communicator> &out) {
  out.reset();
  const CallDesc desc{CallKind::Split};
  return run(desc, checkCall(desc, size_, nullptr, nullptr, color),
             [&] { return splitGroup(color, key, out); });
}

} // namespace fsdp::rt::comm
