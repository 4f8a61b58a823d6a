//===- AccumulationCostTest.cpp - what each accumulation choice costs -----===//
//
// compiler/Analysis/AccumulationCost.h on units described by hand: `each`
// holds a shard and reduces K times, `last` holds the padded flat buffer and
// reduces once (reduce-scatter in the shard group, plus hybrid's replica
// all-reduce); under --shard=none both hold the whole buffer and reduce by
// all-reduce; a bf16 reduce moves half the bytes; the choice is copied.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/AccumulationCost.h"

#include <gtest/gtest.h>

using namespace fsdp;

namespace {

MemoryReport reportOf(const std::string &strategy, uint32_t world, uint32_t group) {
  MemoryReport r;
  r.strategy = strategy;
  r.worldSize = world;
  r.reduceDtype = "f32";
  UnitMemory u;
  u.name = "layers.0";
  u.paddedNumel = 1 << 20;
  u.shardNumel = u.paddedNumel / group;
  u.groupSize = group;
  u.dtype = "f32";
  r.units.push_back(u);
  return r;
}

double addSeconds(uint64_t numel, const DeviceProfile &d) {
  return computeKernelCost(0, 3 * numel * 4, false, d).seconds;
}

TEST(AccumulationCost, FullShardingEachHoldsAShardLastReducesOnce) {
  const DeviceProfile &d = deviceProfile(DeviceKind::H100);
  MemoryReport r = reportOf("full", 4, 4);
  std::vector<UnitAccumulation> costs = accumulationCosts(r, 4, {{"layers.0", "last"}}, d);
  ASSERT_EQ(costs.size(), 1u);
  const UnitAccumulation &a = costs[0];
  EXPECT_EQ(a.name, "layers.0");
  EXPECT_EQ(a.chosen, "last");
  EXPECT_EQ(a.eachBytes, (1u << 20)); // a quarter of 4 MiB
  EXPECT_EQ(a.lastBytes, 4u << 20);
  double reduce = collectiveSeconds(4u << 20, 4, false, d);
  EXPECT_DOUBLE_EQ(a.eachSeconds, 4 * reduce + 3 * addSeconds(1 << 18, d));
  EXPECT_DOUBLE_EQ(a.lastSeconds, reduce + 3 * addSeconds(1 << 20, d));
  EXPECT_LT(a.lastSeconds, a.eachSeconds);
}

TEST(AccumulationCost, HybridAddsTheReplicaAllReduce) {
  const DeviceProfile &d = deviceProfile(DeviceKind::A100);
  MemoryReport r = reportOf("hybrid:2", 4, 2);
  UnitAccumulation a = accumulationCosts(r, 2, {}, d)[0];
  EXPECT_EQ(a.chosen, "");
  double reduce = collectiveSeconds(4u << 20, 2, false, d) +
                  collectiveSeconds(2u << 20, 2, true, d);
  EXPECT_DOUBLE_EQ(a.lastSeconds, reduce + addSeconds(1 << 20, d));
  EXPECT_DOUBLE_EQ(a.eachSeconds, 2 * reduce + addSeconds(1 << 19, d));
}

TEST(AccumulationCost, NoneAllReducesAndSavesNoMemory) {
  const DeviceProfile &d = deviceProfile(DeviceKind::Cpu);
  MemoryReport r = reportOf("none", 2, 1);
  r.reduceDtype = "bf16";
  UnitAccumulation a = accumulationCosts(r, 3, {}, d)[0];
  EXPECT_EQ(a.eachBytes, a.lastBytes);
  double reduce = collectiveSeconds(2u << 20, 2, true, d); // bf16: 2 bytes an element
  EXPECT_DOUBLE_EQ(a.lastSeconds, reduce + 2 * addSeconds(1 << 20, d));
  EXPECT_DOUBLE_EQ(a.eachSeconds, 3 * reduce + 2 * addSeconds(1 << 20, d));
}

} // namespace
