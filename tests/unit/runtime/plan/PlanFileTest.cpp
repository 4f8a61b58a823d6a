//===- PlanFileTest.cpp - plans are verified on load ----------------------===//
//
// Builds small plans with the generated FlatBuffers API, writes them with
// writePlanFile and checks that loadPlan accepts the valid one and refuses,
// with a message naming the file, every kind of damage: truncation, a
// flipped byte anywhere, a foreign file, another format version, and
// well-formed FlatBuffers that break the plan's own rules (a buffer outside
// its region, an operand that names no buffer, a kernel with the wrong
// number of attributes). Training plans: the gradient and optimizer kernels'
// operand, result and attribute counts (Sgd's optional momentum buffer is
// also its optional second result), optimizer state in the persistent
// region, the lr and step scalars, and the loss output's binding.
// Sharded plans: each collective's groups partition the world and its
// element counts fit the group size, Flatten's offsets place every input
// inside its result, each unit's shards cover its padded flat buffer from a
// persistent shard buffer, and a parameter without a buffer lies inside a
// sharded unit. A plan's cost prediction names its profile and holds
// finite seconds.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanFile.h"
#include "runtime/support/TensorRef.h"
#include "runtime/plan/plan_generated.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <tuple>
#include <unistd.h>

namespace {

using namespace fsdp;

struct PlanSpec {
  uint64_t bufferOffset = 0;
  uint32_t operand = 0;
  std::vector<int64_t> ints = {1};
  uint64_t arenaBytes = 64;
  /// The cost prediction the plan carries, if any: device, step_s,
  /// exposed_communication_s.
  std::optional<std::tuple<std::string, double, double>> prediction;
};

/// A one-instruction plan: softmax of a persistent f32[4] into the arena.
std::vector<uint8_t> buildPlan(const PlanSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<int64_t> shape{4};
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers{
      plan::CreateBuffer(fbb, fbb.CreateString("x"), plan::DType::F32, fbb.CreateVector(shape),
                         plan::Region::Persistent, 0, 16),
      plan::CreateBuffer(fbb, fbb.CreateString("y"), plan::DType::F32, fbb.CreateVector(shape),
                         plan::Region::Arena, spec.bufferOffset, 16)};
  std::vector<uint32_t> inputs{spec.operand}, outputs{1};
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions{plan::CreateInstruction(
      fbb, plan::Kernel::Softmax, fbb.CreateVector(inputs), fbb.CreateVector(outputs),
      fbb.CreateVector(spec.ints), fbb.CreateVector(std::vector<float>{}), 0,
      fbb.CreateString("softmax"))};
  std::vector<flatbuffers::Offset<plan::Binding>> in{
      plan::CreateBinding(fbb, fbb.CreateString("x"), 0)},
      out{plan::CreateBinding(fbb, fbb.CreateString("y"), 1)};
  flatbuffers::Offset<plan::CostPrediction> prediction;
  if (spec.prediction) {
    const auto &[device, step, exposed] = *spec.prediction;
    prediction = plan::CreateCostPrediction(fbb, fbb.CreateString(device), step, step / 2,
                                            step / 4, exposed);
  }
  auto producer = fbb.CreateString("test"), source = fbb.CreateString(""),
       mode = fbb.CreateString("forward");
  auto bufferTable = fbb.CreateVector(buffers);
  auto instructionTable = fbb.CreateVector(instructions);
  auto inTable = fbb.CreateVector(in), outTable = fbb.CreateVector(out);
  plan::PlanBuilder root(fbb);
  root.add_format_version(rt::kPlanFormatVersion);
  root.add_producer(producer);
  root.add_source(source);
  root.add_mode(mode);
  root.add_buffers(bufferTable);
  root.add_instructions(instructionTable);
  root.add_inputs(inTable);
  root.add_outputs(outTable);
  root.add_persistent_bytes(64);
  root.add_arena_bytes(spec.arenaBytes);
  root.add_prediction(prediction);
  plan::FinishPlanBuffer(fbb, root.Finish());
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

/// One instruction of a training plan, by buffer names of trainBuffers().
struct TrainInstruction {
  plan::Kernel kernel;
  std::vector<uint32_t> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  uint8_t stream = 0;
  std::vector<uint32_t> waits = {};
  int32_t signal = -1;
};

/// The fields of a training plan that its tests vary.
struct TrainSpec {
  std::vector<TrainInstruction> instructions;
  std::vector<std::pair<std::string, uint32_t>> state = {{"w.exp_avg", 2}, {"w.exp_avg_sq", 3}};
  uint32_t lrBuffer = 4, stepBuffer = 5;
  std::string lossOutput = "loss";
  uint8_t numStreams = 1;
  uint32_t numEvents = 0;
  uint32_t evalEnd = 0, evalLoss = rt::kNoBuffer; // the evaluation prefix
  // fp16 loss scaling's fields (none by default).
  uint32_t lossScaleBuffer = 0xFFFFFFFF, invLossScaleBuffer = 0xFFFFFFFF;
  std::string foundInfOutput;
  uint32_t growthInterval = 0;
};

/// Buffers of the training plans, one per 64-byte slot of the persistent
/// region except `g` (the arena): w, g, m, v f32[4]; lr f64[]; step i64[];
/// loss f32[]; lr32 f32[]; vec f64[1]; idx i64[4]; x f32[2, 4].
enum TrainBuffer : uint32_t { W, G, M, V, Lr, Step, Loss, Lr32, Vec, Idx, X };

/// A buffer of the hand-built plans (region and offset where not implied).
struct BufferDef {
  const char *name;
  plan::DType dtype;
  std::vector<int64_t> shape;
  uint64_t size;
  plan::Region region = plan::Region::Persistent;
  uint64_t offset = 0;
  uint64_t rankStride = 0;
  uint32_t rankGroup = 1;
};

std::vector<flatbuffers::Offset<plan::Instruction>>
createInstructions(flatbuffers::FlatBufferBuilder &fbb, const std::vector<TrainInstruction> &list) {
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions;
  for (const TrainInstruction &inst : list)
    instructions.push_back(plan::CreateInstruction(
        fbb, inst.kernel, fbb.CreateVector(inst.inputs), fbb.CreateVector(inst.outputs),
        fbb.CreateVector(inst.ints), fbb.CreateVector(inst.floats), inst.stream,
        fbb.CreateString("i"), fbb.CreateVector(inst.waits), inst.signal));
  return instructions;
}

std::vector<uint8_t> buildTrainPlan(const TrainSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  const std::vector<BufferDef> defs = {
      {"w", plan::DType::F32, {4}, 16},     {"g", plan::DType::F32, {4}, 16},
      {"m", plan::DType::F32, {4}, 16},     {"v", plan::DType::F32, {4}, 16},
      {"lr", plan::DType::F64, {}, 8},      {"step", plan::DType::I64, {}, 8},
      {"loss", plan::DType::F32, {}, 4},    {"lr32", plan::DType::F32, {}, 4},
      {"vec", plan::DType::F64, {1}, 8},    {"idx", plan::DType::I64, {4}, 32},
      {"x", plan::DType::F32, {2, 4}, 32}};
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  for (size_t i = 0; i < defs.size(); ++i)
    buffers.push_back(plan::CreateBuffer(
        fbb, fbb.CreateString(defs[i].name), defs[i].dtype, fbb.CreateVector(defs[i].shape),
        i == G ? plan::Region::Arena : plan::Region::Persistent, i == G ? 0 : 64 * i,
        defs[i].size));
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions =
      createInstructions(fbb, spec.instructions);
  std::vector<flatbuffers::Offset<plan::Binding>> state, out{
      plan::CreateBinding(fbb, fbb.CreateString("loss"), Loss)};
  for (const auto &[name, buffer] : spec.state)
    state.push_back(plan::CreateBinding(fbb, fbb.CreateString(name), buffer));
  auto root = plan::CreatePlan(
      fbb, rt::kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString(""),
      fbb.CreateString("train"), 1, fbb.CreateVector(buffers), fbb.CreateVector(instructions), 0,
      0, 0, fbb.CreateVector(out), 64 * defs.size(), 64, spec.numStreams, 0, 0, 0, spec.numEvents,
      fbb.CreateVector(state), spec.lrBuffer, spec.stepBuffer, fbb.CreateString(spec.lossOutput),
      fbb.CreateString("adamw"), 1e-3, 0, 0, 0, 0, 0, spec.evalEnd, spec.evalLoss, 1,
      spec.lossScaleBuffer, spec.invLossScaleBuffer,
      spec.foundInfOutput.empty() ? 0 : fbb.CreateString(spec.foundInfOutput),
      spec.growthInterval);
  plan::FinishPlanBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

const TrainInstruction kAdamW{plan::Kernel::AdamW, {W, G, M, V, Lr, Step}, {W, M, V}, {},
                              {0.9f, 0.999f, 1e-8f, 0.01f}};

class PlanFileTest : public ::testing::Test {
protected:
  // One file per process and test: ctest runs tests in parallel processes.
  std::string path = ::testing::TempDir() + "fsdp-plan-test-" + std::to_string(::getpid()) + "-" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".plan";
  void TearDown() override { std::remove(path.c_str()); }

  rt::Status writeAndLoad(const std::vector<uint8_t> &fb) {
    EXPECT_TRUE(rt::writePlanFile(path, fb.data(), fb.size()).isOk());
    rt::LoadedPlan plan;
    return rt::loadPlan(path, plan);
  }
  std::string fileBytes() {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  rt::Status loadBytes(const std::string &bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
    rt::LoadedPlan plan;
    return rt::loadPlan(path, plan);
  }
};

TEST_F(PlanFileTest, ValidPlanLoads) {
  std::vector<uint8_t> fb = buildPlan({});
  ASSERT_TRUE(rt::writePlanFile(path, fb.data(), fb.size()).isOk());
  rt::LoadedPlan plan;
  rt::Status status = rt::loadPlan(path, plan);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(plan.plan().instructions()->size(), 1u);
  EXPECT_EQ(plan.hash(), rt::contentHash(fb.data(), fb.size()));
}

TEST_F(PlanFileTest, DamageIsRefusedWithTheFileName) {
  std::vector<uint8_t> fb = buildPlan({});
  ASSERT_TRUE(writeAndLoad(fb).isOk());
  std::string good = fileBytes();
  for (size_t cut = 0; cut < good.size(); cut += 7) {
    rt::Status s = loadBytes(good.substr(0, cut));
    ASSERT_FALSE(s.isOk()) << "truncated at " << cut;
    EXPECT_EQ(s.message().rfind(path, 0), 0u) << s.message();
  }
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x20;
    EXPECT_FALSE(loadBytes(bad).isOk()) << "flipped byte " << i;
  }
  EXPECT_NE(loadBytes("not a plan at all, just some text....").message().find("bad magic"),
            std::string::npos);
  std::string otherVersion = good;
  otherVersion[8] = 99;
  EXPECT_NE(loadBytes(otherVersion).message().find("plan format version 99"), std::string::npos);
  EXPECT_NE(loadBytes(good + "x").message().find("trailing"), std::string::npos);
}

// A compiled step binary's plan: the FlatBuffer without a header, checked
// against the hash the file's header would carry, with the same verifier.
TEST_F(PlanFileTest, PlanFromMemoryIsTheFilesPlan) {
  std::vector<uint8_t> fb = buildPlan({});
  ASSERT_TRUE(rt::writePlanFile(path, fb.data(), fb.size()).isOk());
  rt::LoadedPlan fromFile;
  ASSERT_TRUE(rt::loadPlan(path, fromFile).isOk());
  // In place when aligned, copied when not: both load.
  void *raw = nullptr;
  ASSERT_EQ(posix_memalign(&raw, rt::kBufferAlignment, fb.size() + 1), 0);
  std::unique_ptr<uint8_t, void (*)(void *)> aligned(static_cast<uint8_t *>(raw), std::free);
  for (uint8_t *bytes : {aligned.get(), aligned.get() + 1}) {
    std::memcpy(bytes, fb.data(), fb.size());
    rt::LoadedPlan plan;
    rt::Status s = rt::loadPlanFromMemory(bytes, fb.size(), fromFile.hash(), "/bin/step", plan);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(plan.hash(), fromFile.hash());
    EXPECT_EQ(plan.path(), "/bin/step");
    EXPECT_EQ(plan.directory(), "/bin");
    EXPECT_EQ(plan.plan().instructions()->size(), 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(plan.flatbuffer()) % rt::kBufferAlignment, 0u);
    EXPECT_EQ(plan.flatbuffer() == bytes, bytes == aligned.get());
  }
  rt::LoadedPlan plan;
  EXPECT_EQ(rt::loadPlanFromMemory(fb.data(), fb.size(), fromFile.hash() ^ 1, "step", plan)
                .message(),
            "step: plan is corrupted (content hash mismatch)");
  EXPECT_EQ(rt::loadPlanFromMemory(nullptr, 0, 0, "step", plan).message(),
            "step: the embedded plan is empty");
  // Damage the hash does not catch (it is recomputed) is still verified.
  PlanSpec outside;
  outside.bufferOffset = 64; // arena is 64 bytes: [64, 80) lies outside
  std::vector<uint8_t> bad = buildPlan(outside);
  rt::Status s = rt::loadPlanFromMemory(bad.data(), bad.size(),
                                        rt::contentHash(bad.data(), bad.size()), "step", plan);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("lies outside"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("step"), std::string::npos) << s.message();
}

TEST_F(PlanFileTest, SemanticErrorsAreRefused) {
  PlanSpec outside;
  outside.bufferOffset = 64; // arena is 64 bytes: [64, 80) lies outside
  EXPECT_NE(writeAndLoad(buildPlan(outside)).message().find("lies outside"), std::string::npos);
  PlanSpec badOperand;
  badOperand.operand = 7;
  EXPECT_NE(writeAndLoad(buildPlan(badOperand)).message().find("names buffer 7"),
            std::string::npos);
  PlanSpec badAttrs;
  badAttrs.ints = {};
  EXPECT_NE(writeAndLoad(buildPlan(badAttrs)).message().find("integer attributes"),
            std::string::npos);
  PlanSpec unaligned;
  unaligned.arenaBytes = 60;
  EXPECT_FALSE(writeAndLoad(buildPlan(unaligned)).isOk());
}

// The cost prediction a plan may carry must name its device profile and
// give finite, non-negative seconds.
TEST_F(PlanFileTest, CostPredictionIsChecked) {
  PlanSpec spec;
  spec.prediction = {"h100", 1e-3, 2e-4};
  ASSERT_TRUE(writeAndLoad(buildPlan(spec)).isOk());
  spec.prediction = {"", 1e-3, 2e-4};
  EXPECT_NE(writeAndLoad(buildPlan(spec)).message().find("names no device profile"),
            std::string::npos);
  spec.prediction = {"h100", std::nan(""), 0};
  EXPECT_NE(writeAndLoad(buildPlan(spec)).message().find("the cost prediction's step_s is nan"),
            std::string::npos);
  spec.prediction = {"h100", 1e-3, -1};
  const std::string message = writeAndLoad(buildPlan(spec)).message();
  EXPECT_NE(message.find("exposed_communication_s is -1"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("not a finite number of seconds >= 0"), std::string::npos) << message;
}

TEST_F(PlanFileTest, TrainingPlanLoads) {
  constexpr uint32_t none = rt::kNoBuffer;
  TrainSpec spec;
  spec.instructions = {
      kAdamW,
      {plan::Kernel::Sgd, {W, G, M, Lr}, {W, M}, {1}, {0.9f, 0.0f}},
      {plan::Kernel::Sgd, {W, G, none, Lr}, {W}, {0}, {0.0f, 0.0f}},
      {plan::Kernel::ReluGrad, {W, G}, {G}, {}, {}},
      {plan::Kernel::LogSoftmaxGrad, {X, X}, {X}, {1}, {}},
      {plan::Kernel::LayerNormGrad, {X, W, X, X, X}, {X, W, W}, {1}, {}},
      {plan::Kernel::GatherGrad, {Idx, X}, {X}, {0}, {}},
      {plan::Kernel::SliceGrad, {X}, {X}, {0, 0, 1, 1}, {}},
      {plan::Kernel::SoftmaxCrossEntropyGrad, {X, Idx, none, Loss}, {X}, {2, 0, 0}, {}},
      {plan::Kernel::NllLossGrad, {Idx, W, Loss}, {X}, {1, 1, -100}, {}},
      {plan::Kernel::ReduceMaxGrad, {X, X, X}, {X}, {1}, {}},
      {plan::Kernel::DropoutGrad, {X, X}, {X}, {}, {0.1f}}};
  rt::Status status = writeAndLoad(buildTrainPlan(spec));
  EXPECT_TRUE(status.isOk()) << status.message();
  spec.lrBuffer = spec.stepBuffer = none; // unset scalars are fine
  spec.lossOutput = "";
  spec.state.clear();
  status = writeAndLoad(buildTrainPlan(spec));
  EXPECT_TRUE(status.isOk()) << status.message();
}

TEST_F(PlanFileTest, TrainingKernelCountsAreChecked) {
  constexpr uint32_t none = rt::kNoBuffer;
  auto refusal = [&](const TrainInstruction &inst) {
    TrainSpec spec;
    spec.instructions = {inst};
    return writeAndLoad(buildTrainPlan(spec)).message();
  };
  const auto has = [](const std::string &message, const char *text) {
    return message.find(text) != std::string::npos;
  };
  // Sgd: a second result exactly when the momentum buffer is present.
  EXPECT_TRUE(has(refusal({plan::Kernel::Sgd, {W, G, M, Lr}, {W}, {0}, {0.9f, 0.0f}}),
                  "(Sgd): has 1 results"));
  EXPECT_TRUE(has(refusal({plan::Kernel::Sgd, {W, G, none, Lr}, {W, M}, {0}, {0.0f, 0.0f}}),
                  "(Sgd): has 2 results"));
  EXPECT_TRUE(has(refusal({plan::Kernel::Sgd, {W, G, M, Lr}, {W, M}, {}, {0.9f, 0.0f}}),
                  "integer attributes"));
  EXPECT_TRUE(has(refusal({plan::Kernel::AdamW, {W, G, M, V, Lr}, {W, M, V}, {}, kAdamW.floats}),
                  "(AdamW): has 5 operands"));
  EXPECT_TRUE(has(refusal({plan::Kernel::AdamW, kAdamW.inputs, kAdamW.outputs, {}, {0.9f}}),
                  "float attributes"));
  // Only declared optional operands may be absent.
  EXPECT_TRUE(has(refusal({plan::Kernel::AdamW, {W, G, none, V, Lr, Step}, kAdamW.outputs, {},
                           kAdamW.floats}),
                  "operand 2 names buffer"));
  EXPECT_TRUE(has(refusal({plan::Kernel::NllLossGrad, {Idx, W, none}, {X}, {1, 0, 0}, {}}),
                  "operand 2 names buffer"));
  EXPECT_TRUE(has(refusal({plan::Kernel::LayerNormGrad, {X, W, X, X}, {X, W, W}, {1}, {}}),
                  "(LayerNormGrad): has 4 operands"));
  EXPECT_TRUE(has(refusal({plan::Kernel::SliceGrad, {X}, {X}, {0, 0}, {}}), "integer attributes"));
  EXPECT_TRUE(has(refusal({plan::Kernel::DropoutGrad, {X, X}, {X}, {}, {}}), "float attributes"));
}

/// fp16 loss scaling: the scale and its reciprocal persistent f32 scalars,
/// found_inf an output, all four fields or none.
TEST_F(PlanFileTest, LossScalingFieldsAreChecked) {
  auto scaled = [] {
    TrainSpec spec;
    spec.instructions = {kAdamW};
    spec.lossScaleBuffer = spec.invLossScaleBuffer = Lr32;
    spec.foundInfOutput = "loss";
    spec.growthInterval = 2000;
    return spec;
  };
  EXPECT_TRUE(writeAndLoad(buildTrainPlan(scaled())).isOk())
      << writeAndLoad(buildTrainPlan(scaled())).message();
  auto refusal = [&](const TrainSpec &spec) {
    return writeAndLoad(buildTrainPlan(spec)).message();
  };
  TrainSpec wrongType = scaled();
  wrongType.lossScaleBuffer = Lr;
  EXPECT_NE(refusal(wrongType).find("loss_scale_buffer must be a persistent f32 scalar"),
            std::string::npos) << refusal(wrongType);
  TrainSpec partial = scaled();
  partial.growthInterval = 0;
  EXPECT_NE(refusal(partial).find("loss scaling needs loss_scale_buffer"), std::string::npos)
      << refusal(partial);
  TrainSpec notOutput = scaled();
  notOutput.foundInfOutput = "w";
  EXPECT_NE(refusal(notOutput).find("found_inf_output 'w' is not an output binding"),
            std::string::npos) << refusal(notOutput);
}

TEST_F(PlanFileTest, TrainingFieldsAreChecked) {
  auto refusal = [&](const TrainSpec &spec) {
    return writeAndLoad(buildTrainPlan(spec)).message();
  };
  const auto has = [](const std::string &message, const char *text) {
    return message.find(text) != std::string::npos;
  };
  TrainSpec arenaState;
  arenaState.state = {{"w.exp_avg", G}};
  EXPECT_TRUE(has(refusal(arenaState), "state 'w.exp_avg' is not in the persistent region"));
  TrainSpec missingState;
  missingState.state = {{"w.exp_avg", 99}};
  EXPECT_TRUE(has(refusal(missingState), "state binding 0 is invalid"));
  for (uint32_t bad : {uint32_t(Lr32), uint32_t(Vec), uint32_t(Step), uint32_t(99)}) {
    TrainSpec lr;
    lr.lrBuffer = bad;
    EXPECT_TRUE(has(refusal(lr), "lr_buffer")) << bad;
  }
  TrainSpec lrMessage;
  lrMessage.lrBuffer = Lr32;
  EXPECT_TRUE(has(refusal(lrMessage), "lr_buffer must be a persistent f64 scalar"))
      << refusal(lrMessage);
  TrainSpec step;
  step.stepBuffer = Lr;
  EXPECT_TRUE(has(refusal(step), "step_buffer must be a persistent i64 scalar"));
  TrainSpec loss;
  loss.lossOutput = "w";
  EXPECT_TRUE(has(refusal(loss), "loss_output 'w' is not an output binding"));
  // More events than instructions is refused before any per-event table is
  // sized from the count (found by fuzz-plan: 2^32 - 1 events asked for 32 GiB).
  TrainSpec events;
  events.numEvents = 0xFFFFFFFFu;
  EXPECT_TRUE(has(refusal(events), "4294967295 events for")) << refusal(events);
}

// The evaluation prefix (runtime/plan/EvalPrefixCheck.h): it may write
// arena values and outputs only, wait only on events it signals, and must
// write its float scalar loss.
TEST_F(PlanFileTest, EvalPrefixIsChecked) {
  const TrainInstruction loss{plan::Kernel::Copy, {Lr32}, {Loss}, {}, {}};
  const TrainInstruction toArena{plan::Kernel::Copy, {W}, {G}, {}, {}};
  auto check = [&](const TrainSpec &spec) { return writeAndLoad(buildTrainPlan(spec)); };
  auto refusal = [&](const TrainSpec &spec) { return check(spec).message(); };
  const auto has = [](const std::string &message, const char *text) {
    return message.find(text) != std::string::npos;
  };
  TrainSpec valid;
  valid.instructions = {toArena, loss, kAdamW};
  valid.evalEnd = 2;
  valid.evalLoss = Loss;
  rt::Status status = check(valid);
  EXPECT_TRUE(status.isOk()) << status.message();

  TrainSpec writesState = valid; // the update inside the prefix
  writesState.instructions = {kAdamW, loss};
  EXPECT_TRUE(has(refusal(writesState), "instruction 0 (AdamW 'i') writes buffer 0 'w', which "
                                        "the training keeps"))
      << refusal(writesState);
  TrainSpec past = valid;
  past.evalEnd = 4;
  EXPECT_TRUE(has(refusal(past), "is past the plan's 3 instructions")) << refusal(past);
  TrainSpec notScalar = valid;
  notScalar.evalLoss = Idx;
  EXPECT_TRUE(has(refusal(notScalar), "is not a float scalar")) << refusal(notScalar);
  TrainSpec lossLater = valid;
  lossLater.evalEnd = 1;
  EXPECT_TRUE(has(refusal(lossLater), "no instruction of the prefix writes the loss buffer"))
      << refusal(lossLater);
  TrainSpec stray = valid;
  stray.evalEnd = 0;
  EXPECT_TRUE(has(refusal(stray), "eval_loss_buffer is set without an evaluation prefix"));

  // The loss waits for a copy-stream copy that comes after it in plan
  // order: a valid step, but its prefix alone would wait forever.
  TrainSpec waits;
  waits.numStreams = 3;
  waits.numEvents = 1;
  waits.instructions = {{plan::Kernel::Copy, {Lr32}, {Loss}, {}, {}, 0, {0}},
                        {plan::Kernel::Copy, {W}, {G}, {}, {}, 2, {}, 0}};
  waits.evalEnd = 2;
  waits.evalLoss = Loss;
  status = check(waits);
  EXPECT_TRUE(status.isOk()) << status.message();
  waits.evalEnd = 1;
  EXPECT_TRUE(has(refusal(waits), "waits on event 0, which no instruction of the prefix signals"))
      << refusal(waits);
}

/// Buffers of the sharded plans (world size 4, one unit of 7 elements padded
/// to 4 shards of 2): shard f32[2], full f32[8], gflat f32[8], gshard
/// f32[2], ga f32[3], gb f32[2, 2], cnt i64[2], shardArena f32[2] (arena),
/// shardF64 f64[2], shard3 f32[3]; and a unit gathered in place: gathered
/// f32[64] (persistent) whose rank-strided 64-byte chunks are chunk f32[16].
enum ShardBuffer : uint32_t {
  Shard, Full, GFlat, GShard, GA, GB, Cnt, ShardArena, ShardF64, Shard3, Gathered, Chunk
};

struct ParamDef {
  const char *name;
  std::vector<int64_t> shape;
  uint32_t buffer, unit;
  uint64_t offset;
  plan::DType dtype = plan::DType::F32;
};

struct ShardSpec {
  uint32_t world = 4;
  std::vector<TrainInstruction> instructions = {
      {plan::Kernel::AllGather, {Shard}, {Full}, {4, 0, 1, 2, 3}, {}},
      {plan::Kernel::Flatten, {GA, GB}, {GFlat}, {0, 3}, {}},
      {plan::Kernel::ReduceScatter, {GFlat}, {GShard}, {1, 4, 3, 2, 1, 0}, {}},
      {plan::Kernel::AllReduce, {GShard}, {GShard}, {0, 2, 0, 2, 1, 3}, {}},
      {plan::Kernel::AllReduce, {Cnt}, {Cnt}, {0, 1, 0, 1, 2, 3}, {}}};
  uint64_t flat = 7, padded = 8, shardNumel = 2;
  uint32_t shardBuffer = Shard, groupSize = 4, gatheredBuffer = rt::kNoBuffer;
  uint64_t chunkStride = 64; // rank stride of the chunk buffer
  /// The unit gathered in place: 63 elements in shards of 16.
  void gatherInPlace() {
    flat = 63;
    padded = 64;
    shardNumel = 16;
    shardBuffer = Chunk;
    gatheredBuffer = Gathered;
  }
  std::vector<ParamDef> params = {{"a", {3}, rt::kNoBuffer, 0, 0},
                                  {"b", {2, 2}, rt::kNoBuffer, 0, 3},
                                  {"frozen", {2}, Cnt, 0xFFFFFFFF, 0, plan::DType::I64}};
};

std::vector<uint8_t> buildShardedPlan(const ShardSpec &spec) {
  flatbuffers::FlatBufferBuilder fbb;
  const plan::Region P = plan::Region::Persistent, A = plan::Region::Arena;
  const std::vector<BufferDef> defs = {
      {"shard", plan::DType::F32, {2}, 8, P, 0},      {"full", plan::DType::F32, {8}, 32, A, 0},
      {"gflat", plan::DType::F32, {8}, 32, A, 64},    {"gshard", plan::DType::F32, {2}, 8, P, 64},
      {"ga", plan::DType::F32, {3}, 12, A, 128},      {"gb", plan::DType::F32, {2, 2}, 16, A, 192},
      {"cnt", plan::DType::I64, {2}, 16, P, 128},     {"shard_arena", plan::DType::F32, {2}, 8, A, 256},
      {"shard_f64", plan::DType::F64, {2}, 16, P, 192}, {"shard3", plan::DType::F32, {3}, 12, P, 256},
      {"gathered", plan::DType::F32, {64}, 256, P, 320},
      {"chunk", plan::DType::F32, {16}, 64, P, 320, spec.chunkStride, 4}};
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  for (const BufferDef &d : defs)
    buffers.push_back(plan::CreateBuffer(fbb, fbb.CreateString(d.name), d.dtype,
                                         fbb.CreateVector(d.shape), d.region, d.offset, d.size,
                                         d.rankStride, d.rankGroup));
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions =
      createInstructions(fbb, spec.instructions);
  std::vector<flatbuffers::Offset<plan::Parameter>> params;
  for (const ParamDef &p : spec.params)
    params.push_back(plan::CreateParameter(fbb, fbb.CreateString(p.name), p.dtype,
                                           fbb.CreateVector(p.shape), p.buffer, p.unit, p.offset));
  std::vector<flatbuffers::Offset<plan::Unit>> units{
      plan::CreateUnit(fbb, fbb.CreateString("layers.0"), spec.flat, spec.padded, spec.shardNumel,
                       spec.shardBuffer, spec.groupSize, plan::DType::F32, spec.gatheredBuffer)};
  auto root = plan::CreatePlan(fbb, rt::kPlanFormatVersion, fbb.CreateString("test"),
                               fbb.CreateString(""), fbb.CreateString("forward"), spec.world,
                               fbb.CreateVector(buffers), fbb.CreateVector(instructions),
                               fbb.CreateVector(params), fbb.CreateVector(units), 0, 0, 576, 320);
  plan::FinishPlanBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

class ShardedPlanTest : public PlanFileTest {
protected:
  /// Loads `spec` after `change`; returns the refusal ("" when it loads).
  std::string refusal(const std::function<void(ShardSpec &)> &change) {
    ShardSpec spec;
    change(spec);
    return writeAndLoad(buildShardedPlan(spec)).message();
  }
  /// Refusal of the default plan with instruction `i` replaced.
  std::string instructionRefusal(size_t i, const TrainInstruction &inst) {
    return refusal([&](ShardSpec &spec) { spec.instructions[i] = inst; });
  }
};

#define EXPECT_REFUSED(message, text)                                                              \
  EXPECT_NE((message).find(text), std::string::npos) << "message: " << (message)

TEST_F(ShardedPlanTest, ValidShardedPlanLoads) {
  EXPECT_EQ(refusal([](ShardSpec &) {}), "");
  // Unsharded layouts: a unit without shard buffer whose parameters have
  // their own buffers, and groups of one.
  EXPECT_EQ(refusal([](ShardSpec &s) {
              s.world = 1;
              s.instructions = {{plan::Kernel::AllReduce, {Cnt}, {Cnt}, {0, 1, 0}, {}}};
              s.padded = s.shardNumel = 7;
              s.shardBuffer = rt::kNoBuffer;
              s.groupSize = 1;
              s.params = {{"a", {2}, Shard, 0, 0}};
            }),
            "");
}

TEST_F(ShardedPlanTest, FlattenOffsetsAreChecked) {
  using plan::Kernel;
  EXPECT_REFUSED(instructionRefusal(1, {Kernel::Flatten, {GA, GB}, {GFlat}, {0}, {}}),
                 "(Flatten): has 1 offsets for 2 operands");
  EXPECT_REFUSED(instructionRefusal(1, {Kernel::Flatten, {GA, GB}, {GFlat}, {0, 5}, {}}),
                 "operand 1 (4 elements at offset 5) does not fit in the result's 8 elements");
  EXPECT_REFUSED(instructionRefusal(1, {Kernel::Flatten, {GA, GB}, {GFlat}, {-1, 3}, {}}),
                 "operand 0 (3 elements at offset -1)");
  EXPECT_REFUSED(instructionRefusal(1, {Kernel::Flatten, {GA, Cnt}, {GFlat}, {0, 3}, {}}),
                 "operand 1 is i64, the result f32");
  EXPECT_REFUSED(instructionRefusal(1, {Kernel::Flatten, {GA}, {GFlat}, {0}, {1.0f}}),
                 "float attributes");
}

TEST_F(ShardedPlanTest, CollectiveGroupsAreChecked) {
  using plan::Kernel;
  EXPECT_REFUSED(instructionRefusal(2, {Kernel::ReduceScatter, {GFlat}, {GShard}, {1}, {}}),
                 "(ReduceScatter): has 1 integer attributes, too few for [reduction, group_size");
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard}, {Full}, {}, {}}),
                 "too few for [group_size, ranks...]");
  EXPECT_REFUSED(
      instructionRefusal(2, {Kernel::ReduceScatter, {GFlat}, {GShard}, {3, 4, 0, 1, 2, 3}, {}}),
      "reduction 3 is none of 0 (sum), 1 (avg) and 2 (max)");
  EXPECT_REFUSED(instructionRefusal(3, {Kernel::AllReduce, {GShard}, {GShard}, {0, 3, 0, 1, 2, 3}, {}}),
                 "group size 3 does not divide the world size 4");
  EXPECT_REFUSED(instructionRefusal(3, {Kernel::AllReduce, {GShard}, {GShard}, {0, 0, 0, 1, 2, 3}, {}}),
                 "group size 0 does not divide");
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard}, {Full}, {4, 0, 1, 2}, {}}),
                 "lists 3 ranks for a world of 4");
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard}, {Full}, {4, 0, 1, 1, 3}, {}}),
                 "ranks are not a permutation of 0..3 (rank 1 at position 2)");
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard}, {Full}, {4, 0, 1, 2, 4}, {}}),
                 "not a permutation");
  // Element counts: all-gather out = in x group size, reduce-scatter the
  // other way round, all-reduce equal.
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard}, {Full}, {2, 0, 1, 2, 3}, {}}),
                 "2 elements in, 8 out do not fit a group of 2");
  EXPECT_REFUSED(instructionRefusal(2, {Kernel::ReduceScatter, {GFlat}, {Shard3}, {1, 4, 0, 1, 2, 3}, {}}),
                 "8 elements in, 3 out do not fit a group of 4");
  EXPECT_REFUSED(instructionRefusal(3, {Kernel::AllReduce, {GShard}, {Shard3}, {0, 4, 0, 1, 2, 3}, {}}),
                 "do not fit");
  EXPECT_REFUSED(instructionRefusal(3, {Kernel::AllReduce, {GShard}, {ShardF64}, {0, 4, 0, 1, 2, 3}, {}}),
                 "operand and result dtypes differ");
  EXPECT_REFUSED(instructionRefusal(4, {Kernel::AllReduce, {Cnt}, {Cnt}, {1, 4, 0, 1, 2, 3}, {}}),
                 "avg needs a float type, not i64");
  EXPECT_REFUSED(instructionRefusal(0, {Kernel::AllGather, {Shard, Shard}, {Full}, {4, 0, 1, 2, 3}, {}}),
                 "(AllGather): has 2 operands");
}

TEST_F(ShardedPlanTest, UnitsAreChecked) {
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardNumel = 3; }),
                 "unit 0 ('layers.0'): 4 shards of 3 elements do not make a padded buffer of 8");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.flat = 9; }),
                 "do not make a padded buffer of 8 holding its 9 elements");
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.groupSize = 3;
                   s.padded = 6;
                 }),
                 "unit 0 ('layers.0'): group size 3 does not divide the world size 4");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.groupSize = 0; }), "group size 0");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardBuffer = ShardArena; }),
                 "shard buffer 7 must be a persistent buffer of 2 x f32");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardBuffer = ShardF64; }),
                 "must be a persistent buffer of 2 x f32");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardBuffer = Shard3; }),
                 "must be a persistent buffer of 2 x f32");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardBuffer = 40; }),
                 "shard buffer 40 of 12 does not exist");
}

TEST_F(ShardedPlanTest, UnitsGatheredInPlaceAreChecked) {
  EXPECT_EQ(refusal([](ShardSpec &s) { s.gatherInPlace(); }), "");
  // Each rank's shard must be exactly its chunk of the gathered buffer.
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.gatherInPlace();
                   s.chunkStride = 128;
                 }),
                 "buffer 11 ('chunk'): lies outside its memory region");
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.gatherInPlace();
                   s.chunkStride = 0;
                 }),
                 "shard buffer 11 is not this rank's chunk of gathered buffer 10");
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.gatherInPlace();
                   s.chunkStride = 32;
                 }),
                 "buffer 11 ('chunk'): invalid rank stride");
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.gatherInPlace();
                   s.gatheredBuffer = rt::kNoBuffer;
                 }),
                 "a shard buffer with a rank stride needs a gathered buffer");
  EXPECT_REFUSED(refusal([](ShardSpec &s) {
                   s.gatherInPlace();
                   s.gatheredBuffer = Full;
                 }),
                 "is not this rank's chunk of gathered buffer 1");
}

TEST_F(ShardedPlanTest, ParametersAreChecked) {
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[1].offset = 4; }),
                 "parameter 'b': elements [4, 8) lie outside unit 0's 7 elements");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[0].unit = 0xFFFFFFFF; }),
                 "parameter 'a': has neither a buffer nor a unit");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[0].unit = 3; }),
                 "parameter 'a': unit 3 of 1 does not exist");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.shardBuffer = rt::kNoBuffer; }),
                 "parameter 'a': has no buffer and its unit 0 has no shard buffer");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[0].dtype = plan::DType::F64; }),
                 "parameter 'a' is f64, its unit 0 f32");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[2].buffer = 77; }),
                 "parameter 'frozen': buffer 77 of 12 does not exist");
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[2].dtype = plan::DType::F32; }),
                 "parameter 'frozen' does not match its buffer");
  // The executor sizes a TensorRef (at most kMaxRank dims) by a sharded
  // parameter's shape; a deeper one would overflow it.
  EXPECT_REFUSED(refusal([](ShardSpec &s) { s.params[0].shape.assign(rt::kMaxRank + 1, 1); }),
                 "parameter 'a': shape missing or of rank above 8");
}

} // namespace
