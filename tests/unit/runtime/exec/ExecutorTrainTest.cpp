//===- ExecutorTrainTest.cpp - the executor runs training plans -----------===//
//
// A hand-built "train" plan whose step, written with forward kernels only,
// has the shape of a real one: it reads the lr and step scalars the runtime
// writes, updates its parameter and an optimizer-state buffer in place
// (w += lr * sum(x, 0); state += lr * sum(x, 0)) and reports a scalar loss
// (mean(w) + step). Run on a device whose allocations come back full of
// garbage, it checks that the executor zeroes the persistent region, writes
// the scalars and reads the loss back, and that ModelState reads the
// parameters back and saves them as a safetensors file that a plain numpy
// reader (what torch's loader parses) accepts. A forward plan refuses the
// training calls. With useGraphs, on a CPU device that records what is
// enqueued during a capture and replays it as a CUDA graph would, the
// executor runs the first step eagerly, captures the second and replays it
// from then on, each step's scalars and inputs reaching the replay: the
// same bits as eager steps; a plan with a host stream refuses graphs.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

namespace fsdp::rt {
namespace {

/// The CPU device, except that fresh memory is filled with 0xAB bytes, as a
/// device allocator that does not clear would leave it.
class GarbageDevice final : public Device {
public:
  const char *name() const override { return "garbage-cpu"; }
  Status allocate(size_t bytes, DeviceMemory &out) override {
    FSDP_RETURN_IF_ERROR(cpu_->allocate(bytes, out));
    std::memset(out.base, 0xAB, bytes);
    return Status::ok();
  }
  void release(DeviceMemory &memory) override { cpu_->release(memory); }
  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    return cpu_->copyToDevice(dst, src, bytes);
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    return cpu_->copyToHost(dst, src, bytes);
  }
  Status createStream(std::unique_ptr<Stream> &out) override { return cpu_->createStream(out); }
  Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) override {
    return cpu_->createEvent(flags, out);
  }
  Status recordEvent(Stream &stream, Event &event) override {
    return cpu_->recordEvent(stream, event);
  }
  Status waitEvent(Stream &stream, Event &event) override { return cpu_->waitEvent(stream, event); }
  Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes,
                   CopyKind kind) override {
    return cpu_->copyAsync(stream, dst, src, bytes, kind);
  }
  Status launch(Stream &stream, const Launch &launch, uint64_t step) override {
    return cpu_->launch(stream, launch, step);
  }
  Status synchronize(Stream &stream) override { return cpu_->synchronize(stream); }
  Status synchronize() override { return cpu_->synchronize(); }
  Status elapsedSeconds(Event &start, Event &end, double &seconds) override {
    return cpu_->elapsedSeconds(start, end, seconds);
  }

private:
  std::unique_ptr<Device> cpu_ = createCpuDevice();
};

/// The CPU device with step capture as CUDA graphs have it: between
/// beginCapture and endCapture, enqueued work is recorded instead of run
/// (and the host may not synchronize); replay enqueues the recorded work
/// again with the same operands, kernels reading the step beginStep last
/// wrote (as the CUDA device's step word). Counts what ran how.
class RecordingDevice final : public Device {
public:
  const char *name() const override { return "recording-cpu"; }
  Status allocate(size_t bytes, DeviceMemory &out) override { return cpu_->allocate(bytes, out); }
  void release(DeviceMemory &memory) override { cpu_->release(memory); }
  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    FSDP_RETURN_IF_ERROR(notCapturing("copyToDevice"));
    return cpu_->copyToDevice(dst, src, bytes);
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    FSDP_RETURN_IF_ERROR(notCapturing("copyToHost"));
    return cpu_->copyToHost(dst, src, bytes);
  }
  Status createStream(std::unique_ptr<Stream> &out) override { return cpu_->createStream(out); }
  Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) override {
    return cpu_->createEvent(flags, out);
  }
  Status recordEvent(Stream &stream, Event &event) override {
    return enqueue([this, &stream, &event] { return cpu_->recordEvent(stream, event); });
  }
  Status waitEvent(Stream &stream, Event &event) override {
    return enqueue([this, &stream, &event] { return cpu_->waitEvent(stream, event); });
  }
  Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes,
                   CopyKind kind) override {
    return enqueue([=, &stream] { return cpu_->copyAsync(stream, dst, src, bytes, kind); });
  }
  Status launch(Stream &stream, const Launch &launch, uint64_t step) override {
    if (step != step_)
      return Status::error("launched for another step than beginStep's");
    if (!capturing_)
      ++eagerLaunches;
    return enqueue([this, &stream, &launch] {
      ++launchesRun;
      return cpu_->launch(stream, launch, step_);
    });
  }
  Status synchronize(Stream &stream) override {
    FSDP_RETURN_IF_ERROR(notCapturing("synchronize"));
    return cpu_->synchronize(stream);
  }
  Status synchronize() override {
    FSDP_RETURN_IF_ERROR(notCapturing("synchronize"));
    return cpu_->synchronize();
  }
  Status elapsedSeconds(Event &start, Event &end, double &seconds) override {
    return cpu_->elapsedSeconds(start, end, seconds);
  }
  Status beginStep(Stream &, uint64_t step) override {
    FSDP_RETURN_IF_ERROR(notCapturing("beginStep"));
    step_ = step;
    steps.push_back(step);
    return Status::ok();
  }
  bool canCapture() const override { return true; }
  Status beginCapture(Stream *const *, size_t count) override {
    FSDP_RETURN_IF_ERROR(notCapturing("beginCapture"));
    if (count == 0)
      return Status::error("no origin stream");
    capturing_ = true;
    ++captures;
    return Status::ok();
  }
  Status endCapture(std::unique_ptr<Graph> &out) override {
    if (!capturing_)
      return Status::error("endCapture without beginCapture");
    capturing_ = false;
    auto graph = std::make_unique<Recorded>();
    graph->work = std::move(recorded_);
    recorded_.clear();
    out = std::move(graph);
    return Status::ok();
  }
  Status replay(Stream &, Graph &graph) override {
    FSDP_RETURN_IF_ERROR(notCapturing("replay"));
    ++replays;
    for (const std::function<Status()> &work : static_cast<Recorded &>(graph).work)
      FSDP_RETURN_IF_ERROR(work());
    return Status::ok();
  }

  int eagerLaunches = 0, launchesRun = 0, captures = 0, replays = 0;
  std::vector<uint64_t> steps; // what beginStep was given, in order

private:
  struct Recorded final : Graph {
    std::vector<std::function<Status()>> work;
  };
  Status notCapturing(const char *what) const {
    return capturing_ ? Status::error(std::string(what) + " during a capture") : Status::ok();
  }
  /// Runs `work` now, or records it during a capture.
  Status enqueue(std::function<Status()> work) {
    if (!capturing_)
      return work();
    recorded_.push_back(std::move(work));
    return Status::ok();
  }

  std::unique_ptr<Device> cpu_ = createCpuDevice();
  bool capturing_ = false;
  uint64_t step_ = 0;
  std::vector<std::function<Status()>> recorded_;
};

struct BufferSpec {
  const char *name;
  plan::DType dtype;
  std::vector<int64_t> shape;
  plan::Region region;
};

class ExecutorTrainTest : public formattest::FormatTest {
protected:
  ExecutorTrainTest() : FormatTest("fsdp-exec-train-", "step.plan") {}

  /// Writes the plan (mode "train" or "forward") and its weights file.
  /// Without `stepBuffer` the train plan names no step buffer, as SGD plans
  /// do (buffer 3 then stays zero).
  void writePlan(bool train, bool stepBuffer = true) {
    std::vector<float> w0{1, 2, 3, 4};
    HostTensor w{DType::F32, {4}, {}};
    w.data.resize(16);
    std::memcpy(w.data.data(), w0.data(), 16);
    uint64_t weightsHash = 0;
    ASSERT_TRUE(writeSafetensors(dir + "/step.safetensors", {{"w", w.ref()}}, {}, &weightsHash)
                    .isOk());

    using plan::DType;
    using plan::Region;
    const std::vector<BufferSpec> specs{
        {"w", DType::F32, {4}, Region::Persistent},          // 0
        {"x", DType::F32, {2, 4}, Region::Persistent},       // 1
        {"lr", DType::F64, {}, Region::Persistent},          // 2
        {"step", DType::I64, {}, Region::Persistent},        // 3
        {"w.exp_avg", DType::F32, {4}, Region::Persistent},  // 4
        {"loss", DType::F32, {}, Region::Persistent},        // 5
        {"lr_f32", DType::F32, {}, Region::Arena},           // 6
        {"scaled", DType::F32, {2, 4}, Region::Arena},       // 7
        {"update", DType::F32, {4}, Region::Arena},          // 8
        {"step_f32", DType::F32, {}, Region::Arena},         // 9
        {"mean_w", DType::F32, {}, Region::Arena},           // 10
    };
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
    uint64_t regionEnd[2] = {0, 0};
    for (const BufferSpec &b : specs) {
      uint64_t size = 1;
      for (int64_t d : b.shape)
        size *= d;
      size *= b.dtype == DType::F32 ? 4 : 8;
      uint64_t &end = regionEnd[static_cast<int>(b.region)];
      buffers.push_back(plan::CreateBuffer(fbb, fbb.CreateString(b.name), b.dtype,
                                           fbb.CreateVector(b.shape), b.region, end, size));
      end += (size + 63) / 64 * 64;
    }
    auto inst = [&](plan::Kernel k, std::vector<uint32_t> in, std::vector<uint32_t> out,
                    std::vector<int64_t> ints = {}) {
      return plan::CreateInstruction(fbb, k, fbb.CreateVector(in), fbb.CreateVector(out),
                                     fbb.CreateVector(ints), fbb.CreateVector(std::vector<float>{}),
                                     0, fbb.CreateString(plan::EnumNameKernel(k)));
    };
    std::vector<flatbuffers::Offset<plan::Instruction>> instructions{
        inst(plan::Kernel::Cast, {2}, {6}),
        inst(plan::Kernel::Mul, {1, 6}, {7}),
        inst(plan::Kernel::ReduceSum, {7}, {8}, {0}),
        inst(plan::Kernel::Add, {0, 8}, {0}),
        inst(plan::Kernel::Add, {4, 8}, {4}),
        inst(plan::Kernel::Cast, {3}, {9}),
        inst(plan::Kernel::ReduceMean, {0}, {10}, {0}),
        inst(plan::Kernel::Add, {10, 9}, {5}),
    };
    std::vector<int64_t> wShape{4};
    std::vector<flatbuffers::Offset<plan::Parameter>> params{
        plan::CreateParameter(fbb, fbb.CreateString("w"), DType::F32, fbb.CreateVector(wShape), 0,
                              0, 0)};
    std::vector<flatbuffers::Offset<plan::Unit>> units{
        plan::CreateUnit(fbb, fbb.CreateString("unit0"), 4, 4, 4)};
    auto binding = [&](const char *name, uint32_t buffer) {
      return plan::CreateBinding(fbb, fbb.CreateString(name), buffer);
    };
    std::vector<flatbuffers::Offset<plan::Binding>> inputs{binding("x", 1)};
    std::vector<flatbuffers::Offset<plan::Binding>> outputs{binding("loss", 5),
                                                            binding("exp_avg", 4)};
    std::vector<flatbuffers::Offset<plan::Binding>> state{binding("w.exp_avg", 4)};
    auto root = plan::CreatePlan(
        fbb, kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString("hand-built"),
        fbb.CreateString(train ? "train" : "forward"), 1, fbb.CreateVector(buffers),
        fbb.CreateVector(instructions), fbb.CreateVector(params), fbb.CreateVector(units),
        fbb.CreateVector(inputs), fbb.CreateVector(outputs), regionEnd[0], regionEnd[1],
        numStreams_, 0,
        fbb.CreateString("step.safetensors"), weightsHash, 0,
        train ? fbb.CreateVector(state) : 0, train ? 2 : kNoBuffer, train && stepBuffer ? 3 : kNoBuffer,
        train ? fbb.CreateString("loss") : 0, train ? fbb.CreateString("sgd") : 0,
        train ? 0.5 : 0.0, 0, 0, 0, 0, 0, evalEnd_, evalEnd_ ? 6 : kNoBuffer);
    plan::FinishPlanBuffer(fbb, root);
    ASSERT_TRUE(writePlanFile(path, fbb.GetBufferPointer(), fbb.GetSize()).isOk());
    Status s = loadPlan(path, loaded);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  std::vector<float> floats(const HostTensor &t) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
  }

  /// Loads the weights and takes step `step` on x = 0 at lr 1, which
  /// leaves the parameter as loaded.
  Status stepOnZeros(Executor &executor, int64_t step) {
    HostTensor x{DType::F32, {2, 4}, std::vector<char>(32, 0)};
    FSDP_RETURN_IF_ERROR(ModelState(executor).loadWeights());
    FSDP_RETURN_IF_ERROR(executor.setInput("x", x.ref()));
    FSDP_RETURN_IF_ERROR(executor.setLearningRate(1.0));
    FSDP_RETURN_IF_ERROR(executor.setStep(step));
    return executor.run();
  }

  LoadedPlan loaded;
  uint8_t numStreams_ = 1; // the plan's streams (4: it has a host stream)
  /// The evaluation prefix: instruction 0, lr_f32 = cast(lr), as its "loss".
  uint32_t evalEnd_ = 0;
  GarbageDevice device;
};

TEST_F(ExecutorTrainTest, StepsUpdateParametersAndZeroedStateInPlace) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, executor).isOk());
  ASSERT_TRUE(ModelState(*executor).loadWeights().isOk());
  EXPECT_TRUE(executor->isTraining());
  EXPECT_EQ(executor->lossOutput(), "loss");
  EXPECT_EQ(executor->baseLearningRate(), 0.5);
  EXPECT_EQ(executor->parameterNames(), std::vector<std::string>{"w"});
  EXPECT_EQ(executor->allocatedBytes(),
            loaded.plan().persistent_bytes() + loaded.plan().arena_bytes());
  DType dtype;
  std::vector<int64_t> shape;
  ASSERT_TRUE(executor->inputType("x", dtype, shape).isOk());
  EXPECT_EQ(dtype, DType::F32);
  EXPECT_EQ(shape, (std::vector<int64_t>{2, 4}));

  std::vector<float> x{1, 2, 3, 4, 0.5f, 0.5f, 0.5f, 0.5f}; // column sums 1.5 .. 4.5
  HostTensor xt{DType::F32, {2, 4}, std::vector<char>(32)};
  std::memcpy(xt.data.data(), x.data(), 32);
  ASSERT_TRUE(executor->setInput("x", xt.ref()).isOk());

  double loss = 0;
  ASSERT_TRUE(executor->setLearningRate(0.5).isOk());
  ASSERT_TRUE(executor->setStep(1).isOk());
  ASSERT_TRUE(executor->run().isOk());
  ASSERT_TRUE(executor->getLoss(loss).isOk());
  EXPECT_EQ(loss, 4.0f + 1); // mean([1.75, 3.25, 4.75, 6.25]) + step 1
  HostTensor state;
  ASSERT_TRUE(executor->getOutput("exp_avg", state).isOk());
  EXPECT_EQ(floats(state), (std::vector<float>{0.75f, 1.25f, 1.75f, 2.25f})); // from zero

  ASSERT_TRUE(executor->setLearningRate(0.25).isOk());
  ASSERT_TRUE(executor->setStep(2).isOk());
  ASSERT_TRUE(executor->run().isOk());
  ASSERT_TRUE(executor->getLoss(loss).isOk());
  EXPECT_EQ(loss, 4.75f + 2);
  HostTensor w;
  ASSERT_TRUE(ModelState(*executor).getParameter("w", w).isOk());
  EXPECT_EQ(w.shape, std::vector<int64_t>{4});
  EXPECT_EQ(floats(w), (std::vector<float>{2.125f, 3.875f, 5.625f, 7.375f}));
  EXPECT_NE(ModelState(*executor).getParameter("v", w).message().find("has no parameter 'v'"),
            std::string::npos);
  EXPECT_FALSE(executor->setStep(0).isOk());
}

// runEval runs only the evaluation prefix and reads its loss buffer: the
// parameter, the optimizer state and the step count stay as they were, so
// the next step gives what it gives without the evaluation.
TEST_F(ExecutorTrainTest, EvaluationRunsOnlyThePrefix) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  std::unique_ptr<Executor> plain;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, plain).isOk());
  double value = 0;
  EXPECT_FALSE(plain->hasEvalPrefix());
  EXPECT_NE(plain->runEval(value).message().find("has no evaluation prefix"), std::string::npos);

  evalEnd_ = 1;
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, executor).isOk());
  ASSERT_TRUE(executor->hasEvalPrefix());
  ASSERT_TRUE(stepOnZeros(*executor, 1).isOk());
  ASSERT_TRUE(executor->setLearningRate(0.5).isOk());
  ASSERT_TRUE(executor->runEval(value).isOk());
  EXPECT_EQ(value, 0.5);
  HostTensor w, state;
  ASSERT_TRUE(ModelState(*executor).getParameter("w", w).isOk());
  EXPECT_EQ(floats(w), (std::vector<float>{1, 2, 3, 4}));
  ASSERT_TRUE(executor->getOutput("exp_avg", state).isOk());
  EXPECT_EQ(floats(state), (std::vector<float>{0, 0, 0, 0}));
  // Step 2 on zeros: the loss is mean(w) + 2, the step number the runtime
  // wrote, not one an evaluation advanced.
  HostTensor x{DType::F32, {2, 4}, std::vector<char>(32, 0)};
  ASSERT_TRUE(executor->setInput("x", x.ref()).isOk());
  ASSERT_TRUE(executor->setStep(2).isOk());
  ASSERT_TRUE(executor->run().isOk());
  ASSERT_TRUE(executor->getLoss(value).isOk());
  EXPECT_EQ(value, 2.5 + 2);
}

TEST_F(ExecutorTrainTest, SavedWeightsReadBackInTorchsFormat) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, executor).isOk());
  Status s = stepOnZeros(*executor, 1);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::string out = dir + "/trained.safetensors";
  ASSERT_TRUE(ModelState(*executor).saveWeights(out).isOk());
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(out, file).isOk());
  EXPECT_EQ(file.names(), std::vector<std::string>{"w"});
  EXPECT_EQ(floats(*file.find("w")), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(file.metadata().at("format"), "pt");
  if (havePython())
    runPython("import json, struct, sys, numpy\n"
              "d = open(sys.argv[1], 'rb').read()\n"
              "n = struct.unpack('<Q', d[:8])[0]\n"
              "h = json.loads(d[8:8 + n])\n"
              "e = h['w']\n"
              "assert e['dtype'] == 'F32' and e['shape'] == [4], e\n"
              "b, end = e['data_offsets']\n"
              "w = numpy.frombuffer(d[8 + n + b:8 + n + end], '<f4')\n"
              "assert (w == [1, 2, 3, 4]).all(), w\n",
              out);
}

TEST_F(ExecutorTrainTest, PlansWithoutStepBufferOnlyRecordTheStep) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true, /*stepBuffer=*/false));
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, executor).isOk());
  Status s = stepOnZeros(*executor, 7);
  ASSERT_TRUE(s.isOk()) << s.message();
  double loss = -1;
  ASSERT_TRUE(executor->getLoss(loss).isOk());
  EXPECT_EQ(loss, 2.5f); // mean(w) + the zeroed (unwritten) buffer 3
}

TEST_F(ExecutorTrainTest, ForwardPlansRefuseTrainingCalls) {
  ASSERT_NO_FATAL_FAILURE(writePlan(false));
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, executor).isOk());
  EXPECT_FALSE(executor->isTraining());
  EXPECT_EQ(executor->lossOutput(), "");
  Status s = executor->setLearningRate(1e-3);
  EXPECT_NE(s.message().find("has no learning-rate buffer (forward plan"), std::string::npos)
      << s.message();
  EXPECT_NE(executor->setStep(1).message().find("has no step buffer"), std::string::npos);
  double loss;
  EXPECT_NE(executor->getLoss(loss).message().find("names no loss output"), std::string::npos);
}

/// Four steps with their own input, learning rate and step number: the
/// loss of each, then the parameter and the optimizer state.
struct Trajectory {
  std::vector<double> losses;
  std::vector<float> w, state;
};

// The step as a graph: step 1 runs eagerly, step 2 is captured and
// replayed, steps 3 and 4 are only replayed, and every step's inputs and
// scalars (written before run()) reach the replay: the trajectory is the
// eager one, bit for bit.
TEST_F(ExecutorTrainTest, GraphsReplayTheStepWithEachStepsValues) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  auto train = [&](Device &on, bool graphs, Trajectory &out) {
    std::unique_ptr<Executor> executor;
    ASSERT_TRUE(Executor::create(loaded, on, nullptr, executor).isOk());
    ASSERT_TRUE(ModelState(*executor).loadWeights().isOk());
    ASSERT_TRUE(executor->useGraphs(graphs).isOk());
    for (int step = 1; step <= 4; ++step) {
      std::vector<float> x(8);
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = 0.25f * static_cast<float>(step) + 0.125f * static_cast<float>(i);
      HostTensor xt{DType::F32, {2, 4}, std::vector<char>(32)};
      std::memcpy(xt.data.data(), x.data(), 32);
      ASSERT_TRUE(executor->setInput("x", xt.ref()).isOk());
      ASSERT_TRUE(executor->setLearningRate(1.0 / step).isOk());
      ASSERT_TRUE(executor->setStep(step).isOk());
      Status s = executor->run();
      ASSERT_TRUE(s.isOk()) << "step " << step << ": " << s.message();
      double loss = 0;
      ASSERT_TRUE(executor->getLoss(loss).isOk());
      out.losses.push_back(loss);
    }
    HostTensor w, state;
    ASSERT_TRUE(ModelState(*executor).getParameter("w", w).isOk());
    ASSERT_TRUE(executor->getOutput("exp_avg", state).isOk());
    out.w = floats(w);
    out.state = floats(state);
  };
  Trajectory eager, replayed;
  ASSERT_NO_FATAL_FAILURE(train(device, false, eager));
  RecordingDevice recording;
  ASSERT_NO_FATAL_FAILURE(train(recording, true, replayed));
  EXPECT_EQ(replayed.losses, eager.losses);
  EXPECT_EQ(replayed.w, eager.w);
  EXPECT_EQ(replayed.state, eager.state);
  const int instructions = static_cast<int>(loaded.plan().instructions()->size());
  EXPECT_EQ(recording.eagerLaunches, instructions); // step 1 only
  EXPECT_EQ(recording.captures, 1);
  EXPECT_EQ(recording.replays, 3);
  EXPECT_EQ(recording.launchesRun, 4 * instructions);
  EXPECT_EQ(recording.steps, (std::vector<uint64_t>{0, 1, 2, 3})); // step - 1, every step
}

// Kernel times need events between the kernels: a profiled step runs
// eagerly even once a graph is captured; and a device that cannot capture
// refuses graphs (turning them off is always fine).
TEST_F(ExecutorTrainTest, ProfiledStepsRunEagerlyAndOnlyCapturingDevicesTakeGraphs) {
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  RecordingDevice recording;
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, recording, nullptr, executor).isOk());
  ASSERT_TRUE(executor->useGraphs(true).isOk());
  StepProfile profile;
  for (int64_t step = 1; step <= 3; ++step)
    ASSERT_TRUE(stepOnZeros(*executor, step).isOk());
  ASSERT_TRUE(executor->run(&profile).isOk());
  const int instructions = static_cast<int>(loaded.plan().instructions()->size());
  EXPECT_EQ(recording.captures, 1);
  EXPECT_EQ(recording.replays, 2);
  EXPECT_EQ(recording.eagerLaunches, 2 * instructions); // step 1 and the profiled run
  EXPECT_EQ(profile.steps, 1);
  EXPECT_EQ(profile.instructionSeconds.size(), static_cast<size_t>(instructions));

  std::unique_ptr<Executor> plain;
  ASSERT_TRUE(Executor::create(loaded, device, nullptr, plain).isOk());
  EXPECT_EQ(plain->useGraphs(true).message(),
            "device 'garbage-cpu' cannot replay a step as a graph");
  EXPECT_TRUE(plain->useGraphs(false).isOk());
}

// A plan with a host stream (stream 3, --offload=cpu's optimizer on a host
// thread) cannot be captured, even on a capturing device: it runs eagerly.
TEST_F(ExecutorTrainTest, PlansWithAHostStreamRefuseGraphs) {
  numStreams_ = 4;
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  RecordingDevice recording;
  std::unique_ptr<Executor> executor;
  ASSERT_TRUE(Executor::create(loaded, recording, nullptr, executor).isOk());
  EXPECT_TRUE(executor->hasHostStream());
  Status s = executor->useGraphs(true);
  EXPECT_NE(s.message().find("its optimizer runs on the host stream (--offload=cpu), which a "
                             "graph cannot capture"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(executor->useGraphs(false).isOk());
  for (int64_t step = 1; step <= 3; ++step)
    ASSERT_TRUE(stepOnZeros(*executor, step).isOk());
  EXPECT_EQ(recording.captures, 0);
  numStreams_ = 1;
  ASSERT_NO_FATAL_FAILURE(writePlan(true));
  std::unique_ptr<Executor> oneStream;
  ASSERT_TRUE(Executor::create(loaded, recording, nullptr, oneStream).isOk());
  EXPECT_FALSE(oneStream->hasHostStream());
}

} // namespace
} // namespace fsdp::rt
