//===- TcpCommunicatorTest.cpp - what only the TCP communicator has -------===//
//
// The TCP communicator's collectives, splits, mismatches and aborts run in
// the conformance suite (CommunicatorTest.cpp, CommunicatorTcp/...). Here is
// what it alone has: torchrun's environment and the port rule, the
// rendezvous' errors (nobody listening, a rank that never comes, ranks
// that disagree on the world size, two processes with one rank), each
// within a short start-up timeout instead of a hang; abort() from a
// watchdog thread while the rank's own thread is blocked in a collective;
// a peer process that dies (a forked child that _exits) named in the
// error; and messages large enough that every socket buffer fills while
// all ranks send and receive at once.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/comm/CommTestData.h"
#include "tests/unit/runtime/comm/CommTestGroups.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <thread>

using namespace fsdp::rt;
using namespace fsdp::rt::commtest;
using namespace std::chrono_literals;
using comm::TcpWorldOptions;

namespace {

/// Sets the variables of `vars` (a null value unsets) for one test and
/// restores the previous environment afterwards.
class ScopedEnv {
public:
  explicit ScopedEnv(std::vector<std::pair<const char *, const char *>> vars) {
    for (const auto &[name, value] : vars) {
      const char *old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      if (value)
        ::setenv(name, value, 1);
      else
        ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto &[name, value] : saved_)
      if (value)
        ::setenv(name.c_str(), value->c_str(), 1);
      else
        ::unsetenv(name.c_str());
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

const std::vector<std::pair<const char *, const char *>> kTorchrunEnv = {
    {"RANK", "1"},          {"WORLD_SIZE", "2"},         {"LOCAL_RANK", "1"},
    {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "localhost"}, {"MASTER_PORT", "29500"},
    {"TORCHELASTIC_USE_AGENT_STORE", nullptr}, {"FSDP_RENDEZVOUS_PORT", nullptr},
    {"FSDP_RENDEZVOUS_TIMEOUT", nullptr}};

/// A port nobody listens on (bound, then released).
uint16_t unusedPort() {
  comm::tcp::Fd fd;
  uint16_t port = 0;
  EXPECT_TRUE(comm::tcp::listenTcp(0, fd, port).isOk());
  return port;
}

// torchrun's variables make the options; the agent's store moves the
// rendezvous to MASTER_PORT + 1; FSDP_RENDEZVOUS_PORT overrides both.
TEST(TcpLaunchEnv, OptionsFromTorchrunsEnvironment) {
  ScopedEnv env(kTorchrunEnv);
  ASSERT_TRUE(comm::launchedUnderTorchrun());
  TcpWorldOptions o;
  Status s = comm::tcpWorldOptionsFromEnv(o);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(o.rank, 1);
  EXPECT_EQ(o.size, 2);
  EXPECT_EQ(o.localRank, 1);
  EXPECT_EQ(o.localSize, 2);
  EXPECT_EQ(o.addr, "localhost");
  EXPECT_EQ(o.port, 29500);
  EXPECT_EQ(o.portCandidates, 1);
  EXPECT_EQ(o.timeout, 120s);
  {
    ScopedEnv agent({{"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"FSDP_RENDEZVOUS_TIMEOUT", "2.5"}});
    ASSERT_TRUE(comm::tcpWorldOptionsFromEnv(o).isOk());
    EXPECT_EQ(o.port, 29501);
    EXPECT_EQ(o.portCandidates, 8);
    EXPECT_EQ(o.timeout, 2500ms);
    ScopedEnv chosen(std::vector<std::pair<const char *, const char *>>{{"FSDP_RENDEZVOUS_PORT", "31000"}});
    ASSERT_TRUE(comm::tcpWorldOptionsFromEnv(o).isOk());
    EXPECT_EQ(o.port, 31000);
    EXPECT_EQ(o.portCandidates, 1);
  }
  ScopedEnv noAddr(std::vector<std::pair<const char *, const char *>>{{"MASTER_ADDR", nullptr}});
  EXPECT_FALSE(comm::launchedUnderTorchrun());
}

// Invalid values are errors naming the variable.
TEST(TcpLaunchEnv, InvalidValuesNameTheVariable) {
  ScopedEnv env(kTorchrunEnv);
  TcpWorldOptions o;
  auto expectError = [&](std::vector<std::pair<const char *, const char *>> vars,
                         const std::string &needle) {
    ScopedEnv bad(std::move(vars));
    Status s = comm::tcpWorldOptionsFromEnv(o);
    EXPECT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expectError({{"RANK", "2"}}, "RANK='2' is not an integer in [0, 1]");
  expectError({{"WORLD_SIZE", "two"}}, "WORLD_SIZE='two' is not an integer");
  expectError({{"MASTER_PORT", "70000"}}, "MASTER_PORT='70000'");
  expectError({{"LOCAL_RANK", "-1"}}, "LOCAL_RANK='-1'");
  expectError({{"LOCAL_WORLD_SIZE", "1"}}, "LOCAL_WORLD_SIZE='1' is not an integer in [2, 2]");
  expectError({{"FSDP_RENDEZVOUS_PORT", "0"}}, "FSDP_RENDEZVOUS_PORT='0'");
  expectError({{"FSDP_RENDEZVOUS_TIMEOUT", "soon"}}, "FSDP_RENDEZVOUS_TIMEOUT='soon'");
  expectError({{"MASTER_ADDR", ""}}, "MASTER_ADDR is empty");
}

/// Runs createTcpWorld for each of `options` on its own thread.
std::vector<Status> startRanks(const std::vector<TcpWorldOptions> &options, Comms &comms) {
  std::vector<Status> st(options.size());
  comms.clear();
  comms.resize(options.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < options.size(); ++i)
    threads.emplace_back([&, i] { st[i] = comm::createTcpWorld(options[i], comms[i]); });
  for (std::thread &t : threads)
    t.join();
  return st;
}

TcpWorldOptions rankOptions(int rank, int size, uint16_t port, int listenFd = -1) {
  TcpWorldOptions o;
  o.addr = "127.0.0.1";
  o.port = port;
  o.rank = rank;
  o.size = size;
  o.timeout = 3s;
  o.listenFd = rank == 0 ? listenFd : -1;
  return o;
}

// A rank whose rank 0 never comes gives up at the start-up timeout with
// the address it tried.
TEST(TcpRendezvous, NobodyListeningIsAnErrorAtTheTimeout) {
  const uint16_t port = unusedPort();
  TcpWorldOptions o = rankOptions(1, 2, port);
  o.timeout = 400ms;
  std::unique_ptr<Communicator> comm;
  const auto start = std::chrono::steady_clock::now();
  Status s = comm::createTcpWorld(o, comm);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(cat("nobody accepted a connection at 127.0.0.1:", port)),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("rank 0's rendezvous"), std::string::npos) << s.message();
  EXPECT_LT(took, 5s);
}

// Rank 0 waiting for a rank that never comes names the missing ranks.
TEST(TcpRendezvous, MissingRankIsAnErrorAtTheTimeout) {
  comm::tcp::Fd listener;
  uint16_t port = 0;
  ASSERT_TRUE(comm::tcp::listenTcp(0, listener, port).isOk());
  Comms comms;
  std::vector<TcpWorldOptions> ranks = {rankOptions(0, 3, port, listener.get()),
                                        rankOptions(1, 3, port)};
  ranks[0].timeout = ranks[1].timeout = 500ms;
  std::vector<Status> st = startRanks(ranks, comms);
  for (size_t r = 0; r < st.size(); ++r) {
    EXPECT_FALSE(st[r].isOk()) << "rank " << r;
    EXPECT_NE(st[r].message().find("only 2 of 3 ranks arrived within 0.5 s (missing: rank 2;"),
              std::string::npos)
        << "rank " << r << ": " << st[r].message();
  }
}

// Ranks started with different world sizes, or two processes with one
// rank, fail every rank that reached rank 0 with the same message.
TEST(TcpRendezvous, InconsistentRanksFailWithOneMessage) {
  comm::tcp::Fd listener;
  uint16_t port = 0;
  ASSERT_TRUE(comm::tcp::listenTcp(0, listener, port).isOk());
  Comms comms;
  std::vector<Status> st =
      startRanks({rankOptions(0, 2, port, listener.get()), rankOptions(1, 3, port)}, comms);
  for (size_t r = 0; r < st.size(); ++r)
    EXPECT_NE(st[r].message().find("rank 1 has WORLD_SIZE=3, but rank 0 has WORLD_SIZE=2"),
              std::string::npos)
        << "rank " << r << ": " << st[r].message();

  comm::tcp::Fd listener2;
  ASSERT_TRUE(comm::tcp::listenTcp(0, listener2, port).isOk());
  st = startRanks({rankOptions(0, 3, port, listener2.get()), rankOptions(1, 3, port),
                   rankOptions(1, 3, port)},
                  comms);
  for (size_t r = 0; r < st.size(); ++r)
    EXPECT_NE(st[r].message().find("two processes have RANK=1"), std::string::npos)
        << "rank " << r << ": " << st[r].message();
}

// With candidate ports (torchrun's agent), rank 0 takes the first free
// one and the others find it: past a port bound by another socket (as the
// agent's connections take ports next to MASTER_PORT) and past another
// job's rendezvous, which tells them they are not of its job.
TEST(TcpRendezvous, CandidatePortsSkipTakenPortsAndOtherJobs) {
  // Three consecutive ports: the first held by a plain bound socket, the
  // second by another job's rank 0.
  comm::tcp::Fd probe, second, third;
  uint16_t base = 0, ignored = 0;
  for (int attempt = 0; attempt < 50 && !third.valid(); ++attempt) {
    probe.reset();
    second.reset();
    ASSERT_TRUE(comm::tcp::listenTcp(0, probe, base).isOk());
    if (base > 65000 || !comm::tcp::listenTcp(base + 1, second, ignored).isOk() ||
        !comm::tcp::listenTcp(base + 2, third, ignored).isOk())
      continue;
  }
  ASSERT_TRUE(third.valid()) << "no three consecutive free ports";
  third.reset();
  second.reset(); // the other job's rank 0 takes base + 1 itself
  probe.reset(); // base: bound by a socket that does not listen
  comm::tcp::Fd plain(::socket(AF_INET, SOCK_STREAM, 0));
  {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(base);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(plain.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
  }
  TcpWorldOptions other = rankOptions(0, 2, base + 1);
  other.job = "another job";
  other.timeout = 1500ms;
  Status otherStatus;
  std::unique_ptr<Communicator> otherComm;
  std::thread otherJob([&] { otherStatus = comm::createTcpWorld(other, otherComm); });
  std::this_thread::sleep_for(100ms); // it listens first
  std::vector<TcpWorldOptions> ranks = {rankOptions(0, 2, base), rankOptions(1, 2, base)};
  for (TcpWorldOptions &o : ranks) {
    o.portCandidates = 3;
    o.job = "this job";
  }
  Comms comms;
  std::vector<Status> st = startRanks(ranks, comms);
  otherJob.join();
  for (size_t r = 0; r < st.size(); ++r)
    ASSERT_TRUE(st[r].isOk()) << "rank " << r << ": " << st[r].message();
  EXPECT_FALSE(otherStatus.isOk()); // nobody of its job came
  std::vector<Status> barrier(2);
  std::thread t([&] { barrier[1] = comms[1]->barrier(); });
  barrier[0] = comms[0]->barrier();
  t.join();
  EXPECT_TRUE(barrier[0].isOk() && barrier[1].isOk()) << barrier[0].message();
}

// A watchdog thread's abort() wakes this rank's thread blocked in a
// collective, and reaches the peer that never called it.
TEST(TcpCommunicator, AbortFromAnotherThreadWakesABlockedCollective) {
  Comms comms = makeTcpGroup(2);
  ASSERT_TRUE(comms[0] && comms[1]);
  Status blocked;
  std::thread rank0([&] { blocked = comms[0]->barrier(); });
  std::this_thread::sleep_for(50ms); // let it block: rank 1 never comes
  comms[0]->abort("collective timed out");
  rank0.join();
  EXPECT_NE(blocked.message().find("rank 0 aborted the group: collective timed out"),
            std::string::npos)
      << blocked.message();
  Status later = comms[1]->barrier();
  EXPECT_NE(later.message().find("rank 0 aborted the group: collective timed out"),
            std::string::npos)
      << later.message();
}

// A peer process that dies is an error naming its rank, not a hang.
TEST(TcpCommunicator, DeadPeerProcessIsNamed) {
  comm::tcp::Fd listener;
  uint16_t port = 0;
  ASSERT_TRUE(comm::tcp::listenTcp(0, listener, port).isOk());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::unique_ptr<Communicator> comm;
    const bool made = comm::createTcpWorld(rankOptions(1, 2, port), comm).isOk();
    ::_exit(made ? 0 : 3); // dies without a word, its sockets closed by the kernel
  }
  std::unique_ptr<Communicator> comm;
  Status made = comm::createTcpWorld(rankOptions(0, 2, port, listener.get()), comm);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(made.isOk()) << made.message();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::vector<float> in(1000, 1.0f), out(1000);
  Status s = comm->allReduce(in.data(), out.data(), 1000, DType::F32, ReduceOp::Sum);
  EXPECT_NE(s.message().find("rank 1 left the group"), std::string::npos) << s.message();
  Status later = comm->barrier(); // and stays failed
  EXPECT_NE(later.message().find("rank 1 left the group"), std::string::npos) << later.message();
}

// Messages far beyond the sockets' buffers, all ranks sending and
// receiving at once, in every collective, keep the rank-order bits.
TEST(TcpCommunicator, LargeSimultaneousMessages) {
  const int n = 3;
  const int64_t count = int64_t{6} << 20; // 24 MiB of f32 per rank
  Comms comms = makeTcpGroup(n);
  auto data = allRanksData(DType::F32, n, count, 11);
  std::vector<Bytes> reduced(n), gathered(n);
  std::vector<Status> st(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      reduced[r].resize(data[r].size());
      gathered[r].resize(data[r].size() * n);
      Status s = comms[r]->allReduce(data[r].data(), reduced[r].data(), count, DType::F32,
                                     ReduceOp::Sum);
      if (s.isOk())
        s = comms[r]->allGather(data[r].data(), gathered[r].data(), count, DType::F32);
      st[r] = s;
    });
  for (std::thread &t : threads)
    t.join();
  const Bytes want = reference(DType::F32, ReduceOp::Sum, data, 0, count);
  const Bytes all = concatenated(data);
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(st[r].isOk()) << st[r].message();
    EXPECT_TRUE(reduced[r] == want) << "rank " << r;
    EXPECT_TRUE(gathered[r] == all) << "rank " << r;
  }
}

} // namespace
