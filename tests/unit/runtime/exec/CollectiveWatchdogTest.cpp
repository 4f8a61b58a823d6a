//===- CollectiveWatchdogTest.cpp - a timeout on every collective ---------===//
//
// A hand-built two-rank forward plan of three collectives over one unit
// (all-gather of the shard, reduce-scatter of the gathered buffer,
// all-reduce of it), run by in-process ranks on CPU devices. With a
// watchdog on every rank and no stall, the results are bitwise those of a
// run without one, nothing times out even at a short timeout, and each
// rank's flight recorder holds every collective, named as documented
// (kind, unit, bytes, group), with issued <= started <= finished. When
// rank 1 stalls inside a collective (StallingCommunicator, as a stopped
// process would), rank 0's watchdog reports the exact message within the
// timeout plus a little, aborts the group, and every rank's run() returns
// an error; both recorders show where the ranks were. A blocking host
// call that outlives the timeout (a start-up agreement) times out too.
// Group and unit naming have their own cases.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/comm/StallingCommunicator.h"
#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/plan_generated.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <mutex>

namespace fsdp::rt {
namespace {

enum Buf : uint32_t { Shard, Out, Total, Full };

using Clock = std::chrono::steady_clock;

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class CollectiveWatchdogTest : public formattest::FormatTest {
protected:
  CollectiveWatchdogTest() : FormatTest("fsdp-watchdog-", "step.plan") {}

  void SetUp() override {
    FormatTest::SetUp();
    writePlan();
  }

  /// The plan of the file comment for two ranks: shard f32[2] gathered to
  /// f32[4], reduce-scattered (sum) to out f32[2], all-reduced to total.
  void writePlan() {
    flatbuffers::FlatBufferBuilder fbb;
    auto buffer = [&](const char *name, std::vector<int64_t> shape, plan::Region region,
                      uint64_t offset) {
      uint64_t size = 4;
      for (int64_t d : shape)
        size *= d;
      return plan::CreateBuffer(fbb, fbb.CreateString(name), plan::DType::F32,
                                fbb.CreateVector(shape), region, offset, size);
    };
    std::vector<flatbuffers::Offset<plan::Buffer>> buffers{
        buffer("shard", {2}, plan::Region::Persistent, 0),
        buffer("out", {2}, plan::Region::Persistent, 64),
        buffer("total", {4}, plan::Region::Persistent, 128),
        buffer("full", {4}, plan::Region::Arena, 0)};
    auto inst = [&](plan::Kernel k, uint32_t in, uint32_t out, std::vector<int64_t> ints) {
      return plan::CreateInstruction(fbb, k, fbb.CreateVector(std::vector<uint32_t>{in}),
                                     fbb.CreateVector(std::vector<uint32_t>{out}),
                                     fbb.CreateVector(ints), fbb.CreateVector(std::vector<float>{}),
                                     0, fbb.CreateString(plan::EnumNameKernel(k)));
    };
    std::vector<flatbuffers::Offset<plan::Instruction>> instructions{
        inst(plan::Kernel::AllGather, Shard, Full, {2, 0, 1}),
        inst(plan::Kernel::ReduceScatter, Full, Out, {0, 2, 0, 1}),
        inst(plan::Kernel::AllReduce, Full, Total, {0, 2, 0, 1})};
    std::vector<flatbuffers::Offset<plan::Unit>> units{plan::CreateUnit(
        fbb, fbb.CreateString("unit0"), 4, 4, 2, Shard, 2, plan::DType::F32)};
    auto binding = [&](const char *name, uint32_t b) {
      return plan::CreateBinding(fbb, fbb.CreateString(name), b);
    };
    std::vector<flatbuffers::Offset<plan::Binding>> inputs{binding("shard", Shard)};
    std::vector<flatbuffers::Offset<plan::Binding>> outputs{binding("out", Out),
                                                            binding("total", Total)};
    auto root = plan::CreatePlan(
        fbb, kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString("hand-built"),
        fbb.CreateString("forward"), 2, fbb.CreateVector(buffers), fbb.CreateVector(instructions),
        fbb.CreateVector(std::vector<flatbuffers::Offset<plan::Parameter>>{}),
        fbb.CreateVector(units), fbb.CreateVector(inputs), fbb.CreateVector(outputs), 192, 64);
    plan::FinishPlanBuffer(fbb, root);
    ASSERT_TRUE(rt::writePlanFile(path, fbb.GetBufferPointer(), fbb.GetSize()).isOk());
    Status s = loadPlan(path, loaded);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// One rank's outcome: its outputs after each step (raw bytes), the
  /// first failure, and when run() returned it.
  struct RankResult {
    std::vector<std::vector<char>> outputs;
    Status status;
    double failedAfter = -1; // seconds since the ranks started
  };

  /// Runs `steps` steps on both ranks; rank r watched when watched[r]
  /// (timeout `timeout`), rank `stallRank` blocking in its `stallCall`-th
  /// collective call when stallRank >= 0.
  std::vector<RankResult> runRanks(int steps, const std::vector<bool> &watched, double timeout,
                                   int stallRank = -1, int64_t stallCall = 0) {
    std::vector<std::unique_ptr<Communicator>> comms;
    EXPECT_TRUE(comm::createInProcessGroup(2, comms).isOk());
    if (stallRank >= 0)
      comm::stallForTesting(comms, stallRank, stallCall);
    std::vector<RankResult> results(2);
    const Clock::time_point start = Clock::now();
    std::vector<std::future<void>> done;
    for (int r = 0; r < 2; ++r)
      done.push_back(std::async(std::launch::async, [&, r] {
        RankResult &result = results[r];
        std::unique_ptr<CollectiveWatchdog> watchdog;
        if (watched[r])
          watchdog = std::make_unique<CollectiveWatchdog>(
              timeout, r, *recorders[r],
              [&, r](const std::string &message) {
                std::lock_guard<std::mutex> lock(mutex);
                reports.emplace_back(r, message);
              },
              [&, r](const std::string &message) { comms[r]->abort(message); });
        std::unique_ptr<Device> device = createCpuDevice();
        std::unique_ptr<Executor> executor;
        result.status = Executor::create(loaded, *device, comms[r].get(), executor);
        if (result.status && watchdog)
          result.status = executor->watch(*watchdog);
        const float shard[2] = {1.5f + r, -0.25f * (r + 1)};
        for (int step = 0; result.status && step < steps; ++step) {
          TensorRef in = executor->viewOf(Shard);
          std::memcpy(in.data, shard, sizeof(shard));
          result.status = executor->run();
          for (const char *name : {"out", "total"}) {
            HostTensor value;
            if (result.status)
              result.status = executor->getOutput(name, value);
            result.outputs.push_back(value.data);
          }
        }
        if (!result.status) {
          result.failedAfter = since(start);
          if (executor)
            executor->abort(result.status.message());
          else
            comms[r]->abort(result.status.message());
        }
      }));
    for (auto &f : done)
      if (f.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
        ADD_FAILURE() << "ranks still running after 30 s";
        for (auto &c : comms)
          c->abort("test timeout");
      }
    for (auto &f : done)
      f.wait();
    return results;
  }

  LoadedPlan loaded;
  std::vector<std::unique_ptr<FlightRecorder>> recorders = [] {
    std::vector<std::unique_ptr<FlightRecorder>> r;
    r.push_back(std::make_unique<FlightRecorder>());
    r.push_back(std::make_unique<FlightRecorder>());
    return r;
  }();
  std::mutex mutex;
  std::vector<std::pair<int, std::string>> reports;
};

TEST_F(CollectiveWatchdogTest, NamesThePlansCollectives) {
  WatchedCollective gather = describePlanCollective(loaded, 0, 1);
  EXPECT_EQ(gather.kind, "AllGather");
  EXPECT_EQ(gather.unit, "0 'unit0'");
  EXPECT_EQ(gather.bytes, 8u);
  EXPECT_EQ(gather.group, "world");
  WatchedCollective scatter = describePlanCollective(loaded, 1, 0);
  EXPECT_EQ(scatter.kind, "ReduceScatter");
  EXPECT_EQ(scatter.unit, "0 'unit0'"); // by its sizes: gathered f32[4] to a shard f32[2]
  EXPECT_EQ(scatter.bytes, 16u);
  WatchedCollective reduce = describePlanCollective(loaded, 2, 0);
  EXPECT_EQ(reduce.kind, "AllReduce");
  EXPECT_EQ(reduce.unit, "0 'unit0'"); // the unit's padded size
}

TEST(CollectiveWatchdogGroups, NamesGroups) {
  const int64_t world[] = {0, 1, 2, 3}, across[] = {0, 2, 1, 3};
  EXPECT_EQ(describeGroup(world, 4, 4, 2), "world");
  EXPECT_EQ(describeGroup(world, 4, 2, 2), "2 of 2: ranks 2,3");
  EXPECT_EQ(describeGroup(across, 4, 2, 1), "2 of 2: ranks 1,3");
  EXPECT_EQ(describeGroup(across, 4, 2, 2), "1 of 2: ranks 0,2");
  // Every rank, but not in order, is a group of its own.
  EXPECT_EQ(describeGroup(across, 4, 4, 0), "1 of 1: ranks 0,2,1,3");
}

// No stall: the same bits as an unwatched run, no timeout at 0.2 s, and
// every collective in both recorders.
TEST_F(CollectiveWatchdogTest, AWatchedRunIsUnchanged) {
  std::vector<RankResult> plain = runRanks(3, {false, false}, 0);
  std::vector<RankResult> watched = runRanks(3, {true, true}, 0.2);
  EXPECT_TRUE(reports.empty()) << reports.front().second;
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(plain[r].status.isOk()) << plain[r].status.message();
    ASSERT_TRUE(watched[r].status.isOk()) << watched[r].status.message();
    EXPECT_EQ(watched[r].outputs, plain[r].outputs) << "rank " << r;
    std::vector<CollectiveRecord> entries = recorders[r]->entries();
    ASSERT_EQ(entries.size(), 9u) << recorders[r]->format(r);
    const char *kinds[] = {"AllGather", "ReduceScatter", "AllReduce"};
    for (size_t i = 0; i < entries.size(); ++i) {
      const CollectiveRecord &e = entries[i];
      EXPECT_EQ(e.step, static_cast<int64_t>(i / 3 + 1));
      EXPECT_EQ(e.kind, kinds[i % 3]);
      EXPECT_EQ(e.unit, "0 'unit0'");
      EXPECT_EQ(e.group, "world");
      EXPECT_EQ(e.bytes, i % 3 == 0 ? 8u : 16u);
      EXPECT_GE(e.issued, 0);
      EXPECT_GE(e.started, e.issued);
      EXPECT_GE(e.finished, e.started) << recorders[r]->format(r);
    }
  }
  // The values themselves: both ranks gather [1.5, -0.25, 2.5, -0.5], and
  // rank 1's out is chunk 1 summed over the two ranks.
  float out[2];
  std::memcpy(out, watched[1].outputs[0].data(), sizeof(out));
  EXPECT_EQ(out[0], 5.0f);
  EXPECT_EQ(out[1], -1.0f);
}

// Rank 1 stalls in its 5th collective call (step 2's reduce-scatter) and,
// like a stopped process, has no watchdog of its own: rank 0's times out
// with the exact message, aborts, and both ranks return within the
// timeout plus a second.
TEST_F(CollectiveWatchdogTest, AStalledRankTimesOutOnTheOthers) {
  const double timeout = 0.5;
  std::vector<RankResult> results = runRanks(4, {true, false}, timeout, 1, 5);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].first, 0);
  const std::string expected = "step 2: ReduceScatter of unit 0 'unit0' (16 B, group world) did "
                               "not complete in 0.5 s on rank 0";
  EXPECT_EQ(reports[0].second, expected);
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(results[r].status.isOk()) << "rank " << r;
    EXPECT_NE(results[r].status.message().find(expected), std::string::npos)
        << "rank " << r << ": " << results[r].status.message();
    // Step 1 took milliseconds; the stall began right after.
    EXPECT_LT(results[r].failedAfter, timeout + 1.0) << "rank " << r;
  }
  // Rank 0's recorder: step 1 whole, step 2's gather finished, its
  // reduce-scatter started and never finished, its all-reduce not started.
  std::vector<CollectiveRecord> zero = recorders[0]->entries();
  ASSERT_EQ(zero.size(), 6u) << recorders[0]->format(0);
  for (int i = 0; i < 4; ++i)
    EXPECT_GE(zero[i].finished, 0) << recorders[0]->format(0);
  EXPECT_EQ(zero[4].kind, "ReduceScatter");
  EXPECT_GE(zero[4].started, 0);
  EXPECT_LT(zero[4].finished, 0) << recorders[0]->format(0);
  EXPECT_LT(zero[5].started, 0);
  EXPECT_NE(recorders[0]->format(0).find("  #5 step 2: ReduceScatter of unit 0 'unit0' (16 B, "
                                         "group world): issued "),
            std::string::npos);
  // Rank 1 was not watched: its recorder is empty.
  EXPECT_EQ(recorders[1]->recorded(), 0u);
}

// Both ranks watched, as fsdp-run does: whichever sees the stall first
// reports, every rank returns, and each recorder holds both steps.
TEST_F(CollectiveWatchdogTest, BothRanksWatchedStopTogether) {
  std::vector<RankResult> results = runRanks(4, {true, true}, 0.3, 1, 4);
  ASSERT_GE(reports.size(), 1u);
  for (const auto &[rank, message] : reports)
    EXPECT_EQ(message, cat("step 2: AllGather of unit 0 'unit0' (8 B, group world) did not "
                           "complete in 0.3 s on rank ",
                           rank));
  for (int r = 0; r < 2; ++r) {
    EXPECT_FALSE(results[r].status.isOk());
    EXPECT_LT(results[r].failedAfter, 0.3 + 1.0);
    std::vector<CollectiveRecord> entries = recorders[r]->entries();
    ASSERT_EQ(entries.size(), 6u) << recorders[r]->format(r);
    EXPECT_EQ(entries[3].step, 2);
    EXPECT_EQ(entries[3].kind, "AllGather");
    EXPECT_GE(entries[3].started, 0);
  }
}

// A host call (fsdp-run's start-up agreement) that blocks past the
// timeout times out and stays unfinished in the recorder; one that ends
// in time does not, and its entry is finished.
TEST(CollectiveWatchdogHost, AHostCallTimesOut) {
  FlightRecorder recorder;
  std::vector<std::string> reported, aborted;
  std::mutex mutex;
  {
    CollectiveWatchdog dog(
        0.2, 3, recorder,
        [&](const std::string &m) {
          std::lock_guard<std::mutex> lock(mutex);
          reported.push_back(m);
        },
        [&](const std::string &m) {
          std::lock_guard<std::mutex> lock(mutex);
          aborted.push_back(m);
        });
    { auto quick = dog.hostCall("plan agreement", "world", 8); }
    EXPECT_FALSE(dog.fired());
    const Clock::time_point start = Clock::now();
    auto stuck = dog.hostCall("plan agreement", "world", 8);
    while (!dog.fired() && since(start) < 5)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(dog.fired());
    EXPECT_LT(since(start), 0.2 + 0.5);
  }
  const std::string expected = "start-up: plan agreement (8 B, group world) did not complete in "
                               "0.2 s on rank 3";
  EXPECT_EQ(reported, std::vector<std::string>{expected});
  EXPECT_EQ(aborted, std::vector<std::string>{expected});
  std::vector<CollectiveRecord> entries = recorder.entries();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_GE(entries[0].finished, 0);
  EXPECT_GE(entries[1].started, 0);
  EXPECT_LT(entries[1].finished, 0);
}

} // namespace
} // namespace fsdp::rt
