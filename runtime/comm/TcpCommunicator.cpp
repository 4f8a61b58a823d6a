//===- TcpCommunicator.cpp - ranks as processes connected over TCP -------===//
//
// Every pair of ranks of a communicator shares one data socket, on which
// ProcessCommunicator.h's collectives (the call verdict, rank-order
// reductions over exchanged chunks) make their byte moves:
//   allGatherBytes  every rank sends its part to every other
//   allToAllBytes   rank p receives every rank's chunk p
//   broadcastBytes  the root sends to every rank
//   splitGroup      ranks all-gather (color, key, port of a new listener)
//                   and each new group builds its own mesh (TcpRendezvous.h)
// One exchange is a poll() loop over non-blocking sockets that sends to
// and receives from all peers at once, a gigabyte per call at most, so
// simultaneous large messages never deadlock on full socket buffers and
// any size works.
//
// Failures. A peer that closes its socket (its communicator destroyed, its
// process dead) fails the collective with its rank; this rank then shuts
// its own sockets of that communicator, so ranks still waiting on it fail
// too, the way destroying an in-process rank fails its group. abort() is
// the job's: the communicators split from one world form a family that
// shares one control socket per pair of processes (built beside the world's
// data sockets, never carrying anything but one abort frame) and a wake
// pipe that every poll of the family watches. abort() writes the pipe
// (waking this process's collectives) and sends its frame (origin rank and
// reason) to every peer; a process that reads a frame aborts its own family
// with it, which forwards the frame, so the reason reaches ranks that only
// share a sub-group with the aborting one.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/TcpCommunicator.h"

#include "runtime/comm/ProcessCommunicator.h"
#include "runtime/comm/TcpRendezvous.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <numeric>

namespace fsdp::rt::comm {

using namespace tcp;

namespace {

constexpr char kAbortMagic[8] = {'F', 'S', 'D', 'P', 'A', 'B', 'R', 'T'};

/// The only message a control socket ever carries.
struct AbortFrame {
  char magic[8];
  int32_t origin, pad; // origin: the world rank that aborted
  char reason[496];
};
static_assert(sizeof(AbortFrame) == 512, "one fixed-size frame");

/// What the communicators split from one world share: the control
/// sockets, the wake pipe and the abort verdict.
class Family {
public:
  Family(int worldRank, std::vector<Fd> control, std::chrono::milliseconds timeout)
      : worldRank(worldRank), timeout(timeout), control_(std::move(control)),
        frames_(control_.size()), open_(control_.size()) {
    for (size_t r = 0; r < control_.size(); ++r)
      open_[r] = control_[r].valid();
  }

  Status init() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0)
      return Status::error(cat("TCP communicator: pipe: ", std::strerror(errno)));
    wakeRead_ = Fd(fds[0]);
    wakeWrite_ = Fd(fds[1]);
    return Status::ok();
  }

  const int worldRank;
  const std::chrono::milliseconds timeout;

  int wakeFd() const { return wakeRead_.get(); }
  bool aborted() const { return aborted_.load(); }
  std::string abortMessage() {
    std::lock_guard<std::mutex> lock(mutex_);
    return abortMessage_;
  }

  void abort(int origin, const std::string &reason) {
    std::lock_guard<std::mutex> lock(mutex_);
    abortLocked(origin, reason);
  }

  /// Adds the wake pipe (who = -1) and the open control sockets (who =
  /// -2 - world rank) to a poll set.
  void addPollFds(std::vector<pollfd> &fds, std::vector<int> &who) {
    fds.push_back(pollfd{wakeRead_.get(), POLLIN, 0});
    who.push_back(-1);
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t r = 0; r < control_.size(); ++r)
      if (open_[r]) {
        fds.push_back(pollfd{control_[r].get(), POLLIN, 0});
        who.push_back(-2 - static_cast<int>(r));
      }
  }

  /// Reads what world rank `peer`'s control socket has: an abort frame
  /// aborts this family too; its end (the peer finished or died) only
  /// stops the watch, as its data sockets report a death where it matters.
  void readControl(int peer) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string &frame = frames_[peer];
    while (open_[peer] && frame.size() < sizeof(AbortFrame)) {
      char buf[sizeof(AbortFrame)];
      ssize_t n = ::recv(control_[peer].get(), buf, sizeof(AbortFrame) - frame.size(), 0);
      if (n > 0)
        frame.append(buf, static_cast<size_t>(n));
      else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
        open_[peer] = false;
      else
        return;
    }
    if (frame.size() < sizeof(AbortFrame))
      return;
    AbortFrame f;
    std::memcpy(&f, frame.data(), sizeof(f));
    open_[peer] = false; // nothing else ever comes
    if (std::memcmp(f.magic, kAbortMagic, sizeof(kAbortMagic)) == 0)
      abortLocked(f.origin, std::string(f.reason, strnlen(f.reason, sizeof(f.reason))));
  }

  /// Reads any abort frame that has arrived, without waiting.
  void pollControlNow() {
    std::vector<pollfd> fds;
    std::vector<int> who;
    addPollFds(fds, who);
    if (::poll(fds.data(), fds.size(), 0) <= 0)
      return;
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents)
        readControl(-2 - who[i]);
  }

private:
  void abortLocked(int origin, const std::string &reason) {
    if (aborted_)
      return;
    abortMessage_ = cat("rank ", origin, " aborted the group: ", reason);
    aborted_ = true;
    (void)!::write(wakeWrite_.get(), "x", 1); // never drained: the abort is for good
    AbortFrame f{};
    std::memcpy(f.magic, kAbortMagic, sizeof(kAbortMagic));
    f.origin = origin;
    std::strncpy(f.reason, reason.c_str(), sizeof(f.reason) - 1);
    // The socket has never carried anything else, so the frame fits its
    // buffer; a peer that is gone is no longer interested.
    for (size_t r = 0; r < control_.size(); ++r)
      if (control_[r].valid())
        (void)::send(control_[r].get(), &f, sizeof(f), MSG_NOSIGNAL | MSG_DONTWAIT);
  }

  std::mutex mutex_;
  std::vector<Fd> control_;         // by world rank; none for this one
  std::vector<std::string> frames_; // guarded by mutex_: a frame read so far
  std::vector<bool> open_;          // guarded by mutex_
  Fd wakeRead_, wakeWrite_;
  std::atomic<bool> aborted_{false};
  std::string abortMessage_; // guarded by mutex_
};

/// What one rank sends to and receives from one peer in one exchange.
struct Transfer {
  const uint8_t *send = nullptr;
  size_t sendLeft = 0;
  uint8_t *recv = nullptr;
  size_t recvLeft = 0;
};

/// A rank's part in a split: its color, its key and its new listener.
struct SplitEntry {
  int32_t color, key;
  uint32_t port, pad;
};

constexpr size_t kMaxIo = size_t{1} << 30;

class TcpCommunicator final : public ProcessCommunicator {
public:
  TcpCommunicator(std::shared_ptr<Family> family, int rank, std::vector<Fd> links,
                  std::vector<uint32_t> ips, std::vector<int> worldRanks, uint64_t nonce)
      : ProcessCommunicator(rank, static_cast<int>(links.size())), family_(std::move(family)),
        links_(std::move(links)), ips_(std::move(ips)), worldRanks_(std::move(worldRanks)),
        nonce_(nonce), transfers_(links_.size()) {
    for (Fd &fd : links_)
      if (fd.valid())
        ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  }

  void abort(const std::string &reason) override { family_->abort(family_->worldRank, reason); }

private:
  Status allGatherBytes(const void *mine, void *out, size_t bytes) override {
    const auto *in = static_cast<const uint8_t *>(mine);
    auto *all = static_cast<uint8_t *>(out);
    for (int p = 0; p < size(); ++p)
      transfers_[p] = Transfer{in, bytes, all + p * bytes, bytes};
    FSDP_RETURN_IF_ERROR(exchange());
    if (bytes > 0 && in != all + rank() * bytes)
      std::memcpy(all + rank() * bytes, in, bytes);
    return Status::ok();
  }

  Status allToAllBytes(const void *in, void *out, size_t bytes) override {
    const auto *chunks = static_cast<const uint8_t *>(in);
    auto *all = static_cast<uint8_t *>(out);
    for (int p = 0; p < size(); ++p)
      transfers_[p] = Transfer{chunks + p * bytes, bytes, all + p * bytes, bytes};
    FSDP_RETURN_IF_ERROR(exchange());
    if (bytes > 0)
      std::memcpy(all + rank() * bytes, chunks + rank() * bytes, bytes);
    return Status::ok();
  }

  Status broadcastBytes(void *buf, size_t bytes, int root) override {
    auto *data = static_cast<uint8_t *>(buf);
    for (int p = 0; p < size(); ++p)
      transfers_[p] = rank() == root ? Transfer{data, bytes, nullptr, 0}
                      : p == root    ? Transfer{nullptr, 0, data, bytes}
                                     : Transfer{};
    return exchange();
  }

  /// The ranks exchange (color, key, port of a new listener); each new
  /// group builds its own mesh, so it never shares a socket with this one.
  Status splitGroup(int color, int key, std::unique_ptr<Communicator> &out) override {
    Fd listener;
    uint16_t port = 0;
    FSDP_RETURN_IF_ERROR(listenTcp(0, listener, port));
    const SplitEntry mine{color, key, port, 0};
    std::vector<SplitEntry> entries(static_cast<size_t>(size()));
    FSDP_RETURN_IF_ERROR(allGatherBytes(&mine, entries.data(), sizeof(SplitEntry)));
    // The new group: ranks of this color by (key, old rank).
    std::vector<int> members;
    for (int r = 0; r < size(); ++r)
      if (entries[r].color == color)
        members.push_back(r);
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return entries[a].key < entries[b].key; });
    const int newRank =
        static_cast<int>(std::find(members.begin(), members.end(), rank()) - members.begin());
    std::vector<Endpoint> endpoints;
    std::vector<uint32_t> ips;
    std::vector<int> worldRanks;
    for (int m : members) {
      endpoints.push_back(Endpoint{ips_[m], static_cast<uint16_t>(entries[m].port)});
      ips.push_back(ips_[m]);
      worldRanks.push_back(worldRanks_[m]);
    }
    // Every member counts this communicator's splits alike, so the nonce
    // is the same within a new group and differs between groups.
    const uint64_t nonce =
        (nonce_ ^ (++splits_ * 0x9e3779b97f4a7c15ull)) * 1000003 + static_cast<uint64_t>(color);
    std::vector<std::vector<Fd>> links;
    FSDP_RETURN_IF_ERROR(buildMesh(newRank, endpoints, listener.get(), nonce, 1,
                                   Clock::now() + family_->timeout, family_->wakeFd(), links));
    out = std::make_unique<TcpCommunicator>(family_, newRank, std::move(links[0]), std::move(ips),
                                            std::move(worldRanks), nonce);
    return Status::ok();
  }

  std::string pendingFailure() override {
    family_->pollControlNow();
    return family_->aborted() ? family_->abortMessage() : std::string();
  }

  void onFailure() override {
    if (broken_)
      for (Fd &fd : links_)
        if (fd.valid())
          ::shutdown(fd.get(), SHUT_RDWR); // ranks waiting on this one fail too
  }

  /// Moves transfers_ (this rank's own entry ignored) over all sockets at
  /// once until done, an abort, or a peer's failure; leaves them cleared.
  Status exchange() {
    Status status = exchangeUntilDone();
    std::fill(transfers_.begin(), transfers_.end(), Transfer{});
    return status;
  }

  Status exchangeUntilDone() {
    std::vector<pollfd> &fds = pollFds_;
    std::vector<int> &who = pollWho_;
    for (;;) {
      if (family_->aborted())
        return Status::error(family_->abortMessage());
      fds.clear();
      who.clear();
      family_->addPollFds(fds, who);
      const size_t firstData = fds.size();
      for (int p = 0; p < size(); ++p) {
        const Transfer &t = transfers_[p];
        if (p == rank() || (t.sendLeft == 0 && t.recvLeft == 0))
          continue;
        fds.push_back(pollfd{links_[p].get(),
                             static_cast<short>((t.recvLeft ? POLLIN : 0) |
                                                (t.sendLeft ? POLLOUT : 0)),
                             0});
        who.push_back(p);
      }
      if (fds.size() == firstData)
        return Status::ok();
      if (::poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR)
          continue;
        return Status::error(cat("poll: ", std::strerror(errno)));
      }
      for (size_t i = 1; i < firstData; ++i)
        if (fds[i].revents)
          family_->readControl(-2 - who[i]);
      for (size_t i = firstData; i < fds.size(); ++i)
        if (fds[i].revents)
          FSDP_RETURN_IF_ERROR(progress(who[i], fds[i].revents));
    }
  }

  /// Sends and receives what the socket to `peer` takes now.
  Status progress(int peer, short revents) {
    Transfer &t = transfers_[peer];
    const int fd = links_[peer].get();
    if (t.recvLeft && (revents & (POLLIN | POLLHUP | POLLERR))) {
      const ssize_t n = ::recv(fd, t.recv, std::min(t.recvLeft, kMaxIo), 0);
      if (n > 0) {
        t.recv += n;
        t.recvLeft -= static_cast<size_t>(n);
      } else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        return peerFailed(peer, n == 0 ? "its connection closed" : std::strerror(errno));
      }
    }
    if (t.sendLeft && (revents & (POLLOUT | POLLHUP | POLLERR))) {
      const ssize_t n = ::send(fd, t.send, std::min(t.sendLeft, kMaxIo), MSG_NOSIGNAL);
      if (n > 0) {
        t.send += n;
        t.sendLeft -= static_cast<size_t>(n);
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return peerFailed(peer, errno == EPIPE || errno == ECONNRESET ? "its connection closed"
                                                                      : std::strerror(errno));
      }
    }
    return Status::ok();
  }

  Status peerFailed(int peer, const char *why) {
    broken_ = true;
    const std::string world =
        worldRanks_[peer] == peer ? "" : cat(" (world rank ", worldRanks_[peer], ")");
    return Status::error(cat("rank ", peer, world, " left the group (", why, ")"));
  }

  std::shared_ptr<Family> family_;
  std::vector<Fd> links_;        // data socket to each rank; none for this one
  std::vector<uint32_t> ips_;    // where each rank is reachable
  std::vector<int> worldRanks_;  // each rank's rank in the world
  uint64_t nonce_;
  uint64_t splits_ = 0;
  bool broken_ = false; // a socket failed: the links are shut down
  std::vector<Transfer> transfers_; // the current exchange, by peer
  std::vector<pollfd> pollFds_;
  std::vector<int> pollWho_;
};

/// The value of environment variable `name` as an integer in [lo, hi].
Status envInt(const char *name, int64_t lo, int64_t hi, int64_t &value) {
  const char *text = std::getenv(name);
  if (!text)
    return Status::error(cat(name, " is not set (torchrun sets it)"));
  char *end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (!*text || *end || errno != 0 || v < lo || v > hi)
    return Status::error(cat(name, "='", text, "' is not an integer in [", lo, ", ", hi, "]"));
  value = v;
  return Status::ok();
}

} // namespace

bool launchedUnderTorchrun() {
  for (const char *name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"})
    if (!std::getenv(name))
      return false;
  return true;
}

Status tcpWorldOptionsFromEnv(TcpWorldOptions &out) {
  int64_t size = 0, rank = 0, localRank = 0, masterPort = 0;
  FSDP_RETURN_IF_ERROR(envInt("WORLD_SIZE", 1, 1 << 20, size));
  FSDP_RETURN_IF_ERROR(envInt("RANK", 0, size - 1, rank));
  FSDP_RETURN_IF_ERROR(envInt("LOCAL_RANK", 0, size - 1, localRank));
  FSDP_RETURN_IF_ERROR(envInt("MASTER_PORT", 1, 65535, masterPort));
  out.size = static_cast<int>(size);
  out.rank = static_cast<int>(rank);
  out.localRank = static_cast<int>(localRank);
  out.localSize = 0;
  out.portCandidates = 1;
  if (std::getenv("LOCAL_WORLD_SIZE")) {
    int64_t localSize = 0;
    FSDP_RETURN_IF_ERROR(envInt("LOCAL_WORLD_SIZE", localRank + 1, size, localSize));
    out.localSize = static_cast<int>(localSize);
  }
  const char *addr = std::getenv("MASTER_ADDR");
  if (!addr || !*addr)
    return Status::error("MASTER_ADDR is empty (torchrun sets it to rank 0's host)");
  out.addr = addr;
  // The port of the file comment: torchrun's agent holds MASTER_PORT.
  const char *agentStore = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  const bool agentHoldsPort =
      agentStore && (std::strcmp(agentStore, "True") == 0 || std::strcmp(agentStore, "true") == 0 ||
                     std::strcmp(agentStore, "1") == 0);
  if (std::getenv("FSDP_RENDEZVOUS_PORT")) {
    int64_t port = 0;
    FSDP_RETURN_IF_ERROR(envInt("FSDP_RENDEZVOUS_PORT", 1, 65535, port));
    out.port = static_cast<uint16_t>(port);
  } else if (agentHoldsPort) {
    if (masterPort == 65535)
      return Status::error("MASTER_PORT=65535: the rendezvous needs MASTER_PORT + 1 (torchrun's "
                           "agent holds MASTER_PORT); set FSDP_RENDEZVOUS_PORT");
    out.port = static_cast<uint16_t>(masterPort + 1);
    out.portCandidates = static_cast<int>(std::min<int64_t>(8, 65535 - masterPort));
  } else {
    out.port = static_cast<uint16_t>(masterPort);
  }
  const char *runId = std::getenv("TORCHELASTIC_RUN_ID");
  out.job = cat(addr, ":", masterPort, "/", runId ? runId : "");
  out.timeout = std::chrono::milliseconds(120000);
  if (const char *text = std::getenv("FSDP_RENDEZVOUS_TIMEOUT")) {
    char *end = nullptr;
    const double seconds = std::strtod(text, &end);
    if (!*text || *end || !(seconds > 0 && seconds < 1e7))
      return Status::error(cat("FSDP_RENDEZVOUS_TIMEOUT='", text,
                               "' is not a positive number of seconds"));
    out.timeout = std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  }
  return Status::ok();
}

Status createTcpWorld(const TcpWorldOptions &o, std::unique_ptr<Communicator> &out) {
  out.reset();
  if (o.size < 1 || o.rank < 0 || o.rank >= o.size)
    return Status::error(cat("TCP world: rank ", o.rank, " is outside a world of ", o.size));
  if (o.port == 0 && o.listenFd < 0 && o.size > 1)
    return Status::error(cat("TCP world: invalid rendezvous port ", o.port));
  std::vector<std::vector<Fd>> links(2);
  for (auto &channel : links)
    channel.resize(static_cast<size_t>(o.size));
  std::vector<uint32_t> ips(static_cast<size_t>(o.size));
  uint64_t nonce = 0;
  if (o.size > 1) {
    Fd listener;
    uint16_t meshPort = 0;
    if (Status s = listenTcp(0, listener, meshPort); !s)
      return Status::error("TCP world: mesh listener: " + s.message());
    WorldTable table;
    FSDP_RETURN_IF_ERROR(rendezvous(o, meshPort, table));
    // Channel 0 carries the data, channel 1 the family's abort frames.
    FSDP_RETURN_IF_ERROR(buildMesh(o.rank, table.endpoints, listener.get(), table.nonce, 2,
                                   Clock::now() + o.timeout, -1, links));
    for (int r = 0; r < o.size; ++r)
      ips[r] = table.endpoints[r].ip;
    nonce = table.nonce;
  }
  auto family = std::make_shared<Family>(o.rank, std::move(links[1]), o.timeout);
  FSDP_RETURN_IF_ERROR(family->init());
  std::vector<int> worldRanks(static_cast<size_t>(o.size));
  std::iota(worldRanks.begin(), worldRanks.end(), 0);
  out = std::make_unique<TcpCommunicator>(std::move(family), o.rank, std::move(links[0]),
                                          std::move(ips), std::move(worldRanks), nonce);
  return Status::ok();
}

} // namespace fsdp::rt::comm
