//===- ExecutorProfileTest.cpp - what a profiled step measures ------------===//
//
// Executor::run(&profile) on the CPU device, whose timing events are the
// stream workers' completion times. Hand-built forward plans over two
// in-process ranks: an all-gather of each rank's shard x (f32[kShard])
// into full (f32[2 * kShard]), then out = full * full. The ranks'
// communicators sleep kDelay in every all-gather, so communication is
// slow by a known amount. With the all-gather on the communication stream
// and the multiply waiting for it, the compute stream waits about kDelay:
// exposed communication most of kDelay, never more than the step. With the all-gather on the compute stream (a one-stream plan), it
// is all exposed. A plan without collectives exposes nothing. The
// per-instruction times add up to each stream's busy time, a stream's
// busy and waiting time fit in the step, and profiling changes no bit of
// the output.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/plan_generated.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <thread>

namespace fsdp::rt {
namespace {

constexpr int64_t kShard = 1024;
constexpr double kDelay = 0.05; // seconds each all-gather sleeps

/// A rank's communicator whose all-gathers take kDelay longer: a slow
/// network, deterministic enough to measure against.
class SlowCommunicator final : public Communicator {
public:
  explicit SlowCommunicator(std::unique_ptr<Communicator> inner) : inner_(std::move(inner)) {}
  using Communicator::allGather;
  using Communicator::allReduce;
  using Communicator::broadcast;
  using Communicator::reduceScatter;
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  Status allGather(const void *send, void *recv, int64_t count, DType dtype) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(kDelay));
    return inner_->allGather(send, recv, count, dtype);
  }
  Status reduceScatter(const void *send, void *recv, int64_t count, DType dtype,
                       ReduceOp op) override {
    return inner_->reduceScatter(send, recv, count, dtype, op);
  }
  Status allReduce(const void *send, void *recv, int64_t count, DType dtype,
                   ReduceOp op) override {
    return inner_->allReduce(send, recv, count, dtype, op);
  }
  Status broadcast(void *buf, int64_t count, DType dtype, int root) override {
    return inner_->broadcast(buf, count, dtype, root);
  }
  Status barrier() override { return inner_->barrier(); }
  void abort(const std::string &reason) override { inner_->abort(reason); }

private:
  std::unique_ptr<Communicator> inner_;
};

/// Which plan: the all-gather on the communication stream, on the compute
/// stream, or no collective at all (out = x * x, one rank).
enum class Shape { Overlapped, OneStream, NoCollective };

class ExecutorProfileTest : public formattest::FormatTest {
protected:
  ExecutorProfileTest() : FormatTest("fsdp-exec-profile-", "step.plan") {}

  void writePlan(Shape shape) {
    shape_ = shape;
    const bool gather = shape != Shape::NoCollective;
    world_ = gather ? 2 : 1;
    const int64_t full = gather ? 2 * kShard : kShard;
    flatbuffers::FlatBufferBuilder fbb;
    auto buffer = [&](const char *name, int64_t n, plan::Region region, uint64_t offset) {
      return plan::CreateBuffer(fbb, fbb.CreateString(name), plan::DType::F32,
                                fbb.CreateVector(std::vector<int64_t>{n}), region, offset, n * 4);
    };
    // x and out persistent, full in the arena (x alone when nothing gathers).
    std::vector<flatbuffers::Offset<plan::Buffer>> buffers{
        buffer("x", kShard, plan::Region::Persistent, 0),
        buffer("out", full, plan::Region::Persistent, kShard * 4),
        buffer("full", full, plan::Region::Arena, 0)};
    const bool overlapped = shape == Shape::Overlapped;
    auto inst = [&](plan::Kernel k, std::vector<uint32_t> in, std::vector<uint32_t> out,
                    std::vector<int64_t> ints, uint8_t stream, std::vector<uint32_t> waits,
                    int32_t signal) {
      return plan::CreateInstruction(fbb, k, fbb.CreateVector(in), fbb.CreateVector(out),
                                     fbb.CreateVector(ints), fbb.CreateVector(std::vector<float>{}),
                                     stream, fbb.CreateString(plan::EnumNameKernel(k)),
                                     fbb.CreateVector(waits), signal);
    };
    std::vector<flatbuffers::Offset<plan::Instruction>> instructions;
    if (gather) {
      instructions.push_back(inst(plan::Kernel::AllGather, {0}, {2}, {2, 0, 1},
                                  overlapped ? 1 : 0, {}, overlapped ? 0 : -1));
      instructions.push_back(inst(plan::Kernel::Mul, {2, 2}, {1}, {}, 0,
                                  overlapped ? std::vector<uint32_t>{0} : std::vector<uint32_t>{},
                                  -1));
    } else {
      instructions.push_back(inst(plan::Kernel::Mul, {0, 0}, {1}, {}, 0, {}, -1));
    }
    auto binding = [&](const char *name, uint32_t b) {
      return plan::CreateBinding(fbb, fbb.CreateString(name), b);
    };
    std::vector<flatbuffers::Offset<plan::Binding>> inputs{binding("x", 0)},
        outputs{binding("out", 1)};
    auto buffersOffset = fbb.CreateVector(buffers);
    auto instructionsOffset = fbb.CreateVector(instructions);
    auto inputsOffset = fbb.CreateVector(inputs), outputsOffset = fbb.CreateVector(outputs);
    auto producer = fbb.CreateString("test"), mode = fbb.CreateString("forward");
    plan::PlanBuilder plan(fbb);
    plan.add_format_version(kPlanFormatVersion);
    plan.add_producer(producer);
    plan.add_mode(mode);
    plan.add_world_size(world_);
    plan.add_buffers(buffersOffset);
    plan.add_instructions(instructionsOffset);
    plan.add_inputs(inputsOffset);
    plan.add_outputs(outputsOffset);
    plan.add_persistent_bytes((kShard + full) * 4);
    plan.add_arena_bytes(full * 4);
    plan.add_num_streams(overlapped ? 2 : 1);
    plan.add_num_events(overlapped ? 1 : 0);
    plan::FinishPlanBuffer(fbb, plan.Finish());
    ASSERT_TRUE(writePlanFile(path, fbb.GetBufferPointer(), fbb.GetSize()).isOk());
    Status s = loadPlan(path, loaded_);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// Each rank: x = its values, `steps` runs (profiled when `profile`),
  /// its output. Ranks are threads over slow in-process communicators.
  void run(int steps, std::vector<StepProfile> *profiles, std::vector<HostTensor> &outputs) {
    std::vector<std::unique_ptr<Communicator>> comms;
    if (world_ > 1) {
      std::vector<std::unique_ptr<Communicator>> inner;
      ASSERT_TRUE(comm::createInProcessGroup(world_, inner).isOk());
      for (auto &c : inner)
        comms.push_back(std::make_unique<SlowCommunicator>(std::move(c)));
    }
    outputs.assign(world_, HostTensor());
    if (profiles)
      profiles->assign(world_, StepProfile());
    std::vector<std::future<Status>> done;
    for (int r = 0; r < world_; ++r)
      done.push_back(std::async(std::launch::async, [&, r]() -> Status {
        std::unique_ptr<Device> device = createCpuDevice();
        std::unique_ptr<Executor> executor;
        FSDP_RETURN_IF_ERROR(
            Executor::create(loaded_, *device, world_ > 1 ? comms[r].get() : nullptr, executor));
        std::vector<float> x(kShard);
        for (int64_t i = 0; i < kShard; ++i)
          x[i] = 0.001f * static_cast<float>(i) - 0.3f * static_cast<float>(r + 1);
        TensorRef input;
        input.rank = 1;
        input.dims[0] = kShard;
        input.data = x.data();
        FSDP_RETURN_IF_ERROR(executor->setInput("x", input));
        for (int step = 0; step < steps; ++step)
          FSDP_RETURN_IF_ERROR(executor->run(profiles ? &(*profiles)[r] : nullptr));
        return executor->getOutput("out", outputs[r]);
      }));
    for (auto &f : done) {
      Status s = f.get();
      EXPECT_TRUE(s.isOk()) << s.message();
    }
  }

  /// What holds for every profile: the instructions add up to their
  /// streams' busy time, a stream's work and waits fit in the step, and
  /// exposed communication is within [0, step].
  void expectConsistent(const StepProfile &p, int steps) {
    EXPECT_EQ(p.steps, steps);
    const plan::Plan &plan = loaded_.plan();
    ASSERT_EQ(p.instructionSeconds.size(), plan.instructions()->size());
    ASSERT_EQ(p.streamBusySeconds.size(), plan.num_streams());
    std::vector<double> byStream(plan.num_streams(), 0.0);
    for (size_t i = 0; i < p.instructionSeconds.size(); ++i) {
      EXPECT_GE(p.instructionSeconds[i], 0.0) << "instruction " << i;
      byStream[plan.instructions()->Get(i)->stream()] += p.instructionSeconds[i];
    }
    for (size_t q = 0; q < byStream.size(); ++q) {
      EXPECT_NEAR(byStream[q], p.streamBusySeconds[q], 1e-9) << "stream " << q;
      EXPECT_LE(p.streamBusySeconds[q] + p.streamWaitSeconds[q], p.stepSeconds + 1e-9)
          << "stream " << q;
    }
    EXPECT_GE(p.exposedCommunicationSeconds, 0.0);
    EXPECT_LE(p.exposedCommunicationSeconds, p.stepSeconds + 1e-9);
  }

  LoadedPlan loaded_;
  Shape shape_ = Shape::Overlapped;
  int world_ = 1;
};

// The multiply waits for the slow all-gather on the other stream: that
// wait is exposed, most of kDelay per step (at least half, allowing for a
// loaded machine's late worker threads), and the communication stream is
// busy at least kDelay per step.
TEST_F(ExecutorProfileTest, WaitingForASlowGatherIsExposed) {
  ASSERT_NO_FATAL_FAILURE(writePlan(Shape::Overlapped));
  constexpr int kSteps = 3;
  std::vector<StepProfile> profiles;
  std::vector<HostTensor> outputs;
  ASSERT_NO_FATAL_FAILURE(run(kSteps, &profiles, outputs));
  for (int r = 0; r < world_; ++r) {
    SCOPED_TRACE(testing::Message() << "rank " << r);
    const StepProfile &p = profiles[r];
    ASSERT_NO_FATAL_FAILURE(expectConsistent(p, kSteps));
    EXPECT_GE(p.streamBusySeconds[1], kSteps * kDelay);
    EXPECT_GE(p.streamWaitSeconds[0], 0.5 * kSteps * kDelay);
    EXPECT_GE(p.exposedCommunicationSeconds, 0.5 * kSteps * kDelay);
    EXPECT_GE(p.stepSeconds, kSteps * kDelay);
  }
}

// One stream: the compute stream runs the gather itself, all of it exposed.
TEST_F(ExecutorProfileTest, ACollectiveOnTheComputeStreamIsExposed) {
  ASSERT_NO_FATAL_FAILURE(writePlan(Shape::OneStream));
  std::vector<StepProfile> profiles;
  std::vector<HostTensor> outputs;
  ASSERT_NO_FATAL_FAILURE(run(2, &profiles, outputs));
  for (int r = 0; r < world_; ++r) {
    SCOPED_TRACE(testing::Message() << "rank " << r);
    const StepProfile &p = profiles[r];
    ASSERT_NO_FATAL_FAILURE(expectConsistent(p, 2));
    EXPECT_EQ(p.streamWaitSeconds[0], 0.0);
    EXPECT_GE(p.instructionSeconds[0], 2 * kDelay);
    EXPECT_GE(p.exposedCommunicationSeconds, p.instructionSeconds[0]);
  }
}

TEST_F(ExecutorProfileTest, NoCollectiveExposesNothing) {
  ASSERT_NO_FATAL_FAILURE(writePlan(Shape::NoCollective));
  std::vector<StepProfile> profiles;
  std::vector<HostTensor> outputs;
  ASSERT_NO_FATAL_FAILURE(run(2, &profiles, outputs));
  ASSERT_NO_FATAL_FAILURE(expectConsistent(profiles[0], 2));
  EXPECT_EQ(profiles[0].exposedCommunicationSeconds, 0.0);
  EXPECT_EQ(profiles[0].streamWaitSeconds[0], 0.0);
  EXPECT_GT(profiles[0].stepSeconds, 0.0);
}

// The timing events only observe: every rank's output is the same bits
// with and without them.
TEST_F(ExecutorProfileTest, ProfilingChangesNoBit) {
  ASSERT_NO_FATAL_FAILURE(writePlan(Shape::Overlapped));
  std::vector<StepProfile> profiles;
  std::vector<HostTensor> plain, profiled;
  ASSERT_NO_FATAL_FAILURE(run(1, nullptr, plain));
  ASSERT_NO_FATAL_FAILURE(run(1, &profiles, profiled));
  for (int r = 0; r < world_; ++r) {
    ASSERT_EQ(plain[r].data.size(), static_cast<size_t>(2 * kShard * 4));
    EXPECT_EQ(plain[r].data, profiled[r].data) << "rank " << r;
  }
  // And the gather really ran: rank 1's output holds rank 0's shard squared.
  float first = 0;
  std::memcpy(&first, plain[1].data.data(), 4);
  EXPECT_FLOAT_EQ(first, 0.3f * 0.3f);
}

// A profile accumulates one plan's steps: another plan's executor refuses it.
TEST_F(ExecutorProfileTest, AProfileBelongsToOnePlan) {
  ASSERT_NO_FATAL_FAILURE(writePlan(Shape::NoCollective));
  std::unique_ptr<Device> device = createCpuDevice();
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded_, *device, nullptr, executor).isOk());
  StepProfile profile;
  ASSERT_TRUE(executor->run(&profile).isOk());
  profile.streamBusySeconds.push_back(0); // as if made by a plan with another stream
  Status s = executor->run(&profile);
  EXPECT_NE(s.message().find("the step profile holds another plan's steps"), std::string::npos)
      << s.message();
}

} // namespace
} // namespace fsdp::rt
