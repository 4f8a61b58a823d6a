//===- NcclChannel.cpp - the CUDA device's channel, on NCCL ---------------===//
//
// Bootstrap, one code path whatever the host group is (MPI under mpirun,
// in-process threads, TCP under torchrun): every rank opens NCCL and the
// ranks agree that all could (so none waits in an initialization another
// rank never reaches); rank 0 makes the ncclUniqueId and broadcasts its
// 128 bytes over the host group; every rank selects its GPU
// (cudaSetDevice) and calls ncclCommInitRank with its rank in the group,
// and the ranks agree on the outcome. In-process ranks use
// ncclCommInitRank too, one call per thread, rather than ncclCommInitAll:
// each rank is a thread that owns its own device, executor and channels,
// and creates its channel when its executor is set up (Device::
// createChannel is per rank), whereas ncclCommInitAll makes every rank's
// communicator in one call on one thread. Concurrent ncclCommInitRank
// calls from threads of one process are what NCCL documents for this.
//
// Enqueueing: the calls (one, or those between beginGroup and endGroup)
// go through nccl::mapBatch and are issued exactly as it lists them, on
// the stream's cudaStream_t. A refused batch, or one reaching a stream
// that has already failed, fails the stream and aborts the group (the
// other ranks must not wait for this one). NCCL's own failures read
// "nccl: <operation>: <ncclGetErrorString> (<ncclGetLastError>)".
//
// Errors that happen while the collectives run (a peer failed, the
// network broke) are NCCL's asynchronous errors: the channel watches every
// stream it enqueued on (CudaDevice.h's StreamWatcher), so the stream's
// synchronize polls ncclCommGetAsyncError while it waits; on an error it
// aborts the communicator, which ends the waiting kernels, and the error
// is the stream's failure.
//
// abort() may come from any thread (a watchdog): ncclCommAbort under the
// channel's mutex, which enqueueing holds too, so the communicator is
// never freed under a call using it. ncclCommSplit blocks until every
// rank calls it and holds the mutex meanwhile: an abort waits for a split
// in progress (splits are made while a run is set up).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/NcclChannel.h"

#include "runtime/backends/cuda/CudaDevice.h"
#include "runtime/backends/cuda/CudaStatus.h"
#include "runtime/backends/cuda/NcclLibrary.h"
#include "runtime/comm/NcclMapping.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <mutex>
#include <vector>

namespace fsdp::rt::cuda {
namespace {

// The mapping's enums are NCCL's, value for value.
using nccl::DataType;
using nccl::RedOp;
static_assert(static_cast<int>(DataType::Int8) == ncclInt8);
static_assert(static_cast<int>(DataType::Uint8) == ncclUint8);
static_assert(static_cast<int>(DataType::Int32) == ncclInt32);
static_assert(static_cast<int>(DataType::Uint32) == ncclUint32);
static_assert(static_cast<int>(DataType::Int64) == ncclInt64);
static_assert(static_cast<int>(DataType::Uint64) == ncclUint64);
static_assert(static_cast<int>(DataType::Float16) == ncclFloat16);
static_assert(static_cast<int>(DataType::Float32) == ncclFloat32);
static_assert(static_cast<int>(DataType::Float64) == ncclFloat64);
static_assert(static_cast<int>(DataType::Bfloat16) == ncclBfloat16);
static_assert(static_cast<int>(RedOp::Sum) == ncclSum);
static_assert(static_cast<int>(RedOp::Avg) == ncclAvg);
static_assert(static_cast<int>(RedOp::Max) == ncclMax);
static_assert(sizeof(ncclUniqueId) == NCCL_UNIQUE_ID_BYTES);

class NcclChannel final : public Channel, public StreamWatcher {
public:
  NcclChannel(const NcclLibrary &nccl, int ordinal, ncclComm_t comm, int rank, int size)
      : nccl_(nccl), ordinal_(ordinal), comm_(comm), rank_(rank), size_(size) {}

  ~NcclChannel() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (comm_) {
      cudaSetDevice(ordinal_);
      nccl_.commDestroy(comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status allGather(Stream &stream, const void *send, void *recv, int64_t sendCount,
                   DType dtype) override {
    return submit(stream, {comm::CallDesc{comm::CallKind::AllGather, sendCount, dtype}, send, recv});
  }
  Status reduceScatter(Stream &stream, const void *send, void *recv, int64_t recvCount,
                       DType dtype, ReduceOp op) override {
    return submit(stream,
                  {comm::CallDesc{comm::CallKind::ReduceScatter, recvCount, dtype, op}, send, recv});
  }
  Status allReduce(Stream &stream, const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    return submit(stream, {comm::CallDesc{comm::CallKind::AllReduce, count, dtype, op}, send, recv});
  }
  Status broadcast(Stream &stream, void *buf, int64_t count, DType dtype, int root) override {
    return submit(stream,
                  {comm::CallDesc{comm::CallKind::Broadcast, count, dtype, ReduceOp::Sum, root},
                   buf, buf});
  }

  bool groupsCalls() const override { return true; }

  Status beginGroup() override {
    if (grouping_)
      return Status::error("nccl: beginGroup inside a group");
    grouping_ = true;
    pending_.clear();
    pendingStream_ = nullptr;
    return Status::ok();
  }

  Status endGroup() override {
    if (!grouping_)
      return Status::error("nccl: endGroup without beginGroup");
    grouping_ = false;
    std::vector<nccl::ChannelCall> calls = std::move(pending_);
    pending_.clear();
    if (calls.empty())
      return Status::ok();
    issue(*pendingStream_, calls.data(), calls.size());
    return Status::ok();
  }

  Status split(int color, int key, std::unique_ptr<Channel> &out) override {
    nccl::Split args;
    FSDP_RETURN_IF_ERROR(nccl::mapSplit(color, key, args));
    std::lock_guard<std::mutex> lock(mutex_);
    if (!comm_)
      return Status::error(cat("nccl: split: the group was aborted: ", abortReason_));
    if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess)
      return cudaFailure(e, cat("cudaSetDevice(", ordinal_, ")"));
    ncclComm_t sub = nullptr;
    // A null config: the new communicator inherits this one's.
    if (ncclResult_t r = nccl_.commSplit(comm_, args.color, args.key, &sub, nullptr);
        r != ncclSuccess)
      return Status::error(ncclFailure(nccl_, r, cat("ncclCommSplit(color ", args.color, ", key ",
                                                     args.key, ")"),
                                       comm_));
    if (!sub)
      return Status::error(cat("nccl: ncclCommSplit(color ", args.color, ") left rank ", rank_,
                               " out of every group"));
    // The new ranks are ordered by (key, old rank), as Communicator::split
    // orders them; NCCL says where this rank landed.
    int subRank = 0, subSize = 0;
    ncclResult_t r = nccl_.commUserRank(sub, &subRank);
    if (r == ncclSuccess)
      r = nccl_.commCount(sub, &subSize);
    if (r != ncclSuccess) {
      std::string message = ncclFailure(nccl_, r, "the split communicator's rank", sub);
      nccl_.commAbort(sub);
      return Status::error(message);
    }
    out = std::make_unique<NcclChannel>(nccl_, ordinal_, sub, subRank, subSize);
    return Status::ok();
  }

  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(mutex_);
    abortLocked(reason);
  }

  /// The stream's synchronize asks while it waits: an asynchronous NCCL
  /// error aborts the group (ending its kernels) and fails the stream.
  Status poll() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!comm_)
      return Status::error(cat("nccl: the group was aborted: ", abortReason_));
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = nccl_.commGetAsyncError(comm_, &async);
    if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress))
      return Status::ok();
    std::string message = ncclFailure(nccl_, r != ncclSuccess ? r : async,
                                      r != ncclSuccess ? "ncclCommGetAsyncError"
                                                       : "asynchronous error",
                                      comm_);
    abortLocked(message);
    return Status::error(message);
  }

private:
  Status submit(Stream &stream, const nccl::ChannelCall &call) {
    if (grouping_) {
      if (pendingStream_ && pendingStream_ != &stream)
        return Status::error("nccl: the collectives of one group must be on one stream");
      pendingStream_ = &stream;
      pending_.push_back(call);
      return Status::ok();
    }
    issue(stream, &call, 1);
    return Status::ok();
  }

  /// Issues the batch on `stream`, or fails the stream and the group.
  void issue(Stream &stream, const nccl::ChannelCall *calls, size_t numCalls) {
    if (std::string failed = streamFailure(stream); !failed.empty()) {
      abort(failed); // the others would wait for this rank's part
      return;
    }
    std::vector<nccl::Call> mapped;
    if (Status s = nccl::mapBatch(calls, numCalls, rank_, size_, mapped); !s) {
      failStream(stream, s.message());
      abort(s.message());
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!comm_) {
      failStream(stream, cat("nccl: the group was aborted: ", abortReason_));
      return;
    }
    if (cudaError_t e = cudaSetDevice(ordinal_); e != cudaSuccess) {
      Status s = cudaFailure(e, cat("cudaSetDevice(", ordinal_, ")"));
      failStream(stream, s.message());
      abortLocked(s.message());
      return;
    }
    cudaStream_t native = nativeStream(stream);
    bool inGroup = false;
    for (size_t i = 0; i < mapped.size(); ++i) {
      const nccl::Call &c = mapped[i];
      inGroup = c.function == nccl::Function::GroupStart ||
                (inGroup && c.function != nccl::Function::GroupEnd);
      if (ncclResult_t r = invoke(c, native); r != ncclSuccess) {
        std::string message = ncclFailure(nccl_, r, describe(c), comm_);
        if (inGroup)
          (void)nccl_.groupEnd(); // NCCL's group state is per thread: close it
        failStream(stream, message);
        abortLocked(message);
        return;
      }
    }
    watchStream(stream, *this);
  }

  ncclResult_t invoke(const nccl::Call &c, cudaStream_t stream) {
    const auto type = static_cast<ncclDataType_t>(c.datatype);
    const auto op = static_cast<ncclRedOp_t>(c.op);
    switch (c.function) {
    case nccl::Function::AllGather:
      return nccl_.allGather(c.sendbuff, c.recvbuff, c.count, type, comm_, stream);
    case nccl::Function::ReduceScatter:
      return nccl_.reduceScatter(c.sendbuff, c.recvbuff, c.count, type, op, comm_, stream);
    case nccl::Function::AllReduce:
      return nccl_.allReduce(c.sendbuff, c.recvbuff, c.count, type, op, comm_, stream);
    case nccl::Function::Broadcast:
      return nccl_.broadcast(c.sendbuff, c.recvbuff, c.count, type, c.root, comm_, stream);
    case nccl::Function::GroupStart: return nccl_.groupStart();
    case nccl::Function::GroupEnd: return nccl_.groupEnd();
    }
    return ncclInvalidArgument;
  }

  /// "ncclReduceScatter(6 x ncclBfloat16, avg) on rank 1 of 4".
  std::string describe(const nccl::Call &c) const {
    std::string text = nccl::functionName(c.function);
    if (c.function == nccl::Function::GroupStart || c.function == nccl::Function::GroupEnd)
      return text;
    text += cat("(", c.count, " x ", nccl::dataTypeName(c.datatype));
    if (c.function == nccl::Function::ReduceScatter || c.function == nccl::Function::AllReduce)
      text += c.op == RedOp::Avg ? ", avg" : c.op == RedOp::Max ? ", max" : ", sum";
    if (c.function == nccl::Function::Broadcast)
      text += cat(", root ", c.root);
    return text + cat(") on rank ", rank_, " of ", size_);
  }

  void abortLocked(const std::string &reason) {
    if (!comm_)
      return;
    abortReason_ = reason;
    cudaSetDevice(ordinal_);
    nccl_.commAbort(comm_);
    comm_ = nullptr;
  }

  const NcclLibrary &nccl_;
  const int ordinal_;
  std::mutex mutex_; // comm_ and abortReason_: abort() comes from any thread
  ncclComm_t comm_;
  std::string abortReason_;
  const int rank_, size_;
  // The group being collected (the rank's own thread only).
  bool grouping_ = false;
  std::vector<nccl::ChannelCall> pending_;
  Stream *pendingStream_ = nullptr;
};

} // namespace

Status createNcclChannel(int ordinal, Communicator &group, std::unique_ptr<Channel> &out) {
  const NcclLibrary *nccl = nullptr;
  Status loaded = loadNccl(nccl);
  FSDP_RETURN_IF_ERROR(group.agree(loaded, "loading NCCL"));

  ncclUniqueId id{};
  Status made;
  if (group.rank() == 0)
    if (ncclResult_t r = nccl->getUniqueId(&id); r != ncclSuccess)
      made = Status::error(ncclFailure(*nccl, r, "ncclGetUniqueId", nullptr));
  FSDP_RETURN_IF_ERROR(group.agree(made, "making NCCL's unique id"));
  FSDP_RETURN_IF_ERROR(group.broadcast(&id, sizeof(id), DType::U8, 0));

  Status selected;
  if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess)
    selected = cudaFailure(e, cat("cudaSetDevice(", ordinal, ")"));
  FSDP_RETURN_IF_ERROR(group.agree(selected, "selecting the GPU for NCCL"));

  ncclComm_t comm = nullptr;
  Status initialized;
  if (ncclResult_t r = nccl->commInitRank(&comm, group.size(), id, group.rank());
      r != ncclSuccess)
    initialized = Status::error(ncclFailure(
        *nccl, r, cat("ncclCommInitRank(rank ", group.rank(), " of ", group.size(), ", GPU ",
                      ordinal, ")"),
        comm));
  if (Status agreed = group.agree(initialized, "ncclCommInitRank"); !agreed) {
    if (comm)
      nccl->commAbort(comm);
    return agreed;
  }
  out = std::make_unique<NcclChannel>(*nccl, ordinal, comm, group.rank(), group.size());
  return Status::ok();
}

} // namespace fsdp::rt::cuda
