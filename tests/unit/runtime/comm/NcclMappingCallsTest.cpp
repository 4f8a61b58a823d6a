//===- NcclMappingCallsTest.cpp - the NCCL mapping, call by call ---------===//
//
// What nccl::mapCall, mapBatch and splitForGroups hand NCCL, field by
// field: the arguments, types and ops of each call (types NCCL lacks
// travel as bytes); the ncclGroupStart/End around runs of independent
// calls at one plan point, and none around a call that reads an earlier
// one's output; the (color, key) of the executor's hybrid groups. Whatever
// the CPU communicators refuse, the mapping refuses in checkCall's words,
// word for word, and buffers that overlap outside NCCL's in-place layouts
// are refused too. That the mapped calls compute what the in-process
// communicator computes is NcclMappingTest.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/comm/NcclMapping.h"
#include "tests/unit/runtime/comm/CommTestData.h"
#include "tests/unit/runtime/comm/NcclModel.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::nccl;
using namespace fsdp::rt::nccltest;
using fsdp::rt::commtest::runThreads;

namespace {

// --- Group structure ---------------------------------------------------------

ChannelCall gather(const float *send, float *recv, int64_t count) {
  return {CallDesc{CallKind::AllGather, count, DType::F32}, send, recv};
}
ChannelCall scatter(const float *send, float *recv, int64_t count) {
  return {CallDesc{CallKind::ReduceScatter, count, DType::F32, ReduceOp::Sum}, send, recv};
}

std::vector<Function> functions(const std::vector<Call> &calls) {
  std::vector<Function> f;
  for (const Call &c : calls)
    f.push_back(c.function);
  return f;
}

// Independent calls at one point are one group; a call that reads an
// earlier call's output (or overwrites its input) starts the next; lone
// calls and empty calls need no group.
TEST(NcclMappingBatch, GroupsRunsOfIndependentCalls) {
  float a[8] = {}, b[8] = {}, c[8] = {}, d[8] = {};
  std::vector<Call> out;
  const ChannelCall independent[] = {gather(a, b, 2), scatter(c, d, 2)};
  ASSERT_TRUE(mapBatch(independent, 2, 1, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::GroupStart, Function::AllGather,
                                                   Function::ReduceScatter, Function::GroupEnd}));

  // reduce-scatter into d[0..2), then gather from d: dependent.
  const ChannelCall chain[] = {scatter(a, d, 2), gather(d, b, 2), gather(c + 4, c, 1)};
  ASSERT_TRUE(mapBatch(chain, 3, 0, 4, out).isOk());
  EXPECT_EQ(functions(out),
            (std::vector<Function>{Function::ReduceScatter, Function::GroupStart,
                                   Function::AllGather, Function::AllGather, Function::GroupEnd}));

  // Overwriting an earlier call's input is a dependence too.
  const ChannelCall overwrite[] = {gather(a, b, 2), scatter(c, a, 2)};
  ASSERT_TRUE(mapBatch(overwrite, 2, 0, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::AllGather, Function::ReduceScatter}));

  const ChannelCall withEmpty[] = {gather(a, b, 0), gather(c, d, 2)};
  ASSERT_TRUE(mapBatch(withEmpty, 2, 0, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::AllGather}));
  EXPECT_TRUE(dependsOn(chain[1], chain[0], 4));
  EXPECT_FALSE(dependsOn(independent[1], independent[0], 4));
}

// The arguments NCCL gets, field by field.
TEST(NcclMappingCall, ArgumentsTypesAndOps) {
  double buf[16] = {};
  Call c;
  ChannelCall rs{CallDesc{CallKind::ReduceScatter, 4, DType::F64, ReduceOp::Avg}, buf, buf + 8};
  ASSERT_TRUE(mapCall(rs, 2, 4, c).isOk());
  EXPECT_EQ(c.function, Function::ReduceScatter);
  EXPECT_EQ(c.sendbuff, buf);
  EXPECT_EQ(c.recvbuff, buf + 8);
  EXPECT_EQ(c.count, 4u);
  EXPECT_EQ(c.datatype, DataType::Float64);
  EXPECT_EQ(c.op, RedOp::Avg);

  // Types NCCL lacks travel as bytes.
  uint16_t h[16] = {};
  ChannelCall ag{CallDesc{CallKind::AllGather, 3, DType::I16}, h, h + 4};
  ASSERT_TRUE(mapCall(ag, 0, 4, c).isOk());
  EXPECT_EQ(c.datatype, DataType::Uint8);
  EXPECT_EQ(c.count, 6u);

  ChannelCall bc{CallDesc{CallKind::Broadcast, 2, DType::BF16, ReduceOp::Sum, 3}, h, h};
  ASSERT_TRUE(mapCall(bc, 1, 4, c).isOk());
  EXPECT_EQ(c.function, Function::Broadcast);
  EXPECT_EQ(c.datatype, DataType::Bfloat16);
  EXPECT_EQ(c.root, 3);
  EXPECT_EQ(c.sendbuff, c.recvbuff);

  const std::pair<DType, DataType> natives[] = {
      {DType::F32, DataType::Float32}, {DType::F64, DataType::Float64},
      {DType::F16, DataType::Float16}, {DType::BF16, DataType::Bfloat16},
      {DType::I8, DataType::Int8},     {DType::I32, DataType::Int32},
      {DType::I64, DataType::Int64},   {DType::U8, DataType::Uint8},
      {DType::U32, DataType::Uint32},  {DType::U64, DataType::Uint64}};
  for (auto [ours, theirs] : natives) {
    DataType t;
    ASSERT_TRUE(nativeType(ours, t)) << dtypeName(ours);
    EXPECT_EQ(t, theirs) << dtypeName(ours);
    EXPECT_EQ(dataTypeSize(t), dtypeSize(ours)) << dtypeName(ours);
  }
  for (DType lacking : {DType::Bool, DType::I16, DType::U16}) {
    DataType t;
    EXPECT_FALSE(nativeType(lacking, t)) << dtypeName(lacking);
  }
}

// --- Refusals ------------------------------------------------------------------

/// The in-process communicator's error for `call` on a fresh group of
/// `size` (every rank makes it with its own buffers of the same layout).
std::string inProcessError(const std::function<ChannelCall(uint8_t *, int)> &make, int size) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EXPECT_TRUE(comm::createInProcessGroup(size, comms).isOk());
  std::vector<Bytes> arenas(size, Bytes(1024));
  std::vector<Status> st(size);
  runThreads(size, [&](int r) { st[r] = runOn(*comms[r], make(arenas[r].data(), r)); });
  return st[0].isOk() ? "" : st[0].message();
}

// Whatever the CPU communicators refuse, the mapping refuses in the same
// words: reductions of types outside f32/f64/bf16/f16/i64 (NCCL lacks i1,
// i16 and ui16 altogether, and moves them as bytes only for copies), avg of
// integers, a root outside the group, a negative split color.
TEST(NcclMappingRefusals, SameWordsAsTheCommunicators) {
  const int size = 4;
  int refusals = 0;
  for (DType t : commtest::kAllDTypes)
    for (CallKind kind : {CallKind::ReduceScatter, CallKind::AllReduce})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        auto make = [=](uint8_t *base, int) {
          return ChannelCall{CallDesc{kind, 4, t, op}, base, base + 512};
        };
        Bytes arena(1024);
        ChannelCall call = make(arena.data(), 1);
        Call c;
        Status mapped = mapCall(call, 1, size, c);
        Status checked = comm::checkCall(call.desc, size, call.send, call.recv);
        ASSERT_EQ(mapped.isOk(), checked.isOk()) << call.desc.describe();
        if (checked.isOk())
          continue;
        ++refusals;
        EXPECT_EQ(mapped.message(), checked.message());
        EXPECT_NE(inProcessError(make, size).find(checked.message()), std::string::npos)
            << checked.message();
        if (!commtest::reducible(t)) {
          EXPECT_NE(mapped.message().find(cat("cannot reduce element type ", dtypeName(t))),
                    std::string::npos)
              << mapped.message();
        }
      }
  // 8 types x 2 kinds x 2 ops unreducible, and avg of i64 twice.
  EXPECT_EQ(refusals, 8 * 2 * 2 + 2);

  auto badRoot = [](uint8_t *base, int) {
    return ChannelCall{CallDesc{CallKind::Broadcast, 2, DType::F32, ReduceOp::Sum, 4}, base, base};
  };
  Bytes arena(64);
  Call c;
  Status mapped = mapCall(badRoot(arena.data(), 0), 0, size, c);
  ASSERT_FALSE(mapped.isOk());
  EXPECT_EQ(mapped.message(), "broadcast: root 4 is outside the group of 4");
  EXPECT_NE(inProcessError(badRoot, size).find(mapped.message()), std::string::npos);

  Split split;
  Status negative = mapSplit(-1, 0, split);
  ASSERT_FALSE(negative.isOk());
  EXPECT_EQ(negative.message(), "split: color -1 is negative");

  // A refusal anywhere in a batch refuses the batch, naming the call.
  float a[8] = {}, b[8] = {};
  const ChannelCall batch[] = {gather(a, b, 1),
                               {CallDesc{CallKind::AllReduce, 1, DType::I32}, a + 4, b + 4}};
  std::vector<Call> out;
  Status refused = mapBatch(batch, 2, 0, 2, out);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("cannot reduce element type i32"), std::string::npos);
  EXPECT_NE(refused.message().find("(call 2 of 2 issued together)"), std::string::npos);
  EXPECT_TRUE(out.empty());
}

// Buffers that overlap outside NCCL's in-place layouts (undefined on NCCL;
// the CPU copes through scratch memory) are refused; the in-place layouts
// themselves pass.
TEST(NcclMappingRefusals, OverlapOutsideTheInPlaceLayouts) {
  float buf[64] = {};
  Call c;
  // allGather: send at the wrong chunk of recv (rank 1's chunk is buf + 2).
  Status s = mapCall(gather(buf, buf, 2), 1, 4, c);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("send and recv overlap outside NCCL's in-place layout "
                             "(send == recv + rank * sendCount)"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(mapCall(gather(buf + 2, buf, 2), 1, 4, c).isOk());
  // reduceScatter: recv must be rank's chunk exactly.
  EXPECT_FALSE(mapCall(scatter(buf, buf + 1, 2), 0, 4, c).isOk());
  EXPECT_TRUE(mapCall(scatter(buf, buf + 6, 2), 3, 4, c).isOk());
  // allReduce: equal or disjoint.
  ChannelCall shifted{CallDesc{CallKind::AllReduce, 4, DType::F32}, buf, buf + 2};
  EXPECT_FALSE(mapCall(shifted, 0, 2, c).isOk());
  ChannelCall same{CallDesc{CallKind::AllReduce, 4, DType::F32}, buf, buf};
  EXPECT_TRUE(mapCall(same, 0, 2, c).isOk());
}

// The executor's groups as ncclCommSplit arguments: hybrid:2 at 8 ranks.
TEST(NcclMappingSplit, HybridGroupsColorsAndKeys) {
  const std::vector<int64_t> shard = consecutiveRanks(8), replica = stridedRanks(8, 2);
  for (int r = 0; r < 8; ++r) {
    Split s;
    ASSERT_TRUE(splitForGroups(shard.data(), shard.size(), 2, r, s).isOk());
    EXPECT_EQ(s.color, r / 2);
    EXPECT_EQ(s.key, r % 2);
    ASSERT_TRUE(splitForGroups(replica.data(), replica.size(), 4, r, s).isOk());
    EXPECT_EQ(s.color, r % 2);
    EXPECT_EQ(s.key, r / 2);
  }
  Split s;
  EXPECT_FALSE(splitForGroups(shard.data(), shard.size(), 3, 0, s).isOk());
  EXPECT_FALSE(splitForGroups(shard.data(), 4, 2, 6, s).isOk());
}

} // namespace
