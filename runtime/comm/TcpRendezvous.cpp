//===- TcpRendezvous.cpp - how TCP ranks find each other ------------------===//
//
// Sockets are non-blocking throughout and every wait is a poll() with a
// deadline, so a rank that never comes, or a peer that stops halfway through
// a greeting, is an error with the address and the rank involved, never a
// hang. Messages are fixed-size structs (one job shares one byte order and
// one build), each opened by a magic string so that a stray client on the
// port is recognised and dropped rather than taken for a rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/TcpRendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <thread>

namespace fsdp::rt::comm::tcp {

Fd &Fd::operator=(Fd &&o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void Fd::reset() {
  if (fd_ >= 0)
    ::close(fd_);
  fd_ = -1;
}

std::string formatEndpoint(const Endpoint &e) {
  return cat(e.ip >> 24, ".", (e.ip >> 16) & 255, ".", (e.ip >> 8) & 255, ".", e.ip & 255, ":",
             e.port);
}

namespace {

std::string errnoText(int code) { return std::strerror(code); }

std::string seconds(std::chrono::milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", ms.count() / 1000.0);
  return buf;
}

int msLeft(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1000000));
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

void setNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/// Waits until `fd` has `events` (true), the deadline passes or `wakeFd`
/// becomes readable (false; `why` says which).
bool waitFor(int fd, short events, Clock::time_point deadline, int wakeFd, std::string &why) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {wakeFd, POLLIN, 0}};
    const int n = ::poll(fds, wakeFd >= 0 ? 2 : 1, msLeft(deadline));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      why = cat("poll: ", errnoText(errno));
      return false;
    }
    if (wakeFd >= 0 && fds[1].revents) {
      why = "the group was aborted";
      return false;
    }
    if (fds[0].revents)
      return true;
    if (Clock::now() >= deadline) {
      why = "timed out";
      return false;
    }
  }
}

// --- The rendezvous' messages -----------------------------------------------

constexpr char kHelloMagic[8] = {'F', 'S', 'D', 'P', 'R', 'D', 'V', '1'};
constexpr char kMeshMagic[8] = {'F', 'S', 'D', 'P', 'M', 'S', 'H', '1'};

/// A rank's greeting to rank 0.
struct Hello {
  char magic[8];
  int32_t rank, size;
  uint32_t meshPort, pad;
  char job[96]; // RendezvousOptions::job, truncated
};

/// Rank 0's immediate answer to a greeting: whether it is of this job (so a
/// rank that reached another listener tries the next port).
struct Ack {
  char magic[8];
  int32_t sameJob, pad;
};

/// Rank 0's answer: ok, or the error every rank reports; a table of
/// `size` endpoints follows an ok.
struct Reply {
  char magic[8];
  int32_t ok, size;
  uint64_t nonce;
  char error[488];
};
static_assert(sizeof(Reply) == 512, "one fixed-size answer");

struct WireEndpoint {
  uint32_t ip;
  uint32_t port;
};

/// A mesh connection's greeting.
struct MeshHello {
  char magic[8];
  uint64_t nonce;
  int32_t rank, channel;
};

/// One connection attempt to `to` by `deadline`: OK with the socket, or
/// `error` says why not (a Status only when the group was aborted).
Status connectOnce(const Endpoint &to, Clock::time_point deadline, int wakeFd, Fd &out,
                   std::string &error) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(to.ip);
  addr.sin_port = htons(to.port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) {
    error = cat("socket: ", errnoText(errno));
    return Status::ok();
  }
  setNonBlocking(fd.get());
  int err = ::connect(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    std::string why;
    if (waitFor(fd.get(), POLLOUT, deadline, wakeFd, why)) {
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    } else if (why != "timed out") {
      return Status::error(why);
    }
  }
  if (err == 0) {
    setNoDelay(fd.get());
    out = std::move(fd);
    error.clear();
  } else {
    error = err == EINPROGRESS ? "the connection attempt timed out" : errnoText(err);
  }
  return Status::ok();
}

/// Sleeps the backoff before the next round of attempts, doubling it up
/// to a second; false when that would pass `deadline`.
bool backOff(std::chrono::milliseconds &backoff, Clock::time_point deadline) {
  if (Clock::now() + backoff >= deadline)
    return false;
  std::this_thread::sleep_for(backoff);
  backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  return true;
}

/// Connects to `to`, retrying refused and unreachable attempts with backoff
/// (the listener may not be up yet) until `deadline`.
Status connectWithRetry(const Endpoint &to, Clock::time_point deadline, int wakeFd, Fd &out,
                        const std::string &what) {
  std::string lastError;
  auto backoff = std::chrono::milliseconds(20);
  do {
    if (Status s = connectOnce(to, deadline, wakeFd, out, lastError); !s)
      return Status::error(cat(what, ": ", s.message()));
    if (out.valid())
      return Status::ok();
  } while (backOff(backoff, deadline));
  return Status::error(cat(what, ": nobody accepted a connection at ", formatEndpoint(to),
                           " before the start-up timeout (last error: ", lastError, ")"));
}

/// Accepts one connection on `listener` by `deadline`.
Status acceptOne(int listener, Clock::time_point deadline, int wakeFd, Fd &out, uint32_t &peerIp,
                 const std::string &what) {
  for (;;) {
    std::string why;
    if (!waitFor(listener, POLLIN, deadline, wakeFd, why))
      return Status::error(cat(what, ": ", why));
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int fd = ::accept4(listener, reinterpret_cast<sockaddr *>(&peer), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
        continue;
      return Status::error(cat(what, ": accept: ", errnoText(errno)));
    }
    setNoDelay(fd);
    peerIp = ntohl(peer.sin_addr.s_addr);
    out = Fd(fd);
    return Status::ok();
  }
}

uint64_t randomNonce() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device() ^
         static_cast<uint64_t>(Clock::now().time_since_epoch().count());
}

/// Rank 0: gathers every other rank's greeting, checks them, answers all.
Status rendezvousAsRoot(const RendezvousOptions &o, const std::string &whereAll, uint16_t meshPort,
                        Clock::time_point deadline, WorldTable &out) {
  Fd owned;
  int listener = o.listenFd;
  uint16_t port = o.port;
  if (listener < 0) {
    // The first candidate port that is free (see RendezvousOptions).
    std::string lastError;
    for (int k = 0; k < std::max(1, o.portCandidates) && !owned.valid(); ++k) {
      uint16_t bound = 0;
      port = static_cast<uint16_t>(o.port + k);
      if (Status s = listenTcp(port, owned, bound); !s)
        lastError = s.message();
    }
    if (!owned.valid())
      return Status::error(cat("rendezvous: rank 0 cannot listen at ", whereAll, ": ", lastError));
    listener = owned.get();
  }
  const std::string where = cat(o.addr, ":", port);
  std::vector<Fd> conns(static_cast<size_t>(o.size));
  std::vector<Endpoint> endpoints(static_cast<size_t>(o.size));
  endpoints[0].port = meshPort; // its address: the one the others reached
  int arrived = 1;
  std::string error;
  while (arrived < o.size && error.empty()) {
    Fd conn;
    uint32_t ip = 0;
    if (Status s = acceptOne(listener, deadline, -1, conn, ip, "rendezvous"); !s) {
      std::string missing;
      for (int r = 1, listed = 0; r < o.size; ++r)
        if (!conns[r].valid() && ++listed <= 16)
          missing += cat(listed > 1 ? ", " : "", r);
      error = cat("rendezvous at ", where, ": only ", arrived, " of ", o.size,
                  " ranks arrived within ", seconds(o.timeout), " (missing: rank ", missing,
                  "; FSDP_RENDEZVOUS_TIMEOUT sets the wait)");
      break;
    }
    Hello hello{};
    const auto greetingDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(10));
    if (!recvAll(conn.get(), &hello, sizeof(hello), greetingDeadline, "a client") ||
        std::memcmp(hello.magic, kHelloMagic, sizeof(kHelloMagic)) != 0)
      continue; // not one of ours: drop it
    Ack ack{};
    std::memcpy(ack.magic, kHelloMagic, sizeof(kHelloMagic));
    ack.sameJob = std::strncmp(hello.job, o.job.c_str(), sizeof(hello.job) - 1) == 0;
    if (!sendAll(conn.get(), &ack, sizeof(ack), greetingDeadline, "a client") || !ack.sameJob)
      continue; // a rank of another job: it tries its next port
    if (hello.size != o.size)
      error = cat("rendezvous at ", where, ": rank ", hello.rank, " has WORLD_SIZE=", hello.size,
                  ", but rank 0 has WORLD_SIZE=", o.size, "; every rank must be started with the "
                  "same world size");
    else if (hello.rank <= 0 || hello.rank >= o.size)
      error = cat("rendezvous at ", where, ": two processes have RANK=", hello.rank,
                  hello.rank == 0 ? "" : " (or it is outside the world)");
    else if (conns[hello.rank].valid())
      error = cat("rendezvous at ", where, ": two processes have RANK=", hello.rank);
    if (!error.empty()) {
      conns.push_back(std::move(conn)); // it hears the error too
      break;
    }
    endpoints[hello.rank] = Endpoint{ip, static_cast<uint16_t>(hello.meshPort)};
    conns[hello.rank] = std::move(conn);
    ++arrived;
  }
  Reply reply{};
  std::memcpy(reply.magic, kHelloMagic, sizeof(kHelloMagic));
  reply.ok = error.empty();
  reply.size = o.size;
  reply.nonce = randomNonce();
  std::strncpy(reply.error, error.c_str(), sizeof(reply.error) - 1);
  std::vector<WireEndpoint> table;
  for (const Endpoint &e : endpoints)
    table.push_back(WireEndpoint{e.ip, e.port});
  const auto answerDeadline = Clock::now() + std::chrono::seconds(10);
  for (size_t r = 1; r < conns.size(); ++r) {
    if (!conns[r].valid())
      continue;
    // A rank that has gone meanwhile finds out by itself.
    if (sendAll(conns[r].get(), &reply, sizeof(reply), answerDeadline, "") && reply.ok)
      (void)sendAll(conns[r].get(), table.data(), table.size() * sizeof(WireEndpoint),
                    answerDeadline, "");
  }
  if (!error.empty())
    return Status::error(error);
  out.endpoints = std::move(endpoints);
  out.nonce = reply.nonce;
  return Status::ok();
}

/// Ranks 1..n-1: greet rank 0 and take its answer.
Status rendezvousAsPeer(const RendezvousOptions &o, const std::string &where, uint16_t meshPort,
                        Clock::time_point deadline, WorldTable &out) {
  Endpoint root;
  if (Status s = resolveIpv4(o.addr, root.ip); !s)
    return Status::error(cat("rendezvous: MASTER_ADDR ", s.message()));
  const int candidates = std::max(1, o.portCandidates);
  Hello hello{};
  std::memcpy(hello.magic, kHelloMagic, sizeof(kHelloMagic));
  hello.rank = o.rank;
  hello.size = o.size;
  hello.meshPort = meshPort;
  std::strncpy(hello.job, o.job.c_str(), sizeof(hello.job) - 1);
  // Each round tries every candidate port; rank 0 acknowledges a greeting
  // at once, so a listener of another job or program is passed over.
  Fd conn;
  std::string lastError;
  auto backoff = std::chrono::milliseconds(20);
  do {
    for (int k = 0; k < candidates && !conn.valid(); ++k) {
      const Endpoint to{root.ip, static_cast<uint16_t>(o.port + k)};
      const auto tryDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(5));
      Fd fd;
      FSDP_RETURN_IF_ERROR(connectOnce(to, tryDeadline, -1, fd, lastError));
      Ack ack{};
      if (!fd.valid() ||
          !sendAll(fd.get(), &hello, sizeof(hello), tryDeadline, "") ||
          !recvAll(fd.get(), &ack, sizeof(ack), tryDeadline, ""))
        continue;
      if (std::memcmp(ack.magic, kHelloMagic, sizeof(kHelloMagic)) == 0 && ack.sameJob)
        conn = std::move(fd);
      else
        lastError = cat(formatEndpoint(to), " is another job's rendezvous");
    }
  } while (!conn.valid() && backOff(backoff, deadline));
  if (!conn.valid()) {
    std::string at = formatEndpoint(Endpoint{root.ip, o.port});
    if (candidates > 1)
      at += cat("..", o.port + candidates - 1);
    return Status::error(cat("rendezvous: rank ", o.rank, ": nobody accepted a connection at ", at,
                             " before the start-up timeout (last error: ", lastError,
                             ") (rank 0's rendezvous at ", where, ")"));
  }
  // Rank 0 answers once every rank is in or its own deadline passed: wait
  // for that answer beyond ours, so its error is the one reported.
  const auto answerDeadline = deadline + o.timeout + std::chrono::seconds(10);
  const std::string rank0 = cat("rank 0 (rendezvous at ", where, ")");
  Reply reply{};
  FSDP_RETURN_IF_ERROR(recvAll(conn.get(), &reply, sizeof(reply), answerDeadline, rank0));
  if (!reply.ok)
    return Status::error(std::string(reply.error, strnlen(reply.error, sizeof(reply.error))));
  std::vector<WireEndpoint> table(static_cast<size_t>(o.size));
  FSDP_RETURN_IF_ERROR(recvAll(conn.get(), table.data(), table.size() * sizeof(WireEndpoint),
                               answerDeadline, rank0));
  out.endpoints.clear();
  for (const WireEndpoint &e : table)
    out.endpoints.push_back(Endpoint{e.ip, static_cast<uint16_t>(e.port)});
  out.endpoints[0].ip = root.ip;
  out.nonce = reply.nonce;
  return Status::ok();
}

} // namespace

Status resolveIpv4(const std::string &host, uint32_t &ip) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo *result = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &result); rc != 0 || !result)
    return Status::error(cat("'", host, "' has no IPv4 address: ", gai_strerror(rc)));
  ip = ntohl(reinterpret_cast<sockaddr_in *>(result->ai_addr)->sin_addr.s_addr);
  ::freeaddrinfo(result);
  return Status::ok();
}

Status listenTcp(uint16_t port, Fd &out, uint16_t &boundPort) {
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid())
    return Status::error(cat("socket: ", errnoText(errno)));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = htons(port);
  if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)) != 0)
    return Status::error(cat("bind to port ", port, ": ", errnoText(errno)));
  if (::listen(fd.get(), SOMAXCONN) != 0)
    return Status::error(cat("listen on port ", port, ": ", errnoText(errno)));
  socklen_t len = sizeof(addr);
  ::getsockname(fd.get(), reinterpret_cast<sockaddr *>(&addr), &len);
  boundPort = ntohs(addr.sin_port);
  out = std::move(fd);
  return Status::ok();
}

Status sendAll(int fd, const void *data, size_t bytes, Clock::time_point deadline,
               const std::string &peer, int wakeFd) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, std::min<size_t>(bytes, size_t{1} << 30), MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return Status::error(cat(peer, ": send: ", errnoText(errno)));
    std::string why;
    if (!waitFor(fd, POLLOUT, deadline, wakeFd, why))
      return Status::error(cat(peer, ": send: ", why));
  }
  return Status::ok();
}

Status recvAll(int fd, void *data, size_t bytes, Clock::time_point deadline,
               const std::string &peer, int wakeFd) {
  auto *p = static_cast<uint8_t *>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, std::min<size_t>(bytes, size_t{1} << 30), 0);
    if (n > 0) {
      p += n;
      bytes -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      return Status::error(cat(peer, " closed the connection"));
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return Status::error(cat(peer, ": recv: ", errnoText(errno)));
    std::string why;
    if (!waitFor(fd, POLLIN, deadline, wakeFd, why))
      return Status::error(cat(peer, ": recv: ", why));
  }
  return Status::ok();
}

Status rendezvous(const RendezvousOptions &options, uint16_t meshPort, WorldTable &out) {
  std::string where = cat(options.addr, ":", options.port);
  if (options.portCandidates > 1)
    where += cat("..", options.port + options.portCandidates - 1);
  const auto deadline = Clock::now() + options.timeout;
  return options.rank == 0 ? rendezvousAsRoot(options, where, meshPort, deadline, out)
                           : rendezvousAsPeer(options, where, meshPort, deadline, out);
}

Status buildMesh(int rank, const std::vector<Endpoint> &endpoints, int listener, uint64_t nonce,
                 int channels, Clock::time_point deadline, int wakeFd,
                 std::vector<std::vector<Fd>> &links) {
  const int size = static_cast<int>(endpoints.size());
  links.clear();
  for (int c = 0; c < channels; ++c)
    links.emplace_back(static_cast<size_t>(size)); // Fds move, never copy
  // Connections to lower ranks complete in their listeners' backlogs, so
  // connecting first and accepting second cannot deadlock.
  for (int peer = 0; peer < rank; ++peer)
    for (int c = 0; c < channels; ++c) {
      const std::string what = cat("mesh: rank ", rank, " to rank ", peer);
      Fd fd;
      FSDP_RETURN_IF_ERROR(connectWithRetry(endpoints[peer], deadline, wakeFd, fd, what));
      MeshHello hello{};
      std::memcpy(hello.magic, kMeshMagic, sizeof(kMeshMagic));
      hello.nonce = nonce;
      hello.rank = rank;
      hello.channel = c;
      FSDP_RETURN_IF_ERROR(sendAll(fd.get(), &hello, sizeof(hello), deadline, what, wakeFd));
      links[c][peer] = std::move(fd);
    }
  for (int expected = (size - 1 - rank) * channels; expected > 0;) {
    Fd fd;
    uint32_t ip = 0;
    if (Status s = acceptOne(listener, deadline, wakeFd, fd, ip, cat("mesh: rank ", rank)); !s) {
      std::string missing;
      for (int peer = rank + 1; peer < size; ++peer)
        if (!links[channels - 1][peer].valid())
          missing += cat(" ", peer);
      return Status::error(s.message() + cat(" waiting for ranks", missing));
    }
    MeshHello hello{};
    const auto greetingDeadline = std::min(deadline, Clock::now() + std::chrono::seconds(10));
    if (!recvAll(fd.get(), &hello, sizeof(hello), greetingDeadline, "a client", wakeFd) ||
        std::memcmp(hello.magic, kMeshMagic, sizeof(kMeshMagic)) != 0 || hello.nonce != nonce ||
        hello.rank <= rank || hello.rank >= size || hello.channel < 0 ||
        hello.channel >= channels || links[hello.channel][hello.rank].valid())
      continue; // a stray connection, not part of this mesh
    links[hello.channel][hello.rank] = std::move(fd);
    --expected;
  }
  return Status::ok();
}

} // namespace fsdp::rt::comm::tcp
