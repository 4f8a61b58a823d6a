//===- MpiCommunicator.cpp - ranks as MPI processes -----------------------===//
//
// The byte moves under ProcessCommunicator.h's collectives (which also
// say how calls are judged and reductions made, in rank order, never by
// MPI's arithmetic), one MPI call each:
//   allGatherBytes  MPI_Allgather (MPI_IN_PLACE for the in-place layout)
//   allToAllBytes   MPI_Alltoall
//   broadcastBytes  MPI_Bcast
//   splitGroup      MPI_Comm_split (which ranks by key, then old rank)
// Messages over MPI's int count go as one derived datatype of exactly the
// message's bytes.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/MpiCommunicator.h"

#include "runtime/comm/ProcessCommunicator.h"

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

int commRank(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  return rank;
}

int commSize(MPI_Comm comm) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  return size;
}

class MpiCommunicator final : public ProcessCommunicator {
public:
  /// Takes ownership of `comm`; made only by adopt().
  explicit MpiCommunicator(MPI_Comm comm)
      : ProcessCommunicator(commRank(comm), commSize(comm)), comm_(comm),
        worldRank_(commRank(MPI_COMM_WORLD)) {}

  ~MpiCommunicator() override {
    std::lock_guard<std::mutex> lock(lifetime().mutex);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&comm_);
    if (--lifetime().live == 0)
      finalizeIfOurs();
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
  Status allGatherBytes(const void *mine, void *out, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    const void *in = mine == static_cast<uint8_t *>(out) + rank() * bytes ? MPI_IN_PLACE : mine;
    ByteMessage m;
    FSDP_RETURN_IF_ERROR(m.describe(bytes));
    FSDP_MPI_RETURN_IF_ERROR(
        MPI_Allgather(in, m.count(), m.type(), out, m.count(), m.type(), comm_));
    return Status::ok();
  }

  Status allToAllBytes(const void *in, void *out, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    ByteMessage m;
    FSDP_RETURN_IF_ERROR(m.describe(bytes));
    FSDP_MPI_RETURN_IF_ERROR(
        MPI_Alltoall(in, m.count(), m.type(), out, m.count(), m.type(), comm_));
    return Status::ok();
  }

  Status broadcastBytes(void *buf, size_t bytes, int root) override {
    if (bytes == 0)
      return Status::ok();
    ByteMessage m;
    FSDP_RETURN_IF_ERROR(m.describe(bytes));
    FSDP_MPI_RETURN_IF_ERROR(MPI_Bcast(buf, m.count(), m.type(), root, comm_));
    return Status::ok();
  }

  Status splitGroup(int color, int key, std::unique_ptr<Communicator> &out) override {
    std::lock_guard<std::mutex> lock(lifetime().mutex);
    MPI_Comm sub = MPI_COMM_NULL;
    FSDP_MPI_RETURN_IF_ERROR(MPI_Comm_split(comm_, color, key, &sub));
    return adopt(sub, out);
  }

  MPI_Comm comm_;
  int worldRank_ = 0;
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
