//===- TcpRendezvous.h - how TCP ranks find each other --------------------===//
//
// The start-up half of the TCP communicator (TcpCommunicator.h): the
// sockets, the rendezvous and the mesh. Rank 0 listens at one known address
// (torchrun's MASTER_ADDR, at the port TcpCommunicator.h chooses); every
// other rank connects to it, retrying with backoff until a start-up
// deadline, and says who it is (rank, world size, the port of its own mesh
// listener). Rank 0 checks that the ranks are consistent (one process per
// rank, all with the same world size) and answers every rank with either
// the table of all ranks' mesh endpoints or the one error every rank then
// reports; it acknowledges each greeting at once, saying whether it is of
// this job, so ranks can try a list of candidate ports. The ranks then
// connect pairwise into a full mesh (rank i connects to every j < i and
// accepts every j > i), which is how split() builds the meshes of
// sub-groups too. A shared random nonce in every mesh
// greeting keeps stray connections (and other jobs) out. IPv4 only.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_COMM_TCPRENDEZVOUS_H
#define FSDP_RUNTIME_COMM_TCPRENDEZVOUS_H

#include "runtime/support/Status.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::rt::comm::tcp {

using Clock = std::chrono::steady_clock;

/// An owned file descriptor: closed when destroyed.
class Fd {
public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd &&o) noexcept : fd_(o.release()) {}
  Fd &operator=(Fd &&o) noexcept;
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();

private:
  int fd_ = -1;
};

/// Where a rank's mesh listener is: an IPv4 address and port, both in host
/// byte order.
struct Endpoint {
  uint32_t ip = 0;
  uint16_t port = 0;
};

/// "a.b.c.d:port".
std::string formatEndpoint(const Endpoint &e);

/// The IPv4 address of `host` (a name or dotted quad).
Status resolveIpv4(const std::string &host, uint32_t &ip);

/// A non-blocking socket listening on every IPv4 address at `port` (0: a
/// free port, returned in `boundPort`).
Status listenTcp(uint16_t port, Fd &out, uint16_t &boundPort);

/// Sends / receives exactly `bytes` on a non-blocking socket by `deadline`
/// (or until `wakeFd`, when given, becomes readable). `peer` names the
/// other side in errors.
Status sendAll(int fd, const void *data, size_t bytes, Clock::time_point deadline,
               const std::string &peer, int wakeFd = -1);
Status recvAll(int fd, void *data, size_t bytes, Clock::time_point deadline,
               const std::string &peer, int wakeFd = -1);

/// What the rendezvous needs to know.
struct RendezvousOptions {
  std::string addr;   // rank 0's host (MASTER_ADDR)
  uint16_t port = 0;  // rank 0's rendezvous port, or the first candidate:
  /// rank 0 listens at the first of port .. port + portCandidates - 1 that
  /// is free, and the others try them in order (a port chosen next to
  /// another program's may be taken by its connections).
  int portCandidates = 1;
  /// Names the job: a rank greeting another job's rank 0 (found on a
  /// candidate port) is told so and tries the next port.
  std::string job;
  int rank = 0;
  int size = 1;
  std::chrono::milliseconds timeout{120000}; // start-up deadline
  /// Rank 0 only: an already listening socket to use instead of binding
  /// `port` (tests bind port 0 to avoid races over a free port).
  int listenFd = -1;
};

/// The world's mesh: every rank's endpoint (rank 0's address is the one
/// the others reached it at) and the nonce every greeting carries.
struct WorldTable {
  std::vector<Endpoint> endpoints;
  uint64_t nonce = 0;
};

/// The rendezvous of the file comment. `meshPort` is this rank's mesh
/// listener; on success every rank holds the same table.
Status rendezvous(const RendezvousOptions &options, uint16_t meshPort, WorldTable &out);

/// Connects this rank (`rank` of endpoints.size()) with every other one,
/// `channels` sockets per pair, through `listener` (this rank's, at
/// endpoints[rank]). links[c][r] is channel c to rank r (empty for this
/// rank). Stops at `deadline` or when `wakeFd` becomes readable.
Status buildMesh(int rank, const std::vector<Endpoint> &endpoints, int listener, uint64_t nonce,
                 int channels, Clock::time_point deadline, int wakeFd,
                 std::vector<std::vector<Fd>> &links);

} // namespace fsdp::rt::comm::tcp

#endif // FSDP_RUNTIME_COMM_TCPRENDEZVOUS_H
