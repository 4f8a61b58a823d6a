//===- MemoryReportTest.cpp - a plan's memory, per rank and category ------===//
//
// Plans built by hand with FlatBufferBuilder, small enough to work out
// every number on paper: the persistent region split into parameters,
// optimizer state and io (views and unit shards counted once); arena
// liveness that a view extends past its owner's last direct read; the
// categories at the live peak (gathered parameters are communication,
// Flatten/ReduceScatter results and an optimizer's gradient operand are
// gradients); rows that add up to the allocated peak; one row per rank;
// the JSON keys docs/design.md promises.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/MemoryReport.h"

#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include "llvm/Support/JSON.h"

#include <gtest/gtest.h>

using namespace fsdp;
using plan::Kernel;
using plan::Region;

namespace {

constexpr uint32_t kNone = rt::kNoBuffer;

/// A plan described by its buffers (region, offset, bytes) and
/// instructions (kernel, operands, results); everything else defaulted.
struct PlanBuilder {
  struct Buffer {
    Region region;
    uint64_t offset, size;
  };
  struct Inst {
    Kernel kernel;
    std::vector<uint32_t> inputs, outputs;
  };
  struct Param {
    uint32_t buffer, unit;
  };
  struct Unit {
    uint64_t flat, padded, shard;
    uint32_t shardBuffer, groupSize;
  };
  std::vector<Buffer> buffers;
  std::vector<Inst> insts;
  std::vector<Param> params;
  std::vector<Unit> units;
  std::vector<uint32_t> state, inputs, outputs;
  uint32_t worldSize = 1, lr = kNone, step = kNone;
  uint64_t persistentBytes = 0, arenaBytes = 0;
  std::string strategy;

  uint32_t buffer(Region region, uint64_t offset, uint64_t size) {
    buffers.push_back({region, offset, size});
    return buffers.size() - 1;
  }
  uint32_t arena(uint64_t offset, uint64_t size) { return buffer(Region::Arena, offset, size); }
  uint32_t persistent(uint64_t offset, uint64_t size) {
    return buffer(Region::Persistent, offset, size);
  }
  void inst(Kernel k, std::vector<uint32_t> in, std::vector<uint32_t> out) {
    insts.push_back({k, std::move(in), std::move(out)});
  }

  /// An AdamW step's persistent region, in this order: the parameter (or
  /// unit shard) of `paramBytes`, its two moments, a 64-byte input x, lr
  /// and step, each in 64-byte-aligned slots.
  struct TrainState {
    uint32_t param, m, v, x;
  };
  TrainState trainState(uint64_t paramBytes) {
    uint64_t slot = (paramBytes + 63) / 64 * 64;
    TrainState t{persistent(0, paramBytes), persistent(slot, paramBytes),
                 persistent(2 * slot, paramBytes), persistent(3 * slot, 64)};
    lr = persistent(3 * slot + 64, 8);
    step = persistent(3 * slot + 128, 8);
    persistentBytes = 3 * slot + 192;
    state = {t.m, t.v};
    inputs = {t.x};
    return t;
  }

  /// Serializes, verifies and analyzes.
  MemoryReport analyze() {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<plan::Buffer>> fbBuffers;
    for (size_t i = 0; i < buffers.size(); ++i)
      fbBuffers.push_back(plan::CreateBuffer(
          fbb, fbb.CreateString("b" + std::to_string(i)), plan::DType::U8,
          fbb.CreateVector(std::vector<int64_t>{int64_t(buffers[i].size)}), buffers[i].region,
          buffers[i].offset, buffers[i].size));
    std::vector<flatbuffers::Offset<plan::Instruction>> fbInsts;
    for (size_t i = 0; i < insts.size(); ++i)
      fbInsts.push_back(plan::CreateInstruction(
          fbb, insts[i].kernel, fbb.CreateVector(insts[i].inputs),
          fbb.CreateVector(insts[i].outputs), 0, 0, 0, fbb.CreateString("i" + std::to_string(i))));
    std::vector<flatbuffers::Offset<plan::Parameter>> fbParams;
    for (size_t i = 0; i < params.size(); ++i)
      fbParams.push_back(plan::CreateParameter(fbb, fbb.CreateString("p" + std::to_string(i)),
                                               plan::DType::F32, 0, params[i].buffer,
                                               params[i].unit, 0));
    std::vector<flatbuffers::Offset<plan::Unit>> fbUnits;
    for (size_t i = 0; i < units.size(); ++i)
      fbUnits.push_back(plan::CreateUnit(fbb, fbb.CreateString("u" + std::to_string(i)),
                                         units[i].flat, units[i].padded, units[i].shard,
                                         units[i].shardBuffer, units[i].groupSize,
                                         plan::DType::F32));
    auto bindings = [&](const std::vector<uint32_t> &list, const char *prefix) {
      std::vector<flatbuffers::Offset<plan::Binding>> out;
      for (uint32_t b : list)
        out.push_back(
            plan::CreateBinding(fbb, fbb.CreateString(prefix + std::to_string(b)), b));
      return fbb.CreateVector(out);
    };
    auto fbInputs = bindings(inputs, "in"), fbOutputs = bindings(outputs, "out"),
         fbState = bindings(state, "state");
    auto root = plan::CreatePlan(
        fbb, rt::kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString("model.onnx"),
        fbb.CreateString("train"), worldSize, fbb.CreateVector(fbBuffers),
        fbb.CreateVector(fbInsts), fbb.CreateVector(fbParams), fbb.CreateVector(fbUnits),
        fbInputs, fbOutputs, persistentBytes, arenaBytes, 1, 0, 0, 0, 0, fbState, lr, step, 0,
        fbb.CreateString("adamw"), 1e-3, fbb.CreateString(strategy));
    plan::FinishPlanBuffer(fbb, root);
    flatbuffers::Verifier verifier(fbb.GetBufferPointer(), fbb.GetSize());
    EXPECT_TRUE(plan::VerifyPlanBuffer(verifier));
    return analyzeMemory(*plan::GetPlan(fbb.GetBufferPointer()));
  }
};

uint64_t rowSum(const RankMemory &r) {
  return r.parameters + r.optimizerState + r.io + r.gradients + r.activations +
         r.communication + r.fragmentation;
}

// Parameters (a replicated parameter with a second, view entry over its
// bytes, and a unit's shard holding a parameter without a buffer),
// optimizer state, and the rest (an input, lr, step) as io; 64-byte
// extents, each range once.
TEST(MemoryReport, ClassifiesThePersistentRegion) {
  PlanBuilder b;
  uint32_t w = b.persistent(0, 48);
  uint32_t wView = b.persistent(0, 48); // a reshape of w: same bytes
  uint32_t m = b.persistent(64, 48), v = b.persistent(128, 48);
  uint32_t x = b.persistent(192, 32);
  b.lr = b.persistent(256, 8);
  b.step = b.persistent(320, 8);
  uint32_t shard = b.persistent(384, 100);
  b.persistentBytes = 512;
  b.params = {{w, kNone}, {kNone, 0}};
  b.units = {{25, 25, 25, shard, 1}};
  b.state = {m, v};
  b.inputs = {x};
  b.inst(Kernel::Relu, {wView}, {b.arena(0, 48)});
  b.arenaBytes = 64;
  MemoryReport r = b.analyze();
  ASSERT_EQ(r.ranks.size(), 1u);
  EXPECT_EQ(r.ranks[0].parameters, 64u + 128u);
  EXPECT_EQ(r.ranks[0].optimizerState, 128u);
  EXPECT_EQ(r.ranks[0].io, 192u);
  EXPECT_EQ(r.persistentBytes, 512u);
  EXPECT_EQ(r.peakBytes, 512u + 64u);
  EXPECT_EQ(rowSum(r.ranks[0]), r.peakBytes);
  EXPECT_EQ(r.strategy, "unsharded");
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].parameters, 1u);
  EXPECT_EQ(r.units[0].bytesPerRank, 100u);
}

// A view keeps its owner live: `a` is read directly only by instruction 1,
// but through its view at instruction 3, so at instruction 2 a, b and c
// are all live (256 bytes). Without the view the peak would be 192.
TEST(MemoryReport, ViewsExtendTheirOwnersLifetime) {
  PlanBuilder b;
  uint32_t x = b.persistent(0, 64);
  b.persistentBytes = 64;
  uint32_t a = b.arena(0, 64), bb = b.arena(64, 128), c = b.arena(192, 64);
  uint32_t aView = b.arena(0, 64);
  uint32_t d = b.arena(64, 64); // reuses b's bytes once b is dead
  b.inst(Kernel::Relu, {x}, {a});
  b.inst(Kernel::Relu, {a}, {bb});
  b.inst(Kernel::Relu, {bb}, {c});
  b.inst(Kernel::Relu, {aView}, {d});
  b.arenaBytes = 320; // the allocator left 64 bytes it could not use
  MemoryReport r = b.analyze();
  EXPECT_EQ(r.arenaLivePeak, 256u);
  EXPECT_EQ(r.peakInstruction, 2u);
  EXPECT_EQ(r.peakInstructionName, "i2");
  EXPECT_EQ(r.ranks[0].activations, 256u);
  EXPECT_EQ(r.activationsBytes, 256u);
  EXPECT_EQ(r.ranks[0].fragmentation, 64u);
  EXPECT_EQ(rowSum(r.ranks[0]), r.peakBytes);
  EXPECT_EQ(r.peakBytes, 64u + 320u);
}

// One sharded unit on 4 ranks: the gathered flat parameter (and the
// parameter views inside it) is communication until its last view is read;
// the flat gradient and its shard are gradients. The peak is while the
// gathered buffer is still live: 256 communication + 128 activations.
TEST(MemoryReport, GatheredParametersAreCommunication) {
  PlanBuilder b;
  b.worldSize = 4;
  b.strategy = "full";
  auto [shard, m, v, x] = b.trainState(64);
  b.units = {{60, 64, 16, shard, 4}};
  b.params = {{kNone, 0}, {kNone, 0}};
  uint32_t full = b.arena(0, 256);
  uint32_t w1 = b.arena(0, 64), w2 = b.arena(64, 64); // parameters inside the flat buffer
  uint32_t y = b.arena(256, 64), z = b.arena(320, 64);
  uint32_t dz = b.arena(0, 64), flat = b.arena(64, 128), gradShard = b.arena(192, 64);
  b.inst(Kernel::AllGather, {shard}, {full});
  b.inst(Kernel::MatMul, {x, w1}, {y});
  b.inst(Kernel::MatMul, {y, w2}, {z});
  b.inst(Kernel::ReluGrad, {z, z}, {dz});
  b.inst(Kernel::Flatten, {dz}, {flat});
  b.inst(Kernel::ReduceScatter, {flat}, {gradShard});
  b.inst(Kernel::AdamW, {shard, gradShard, m, v, b.lr, b.step}, {shard, m, v});
  b.arenaBytes = 384;
  MemoryReport r = b.analyze();
  ASSERT_EQ(r.ranks.size(), 4u);
  for (const RankMemory &row : r.ranks) {
    EXPECT_EQ(row.communication, 256u);
    EXPECT_EQ(row.activations, 128u);
    EXPECT_EQ(row.gradients, 0u);
    EXPECT_EQ(row.parameters, 64u);
    EXPECT_EQ(row.optimizerState, 128u);
    EXPECT_EQ(row.io, 192u);
    EXPECT_EQ(rowSum(row), r.peakBytes);
  }
  EXPECT_EQ(r.ranks[3].rank, 3u);
  EXPECT_EQ(r.peakInstruction, 2u);
  EXPECT_EQ(r.arenaLivePeak, 384u);
  ASSERT_EQ(r.units.size(), 1u);
  EXPECT_EQ(r.units[0].parameters, 2u);
  EXPECT_EQ(r.units[0].groupSize, 4u);
  EXPECT_EQ(r.units[0].bytesPerRank, 64u);
}

// After backward, the peak is the flat gradient and its shard: gradients.
// In an unsharded plan, what the optimizer reads as its gradient is a
// gradient too, whatever kernel computed it.
TEST(MemoryReport, GradientsAtThePeak) {
  PlanBuilder b;
  auto [w, m, v, x] = b.trainState(64);
  b.params = {{w, kNone}};
  uint32_t h = b.arena(0, 64), dw = b.arena(64, 128);
  b.inst(Kernel::Relu, {x}, {h});
  b.inst(Kernel::MatMul, {h, x}, {dw}); // h dies here
  b.inst(Kernel::AdamW, {w, dw, m, v, b.lr, b.step}, {w, m, v});
  b.arenaBytes = 192;
  MemoryReport r = b.analyze();
  EXPECT_EQ(r.peakInstruction, 1u);
  EXPECT_EQ(r.ranks[0].gradients, 128u);
  EXPECT_EQ(r.ranks[0].activations, 64u);
  EXPECT_EQ(r.ranks[0].communication, 0u);
  EXPECT_EQ(r.activationsBytes, 64u);
  EXPECT_EQ(rowSum(r.ranks[0]), r.peakBytes);
}

// Mixed precision: the bf16 send copy of the shard, the gathered bf16
// flat buffer and its f32 compute copy are all communication; the flat
// gradient, its bf16 cast, the reduced shard and its f32 cast gradients.
TEST(MemoryReport, CastsKeepTheirSourcesCategory) {
  PlanBuilder b;
  b.worldSize = 2;
  auto [shard, m, v, x] = b.trainState(128);
  b.units = {{64, 64, 32, shard, 2}};
  b.params = {{kNone, 0}};
  uint32_t send = b.arena(0, 64), gathered = b.arena(64, 128), full = b.arena(192, 256);
  uint32_t y = b.arena(0, 64);
  b.inst(Kernel::Cast, {shard}, {send});
  b.inst(Kernel::AllGather, {send}, {gathered});
  b.inst(Kernel::Cast, {gathered}, {full}); // peak: 128 + 256 (send is dead)
  b.inst(Kernel::MatMul, {x, full}, {y});
  uint32_t flat = b.arena(64, 192), flat16 = b.arena(256, 128);
  uint32_t shard16 = b.arena(448, 64), grad = b.arena(0, 128);
  b.inst(Kernel::Flatten, {y}, {flat});
  b.inst(Kernel::Cast, {flat}, {flat16});
  b.inst(Kernel::ReduceScatter, {flat16}, {shard16});
  b.inst(Kernel::Cast, {shard16}, {grad});
  b.inst(Kernel::AdamW, {shard, grad, m, v, b.lr, b.step}, {shard, m, v});
  // The loss averaged over ranks is no gradient.
  uint32_t loss = b.arena(64, 4), lossMean = b.arena(128, 4);
  b.inst(Kernel::ReduceSum, {x}, {loss});
  b.inst(Kernel::AllReduce, {loss}, {lossMean});
  b.inst(Kernel::Copy, {lossMean}, {b.persistent(576, 4)});
  b.persistentBytes = 640;
  b.arenaBytes = 512;
  MemoryReport r = b.analyze();
  EXPECT_EQ(r.peakInstruction, 2u);
  EXPECT_EQ(r.ranks[0].communication, 384u);
  EXPECT_EQ(r.ranks[0].activations, 0u);
  EXPECT_EQ(r.ranks[0].gradients, 0u);
  EXPECT_EQ(r.activationsBytes, 128u); // the loss and its mean
  EXPECT_EQ(r.ranks[0].io, 4 * 64u); // x, lr, step, loss
  EXPECT_EQ(rowSum(r.ranks[0]), r.peakBytes);
}

// Two written buffers over the same bytes, both live, count once.
TEST(MemoryReport, OverlappingOwnersCountOnce) {
  PlanBuilder b;
  uint32_t x = b.persistent(0, 64);
  b.persistentBytes = 64;
  uint32_t a = b.arena(0, 128), inner = b.arena(64, 64), c = b.arena(128, 64);
  b.inst(Kernel::Relu, {x}, {a});
  b.inst(Kernel::Relu, {x}, {inner}); // writes into a's upper half
  b.inst(Kernel::Add, {a, inner}, {c});
  b.arenaBytes = 192;
  MemoryReport r = b.analyze();
  EXPECT_EQ(r.arenaLivePeak, 192u);
  EXPECT_EQ(rowSum(r.ranks[0]), r.peakBytes);
}

// The JSON form has docs/design.md's keys and one rank object per rank; the
// text form one table row per rank.
TEST(MemoryReport, RendersJsonAndText) {
  PlanBuilder b;
  b.worldSize = 2;
  b.strategy = "grad-op";
  uint32_t x = b.persistent(0, 64);
  b.persistentBytes = 64;
  b.inst(Kernel::Relu, {x}, {b.arena(0, 2048)});
  b.arenaBytes = 2048;
  MemoryReport r = b.analyze();
  std::string json = renderMemoryReport(r, true);
  for (const char *key :
       {"\"peak_bytes\": 2112", "\"activations_bytes\": 2048", "\"world_size\": 2",
        "\"strategy\": \"grad-op\"", "\"ranks\": [", "\"rank\": 1", "\"parameters\": 0",
        "\"gradients\": 0", "\"optimizer_state\": 0", "\"activations\": 2048",
        "\"communication\": 0", "\"io\": 64", "\"peak\": 2112", "\"units\": []"})
    EXPECT_NE(json.find(key), std::string::npos) << key << " in\n" << json;
  size_t rows = 0;
  for (size_t at = json.find("\"rank\":"); at != std::string::npos;
       at = json.find("\"rank\":", at + 1))
    ++rows;
  EXPECT_EQ(rows, 2u);
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.substr(json.size() - 2), "}\n");

  std::string text = renderMemoryReport(r, false);
  EXPECT_NE(text.find("world size 2, strategy grad-op"), std::string::npos) << text;
  EXPECT_NE(text.find("2.00 KiB"), std::string::npos) << text;
  EXPECT_NE(text.find("2112"), std::string::npos) << text;
  EXPECT_NE(text.find("\n     0  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n     1  "), std::string::npos) << text;
}

// The JSON form (written through llvm::json) parses as JSON whatever a
// model names things: quotes, backslashes and control characters are
// escaped, bytes that are not UTF-8 become U+FFFD, and an absent peak or
// time is null.
TEST(MemoryReport, JsonParsesWhateverTheNames) {
  MemoryReport r;
  r.source = "a \"b\" \\ \t\n\x01 \xff";
  r.units.push_back(UnitMemory{});
  r.units[0].name = "u\"0";
  r.configurations.push_back(ConfigurationRow{});
  r.gradAccum = 2;
  r.accumulation.push_back(UnitAccumulation{});
  const std::string json = renderMemoryReport(r, true);
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  ASSERT_TRUE(static_cast<bool>(parsed)) << llvm::toString(parsed.takeError()) << "\n" << json;
  const llvm::json::Object &o = *parsed->getAsObject();
  EXPECT_EQ(o.getString("source"), llvm::StringRef("a \"b\" \\ \t\n\x01 \xef\xbf\xbd"));
  EXPECT_EQ((*o.getArray("units"))[0].getAsObject()->getString("name"), llvm::StringRef("u\"0"));
  const llvm::json::Object &row = *(*o.getArray("configurations"))[0].getAsObject();
  EXPECT_EQ(row.get("peak_bytes")->kind(), llvm::json::Value::Null);
  EXPECT_EQ(row.get("predicted_step_s")->kind(), llvm::json::Value::Null);
  EXPECT_EQ(o.getInteger("grad_accum"), 2);
}

} // namespace
