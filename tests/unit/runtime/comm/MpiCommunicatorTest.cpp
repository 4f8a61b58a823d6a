//===- MpiCommunicatorTest.cpp - collectives of MPI processes -------------===//
//
// The MPI communicator against the same contract as the in-process one,
// run as one process per rank under mpirun (ctest runs it at 2 and 4 ranks):
// allGather, reduceScatter, allReduce (sum and avg; f32, f64, bf16, i64) and
// broadcast compared bit for bit with the rank-order reference, which each
// rank computes locally by regenerating every rank's input from its seed;
// in-place layouts; messages sent as derived datatypes (the path of
// messages over 2^31 bytes, forced here with a small limit); split into
// contiguous and strided groups and the hybrid-shard step across both; and
// the failure contract: differing start-up values and mismatched or invalid
// calls are the same error on every rank, never a hang, and a failed
// communicator stays failed while the world goes on. Tests that leave a
// communicator failed use a fresh copy of the world (a split with one
// color). Every rank runs every test in the same order, as the collectives
// require; only rank 0 prints gtest's report, the others print their
// failures prefixed with their rank.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/comm/CommTestData.h"
#include "runtime/comm/MpiCommunicator.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

using namespace fsdp::rt;
using namespace fsdp::rt::commtest;

namespace {

/// The world of this process, alive for the whole run (MPI is finalized
/// when it goes).
Communicator *gWorld = nullptr;

Communicator &world() { return *gWorld; }
int rank() { return gWorld->rank(); }
int size() { return gWorld->size(); }

#define EXPECT_OK(expr)                                                        \
  do {                                                                         \
    Status fsdpStatus_ = (expr);                                               \
    EXPECT_TRUE(fsdpStatus_.isOk()) << #expr << ": " << fsdpStatus_.message(); \
  } while (false)

void expectFailsWith(const Status &s, const std::string &needle) {
  EXPECT_FALSE(s.isOk()) << "rank " << rank() << " succeeded";
  EXPECT_NE(s.message().find(needle), std::string::npos) << "rank " << rank() << ": "
                                                         << s.message();
}

/// A communicator over the same ranks as the world, for a test that leaves
/// it failed.
std::unique_ptr<Communicator> freshCopy() {
  std::unique_ptr<Communicator> copy;
  EXPECT_OK(world().split(0, rank(), copy));
  return copy;
}

/// The inputs of `members` (world ranks, in their new-rank order).
std::vector<Bytes> pick(const std::vector<Bytes> &data, const std::vector<int> &members) {
  std::vector<Bytes> out;
  for (int m : members)
    out.push_back(data[m]);
  return out;
}

std::vector<int> ranksWhere(const std::function<bool(int)> &in) {
  std::vector<int> members;
  for (int r = 0; r < size(); ++r)
    if (in(r))
      members.push_back(r);
  return members;
}

TEST(MpiCommunicator, WorldIsTheLaunchedJob) {
  EXPECT_TRUE(comm::launchedUnderMpi());
  const char *launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launched) {
    EXPECT_EQ(size(), std::atoi(launched));
  }
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), size());
}

// allGather concatenates every rank's send in rank order, for any dtype.
TEST(MpiCommunicator, AllGatherEveryType) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I64, DType::U8}) {
    auto data = allRanksData(dtype, size(), 7);
    Bytes got(data[0].size() * size());
    EXPECT_OK(world().allGather(data[rank()].data(), got.data(), 7, dtype));
    EXPECT_EQ(got, concatenated(data)) << dtypeName(dtype);
  }
}

// reduceScatter gives rank r the rank-order reduction of chunk r, bit for bit.
TEST(MpiCommunicator, ReduceScatterMatchesRankOrderReference) {
  for (TypeOp t : kReductions) {
    const int64_t chunk = 300;
    auto data = allRanksData(t.dtype, size(), chunk * size());
    Bytes got(chunk * dtypeSize(t.dtype));
    EXPECT_OK(world().reduceScatter(data[rank()].data(), got.data(), chunk, t.dtype, t.op));
    EXPECT_EQ(got, reference(t.dtype, t.op, data, rank() * chunk, chunk))
        << dtypeName(t.dtype) << " " << reduceOpName(t.op);
  }
}

// allReduce gives every rank the rank-order reduction, bit for bit, also for
// counts the group size does not divide (padded chunks) and smaller than it.
TEST(MpiCommunicator, AllReduceMatchesRankOrderReference) {
  for (int64_t count : {int64_t{601}, int64_t{256} * size(), int64_t{1}, int64_t{size() + 1}}) {
    for (TypeOp t : kReductions) {
      auto data = allRanksData(t.dtype, size(), count, static_cast<uint64_t>(count));
      Bytes got(data[0].size());
      EXPECT_OK(world().allReduce(data[rank()].data(), got.data(), count, t.dtype, t.op));
      EXPECT_EQ(got, reference(t.dtype, t.op, data, 0, count))
          << count << " x " << dtypeName(t.dtype) << " " << reduceOpName(t.op);
    }
  }
}

// The sum really is ((r0 + r1) + r2) + r3: in f32, 1e8 + 1 rounds back to
// 1e8, so this order gives 1 (or 2 at world size 2: 1e8 + 1) where other
// orders differ.
TEST(MpiCommunicator, SumsInRankOrder) {
  const float values[] = {1e8f, 1.0f, -1e8f, 1.0f};
  float got = 0;
  EXPECT_OK(world().allReduce(&values[rank() % 4], &got, 1, DType::F32, ReduceOp::Sum));
  float want = values[0];
  for (int r = 1; r < size(); ++r)
    want += values[r % 4];
  EXPECT_EQ(got, want);
}

// broadcast copies the root's buffer to every rank, from every root.
TEST(MpiCommunicator, BroadcastFromEveryRoot) {
  for (int root = 0; root < size(); ++root) {
    Bytes buf = rankData(DType::BF16, rank(), 33, root);
    EXPECT_OK(world().broadcast(buf.data(), 33, DType::BF16, root));
    EXPECT_EQ(buf, rankData(DType::BF16, root, 33, root)) << "root " << root;
  }
}

// NCCL's in-place layouts give the out-of-place results.
TEST(MpiCommunicator, InPlaceLayouts) {
  const int64_t count = 40;
  const int n = size(), r = rank();
  const size_t chunkBytes = count * sizeof(float);
  auto data = allRanksData(DType::F32, n, count * n);
  Bytes reduced = data[r];
  EXPECT_OK(world().allReduce(reduced.data(), reduced.data(), count * n, DType::F32,
                              ReduceOp::Sum));
  EXPECT_EQ(reduced, reference(DType::F32, ReduceOp::Sum, data, 0, count * n));
  Bytes scattered = data[r];
  uint8_t *mine = scattered.data() + r * chunkBytes;
  EXPECT_OK(world().reduceScatter(scattered.data(), mine, count, DType::F32, ReduceOp::Avg));
  EXPECT_EQ(Bytes(mine, mine + chunkBytes),
            reference(DType::F32, ReduceOp::Avg, data, r * count, count));
  Bytes gathered(n * chunkBytes, 0), want;
  std::memcpy(gathered.data() + r * chunkBytes, data[r].data(), chunkBytes);
  EXPECT_OK(world().allGather(gathered.data() + r * chunkBytes, gathered.data(), count,
                              DType::F32));
  for (int s = 0; s < n; ++s)
    want.insert(want.end(), data[s].begin(), data[s].begin() + chunkBytes);
  EXPECT_EQ(gathered, want);
}

// Messages over the byte limit travel as one derived datatype of exactly
// their size (how messages over 2^31 bytes go); results are unchanged.
TEST(MpiCommunicator, DerivedTypeMessagesGiveTheSameBits) {
  for (size_t limit : {size_t{64}, size_t{100}}) {
    const size_t previous = comm::setMpiByteMessageLimitForTesting(limit);
    const int64_t count = 250 * size() + 3;
    auto data = allRanksData(DType::F32, size(), count, limit);
    Bytes sum(data[0].size()), gathered(data[0].size() * size());
    EXPECT_OK(world().allReduce(data[rank()].data(), sum.data(), count, DType::F32,
                                ReduceOp::Sum));
    EXPECT_EQ(sum, reference(DType::F32, ReduceOp::Sum, data, 0, count)) << "limit " << limit;
    EXPECT_OK(world().allGather(data[rank()].data(), gathered.data(), count, DType::F32));
    EXPECT_EQ(gathered, concatenated(data)) << "limit " << limit;
    Bytes scattered(250 * 4);
    EXPECT_OK(world().reduceScatter(data[rank()].data(), scattered.data(), 250, DType::F32,
                                    ReduceOp::Avg));
    EXPECT_EQ(scattered, reference(DType::F32, ReduceOp::Avg, data, rank() * 250, 250));
    Bytes buf = data[rank()];
    EXPECT_OK(world().broadcast(buf.data(), count, DType::F32, size() - 1));
    EXPECT_EQ(buf, data[size() - 1]);
    comm::setMpiByteMessageLimitForTesting(previous);
  }
}

// Zero-element collectives with null buffers and barriers succeed.
TEST(MpiCommunicator, BarrierAndEmptyCollectives) {
  EXPECT_OK(world().barrier());
  EXPECT_OK(world().allReduce(nullptr, nullptr, 0, DType::F32, ReduceOp::Sum));
  EXPECT_OK(world().reduceScatter(nullptr, nullptr, 0, DType::BF16, ReduceOp::Avg));
  EXPECT_OK(world().allGather(nullptr, nullptr, 0, DType::BF16));
  EXPECT_OK(world().broadcast(nullptr, 0, DType::I64, 0));
  EXPECT_OK(world().barrier());
}

// Contiguous shard groups {0, 1}, {2, 3} and strided replica groups {0, 2},
// {1, 3} (at 2 ranks: the world and two singles) give rank-order results
// inside each group, and the hybrid step composes them.
TEST(MpiCommunicator, SplitIntoContiguousAndStridedGroups) {
  if (size() % 2)
    GTEST_SKIP() << "needs an even number of ranks";
  const int g = 2, r = rank();
  std::unique_ptr<Communicator> shard, replica;
  EXPECT_OK(world().split(r / g, r, shard));
  EXPECT_OK(world().split(r % g, r, replica));
  ASSERT_TRUE(shard && replica); // every rank: the split either worked everywhere or nowhere
  EXPECT_EQ(shard->size(), g);
  EXPECT_EQ(shard->rank(), r % g);
  EXPECT_EQ(replica->size(), size() / g);
  EXPECT_EQ(replica->rank(), r / g);
  auto shardMembers = ranksWhere([&](int s) { return s / g == r / g; });
  auto replicaMembers = ranksWhere([&](int s) { return s % g == r % g; });
  for (TypeOp t : kReductions) {
    const int64_t count = 130 * g;
    auto data = allRanksData(t.dtype, size(), count, 3);
    Bytes shardSum(data[0].size()), replicaSum(data[0].size()), scattered(data[0].size() / g);
    EXPECT_OK(shard->allReduce(data[r].data(), shardSum.data(), count, t.dtype, t.op));
    EXPECT_OK(replica->allReduce(data[r].data(), replicaSum.data(), count, t.dtype, t.op));
    EXPECT_OK(shard->reduceScatter(data[r].data(), scattered.data(), count / g, t.dtype, t.op));
    const std::string what = cat(dtypeName(t.dtype), " ", reduceOpName(t.op));
    EXPECT_EQ(shardSum, reference(t.dtype, t.op, pick(data, shardMembers), 0, count)) << what;
    EXPECT_EQ(replicaSum, reference(t.dtype, t.op, pick(data, replicaMembers), 0, count)) << what;
    EXPECT_EQ(scattered, reference(t.dtype, t.op, pick(data, shardMembers), (r % g) * count / g,
                                   count / g))
        << what;
  }
  // The hybrid-shard step: reduce-scatter in the shard group, all-reduce
  // across replicas, all-gather in the shard group.
  const int64_t per = 77;
  auto grads = allRanksData(DType::F32, size(), per * g, 9);
  std::vector<float> part(per);
  Bytes params(per * g * 4);
  EXPECT_OK(shard->reduceScatter(grads[r].data(), part.data(), per, DType::F32, ReduceOp::Avg));
  EXPECT_OK(replica->allReduce(part.data(), part.data(), per, DType::F32, ReduceOp::Avg));
  EXPECT_OK(shard->allGather(part.data(), params.data(), per, DType::F32));
  std::vector<Bytes> shardAvg;
  for (int first = 0; first < size(); first += g)
    shardAvg.push_back(reference(DType::F32, ReduceOp::Avg,
                                 pick(grads, ranksWhere([&](int s) { return s / g == first / g; })),
                                 0, per * g));
  EXPECT_EQ(params, reference(DType::F32, ReduceOp::Avg, shardAvg, 0, per * g));
  EXPECT_OK(world().barrier()); // the parent goes on
}

// New ranks follow (key, old rank); a color of its own gives a group of one.
TEST(MpiCommunicator, SplitByKeyAndToSingleRanks) {
  std::unique_ptr<Communicator> reversed, single;
  EXPECT_OK(world().split(3, -rank(), reversed));
  EXPECT_OK(world().split(rank(), 0, single));
  ASSERT_TRUE(reversed && single);
  EXPECT_EQ(reversed->rank(), size() - 1 - rank());
  auto data = allRanksData(DType::I64, size(), 3);
  Bytes got(data[0].size() * size());
  EXPECT_OK(reversed->allGather(data[rank()].data(), got.data(), 3, DType::I64));
  std::vector<Bytes> backwards(data.rbegin(), data.rend());
  EXPECT_EQ(got, concatenated(backwards));
  EXPECT_EQ(single->size(), 1);
  EXPECT_EQ(single->rank(), 0);
  auto bf16 = rankData(DType::BF16, rank(), 50);
  Bytes avg(bf16.size());
  EXPECT_OK(single->allReduce(bf16.data(), avg.data(), 50, DType::BF16, ReduceOp::Avg));
  EXPECT_EQ(avg, bf16);
  EXPECT_OK(single->barrier());
}

// Equal start-up values agree; a differing one is the same error on every
// rank, and the group stays usable.
TEST(MpiCommunicator, CheckSameOnAllRanks) {
  if (size() < 2)
    GTEST_SKIP() << "needs a second rank to disagree with";
  const int odd = size() - 1;
  EXPECT_OK(world().checkSameOnAllRanks(0xabcdef, "plan hash"));
  Status differ = world().checkSameOnAllRanks(rank() == odd ? 0x1234 : 0xabcdef, "plan hash");
  expectFailsWith(differ, "plan hash differs across ranks: rank 0 has 0x0000000000abcdef, rank " +
                              std::to_string(odd) + " has 0x0000000000001234");
  EXPECT_OK(world().barrier());
}

// A rank passing a different count is an error on every rank, without a
// hang, and that communicator stays failed; the world is untouched.
TEST(MpiCommunicator, MismatchedCountFailsEveryRankAndSticks) {
  if (size() < 2)
    GTEST_SKIP() << "needs a second rank to disagree with";
  auto group = freshCopy();
  ASSERT_TRUE(group);
  std::vector<float> in(5, 1.0f), out(5);
  const int64_t count = rank() == 1 ? 5 : 4;
  expectFailsWith(group->allReduce(in.data(), out.data(), count, DType::F32, ReduceOp::Sum),
                  "ranks disagree: rank 0 called allReduce(4 x f32, sum) but rank 1 called "
                  "allReduce(5 x f32, sum)");
  expectFailsWith(group->barrier(), "barrier() on rank " + std::to_string(rank()) +
                                        ": ranks disagree");
  expectFailsWith(group->allGather(in.data(), out.data(), 1, DType::F32), "ranks disagree");
  EXPECT_OK(world().barrier());
}

// A rank calling a different collective, or split while the others call
// barrier, fails every rank.
TEST(MpiCommunicator, DifferentCollectivesFailEveryRank) {
  if (size() < 2)
    GTEST_SKIP() << "needs a second rank to disagree with";
  auto group = freshCopy();
  ASSERT_TRUE(group);
  const bool last = rank() == size() - 1;
  std::vector<double> in(2, 1.0), out(2 * size());
  expectFailsWith(last ? group->allGather(in.data(), out.data(), 2, DType::F64)
                       : group->allReduce(in.data(), out.data(), 2, DType::F64, ReduceOp::Sum),
                  "called allGather(2 x f64)");
  group = freshCopy();
  std::unique_ptr<Communicator> sub;
  expectFailsWith(last ? group->barrier() : group->split(0, 0, sub),
                  cat("rank 0 called split() but rank ", size() - 1, " called barrier()"));
  EXPECT_EQ(sub, nullptr);
}

// An argument only one rank gets wrong reaches every rank with its reason.
TEST(MpiCommunicator, LocalErrorReachesEveryRank) {
  if (size() < 2)
    GTEST_SKIP() << "needs a second rank to disagree with";
  auto group = freshCopy();
  ASSERT_TRUE(group);
  const int bad = size() - 1;
  int64_t v = 0;
  expectFailsWith(group->broadcast(&v, 1, DType::I64, rank() == bad ? size() + 3 : 0),
                  cat("rank ", bad, " cannot take part: broadcast: root ", size() + 3,
                      " is outside the group"));
  group = freshCopy();
  std::unique_ptr<Communicator> sub;
  expectFailsWith(group->split(rank() == bad ? -2 : 0, 0, sub),
                  cat("rank ", bad, " cannot take part: split: color -2 is negative"));
}

// Types and ops a reduction does not define are errors on every rank.
TEST(MpiCommunicator, UnsupportedReductionsFailEveryRank) {
  auto group = freshCopy();
  ASSERT_TRUE(group);
  uint8_t b = 1, bo = 0;
  expectFailsWith(group->allReduce(&b, &bo, 1, DType::U8, ReduceOp::Sum),
                  "cannot reduce element type ui8");
  group = freshCopy();
  std::vector<int64_t> in(size(), 1), out(1);
  expectFailsWith(group->reduceScatter(in.data(), out.data(), 1, DType::I64, ReduceOp::Avg),
                  "avg is defined for floating types, not i64");
}

// Run only by its own ctest entry: abort() is MPI_Abort, which ends every
// process; ctest checks the reason reached stderr.
TEST(MpiAbort, DISABLED_EndsTheJob) {
  if (rank() == 1)
    world().abort("cannot read shard 7");
  Status s = world().barrier();
  ADD_FAILURE() << "still running after the abort: " << s.message();
}

/// On ranks other than 0: only failures, each prefixed with the rank.
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult &result) override {
    if (result.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                   result.file_name() ? result.file_name() : "?", result.line_number(),
                   result.message());
  }
  void OnTestEnd(const ::testing::TestInfo &info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(),
                   info.name());
  }

private:
  int rank_;
};

} // namespace

int main(int argc, char **argv) {
  std::unique_ptr<Communicator> worldComm;
  Status s = comm::createMpiWorld(worldComm);
  if (!s.isOk()) {
    std::fprintf(stderr, "cannot start MPI: %s\n", s.message().c_str());
    return 1;
  }
  gWorld = worldComm.get();
  ::testing::InitGoogleTest(&argc, argv);
  if (worldComm->rank() != 0) {
    auto &listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(worldComm->rank()));
  }
  const int rc = RUN_ALL_TESTS();
  gWorld = nullptr;
  worldComm.reset(); // the last MPI communicator: MPI_Finalize
  return rc;
}
