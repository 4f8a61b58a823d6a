//===- CpuChannel.cpp - a host communicator as a channel of the CPU device ===//
//
// Arguments are checked by the communicator when the worker makes the
// call, not when it is enqueued, so every rank still meets the others in
// the call and reports a mismatch the same way. The stream must be a CPU
// stream (the only kind the CPU device makes).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuChannel.h"
#include "runtime/backends/cpu/CpuStream.h"

#include <utility>

namespace fsdp::rt::cpu {
namespace {

class CpuChannel final : public Channel {
public:
  CpuChannel(Communicator &group, std::unique_ptr<Communicator> owned = nullptr)
      : group_(group), owned_(std::move(owned)) {}

  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }

  Status allGather(Stream &stream, const void *send, void *recv, int64_t sendCount,
                   DType dtype) override {
    return enqueue(stream,
                   [=](Communicator &c) { return c.allGather(send, recv, sendCount, dtype); });
  }
  Status reduceScatter(Stream &stream, const void *send, void *recv, int64_t recvCount,
                       DType dtype, ReduceOp op) override {
    return enqueue(stream, [=](Communicator &c) {
      return c.reduceScatter(send, recv, recvCount, dtype, op);
    });
  }
  Status allReduce(Stream &stream, const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    return enqueue(stream,
                   [=](Communicator &c) { return c.allReduce(send, recv, count, dtype, op); });
  }
  Status broadcast(Stream &stream, void *buf, int64_t count, DType dtype, int root) override {
    return enqueue(stream, [=](Communicator &c) { return c.broadcast(buf, count, dtype, root); });
  }

  Status split(int color, int key, std::unique_ptr<Channel> &out) override {
    std::unique_ptr<Communicator> sub;
    FSDP_RETURN_IF_ERROR(group_.split(color, key, sub));
    Communicator &subGroup = *sub;
    out = std::make_unique<CpuChannel>(subGroup, std::move(sub));
    return Status::ok();
  }

  void abort(const std::string &reason) override { group_.abort(reason); }

private:
  template <typename Call> Status enqueue(Stream &stream, Call call) {
    Communicator &group = group_;
    static_cast<CpuStream &>(stream).enqueue([&group, call](Status &status) {
      if (!status) {
        group.abort(status.message());
        return;
      }
      status = call(group);
    });
    return Status::ok();
  }

  Communicator &group_;
  std::unique_ptr<Communicator> owned_; // the sub-group of a split
};

} // namespace

std::unique_ptr<Channel> createCpuChannel(Communicator &group) {
  return std::make_unique<CpuChannel>(group);
}

} // namespace fsdp::rt::cpu
