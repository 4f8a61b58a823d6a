//===- ExecutorShardedTest.cpp - the executor runs sharded plans ----------===//
//
// ExecutorShardedFixture.h's hand-built FSDP step, run by N in-process
// ranks (threads, each with its own CPU device and executor) and checked
// on every rank against the same step computed in double: the shards after
// loading and after each step (padding stays zero), the loss, ModelState's
// getParameter and saveWeights (the full values, written by rank 0 only).
// World sizes 2 and 3 (padding, a parameter split across shards), and 4 as
// two groups of 2. A wrong world size is refused, and a failing rank aborts
// the others instead of leaving them in a collective.
//
// The same step with its collectives on the communication stream (as
// compiler/Transforms/ScheduleCollectives.cpp emits them: each collective
// waits for the compute instruction before it, the first reader waits for
// the collective) runs them on each executor's communication worker and
// gives the same values; collectives issued together over one group are
// one channel group; an error on that stream fails every rank's run()
// instead of hanging; the plan check refuses events that deadlock or are
// signalled twice. fsdp-run's ranks on the same plan are
// FsdpRunRanksTest.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/device/Channel.h"
#include "runtime/exec/Executor.h"

#include "tests/unit/runtime/exec/ExecutorShardedFixture.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace fsdp::rt {
namespace {

using namespace shardedtest;


TEST_F(ExecutorShardedTest, TwoRanksTrainTheirShards) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  trainAndCheck(2);
}

// 7 elements over 3 ranks: shards of 3, two padding elements on rank 2,
// and b straddles ranks 1 and 2.
TEST_F(ExecutorShardedTest, ThreeRanksWithPadding) {
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(3);
}

// Hybrid sharding: shards within {0, 1} and {2, 3}, gradients all-reduced
// across {0, 2} and {1, 3}; both layouts need sub-communicators.
TEST_F(ExecutorShardedTest, FourRanksInTwoGroupsSplitTheWorld) {
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

TEST_F(ExecutorShardedTest, WorldSizeMustMatchTheCommunicator) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::unique_ptr<Device> device = createCpuDevice();
  std::unique_ptr<Executor> executor;
  Status s = Executor::create(loaded, *device, nullptr, executor);
  EXPECT_NE(s.message().find("compiled for world size 2: it needs a communicator"),
            std::string::npos)
      << s.message();
  std::vector<std::unique_ptr<Communicator>> three;
  ASSERT_TRUE(comm::createInProcessGroup(3, three).isOk());
  s = Executor::create(loaded, *device, three[0].get(), executor);
  EXPECT_NE(s.message().find("compiled for world size 2, but the group has 3 ranks"),
            std::string::npos)
      << s.message();
}

// A rank whose step fails aborts the group: the other rank, waiting in a
// collective, gets an error instead of hanging.
TEST_F(ExecutorShardedTest, AFailingRankAbortsTheOthers) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::vector<Status> results(2);
  runRanks([&](int r, Executor &ex) {
    ASSERT_TRUE(ModelState(ex).loadWeights().isOk());
    if (r == 1) {
      ex.abort("rank 1 could not read its batch");
      results[r] = Status::error("gave up");
      return;
    }
    results[r] = ex.run();
  });
  EXPECT_NE(results[0].message().find("rank 1 could not read its batch"), std::string::npos)
      << results[0].message();
}

// The communication worker: the same values with every collective on
// stream 1, at world sizes 2 and 3 and under hybrid sharding.
TEST_F(ExecutorShardedTest, CollectivesOnTheCommunicationStream) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  trainAndCheck(3);
}

TEST_F(ExecutorShardedTest, CommunicationStreamWithPaddingAndGroups) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(2);
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

// --- Collectives at one plan point are one channel group ------------------

/// The CPU device, with every channel it makes logging what the executor
/// asks of it: "createChannel", "split", "begin", "end" and the
/// collectives' names.
class RecordingChannel final : public Channel {
public:
  RecordingChannel(std::unique_ptr<Channel> inner, std::vector<std::string> &log)
      : inner_(std::move(inner)), log_(log) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  using Channel::allGather;
  using Channel::allReduce;
  using Channel::broadcast;
  using Channel::reduceScatter;
  Status allGather(Stream &s, const void *send, void *recv, int64_t n, DType t) override {
    log_.push_back("allGather");
    return inner_->allGather(s, send, recv, n, t);
  }
  Status reduceScatter(Stream &s, const void *send, void *recv, int64_t n, DType t,
                       ReduceOp op) override {
    log_.push_back("reduceScatter");
    return inner_->reduceScatter(s, send, recv, n, t, op);
  }
  Status allReduce(Stream &s, const void *send, void *recv, int64_t n, DType t,
                   ReduceOp op) override {
    log_.push_back("allReduce");
    return inner_->allReduce(s, send, recv, n, t, op);
  }
  Status broadcast(Stream &s, void *buf, int64_t n, DType t, int root) override {
    log_.push_back("broadcast");
    return inner_->broadcast(s, buf, n, t, root);
  }
  bool groupsCalls() const override { return true; } // as NCCL's
  Status beginGroup() override {
    log_.push_back("begin");
    return inner_->beginGroup();
  }
  Status endGroup() override {
    log_.push_back("end");
    return inner_->endGroup();
  }
  Status split(int color, int key, std::unique_ptr<Channel> &out) override {
    log_.push_back("split");
    std::unique_ptr<Channel> inner;
    FSDP_RETURN_IF_ERROR(inner_->split(color, key, inner));
    out = std::make_unique<RecordingChannel>(std::move(inner), log_);
    return Status::ok();
  }
  void abort(const std::string &reason) override { inner_->abort(reason); }

private:
  std::unique_ptr<Channel> inner_;
  std::vector<std::string> &log_;
};

class RecordingDevice final : public Device {
public:
  explicit RecordingDevice(std::vector<std::string> &log) : cpu_(createCpuDevice()), log_(log) {}
  const char *name() const override { return cpu_->name(); }
  Status allocate(size_t bytes, DeviceMemory &out) override { return cpu_->allocate(bytes, out); }
  void release(DeviceMemory &m) override { cpu_->release(m); }
  Status copyToDevice(void *d, const void *s, size_t n) override { return cpu_->copyToDevice(d, s, n); }
  Status copyToHost(void *d, const void *s, size_t n) override { return cpu_->copyToHost(d, s, n); }
  Status createStream(std::unique_ptr<Stream> &out) override { return cpu_->createStream(out); }
  Status createEvent(EventFlags f, std::unique_ptr<Event> &out) override {
    return cpu_->createEvent(f, out);
  }
  Status recordEvent(Stream &s, Event &e) override { return cpu_->recordEvent(s, e); }
  Status waitEvent(Stream &s, Event &e) override { return cpu_->waitEvent(s, e); }
  Status copyAsync(Stream &s, void *d, const void *src, size_t n, CopyKind k) override {
    return cpu_->copyAsync(s, d, src, n, k);
  }
  Status launch(Stream &s, const Launch &l, uint64_t step) override {
    return cpu_->launch(s, l, step);
  }
  Status synchronize(Stream &s) override { return cpu_->synchronize(s); }
  Status synchronize() override { return cpu_->synchronize(); }
  Status elapsedSeconds(Event &a, Event &b, double &sec) override {
    return cpu_->elapsedSeconds(a, b, sec);
  }
  Status createChannel(Communicator &group, std::unique_ptr<Channel> &out) override {
    log_.push_back("createChannel");
    std::unique_ptr<Channel> inner;
    FSDP_RETURN_IF_ERROR(cpu_->createChannel(group, inner));
    out = std::make_unique<RecordingChannel>(std::move(inner), log_);
    return Status::ok();
  }

private:
  std::unique_ptr<Device> cpu_;
  std::vector<std::string> &log_;
};

// The loss all-reduce and the gradient reduce-scatter are issued back to
// back on the communication stream over the same group: one group on the
// channel (one ncclGroupStart/End on NCCL), with the same values as ever;
// the all-gather before them stands alone. Under hybrid sharding they run
// over different groups, so nothing is grouped. Profiled steps (timing
// events around each call) are never grouped.
TEST_F(ExecutorShardedTest, CollectivesAtOnePointAreOneChannelGroup) {
  async_ = true;
  auto logsOf = [&](int world, int group, bool timed) {
    writePlan(world, group);
    std::vector<std::unique_ptr<Communicator>> comms;
    EXPECT_TRUE(comm::createInProcessGroup(world, comms).isOk());
    std::vector<std::vector<std::string>> logs(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        RecordingDevice device(logs[r]);
        std::unique_ptr<Executor> executor;
        Status s = Executor::create(loaded, device, comms[r].get(), executor);
        if (s)
          s = ModelState(*executor).loadWeights();
        StepProfile profile;
        if (s)
          s = executor->run(timed ? &profile : nullptr);
        if (!s)
          comms[r]->abort(s.message());
        EXPECT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
      });
    for (auto &t : threads)
      t.join();
    for (int r = 1; r < world; ++r)
      EXPECT_EQ(logs[r], logs[0]) << "rank " << r << " grouped differently";
    return logs[0];
  };
  using Log = std::vector<std::string>;
  EXPECT_EQ(logsOf(2, 2, false),
            (Log{"createChannel", "allGather", "begin", "allReduce", "reduceScatter", "end"}));
  EXPECT_EQ(logsOf(2, 2, true),
            (Log{"createChannel", "allGather", "allReduce", "reduceScatter"}));
  // Hybrid: one channel from the device (the world's), the shard and
  // replica groups' channels split from it (ncclCommSplit on NCCL).
  EXPECT_EQ(logsOf(4, 2, false), (Log{"createChannel", "split", "split", "allGather", "allReduce",
                                      "reduceScatter", "allReduce"}));
  trainAndCheck(2); // the grouped step's values (CPU: bit for bit as ungrouped)
}

// --offload=cpu: the reduced shard is copied to the host on the copy
// stream and the update runs on the host stream (a worker like the others
// on the CPU device), with the same values, also with padding and groups.
TEST_F(ExecutorShardedTest, OffloadedUpdateOnTheHostStream) {
  async_ = offload_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  EXPECT_EQ(loaded.plan().num_streams(), 4);
  trainAndCheck(3);
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(2);
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

// An error on the communication stream (the group is aborted while a
// rank's worker is in a collective or about to start one) fails every
// rank's run() with the reason, and the executors still shut down: no
// rank waits forever for an event the worker will never signal.
TEST_F(ExecutorShardedTest, ACommunicationErrorFailsEveryRankWithoutHanging) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::vector<Status> results(2);
  runRanks([&](int r, Executor &ex) {
    ASSERT_TRUE(ModelState(ex).loadWeights().isOk());
    ASSERT_TRUE(ex.run().isOk()); // one good step starts the worker
    if (r == 1)
      ex.abort("rank 1 lost its network");
    results[r] = ex.run();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(results[r].message().find("rank 1 lost its network"), std::string::npos)
        << "rank " << r << ": " << results[r].message();
}

// The plan check: a wait no stream order can satisfy, an event signalled
// twice, a compute instruction on the communication stream, and the host
// stream's rules.
TEST_F(ExecutorShardedTest, StreamOrderIsChecked) {
  auto refused = [&](std::vector<StreamOrder> order, const char *why) {
    order_ = std::move(order);
    ASSERT_NO_FATAL_FAILURE(writePlanFile(2, 2));
    LoadedPlan plan;
    Status s = loadPlan(path, plan);
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  async_ = true;
  std::vector<StreamOrder> order = streamOrder(false);
  order[0].waits = {3}; // the gather waits for the slice that waits for it
  order[1].signal = 3;
  refused(order, "the streams deadlock");
  order = std::vector<StreamOrder>(11);
  order[0] = {1, {}, 0};
  order[1] = {0, {0}, 0};
  refused(order, "is signalled by instructions 0 and 1");
  order = std::vector<StreamOrder>(11);
  order[2].stream = 1;
  refused(order, "is on the communication stream but is no collective");
  order = std::vector<StreamOrder>(11);
  order[1].waits = {0};
  order[3].signal = 0;
  refused(order, "of its own stream");
  // The host stream runs optimizer updates of host memory, nothing else,
  // and no device stream waits for it.
  order = std::vector<StreamOrder>(11);
  order[2].stream = 3;
  refused(order, "instruction 2 (Slice 'Slice') is on the host stream but is no optimizer update");
  order = std::vector<StreamOrder>(11);
  order[10].stream = 3; // Sgd of the shard in device memory
  refused(order, "instruction 10 (Sgd 'Sgd') is on the host stream but reads or writes a buffer "
                 "outside the Host region");
  offload_ = true;
  order_.clear();
  order = streamOrder(false);
  order[11].signal = 4;
  order[7].waits = {4}; // the ReduceSum waits for the update
  refused(order, "instruction 7 (ReduceSum 'ReduceSum') on stream 0 waits on event 4 of the host "
                 "stream (instruction 11 (Sgd 'Sgd')); device streams cannot wait for the host "
                 "within a step");
  order[7].waits.clear();
  order[8].waits = {1, 4}; // nor does the communication stream
  refused(order, "instruction 8 (AllReduce 'AllReduce') on stream 1 waits on event 4 of the "
                 "host stream");
}

} // namespace
} // namespace fsdp::rt
