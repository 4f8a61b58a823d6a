//===- NcclMappingTest.cpp - the NCCL mapping against the CPU communicator ===//
//
// The calls nccl::mapBatch gives each rank, run by NCCL's semantics on the
// CPU (NcclModel.h's interpreter), must leave every rank's memory exactly
// as the in-process communicator leaves it for the same channel calls. For
// every collective and every dtype (reductions for the reducible ones, sum
// and avg), in place and out of place, broadcast from every root, empty
// calls, a padded unit (numel not a multiple of the group: in-place
// reduce-scatter of the padded gradient, then in-place all-gather of the
// shard), a batch of independent calls (one NCCL group), on the groups the
// executor forms - the whole world and hybrid:G's shard and replica groups
// at N = 4 and 8, G = 2 and 4 - formed on one side by ncclCommSplit of
// nccl::splitForGroups's (color, key) and on the other by the in-process
// split. A negative control shows the comparison catches a wrong type, op
// or count. The mapping's arguments, groups and refusals, call by call,
// are NcclMappingCallsTest.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/comm/NcclMapping.h"
#include "tests/unit/runtime/comm/CommTestData.h"
#include "tests/unit/runtime/comm/NcclModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

using namespace fsdp::rt;
using namespace fsdp::rt::nccl;
using namespace fsdp::rt::nccltest;
using fsdp::rt::commtest::runThreads;

namespace {

/// One test case: the channel calls every rank of a group issues at one
/// plan point, laid out in the rank's arena.
struct Scenario {
  std::string name;
  DType dtype = DType::F32;
  size_t arenaElements = 0; // for a group of `size`: set by make()
  /// Elements of the arena zeroed after filling (a padded unit's tail).
  size_t zeroFrom = SIZE_MAX;
  std::function<std::vector<ChannelCall>(uint8_t *base, int rank, int size)> calls;
};

/// The scenarios for a group of `size` ranks.
std::vector<Scenario> scenarios(int size) {
  std::vector<Scenario> out;
  const auto n = static_cast<size_t>(size);
  for (DType t : commtest::kAllDTypes) {
    const size_t es = dtypeSize(t);
    for (int64_t count : {int64_t{5}, int64_t{0}}) {
      if (count == 0 && t != DType::F32 && t != DType::Bool)
        continue; // empty calls: one float and one byte-moved type
      const auto c = static_cast<size_t>(count);
      for (bool inPlace : {false, true}) {
        const std::string where = inPlace ? "in place" : "out of place";
        out.push_back({cat("allGather ", dtypeName(t), " x", count, " ", where), t,
                       inPlace ? c * n : c + c * n, SIZE_MAX,
                       [=](uint8_t *base, int rank, int) {
                         uint8_t *recv = inPlace ? base : base + c * es;
                         const uint8_t *send = inPlace ? base + rank * c * es : base;
                         return std::vector<ChannelCall>{
                             {CallDesc{CallKind::AllGather, count, t}, send, recv}};
                       }});
        if (!commtest::reducible(t))
          continue;
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max}) {
          if (op == ReduceOp::Avg && !isFloat(t))
            continue;
          out.push_back({cat("reduceScatter ", dtypeName(t), " ", reduceOpName(op), " x", count,
                             " ", where),
                         t, inPlace ? c * n : c * n + c, SIZE_MAX,
                         [=](uint8_t *base, int rank, int) {
                           uint8_t *recv = inPlace ? base + rank * c * es : base + c * n * es;
                           return std::vector<ChannelCall>{
                               {CallDesc{CallKind::ReduceScatter, count, t, op}, base, recv}};
                         }});
          out.push_back({cat("allReduce ", dtypeName(t), " ", reduceOpName(op), " x", count, " ",
                             where),
                         t, inPlace ? c : 2 * c, SIZE_MAX, [=](uint8_t *base, int, int) {
                           uint8_t *recv = inPlace ? base : base + c * es;
                           return std::vector<ChannelCall>{
                               {CallDesc{CallKind::AllReduce, count, t, op}, base, recv}};
                         }});
        }
      }
      for (int root = 0; root < size; ++root)
        out.push_back({cat("broadcast ", dtypeName(t), " x", count, " from ", root), t, c,
                       SIZE_MAX, [=](uint8_t *base, int, int) {
                         return std::vector<ChannelCall>{
                             {CallDesc{CallKind::Broadcast, count, t, ReduceOp::Sum, root}, base,
                              base}};
                       }});
    }
  }
  // A unit of 10 elements (not a multiple of 4 or 8): padded to whole
  // shards, its gradient reduce-scattered in place, then its shard
  // gathered in place - the second reads the first's output, so they are
  // two NCCL calls, not one group.
  for (DType t : {DType::F32, DType::BF16, DType::F64})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const size_t numel = 10, shard = (numel + n - 1) / n, es = dtypeSize(t);
      out.push_back({cat("padded unit of 10 ", dtypeName(t), " ", reduceOpName(op)), t,
                     shard * n, numel, [=](uint8_t *base, int rank, int) {
                       uint8_t *mine = base + rank * shard * es;
                       const auto count = static_cast<int64_t>(shard);
                       return std::vector<ChannelCall>{
                           {CallDesc{CallKind::ReduceScatter, count, t, op}, base, mine},
                           {CallDesc{CallKind::AllGather, count, t}, mine, base}};
                     }});
    }
  // Two units' gradients and a third's parameters at one point: three
  // independent calls, one NCCL group.
  {
    const size_t c = 3, es = sizeof(float);
    out.push_back({"batch of three independent calls", DType::F32, 3 * c * n + 2 * c + c,
                   SIZE_MAX, [=](uint8_t *base, int rank, int) {
                     uint8_t *g1 = base, *g2 = base + c * n * es, *p = base + 2 * c * n * es;
                     uint8_t *s1 = base + 3 * c * n * es, *s2 = s1 + c * es, *s3 = s2 + c * es;
                     (void)rank;
                     return std::vector<ChannelCall>{
                         {CallDesc{CallKind::ReduceScatter, 3, DType::F32, ReduceOp::Avg}, g1,
                          s1},
                         {CallDesc{CallKind::ReduceScatter, 3, DType::F32, ReduceOp::Sum}, g2,
                          s2},
                         {CallDesc{CallKind::AllGather, 3, DType::F32}, s3, p}};
                   }});
  }
  return out;
}

/// A rank's arena for `s`: filled with values that depend on the rank and
/// the case, a padded tail zeroed.
Bytes arenaFor(const Scenario &s, int worldRank, size_t caseIndex) {
  Bytes a(s.arenaElements * dtypeSize(s.dtype) + 1); // never empty
  fillValues(s.dtype, a.data(), s.arenaElements, caseIndex * 131 + worldRank);
  if (s.zeroFrom < s.arenaElements)
    std::memset(a.data() + s.zeroFrom * dtypeSize(s.dtype), 0,
                (s.arenaElements - s.zeroFrom) * dtypeSize(s.dtype));
  return a;
}

struct GroupLayout {
  std::string name;
  int world;
  std::vector<int64_t> ranks;
  int groupSize;
};

std::vector<GroupLayout> layouts() {
  std::vector<GroupLayout> out;
  for (int n : {4, 8}) {
    out.push_back({cat("full_world", n), n, consecutiveRanks(n), n});
    for (int g : {2, 4}) {
      if (g >= n)
        continue;
      out.push_back({cat("hybrid", g, "_shard_world", n), n, consecutiveRanks(n), g});
      out.push_back({cat("hybrid", g, "_replica_world", n), n, stridedRanks(n, g), n / g});
    }
  }
  return out;
}

void PrintTo(const GroupLayout &layout, std::ostream *os) { *os << layout.name; }

class NcclMappingGroups : public ::testing::TestWithParam<GroupLayout> {};

// Every scenario on every group of the layout: the interpreter's memory
// after the mapped NCCL calls equals the in-process communicator's, byte
// for byte, on every rank.
TEST_P(NcclMappingGroups, MappedCallsReproduceTheInProcessCommunicator) {
  const GroupLayout &layout = GetParam();
  const int world = layout.world;

  // The groups: the executor's (color, key), split on both sides.
  std::vector<Split> splits(world);
  for (int r = 0; r < world; ++r) {
    Split fromPlan, mapped;
    Status s = splitForGroups(layout.ranks.data(), layout.ranks.size(), layout.groupSize, r,
                              fromPlan);
    ASSERT_TRUE(s.isOk()) << s.message();
    s = mapSplit(fromPlan.color, fromPlan.key, mapped);
    ASSERT_TRUE(s.isOk()) << s.message();
    splits[r] = mapped;
  }
  ModelComm modelWorld{};
  for (int r = 0; r < world; ++r)
    modelWorld.members.push_back(r);
  std::map<int, std::shared_ptr<ModelComm>> modelOf;
  std::map<int, int> modelRank;
  modelSplit(modelWorld, splits, modelOf, modelRank);

  std::vector<std::unique_ptr<Communicator>> comms, subs(world);
  ASSERT_TRUE(comm::createInProcessGroup(world, comms).isOk());
  std::vector<Status> splitStatus(world);
  std::vector<std::vector<int32_t>> membersSeen(world);
  runThreads(world, [&](int r) {
    splitStatus[r] = comms[r]->split(splits[r].color, splits[r].key, subs[r]);
    if (!splitStatus[r])
      return;
    membersSeen[r].resize(subs[r]->size());
    const int32_t me = r;
    splitStatus[r] = subs[r]->allGather(&me, membersSeen[r].data(), 1, DType::I32);
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(splitStatus[r].isOk()) << "rank " << r << ": " << splitStatus[r].message();
    ASSERT_EQ(subs[r]->size(), layout.groupSize) << "rank " << r;
    EXPECT_EQ(subs[r]->rank(), modelRank[r]) << "rank " << r;
    std::vector<int> seen(membersSeen[r].begin(), membersSeen[r].end());
    EXPECT_EQ(seen, modelOf[r]->members) << "rank " << r;
  }

  const int size = layout.groupSize;
  const std::vector<Scenario> cases = scenarios(size);
  // arenas[case][world rank]: the communicator's and the interpreter's.
  std::vector<std::vector<Bytes>> cpu(cases.size()), model(cases.size());
  for (size_t k = 0; k < cases.size(); ++k)
    for (int r = 0; r < world; ++r) {
      cpu[k].push_back(arenaFor(cases[k], r, k));
      model[k].push_back(cpu[k].back());
    }

  // The communicator: every group at once, one thread per rank.
  std::vector<std::vector<Status>> statuses(world);
  runThreads(world, [&](int r) {
    for (size_t k = 0; k < cases.size(); ++k)
      for (const ChannelCall &call : cases[k].calls(cpu[k][r].data(), subs[r]->rank(), size))
        statuses[r].push_back(runOn(*subs[r], call));
  });
  for (int r = 0; r < world; ++r)
    for (const Status &s : statuses[r])
      ASSERT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();

  // The interpreter: each group's mapped calls.
  std::vector<std::shared_ptr<ModelComm>> groups;
  for (auto &[r, g] : modelOf)
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(g);
  for (size_t k = 0; k < cases.size(); ++k) {
    for (const auto &group : groups) {
      std::vector<std::vector<Call>> perMember;
      for (size_t i = 0; i < group->members.size(); ++i) {
        const int r = group->members[i];
        std::vector<ChannelCall> calls = cases[k].calls(model[k][r].data(), static_cast<int>(i), size);
        std::vector<Call> mapped;
        Status s = mapBatch(calls.data(), calls.size(), static_cast<int>(i), size, mapped);
        ASSERT_TRUE(s.isOk()) << cases[k].name << ": " << s.message();
        perMember.push_back(std::move(mapped));
      }
      std::string undefined = interpret(perMember);
      ASSERT_TRUE(undefined.empty()) << cases[k].name << ": " << undefined;
    }
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(cpu[k][r] == model[k][r])
          << layout.name << ", " << cases[k].name << ": rank " << r
          << "'s memory differs between NCCL's calls and the in-process communicator";
  }
}

INSTANTIATE_TEST_SUITE_P(, NcclMappingGroups, ::testing::ValuesIn(layouts()),
                         [](const auto &info) { return info.param.name; });

// --- Negative control ------------------------------------------------------------

// The comparison can fail: the same reduce-scatter with NCCL's arguments
// bent (bf16 read as fp16, avg as sum, a short count, a shifted recv
// buffer) leaves memory that differs from the communicator's.
TEST(NcclMappingNegativeControl, WrongArgumentsAreCaught) {
  const int n = 4;
  const size_t count = 6, es = 2;
  std::vector<Bytes> cpu(n);
  for (int r = 0; r < n; ++r) {
    cpu[r] = Bytes(count * n * es + count * es + 8); // slack for a shifted recv
    fillValues(DType::BF16, cpu[r].data(), count * n + count, 900 + r);
  }
  const std::vector<Bytes> initial = cpu;
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(comm::createInProcessGroup(n, comms).isOk());
  runThreads(n, [&](int r) {
    ASSERT_TRUE(comms[r]
                    ->reduceScatter(cpu[r].data(), cpu[r].data() + count * n * es, count,
                                    DType::BF16, ReduceOp::Avg)
                    .isOk());
  });
  auto runBent = [&](const std::function<void(Call &)> &bend) {
    std::vector<Bytes> model = initial;
    std::vector<std::vector<Call>> perMember(n);
    for (int r = 0; r < n; ++r) {
      ChannelCall call{CallDesc{CallKind::ReduceScatter, static_cast<int64_t>(count), DType::BF16,
                                ReduceOp::Avg},
                       model[r].data(), model[r].data() + count * n * es};
      Call c;
      EXPECT_TRUE(mapCall(call, r, n, c).isOk());
      bend(c);
      perMember[r].push_back(c);
    }
    EXPECT_EQ(interpret(perMember), "");
    return model == cpu;
  };
  EXPECT_TRUE(runBent([](Call &) {}));
  EXPECT_FALSE(runBent([](Call &c) { c.datatype = DataType::Float16; }));
  EXPECT_FALSE(runBent([](Call &c) { c.op = RedOp::Sum; }));
  EXPECT_FALSE(runBent([](Call &c) { c.count -= 1; }));
  EXPECT_FALSE(runBent([](Call &c) { c.recvbuff = static_cast<uint8_t *>(c.recvbuff) + 2; }));
}

} // namespace
