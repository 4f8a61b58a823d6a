//===- CommunicatorTest.cpp - collectives with NCCL semantics -------------===//
//
// The communicator conformance suite, instantiated for the in-process
// communicator at world sizes 1, 2, 3, 4 and 8 and the TCP communicator
// (CommTestGroups.h) at 1, 2, 3 and 4 (one thread per rank):
// allGather, reduceScatter, allReduce and broadcast against sequential
// references for f32, f64, bf16 and i64 with uneven values; sums compared bit
// for bit with a reference that adds in rank order, also under random
// per-rank delays, because that is what makes sharded runs reproduce
// unsharded ones; in-place layouts; and the failure contract: mismatched
// calls, local errors, differing start-up values and aborts give an error on
// every rank, never a hang. Every test runs its ranks under a watchdog that
// fails the test (and aborts the group) instead of hanging CI. The bodies take
// a Communicator& so an MPI instantiation can reuse them.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/comm/CommTestData.h"
#include "tests/unit/runtime/comm/CommTestGroups.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

using namespace fsdp::rt;
using namespace fsdp::rt::commtest;
using fsdp::rt::comm::createInProcessGroup;
using namespace std::chrono_literals;

namespace {

/// Runs body(0..n-1) on n threads. The calling thread is the watchdog: if
/// they have not all returned within `limit`, the test fails and `rescue`
/// runs (it aborts the group); if even that leaves a thread stuck, the
/// process exits rather than hang.
void runGuarded(int n, const std::function<void(int)> &body, const std::function<void()> &rescue,
                std::chrono::milliseconds limit = 10s) {
  std::mutex mutex;
  std::condition_variable done;
  int finished = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      body(i);
      std::lock_guard<std::mutex> lock(mutex);
      ++finished;
      done.notify_all();
    });
  {
    std::unique_lock<std::mutex> lock(mutex);
    auto allDone = [&] { return finished == n; };
    if (!done.wait_for(lock, limit, allDone)) {
      ADD_FAILURE() << "threads still running after " << limit.count() << " ms: a collective hangs";
      rescue();
      if (!done.wait_for(lock, 2s, allDone)) {
        std::fprintf(stderr, "abort did not wake the stuck ranks; exiting\n");
        std::_Exit(1);
      }
    }
  }
  for (auto &t : threads)
    t.join();
}

/// Runs body(comm) on one thread per rank of `comms`, under the watchdog.
void runOn(Comms &comms, const std::function<void(Communicator &)> &body) {
  runGuarded(
      static_cast<int>(comms.size()), [&](int r) { body(*comms[r]); },
      [&] { comms[0]->abort("test watchdog"); });
}


/// Collects one Status per rank and checks them on the test thread.
struct RankStatuses {
  explicit RankStatuses(int size) : all(static_cast<size_t>(size)) {}
  void expectAllFailWith(const std::string &needle) const {
    for (size_t r = 0; r < all.size(); ++r) {
      EXPECT_FALSE(all[r].isOk()) << "rank " << r << " succeeded";
      EXPECT_NE(all[r].message().find(needle), std::string::npos)
          << "rank " << r << ": " << all[r].message();
    }
  }
  void expectAllOk() const {
    for (size_t r = 0; r < all.size(); ++r)
      EXPECT_TRUE(all[r].isOk()) << "rank " << r << ": " << all[r].message();
  }
  std::vector<Status> all;
};

/// (communicator, world size).
class CommunicatorConformance : public ::testing::TestWithParam<std::tuple<GroupKind, int>> {
protected:
  GroupKind kind() const { return std::get<0>(GetParam()); }
  int size() const { return std::get<1>(GetParam()); }
  Comms comms = makeGroup(kind(), size());
};

std::string worldName(const ::testing::TestParamInfo<std::tuple<GroupKind, int>> &info) {
  return "world" + std::to_string(std::get<1>(info.param));
}

// allGather concatenates every rank's send in rank order, for any dtype.
TEST_P(CommunicatorConformance, AllGatherEveryType) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I64, DType::U8}) {
    const int64_t count = 7;
    auto data = allRanksData(dtype, size(), count);
    std::vector<Bytes> got(size());
    RankStatuses st(size());
    runOn(comms, [&](Communicator &c) {
      got[c.rank()].resize(data[0].size() * size());
      st.all[c.rank()] = c.allGather(data[c.rank()].data(), got[c.rank()].data(), count, dtype);
    });
    st.expectAllOk();
    const Bytes want = concatenated(data);
    for (int r = 0; r < size(); ++r)
      EXPECT_EQ(got[r], want) << dtypeName(dtype) << " on rank " << r;
  }
}

// reduceScatter gives rank r the rank-order reduction of chunk r, bit for
// bit; 300 elements per chunk cross the reduction's block boundary.
TEST_P(CommunicatorConformance, ReduceScatterMatchesRankOrderReference) {
  for (TypeOp t : kReductions) {
    const int64_t chunk = 300;
    auto data = allRanksData(t.dtype, size(), chunk * size());
    std::vector<Bytes> got(size());
    RankStatuses st(size());
    runOn(comms, [&](Communicator &c) {
      got[c.rank()].resize(chunk * dtypeSize(t.dtype));
      st.all[c.rank()] =
          c.reduceScatter(data[c.rank()].data(), got[c.rank()].data(), chunk, t.dtype, t.op);
    });
    st.expectAllOk();
    for (int r = 0; r < size(); ++r)
      EXPECT_EQ(got[r], reference(t.dtype, t.op, data, r * chunk, chunk))
          << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " on rank " << r;
  }
}

// allReduce gives every rank the same rank-order reduction, bit for bit.
TEST_P(CommunicatorConformance, AllReduceMatchesRankOrderReference) {
  for (TypeOp t : kReductions) {
    const int64_t count = 601;
    auto data = allRanksData(t.dtype, size(), count);
    std::vector<Bytes> got(size());
    RankStatuses st(size());
    runOn(comms, [&](Communicator &c) {
      got[c.rank()].resize(data[0].size());
      st.all[c.rank()] =
          c.allReduce(data[c.rank()].data(), got[c.rank()].data(), count, t.dtype, t.op);
    });
    st.expectAllOk();
    Bytes want = reference(t.dtype, t.op, data, 0, count);
    for (int r = 0; r < size(); ++r)
      EXPECT_EQ(got[r], want) << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " on rank "
                              << r;
  }
}

// broadcast copies the root's buffer to every rank, from every root.
TEST_P(CommunicatorConformance, BroadcastFromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    auto data = allRanksData(DType::BF16, size(), 33, root);
    RankStatuses st(size());
    runOn(comms, [&](Communicator &c) {
      st.all[c.rank()] = c.broadcast(data[c.rank()].data(), 33, DType::BF16, root);
    });
    st.expectAllOk();
    Bytes want = rankData(DType::BF16, root, 33, root);
    for (int r = 0; r < size(); ++r)
      EXPECT_EQ(data[r], want) << "root " << root << ", rank " << r;
  }
}

// NCCL's in-place layouts give the out-of-place results.
TEST_P(CommunicatorConformance, InPlaceLayouts) {
  const int64_t count = 40;
  const int n = size();
  auto data = allRanksData(DType::F32, n, count * n);
  std::vector<Bytes> reduced(n), scattered(n), gathered(n);
  RankStatuses st(n);
  runOn(comms, [&](Communicator &c) {
    const int r = c.rank();
    const size_t chunkBytes = count * sizeof(float);
    reduced[r] = data[r];
    Status s = c.allReduce(reduced[r].data(), reduced[r].data(), count * n, DType::F32,
                           ReduceOp::Sum);
    scattered[r] = data[r];
    uint8_t *mine = scattered[r].data() + r * chunkBytes;
    if (s.isOk())
      s = c.reduceScatter(scattered[r].data(), mine, count, DType::F32, ReduceOp::Avg);
    gathered[r].assign(n * chunkBytes, 0);
    std::memcpy(gathered[r].data() + r * chunkBytes, data[r].data(), chunkBytes);
    if (s.isOk())
      s = c.allGather(gathered[r].data() + r * chunkBytes, gathered[r].data(), count, DType::F32);
    st.all[r] = s;
  });
  st.expectAllOk();
  Bytes wantReduced = reference(DType::F32, ReduceOp::Sum, data, 0, count * n);
  Bytes wantGathered;
  for (int r = 0; r < n; ++r)
    wantGathered.insert(wantGathered.end(), data[r].begin(), data[r].begin() + count * 4);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(reduced[r], wantReduced) << "rank " << r;
    Bytes mine(scattered[r].begin() + r * count * 4, scattered[r].begin() + (r + 1) * count * 4);
    EXPECT_EQ(mine, reference(DType::F32, ReduceOp::Avg, data, r * count, count)) << "rank " << r;
    EXPECT_EQ(gathered[r], wantGathered) << "rank " << r;
  }
}

// The same inputs give the same bits however the ranks' arrivals interleave:
// 20 rounds with random per-rank sleeps and yields before each collective.
TEST_P(CommunicatorConformance, BitwiseDeterministicUnderTimingNoise) {
  const int n = size();
  const int64_t count = 97 * n;
  auto f32 = allRanksData(DType::F32, n, count, 5);
  auto bf16 = allRanksData(DType::BF16, n, count, 6);
  const Bytes wantF32 = reference(DType::F32, ReduceOp::Sum, f32, 0, count);
  const Bytes wantBf16 = reference(DType::BF16, ReduceOp::Avg, bf16, 0, count);
  for (int round = 0; round < 20; ++round) {
    std::vector<Bytes> sum(n), avg(n), scattered(n);
    RankStatuses st(n);
    runOn(comms, [&](Communicator &c) {
      const int r = c.rank();
      std::mt19937 rng(static_cast<unsigned>(round * 131 + r));
      auto jitter = [&] {
        if (rng() % 2)
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
        else
          std::this_thread::yield();
      };
      sum[r].resize(count * 4);
      avg[r].resize(count * 2);
      scattered[r].resize(count / n * 4);
      jitter();
      Status s = c.allReduce(f32[r].data(), sum[r].data(), count, DType::F32, ReduceOp::Sum);
      jitter();
      if (s.isOk())
        s = c.allReduce(bf16[r].data(), avg[r].data(), count, DType::BF16, ReduceOp::Avg);
      jitter();
      if (s.isOk())
        s = c.reduceScatter(f32[r].data(), scattered[r].data(), count / n, DType::F32,
                            ReduceOp::Sum);
      st.all[r] = s;
    });
    st.expectAllOk();
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(sum[r], wantF32) << "round " << round << ", rank " << r;
      EXPECT_EQ(avg[r], wantBf16) << "round " << round << ", rank " << r;
      Bytes mine(wantF32.begin() + r * (count / n) * 4, wantF32.begin() + (r + 1) * (count / n) * 4);
      EXPECT_EQ(scattered[r], mine) << "round " << round << ", rank " << r;
    }
  }
}

// Zero-element collectives with null buffers and barriers synchronize and
// succeed.
TEST_P(CommunicatorConformance, BarrierAndEmptyCollectives) {
  RankStatuses st(size());
  runOn(comms, [&](Communicator &c) {
    Status s = c.barrier();
    if (s.isOk())
      s = c.allReduce(nullptr, nullptr, 0, DType::F32, ReduceOp::Sum);
    if (s.isOk())
      s = c.allGather(nullptr, nullptr, 0, DType::BF16);
    if (s.isOk())
      s = c.broadcast(nullptr, 0, DType::I64, 0);
    if (s.isOk())
      s = c.barrier();
    st.all[c.rank()] = s;
  });
  st.expectAllOk();
}

// Equal start-up values agree; one differing value is an error on every
// rank naming what differed and both values, and the group stays usable.
TEST_P(CommunicatorConformance, CheckSameOnAllRanks) {
  RankStatuses same(size()), differ(size()), after(size());
  const int odd = size() - 1;
  runOn(comms, [&](Communicator &c) {
    same.all[c.rank()] = c.checkSameOnAllRanks(0xabcdef, "plan hash");
    differ.all[c.rank()] =
        c.checkSameOnAllRanks(c.rank() == odd && odd > 0 ? 0x1234 : 0xabcdef, "plan hash");
    after.all[c.rank()] = c.barrier();
  });
  same.expectAllOk();
  after.expectAllOk();
  if (size() == 1) {
    differ.expectAllOk();
    return;
  }
  differ.expectAllFailWith("plan hash differs across ranks: rank 0 has 0x0000000000abcdef, rank " +
                           std::to_string(odd) + " has 0x0000000000001234");
}

// A rank passing a different count is an error on every rank, and the group
// stays failed: the ranks no longer agree on where they are.
/// Mismatch tests need a second rank to disagree with: world sizes >= 2.
class CommunicatorMismatch : public CommunicatorConformance {};

TEST_P(CommunicatorMismatch, MismatchedCountsFailEveryRank) {
  RankStatuses first(size()), later(size());
  runOn(comms, [&](Communicator &c) {
    const int64_t count = c.rank() == 1 ? 5 : 4;
    std::vector<float> in(5, 1.0f), out(5);
    first.all[c.rank()] = c.allReduce(in.data(), out.data(), count, DType::F32, ReduceOp::Sum);
    later.all[c.rank()] = c.barrier();
  });
  first.expectAllFailWith("ranks disagree: rank 0 called allReduce(4 x f32, sum) but rank 1 "
                          "called allReduce(5 x f32, sum)");
  later.expectAllFailWith("ranks disagree");
}

// A rank calling a different collective than the others fails every rank.
TEST_P(CommunicatorMismatch, DifferentCollectivesFailEveryRank) {
  RankStatuses st(size());
  runOn(comms, [&](Communicator &c) {
    std::vector<double> in(2, 1.0), out(2 * c.size());
    st.all[c.rank()] = c.rank() == c.size() - 1
                           ? c.allGather(in.data(), out.data(), 2, DType::F64)
                           : c.allReduce(in.data(), out.data(), 2, DType::F64, ReduceOp::Sum);
  });
  st.expectAllFailWith("called allGather(2 x f64)");
}

// An argument only one rank gets wrong (a root outside the group) reaches
// every rank with its reason.
TEST_P(CommunicatorConformance, LocalErrorReachesEveryRank) {
  RankStatuses st(size());
  const int bad = size() - 1;
  runOn(comms, [&](Communicator &c) {
    int64_t v = 0;
    st.all[c.rank()] = c.broadcast(&v, 1, DType::I64, c.rank() == bad ? size() + 3 : 0);
  });
  st.expectAllFailWith("rank " + std::to_string(bad) + " cannot take part: broadcast: root " +
                       std::to_string(size() + 3) + " is outside the group");
}

// Types and ops a reduction does not define are errors on every rank.
TEST_P(CommunicatorConformance, UnsupportedReductionsFailEveryRank) {
  RankStatuses u8(size()), avgI64(size());
  runOn(comms, [&](Communicator &c) {
    uint8_t b = 1, bo = 0;
    u8.all[c.rank()] = c.allReduce(&b, &bo, 1, DType::U8, ReduceOp::Sum);
  });
  u8.expectAllFailWith("cannot reduce element type ui8");
  comms = makeGroup(kind(), size()); // the failure above is sticky
  runOn(comms, [&](Communicator &c) {
    std::vector<int64_t> in(c.size(), 1), out(1);
    avgI64.all[c.rank()] = c.reduceScatter(in.data(), out.data(), 1, DType::I64, ReduceOp::Avg);
  });
  avgI64.expectAllFailWith("avg is defined for floating types, not i64");
}

// A TensorRef whose shape does not fit aborts the group, so every rank
// learns why instead of waiting for the rank that gave up.
TEST_P(CommunicatorConformance, TensorRefShapeErrorAbortsEveryRank) {
  RankStatuses st(size());
  runOn(comms, [&](Communicator &c) {
    std::vector<float> in(3), out(3 * c.size());
    TensorRef send{DType::F32, 1, {3}, in.data()};
    TensorRef recv{DType::F32, 1, {3 * c.size() - (c.rank() == 0 ? 1 : 0)}, out.data()};
    st.all[c.rank()] = c.allGather(send, recv);
  });
  st.expectAllFailWith(cat("allGather: send (3 x f32) and recv (", 3 * size() - 1,
                           " x f32) do not fit a group of ", size(), " ranks"));
}

// abort() wakes every rank waiting in a collective with the reason, and the
// aborting rank's own later calls fail too.
TEST_P(CommunicatorConformance, AbortWakesEveryone) {
  RankStatuses st(size());
  const int quitter = size() - 1;
  runOn(comms, [&](Communicator &c) {
    if (c.rank() == quitter) {
      std::this_thread::sleep_for(20ms); // let the others block first
      c.abort("could not read its data shard");
    }
    st.all[c.rank()] = c.barrier();
  });
  st.expectAllFailWith("rank " + std::to_string(quitter) +
                       " aborted the group: could not read its data shard");
}

INSTANTIATE_TEST_SUITE_P(CommunicatorInProcess, CommunicatorConformance,
                         ::testing::Combine(::testing::Values(GroupKind::InProcess),
                                            ::testing::Values(1, 2, 3, 4, 8)),
                         worldName);
INSTANTIATE_TEST_SUITE_P(CommunicatorInProcess, CommunicatorMismatch,
                         ::testing::Combine(::testing::Values(GroupKind::InProcess),
                                            ::testing::Values(2, 3, 4, 8)),
                         worldName);
INSTANTIATE_TEST_SUITE_P(CommunicatorTcp, CommunicatorConformance,
                         ::testing::Combine(::testing::Values(GroupKind::Tcp),
                                            ::testing::Values(1, 2, 3, 4)),
                         worldName);
INSTANTIATE_TEST_SUITE_P(CommunicatorTcp, CommunicatorMismatch,
                         ::testing::Combine(::testing::Values(GroupKind::Tcp),
                                            ::testing::Values(2, 3, 4)),
                         worldName);

// --- split: sub-groups for hybrid sharding ---------------------------------

/// The inputs of `members` (parent ranks, in their new-rank order).
std::vector<Bytes> pick(const std::vector<Bytes> &data, const std::vector<int> &members) {
  std::vector<Bytes> out;
  for (int m : members)
    out.push_back(data[m]);
  return out;
}

/// The parent ranks of the group `rank` lands in when every rank splits by
/// color(rank) with key = its rank: the ranks of equal color, in order.
std::vector<int> membersOf(int world, int rank, const std::function<int(int)> &color) {
  std::vector<int> members;
  for (int r = 0; r < world; ++r)
    if (color(r) == color(rank))
      members.push_back(r);
  return members;
}

/// (world size, group size G): contiguous shard groups {0..G-1}, {G..2G-1},
/// ... and strided replica groups {i, i+G, i+2G, ...}.
class CommunicatorSplit
    : public ::testing::TestWithParam<std::tuple<GroupKind, std::pair<int, int>>> {
protected:
  int world() const { return std::get<1>(GetParam()).first; }
  int group() const { return std::get<1>(GetParam()).second; }
  Comms comms = makeGroup(std::get<0>(GetParam()), world());
};

std::string splitName(
    const ::testing::TestParamInfo<std::tuple<GroupKind, std::pair<int, int>>> &info) {
  return "world" + std::to_string(std::get<1>(info.param).first) + "group" +
         std::to_string(std::get<1>(info.param).second);
}

// Both levels of a hybrid layout give every rank its place (rank, size) and
// rank-order results bit for bit, with the groups of one level running at
// the same time, and the parent still works after the split.
TEST_P(CommunicatorSplit, ContiguousAndStridedGroupsReduceInRankOrder) {
  const int n = world(), g = group();
  auto shardColor = [g](int r) { return r / g; };
  auto replicaColor = [g](int r) { return r % g; };
  Comms shard(n), replica(n);
  RankStatuses splitSt(n);
  runOn(comms, [&](Communicator &c) {
    Status s = c.split(shardColor(c.rank()), c.rank(), shard[c.rank()]);
    if (s.isOk())
      s = c.split(replicaColor(c.rank()), c.rank(), replica[c.rank()]);
    splitSt.all[c.rank()] = s;
  });
  splitSt.expectAllOk();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(shard[r] && replica[r]) << "rank " << r;
    EXPECT_EQ(shard[r]->size(), g);
    EXPECT_EQ(shard[r]->rank(), r % g);
    EXPECT_EQ(replica[r]->size(), n / g);
    EXPECT_EQ(replica[r]->rank(), r / g);
  }
  for (TypeOp t : kReductions) {
    const int64_t chunk = 130;
    auto data = allRanksData(t.dtype, n, chunk * n, 3);
    std::vector<Bytes> shardSum(n), replicaSum(n), scattered(n), worldSum(n);
    RankStatuses st(n);
    runOn(comms, [&](Communicator &c) {
      const int r = c.rank();
      const size_t bytes = data[r].size();
      shardSum[r].resize(bytes);
      replicaSum[r].resize(bytes);
      worldSum[r].resize(bytes);
      scattered[r].resize(bytes / g);
      Status s = shard[r]->allReduce(data[r].data(), shardSum[r].data(), chunk * n, t.dtype, t.op);
      if (s.isOk())
        s = replica[r]->allReduce(data[r].data(), replicaSum[r].data(), chunk * n, t.dtype, t.op);
      if (s.isOk())
        s = shard[r]->reduceScatter(data[r].data(), scattered[r].data(), chunk * n / g, t.dtype,
                                    t.op);
      if (s.isOk())
        s = c.allReduce(data[r].data(), worldSum[r].data(), chunk * n, t.dtype, t.op);
      st.all[r] = s;
    });
    st.expectAllOk();
    for (int r = 0; r < n; ++r) {
      auto shardIn = pick(data, membersOf(n, r, shardColor));
      auto replicaIn = pick(data, membersOf(n, r, replicaColor));
      EXPECT_EQ(shardSum[r], reference(t.dtype, t.op, shardIn, 0, chunk * n))
          << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " shard, rank " << r;
      EXPECT_EQ(replicaSum[r], reference(t.dtype, t.op, replicaIn, 0, chunk * n))
          << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " replica, rank " << r;
      const int64_t per = chunk * n / g;
      EXPECT_EQ(scattered[r], reference(t.dtype, t.op, shardIn, (r % g) * per, per))
          << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " scatter, rank " << r;
      EXPECT_EQ(worldSum[r], reference(t.dtype, t.op, data, 0, chunk * n))
          << dtypeName(t.dtype) << " " << reduceOpName(t.op) << " world, rank " << r;
    }
  }
}

// The hybrid-shard gradient path: reduce-scatter inside the shard group,
// then all-reduce of the shard across the replica group, then all-gather of
// the parameters inside the shard group; each step's bits follow the
// rank-order reference of its own group.
TEST_P(CommunicatorSplit, HybridShardStepComposes) {
  const int n = world(), g = group();
  const int64_t per = 77, full = per * g;
  auto data = allRanksData(DType::F32, n, full, 9);
  std::vector<Bytes> gathered(n);
  RankStatuses st(n);
  runOn(comms, [&](Communicator &c) {
    const int r = c.rank();
    std::unique_ptr<Communicator> shard, replica;
    Status s = c.split(r / g, r, shard);
    if (s.isOk())
      s = c.split(r % g, r, replica);
    std::vector<float> part(per);
    gathered[r].resize(full * 4);
    if (s.isOk())
      s = shard->reduceScatter(data[r].data(), part.data(), per, DType::F32, ReduceOp::Avg);
    if (s.isOk())
      s = replica->allReduce(part.data(), part.data(), per, DType::F32, ReduceOp::Avg);
    if (s.isOk())
      s = shard->allGather(part.data(), gathered[r].data(), per, DType::F32);
    st.all[r] = s;
  });
  st.expectAllOk();
  // Per replica group member i (= shard index), the shard-average of each
  // shard group; then their average across shard groups, in order.
  std::vector<Bytes> shardAvg;
  for (int first = 0; first < n; first += g) {
    std::vector<int> members;
    for (int i = 0; i < g; ++i)
      members.push_back(first + i);
    shardAvg.push_back(reference(DType::F32, ReduceOp::Avg, pick(data, members), 0, full));
  }
  const Bytes want = reference(DType::F32, ReduceOp::Avg, shardAvg, 0, full);
  for (int r = 0; r < n; ++r)
    EXPECT_EQ(gathered[r], want) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(CommunicatorInProcess, CommunicatorSplit,
                         ::testing::Combine(::testing::Values(GroupKind::InProcess),
                                            ::testing::Values(std::make_pair(4, 2),
                                                              std::make_pair(8, 2),
                                                              std::make_pair(8, 4),
                                                              std::make_pair(4, 1),
                                                              std::make_pair(4, 4))),
                         splitName);
INSTANTIATE_TEST_SUITE_P(CommunicatorTcp, CommunicatorSplit,
                         ::testing::Combine(::testing::Values(GroupKind::Tcp),
                                            ::testing::Values(std::make_pair(4, 2),
                                                              std::make_pair(4, 1),
                                                              std::make_pair(4, 4))),
                         splitName);

/// The tests below at fixed world sizes, per communicator.
class CommunicatorKind : public ::testing::TestWithParam<GroupKind> {
protected:
  Comms makeGroup(int size) const { return commtest::makeGroup(GetParam(), size); }
};

// New ranks follow (key, old rank): a descending key reverses the group,
// equal keys keep the old order, and allGather follows the new ranks.
TEST_P(CommunicatorKind, KeyOrdersTheNewRanks) {
  Comms comms = makeGroup(4);
  Comms reversed(4), tied(4);
  std::vector<Bytes> got(4);
  auto data = allRanksData(DType::I64, 4, 3);
  RankStatuses st(4);
  runOn(comms, [&](Communicator &c) {
    const int r = c.rank();
    Status s = c.split(7, -r, reversed[r]);
    if (s.isOk())
      s = c.split(0, 5, tied[r]);
    got[r].resize(data[0].size() * 4);
    if (s.isOk())
      s = reversed[r]->allGather(data[r].data(), got[r].data(), 3, DType::I64);
    st.all[r] = s;
  });
  st.expectAllOk();
  const Bytes want = concatenated({data[3], data[2], data[1], data[0]});
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(reversed[r]->rank(), 3 - r);
    EXPECT_EQ(tied[r]->rank(), r);
    EXPECT_EQ(got[r], want) << "rank " << r;
  }
}

// A color of its own gives a rank a group of one, where every collective is
// a copy (avg divides by one); groups split again from split groups work.
TEST_P(CommunicatorKind, SingleRankGroupsAndNestedSplits) {
  Comms comms = makeGroup(4);
  auto data = allRanksData(DType::BF16, 4, 50);
  std::vector<Bytes> avg(4), gathered(4);
  RankStatuses st(4);
  std::vector<int> sizes(4), ranks(4);
  runOn(comms, [&](Communicator &c) {
    const int r = c.rank();
    std::unique_ptr<Communicator> half, single;
    Status s = c.split(r / 2, r, half);
    if (s.isOk())
      s = half->split(half->rank(), 0, single);
    avg[r].resize(100);
    gathered[r].resize(100);
    if (s.isOk()) {
      sizes[r] = single->size();
      ranks[r] = single->rank();
      s = single->allReduce(data[r].data(), avg[r].data(), 50, DType::BF16, ReduceOp::Avg);
    }
    if (s.isOk())
      s = single->allGather(data[r].data(), gathered[r].data(), 50, DType::BF16);
    if (s.isOk())
      s = single->barrier();
    if (s.isOk())
      s = half->barrier();
    st.all[r] = s;
  });
  st.expectAllOk();
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(sizes[r], 1);
    EXPECT_EQ(ranks[r], 0);
    EXPECT_EQ(avg[r], data[r]) << "rank " << r;
    EXPECT_EQ(gathered[r], data[r]) << "rank " << r;
  }
}

// split is a collective like the others: a rank calling something else, or
// passing a negative color, fails every rank and hands out no communicator.
TEST_P(CommunicatorKind, MismatchedOrInvalidSplitFailsEveryRank) {
  Comms comms = makeGroup(3);
  Comms out(3);
  RankStatuses other(3), negative(3);
  runOn(comms, [&](Communicator &c) {
    other.all[c.rank()] = c.rank() == 2 ? c.barrier() : c.split(0, 0, out[c.rank()]);
  });
  other.expectAllFailWith("rank 0 called split() but rank 2 called barrier()");
  comms = makeGroup(3);
  runOn(comms, [&](Communicator &c) {
    negative.all[c.rank()] = c.split(c.rank() == 1 ? -1 : 0, 0, out[c.rank()]);
  });
  negative.expectAllFailWith("rank 1 cannot take part: split: color -1 is negative");
  for (auto &o : out)
    EXPECT_EQ(o, nullptr);
}

// abort() on any group of a family wakes ranks waiting in the parent and in
// sibling groups, naming the aborting rank by its world rank; destroying a
// split communicator fails only its own group.
TEST_P(CommunicatorKind, AbortReachesTheWholeFamily) {
  Comms comms = makeGroup(4);
  Comms shard(4);
  RankStatuses split(4), afterDestroy(4), st(4);
  runOn(comms,
        [&](Communicator &c) { split.all[c.rank()] = c.split(c.rank() / 2, 0, shard[c.rank()]); });
  split.expectAllOk();
  shard[3].reset(); // {2, 3} is now failed, the world and {0, 1} are not
  runOn(comms, [&](Communicator &c) {
    Status s = c.rank() < 2 ? shard[c.rank()]->barrier() : Status::ok();
    if (s.isOk())
      s = c.barrier();
    afterDestroy.all[c.rank()] = s;
  });
  afterDestroy.expectAllOk();
  // Rank 1 waits in {0, 1} for rank 0, which waits in the world with rank 3
  // for ranks 1 and 2; rank 2 aborts through its (already failed) shard
  // group, which still reaches them all.
  runOn(comms, [&](Communicator &c) {
    const int r = c.rank();
    if (r == 2) {
      std::this_thread::sleep_for(20ms); // let the others block first
      shard[2]->abort("out of memory");
      st.all[r] = c.barrier();
    } else {
      st.all[r] = r == 1 ? shard[1]->barrier() : c.barrier();
    }
  });
  st.expectAllFailWith("rank 2 aborted the group: out of memory");
}

// The sum really is ((r0 + r1) + r2) + r3: in f32, 1e8 + 1 rounds back to
// 1e8, so this order gives 1 where summing the large values first gives 2.
TEST_P(CommunicatorKind, SumsInRankOrder) {
  Comms comms = makeGroup(4);
  const float values[] = {1e8f, 1.0f, -1e8f, 1.0f};
  std::vector<float> got(4);
  runOn(comms, [&](Communicator &c) {
    Status s = c.allReduce(&values[c.rank()], &got[c.rank()], 1, DType::F32, ReduceOp::Sum);
    EXPECT_TRUE(s.isOk()) << s.message();
  });
  for (float g : got)
    EXPECT_EQ(g, 1.0f);
}

// Destroying one rank's communicator wakes a rank waiting for it.
TEST_P(CommunicatorKind, DestroyedRankWakesTheOthers) {
  Comms comms = makeGroup(2);
  Status waited;
  runGuarded(
      2,
      [&](int i) {
        if (i == 0) {
          waited = comms[0]->barrier();
        } else {
          std::this_thread::sleep_for(20ms); // let rank 0 block first
          comms[1].reset();
        }
      },
      [&] { comms[0]->abort("test watchdog"); });
  EXPECT_FALSE(waited.isOk());
  EXPECT_NE(waited.message().find("rank 1 left the group"), std::string::npos) << waited.message();
}

INSTANTIATE_TEST_SUITE_P(Communicator, CommunicatorKind,
                         ::testing::Values(GroupKind::InProcess, GroupKind::Tcp),
                         [](const auto &info) { return kindName(info.param); });

TEST(CommunicatorTest, GroupSizeMustBePositive) {
  Comms comms;
  Status s = createInProcessGroup(0, comms);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("world size 0"), std::string::npos) << s.message();
}

} // namespace
