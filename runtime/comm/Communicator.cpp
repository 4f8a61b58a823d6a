//===- Communicator.cpp - what every communicator shares ------------------===//
//
// The TensorRef forms of the collectives and the start-up agreement check
// are written once here on top of the raw virtual collectives, so the
// in-process, MPI and NCCL communicators validate shapes and word their
// errors identically. Shape errors abort the group rather than returning
// early: a rank that silently skipped a collective would leave the others
// waiting for it forever.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/Communicator.h"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace fsdp::rt {

namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

Status Communicator::split(int, int, std::unique_ptr<Communicator> &) {
  return abortWith(Status::error("this communicator cannot split into sub-groups"));
}

Status Communicator::abortWith(Status status) {
  abort(status.message());
  return status;
}

Status checkCollectiveShapes(const char *collective, const TensorRef &send, const TensorRef &recv,
                             int64_t sendScale, int64_t recvScale, int groupSize) {
  if (send.dtype == recv.dtype && send.numElements() * sendScale == recv.numElements() * recvScale)
    return Status::ok();
  return Status::error(cat(collective, ": send (", send.numElements(), " x ",
                           dtypeName(send.dtype), ") and recv (", recv.numElements(), " x ",
                           dtypeName(recv.dtype), ") do not fit a group of ", groupSize,
                           " ranks"));
}

Status Communicator::checkShapes(const char *collective, const TensorRef &send,
                                 const TensorRef &recv, int64_t sendScale, int64_t recvScale) {
  Status s = checkCollectiveShapes(collective, send, recv, sendScale, recvScale, size());
  return s ? s : abortWith(s);
}

Status Communicator::allGather(const TensorRef &send, const TensorRef &recv) {
  FSDP_RETURN_IF_ERROR(checkShapes("allGather", send, recv, size(), 1));
  return allGather(send.data, recv.data, send.numElements(), send.dtype);
}

Status Communicator::reduceScatter(const TensorRef &send, const TensorRef &recv, ReduceOp op) {
  FSDP_RETURN_IF_ERROR(checkShapes("reduceScatter", send, recv, 1, size()));
  return reduceScatter(send.data, recv.data, recv.numElements(), send.dtype, op);
}

Status Communicator::allReduce(const TensorRef &send, const TensorRef &recv, ReduceOp op) {
  FSDP_RETURN_IF_ERROR(checkShapes("allReduce", send, recv, 1, 1));
  return allReduce(send.data, recv.data, send.numElements(), send.dtype, op);
}

Status Communicator::broadcast(const TensorRef &buf, int root) {
  return broadcast(buf.data, buf.numElements(), buf.dtype, root);
}

Status Communicator::agree(const Status &local, const char *what) {
  uint64_t length = local ? 0 : local.message().size() + 1; // 0: succeeded
  std::vector<uint64_t> all(static_cast<size_t>(size()));
  FSDP_RETURN_IF_ERROR(allGather(&length, all.data(), 1, DType::U64));
  auto first = std::find_if(all.begin(), all.end(), [](uint64_t n) { return n != 0; });
  if (first == all.end())
    return Status::ok();
  const int root = static_cast<int>(first - all.begin());
  std::string message = rank() == root ? local.message() : std::string(*first - 1, ' ');
  FSDP_RETURN_IF_ERROR(broadcast(message.data(), static_cast<int64_t>(message.size()), DType::U8,
                                 root));
  return Status::error(cat(what, " failed on rank ", root, ": ", message));
}

Status Communicator::checkSameOnAllRanks(uint64_t value, const char *what) {
  std::vector<uint64_t> all(static_cast<size_t>(size()));
  FSDP_RETURN_IF_ERROR(allGather(&value, all.data(), 1, DType::U64));
  // Every rank builds the message from the same gathered values, so every
  // rank reports the same thing: rank 0's value and the first few ranks that
  // differ from it.
  std::string message;
  int differing = 0;
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0])
      continue;
    if (++differing <= 8)
      message += cat(", rank ", r, " has ", hex(all[r]));
  }
  if (differing == 0)
    return Status::ok();
  if (differing > 8)
    message += cat(" and ", differing - 8, " more");
  message = cat(what, " differs across ranks: rank 0 has ", hex(all[0])) + message;
  return Status::error(message);
}

} // namespace fsdp::rt
