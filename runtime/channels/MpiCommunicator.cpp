//===- MpiCommunicator.cpp - ranks as MPI processes -----------------------===//
//
// Each collective is two MPI steps. First the ranks all-gather a fixed-size
// description of the call (kind, count, type, op, root, and the reason
// when a rank's own arguments are unusable) and judge it with the verdict
// the in-process communicator uses: a disagreement becomes the same error
// on every rank, and the MPI calls that would have mismatched are never
// made. That exchange also makes barrier() (no rank leaves an all-gather
// before every rank entered it). Then the data move, as bytes, never as
// MPI arithmetic:
//   allGather      MPI_Allgather (MPI_IN_PLACE for NCCL's in-place layout)
//   reduceScatter  MPI_Alltoall of the chunks, so rank r holds every rank's
//                  chunk r, then the shared rank-order reduction
//   allReduce      the same on ceil(count / size) chunks of the (padded)
//                  buffer, then MPI_Allgather of the reduced chunks: each
//                  element is still reduced over ranks 0..n-1 in order, so
//                  the bits equal the in-process result, at the traffic
//                  of a reduce-scatter plus an all-gather
//   broadcast      MPI_Bcast
//   split          MPI_Comm_split (which ranks by key, then old rank)
// Messages over MPI's int count go as one derived datatype of exactly the
// message's bytes. A failed collective leaves the communicator failed on
// every rank that saw the verdict, as in-process.
//
//===----------------------------------------------------------------------===//

#include "runtime/channels/MpiCommunicator.h"

#include "runtime/channels/CollectiveCall.h"
#include "runtime/channels/RankOrderReduce.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace fsdp::rt::comm {

namespace {

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return cat("MPI error ", code);
  return std::string(text, static_cast<size_t>(length));
}

} // namespace

} // namespace fsdp::rt::comm

/// Returns an error naming the MPI call and MPI's own words for its code.
#define FSDP_MPI_RETURN_IF_ERROR(expr)                                         \
  do {                                                                         \
    const int fsdpMpiCode_ = (expr);                                           \
    if (fsdpMpiCode_ != MPI_SUCCESS)                                           \
      return ::fsdp::rt::Status::error(                                        \
                 ::fsdp::rt::comm::mpiErrorString(fsdpMpiCode_))               \
          .withOrigin(#expr, __FILE__, __LINE__);                              \
  } while (false)

namespace fsdp::rt::comm {

namespace {

/// Process-wide MPI lifetime: how many communicators are alive, and whether
/// we started MPI (and so must finalize it). Leaked on purpose: it is used
/// by the at-exit handler and by destructors of late static objects.
struct MpiLifetime {
  std::mutex mutex;
  int live = 0;
  bool weInitialized = false;
};

MpiLifetime &lifetime() {
  static auto *state = new MpiLifetime;
  return *state;
}

/// Finalizes MPI if we started it and it is still running. Callers hold
/// lifetime().mutex.
void finalizeIfOurs() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (lifetime().weInitialized && !finalized)
    MPI_Finalize();
}

void finalizeAtExit() {
  std::lock_guard<std::mutex> lock(lifetime().mutex);
  finalizeIfOurs();
}

size_t byteMessageLimit = INT_MAX;

/// `bytes` per rank as (count, datatype): plain MPI_BYTEs when they fit
/// the limit, otherwise one element of a derived type whose extent is
/// exactly `bytes` (q blocks of `limit` bytes, then the rest), so rank i's
/// part of a gathered buffer still starts at i * bytes.
class ByteMessage {
public:
  ByteMessage() = default;
  ByteMessage(const ByteMessage &) = delete;
  ByteMessage &operator=(const ByteMessage &) = delete;
  ~ByteMessage() {
    if (owned_)
      MPI_Type_free(&type_);
  }

  Status describe(size_t bytes) {
    if (bytes <= byteMessageLimit) {
      count_ = static_cast<int>(bytes);
      return Status::ok();
    }
    const size_t blocks = bytes / byteMessageLimit;
    if (blocks > static_cast<size_t>(INT_MAX))
      return Status::error(cat("message of ", bytes, " bytes is too large for MPI"));
    MPI_Datatype block;
    FSDP_MPI_RETURN_IF_ERROR(
        MPI_Type_contiguous(static_cast<int>(byteMessageLimit), MPI_BYTE, &block));
    int lengths[2] = {static_cast<int>(blocks), static_cast<int>(bytes % byteMessageLimit)};
    MPI_Aint displacements[2] = {0, static_cast<MPI_Aint>(blocks * byteMessageLimit)};
    MPI_Datatype types[2] = {block, MPI_BYTE};
    const int made = MPI_Type_create_struct(2, lengths, displacements, types, &type_);
    MPI_Type_free(&block);
    FSDP_MPI_RETURN_IF_ERROR(made);
    owned_ = true;
    FSDP_MPI_RETURN_IF_ERROR(MPI_Type_commit(&type_));
    count_ = 1;
    return Status::ok();
  }

  int count() const { return count_; }
  MPI_Datatype type() const { return type_; }

private:
  MPI_Datatype type_ = MPI_BYTE;
  int count_ = 0;
  bool owned_ = false;
};

Status adopt(MPI_Comm comm, std::unique_ptr<Communicator> &out);

class MpiCommunicator final : public Communicator {
public:
  /// Takes ownership of `comm`; made only by adopt().
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_rank(MPI_COMM_WORLD, &worldRank_);
    inputs_.resize(static_cast<size_t>(size_));
  }

  ~MpiCommunicator() override {
    std::lock_guard<std::mutex> lock(lifetime().mutex);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&comm_);
    if (--lifetime().live == 0)
      finalizeIfOurs();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  using Communicator::allGather;
  using Communicator::allReduce;
  using Communicator::broadcast;
  using Communicator::reduceScatter;

  Status allGather(const void *send, void *recv, int64_t sendCount, DType dtype) override {
    const CallDesc desc{CallKind::AllGather, sendCount, dtype};
    return run(desc, checkCall(desc, size_, send, recv), [&]() -> Status {
      const size_t bytes = byteCount(sendCount, dtype);
      if (bytes == 0)
        return Status::ok();
      auto *out = static_cast<uint8_t *>(recv);
      const void *in = send;
      if (send == out + rank_ * bytes) {
        in = MPI_IN_PLACE;
      } else if (overlaps(recv, bytes * size_, send, bytes)) {
        const auto *s = static_cast<const uint8_t *>(send);
        sendCopy_.assign(s, s + bytes);
        in = sendCopy_.data();
      }
      ByteMessage m;
      FSDP_RETURN_IF_ERROR(m.describe(bytes));
      FSDP_MPI_RETURN_IF_ERROR(
          MPI_Allgather(in, m.count(), m.type(), recv, m.count(), m.type(), comm_));
      return Status::ok();
    });
  }

  Status reduceScatter(const void *send, void *recv, int64_t recvCount, DType dtype,
                       ReduceOp op) override {
    const CallDesc desc{CallKind::ReduceScatter, recvCount, dtype, op};
    return run(desc, checkCall(desc, size_, send, recv), [&]() -> Status {
      return reduceChunks(send, recv, recvCount, dtype, op);
    });
  }

  Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
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
      ByteMessage m;
      FSDP_RETURN_IF_ERROR(m.describe(chunkBytes));
      void *out = padded ? padded_.data() : recv;
      FSDP_MPI_RETURN_IF_ERROR(
          MPI_Allgather(reduced_.data(), m.count(), m.type(), out, m.count(), m.type(), comm_));
      if (padded)
        std::memcpy(recv, padded_.data(), bytes);
      return Status::ok();
    });
  }

  Status broadcast(void *buf, int64_t count, DType dtype, int root) override {
    const CallDesc desc{CallKind::Broadcast, count, dtype, ReduceOp::Sum, root};
    return run(desc, checkCall(desc, size_, buf, buf), [&]() -> Status {
      const size_t bytes = byteCount(count, dtype);
      if (bytes == 0)
        return Status::ok();
      ByteMessage m;
      FSDP_RETURN_IF_ERROR(m.describe(bytes));
      FSDP_MPI_RETURN_IF_ERROR(MPI_Bcast(buf, m.count(), m.type(), root, comm_));
      return Status::ok();
    });
  }

  // The agreement exchange is itself the synchronization.
  Status barrier() override {
    return run(CallDesc{}, Status::ok(), [] { return Status::ok(); });
  }

  Status split(int color, int key, std::unique_ptr<Communicator> &out) override {
    out.reset();
    const CallDesc desc{CallKind::Split};
    return run(desc, checkCall(desc, size_, nullptr, nullptr, color), [&]() -> Status {
      std::lock_guard<std::mutex> lock(lifetime().mutex);
      MPI_Comm sub = MPI_COMM_NULL;
      FSDP_MPI_RETURN_IF_ERROR(MPI_Comm_split(comm_, color, key, &sub));
      FSDP_RETURN_IF_ERROR(adopt(sub, out));
      return Status::ok();
    });
  }

  // MPI has no way to fail one communicator and carry on: the job ends,
  // and mpirun reports the exit of every rank.
  void abort(const std::string &reason) override {
    std::fprintf(stderr, "fsdp: rank %d aborted the group: %s\n", worldRank_, reason.c_str());
    std::fflush(stderr);
    MPI_Abort(comm_, 1);
    std::_Exit(1); // MPI_Abort does not return; this is for a library that does
  }

private:
  /// The exchange and verdict of the file comment, then `transfer`; any
  /// failure is kept, so every later call fails the same way on every rank.
  template <typename Transfer>
  Status run(const CallDesc &desc, const Status &local, Transfer &&transfer) {
    if (failure_.empty()) {
      Status status = agree(desc, local);
      if (status.isOk())
        status = transfer();
      if (status.isOk())
        return status;
      failure_ = status.message();
    }
    return Status::error(cat(desc.describe(), " on rank ", rank_, ": ", failure_));
  }

  Status agree(const CallDesc &desc, const Status &local) {
    const WireCall mine = toWire(desc, local);
    wire_.resize(static_cast<size_t>(size_));
    FSDP_MPI_RETURN_IF_ERROR(MPI_Allgather(&mine, sizeof(WireCall), MPI_BYTE, wire_.data(),
                                           sizeof(WireCall), MPI_BYTE, comm_));
    const std::string verdict = judgeWireCalls(wire_.data(), wire_.size());
    return verdict.empty() ? Status::ok() : Status::error(verdict);
  }

  /// recv (chunk elements) = rank-order reduction of chunk `rank` of every
  /// rank's send (size * chunk elements). recv may alias send: the
  /// exchange has consumed send before anything is stored.
  Status reduceChunks(const void *send, void *recv, int64_t chunk, DType dtype, ReduceOp op) {
    const size_t bytes = byteCount(chunk, dtype);
    if (bytes == 0)
      return Status::ok();
    gathered_.resize(bytes * size_);
    ByteMessage m;
    FSDP_RETURN_IF_ERROR(m.describe(bytes));
    FSDP_MPI_RETURN_IF_ERROR(MPI_Alltoall(send, m.count(), m.type(), gathered_.data(), m.count(),
                                          m.type(), comm_));
    for (int s = 0; s < size_; ++s)
      inputs_[s] = gathered_.data() + s * bytes;
    return reduceInRankOrder(inputs_.data(), size_, recv, chunk, dtype, op);
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, worldRank_ = 0;
  std::string failure_; // non-empty once a collective failed, for good
  // Per-call scratch, kept to avoid allocating on every collective.
  std::vector<WireCall> wire_;
  std::vector<const void *> inputs_;
  std::vector<uint8_t> gathered_, padded_, reduced_, sendCopy_;
};

/// Wraps a new communicator (errors returned, not fatal) and counts it
/// alive. Callers hold lifetime().mutex.
Status adopt(MPI_Comm comm, std::unique_ptr<Communicator> &out) {
  if (const int code = MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); code != MPI_SUCCESS) {
    MPI_Comm_free(&comm);
    FSDP_MPI_RETURN_IF_ERROR(code);
  }
  ++lifetime().live;
  out = std::make_unique<MpiCommunicator>(comm);
  return Status::ok();
}

} // namespace

bool launchedUnderMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name))
      return true;
  return false;
}

Status createMpiWorld(std::unique_ptr<Communicator> &out) {
  out.reset();
  MpiLifetime &state = lifetime();
  std::lock_guard<std::mutex> lock(state.mutex);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return Status::error("MPI world: MPI was already finalized (the last MPI communicator "
                         "was destroyed); keep the world alive for the whole run");
  if (!initialized) {
    int provided = 0;
    FSDP_MPI_RETURN_IF_ERROR(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    state.weInitialized = true;
    std::atexit(finalizeAtExit);
  }
  // Collectives run on the executor's communication thread while split and
  // weight gathers run on the rank's main thread, one at a time: that is
  // MPI_THREAD_SERIALIZED, whoever initialized MPI.
  int level = MPI_THREAD_SINGLE;
  FSDP_MPI_RETURN_IF_ERROR(MPI_Query_thread(&level));
  if (level < MPI_THREAD_SERIALIZED)
    return Status::error(cat("MPI world: this MPI provides thread level ", level,
                             ", below MPI_THREAD_SERIALIZED, which fsdp-run needs"));
  MPI_Comm world = MPI_COMM_NULL;
  // Errors on MPI_COMM_WORLD itself stay fatal (MPI's default); the
  // duplicate returns them so they become Statuses.
  FSDP_MPI_RETURN_IF_ERROR(MPI_Comm_dup(MPI_COMM_WORLD, &world));
  return adopt(world, out);
}

size_t setMpiByteMessageLimitForTesting(size_t bytes) {
  const size_t previous = byteMessageLimit;
  byteMessageLimit = std::clamp<size_t>(bytes, 1, INT_MAX);
  return previous;
}

} // namespace fsdp::rt::comm
