//===- CostModelTest.cpp - predicted instruction and step times -----------===//
//
// Plans built by hand with FlatBufferBuilder whose predicted times are
// worked out from the profiles' datasheet rates: a matmul's 2*M*N*K flops
// at its dtype's rate (transposed operands read K from the right dim),
// the roofline's memory side and the launch floor, elementwise kernels by
// bytes moved, ring collectives with the group size read from their ints
// (intra- and inter-node, all-reduce twice the all-gather), views free;
// a serial step is the sum, two streams ordered by events overlap, and
// the host stream runs beside the device's;
// the liveness replay the trace draws peaks where the memory report says.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/CostModel.h"
#include "compiler/Analysis/MemoryReport.h"
#include "runtime/plan/PlanDType.h"

#include "runtime/support/DType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <gtest/gtest.h>

using namespace fsdp;
using plan::Kernel;

namespace {

/// A plan of arena buffers (dtype, shape; laid out one after another
/// unless placed) and instructions with ints, streams and events.
struct CostPlan {
  struct Buffer {
    plan::DType dtype;
    std::vector<int64_t> shape;
    uint64_t offset, size;
    plan::Region region = plan::Region::Arena;
  };
  struct Inst {
    Kernel kernel;
    std::vector<uint32_t> inputs, outputs;
    std::vector<int64_t> ints;
    uint8_t stream = 0;
    std::vector<uint32_t> waits;
    int32_t signal = -1;
  };
  std::vector<Buffer> buffers;
  std::vector<Inst> insts;
  uint64_t top = 0;
  uint32_t numEvents = 0;
  std::vector<uint8_t> bytes;

  uint32_t buffer(plan::DType dtype, std::vector<int64_t> shape) {
    uint64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    uint64_t size = n * rt::dtypeSize(rt::toDType(dtype));
    buffers.push_back({dtype, std::move(shape), top, size});
    top += (size + 63) / 64 * 64;
    return buffers.size() - 1;
  }
  uint32_t f32(std::vector<int64_t> shape) { return buffer(plan::DType::F32, std::move(shape)); }
  Inst &inst(Kernel k, std::vector<uint32_t> in, std::vector<uint32_t> out,
             std::vector<int64_t> ints = {}) {
    insts.push_back({k, std::move(in), std::move(out), std::move(ints)});
    return insts.back();
  }

  const plan::Plan &build() {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<plan::Buffer>> fbBuffers;
    for (size_t i = 0; i < buffers.size(); ++i)
      fbBuffers.push_back(plan::CreateBuffer(fbb, fbb.CreateString("b" + std::to_string(i)),
                                             buffers[i].dtype, fbb.CreateVector(buffers[i].shape),
                                             buffers[i].region, buffers[i].offset,
                                             buffers[i].size));
    std::vector<flatbuffers::Offset<plan::Instruction>> fbInsts;
    for (size_t i = 0; i < insts.size(); ++i)
      fbInsts.push_back(plan::CreateInstruction(
          fbb, insts[i].kernel, fbb.CreateVector(insts[i].inputs),
          fbb.CreateVector(insts[i].outputs), fbb.CreateVector(insts[i].ints), 0,
          insts[i].stream, fbb.CreateString("i" + std::to_string(i)),
          fbb.CreateVector(insts[i].waits), insts[i].signal));
    auto root = plan::CreatePlan(fbb, rt::kPlanFormatVersion, fbb.CreateString("test"),
                                 fbb.CreateString("model.onnx"), fbb.CreateString("train"), 1,
                                 fbb.CreateVector(fbBuffers), fbb.CreateVector(fbInsts), 0, 0, 0,
                                 0, 0, top, 2, 0, 0, 0, numEvents);
    plan::FinishPlanBuffer(fbb, root);
    bytes.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    EXPECT_TRUE(plan::VerifyPlanBuffer(verifier));
    return *plan::GetPlan(bytes.data());
  }
};

const DeviceProfile &h100() { return deviceProfile(DeviceKind::H100); }

// The profiles carry the datasheet numbers the issue names.
TEST(CostModel, ProfilesHaveTheDatasheetRates) {
  EXPECT_EQ(h100().name, "h100");
  EXPECT_DOUBLE_EQ(h100().bf16Flops, 989e12);
  EXPECT_DOUBLE_EQ(h100().f32Flops, 67e12);
  EXPECT_DOUBLE_EQ(h100().memoryBandwidth, 3.35e12);
  EXPECT_DOUBLE_EQ(h100().intraNodeBandwidth, 350e9);
  EXPECT_DOUBLE_EQ(h100().interNodeBandwidth, 50e9);
  EXPECT_DOUBLE_EQ(h100().collectiveLatency, 10e-6);
  const DeviceProfile &a100 = deviceProfile(DeviceKind::A100);
  EXPECT_DOUBLE_EQ(a100.bf16Flops, 312e12);
  EXPECT_DOUBLE_EQ(a100.f32Flops, 19.5e12);
  EXPECT_DOUBLE_EQ(a100.memoryBandwidth, 2.0e12);
  EXPECT_EQ(deviceProfile(DeviceKind::Cpu).name, "cpu");
}

// A large square f32 matmul is flop-bound at the f32 rate (2 * 1024^3
// flops); in bf16 at the bf16 rate (2 * 4096^3 flops, above the launch
// floor).
TEST(CostModel, MatmulIsTwoMNKAtItsDtypeRate) {
  CostPlan b;
  uint32_t x = b.f32({1024, 1024}), w = b.f32({1024, 1024}), y = b.f32({1024, 1024});
  uint32_t xh = b.buffer(plan::DType::BF16, {4096, 4096}),
           wh = b.buffer(plan::DType::BF16, {4096, 4096}),
           yh = b.buffer(plan::DType::BF16, {4096, 4096});
  b.inst(Kernel::MatMul, {x, w}, {y});
  b.inst(Kernel::MatMul, {xh, wh}, {yh});
  const plan::Plan &p = b.build();
  const double flops = 2.0 * 1024 * 1024 * 1024;
  InstructionCost f32 = predictInstruction(p, 0, h100());
  EXPECT_DOUBLE_EQ(f32.flops, flops);
  EXPECT_EQ(f32.bytes, 3u * 4 * 1024 * 1024);
  EXPECT_EQ(f32.bound, CostBound::Compute);
  EXPECT_DOUBLE_EQ(f32.seconds, flops / 67e12);
  InstructionCost bf16 = predictInstruction(p, 1, h100());
  EXPECT_EQ(bf16.bound, CostBound::Compute);
  EXPECT_DOUBLE_EQ(bf16.seconds, 2.0 * 4096 * 4096 * 4096 / 989e12);
}

// Mixed precision (issue 31): a product of bf16 or f16 operands runs at
// the tensor cores' rate whatever dtype it writes; a bf16 elementwise
// kernel moves half an f32 one's bytes, and the compute cast between the
// two moves 4 + 2 bytes an element.
TEST(CostModel, LowPrecisionIsPricedAtItsOwnRateAndBytes) {
  CostPlan b;
  const int64_t n = 4096;
  uint32_t xh = b.buffer(plan::DType::F16, {n, n}), wh = b.buffer(plan::DType::F16, {n, n}),
           y32 = b.f32({n, n});
  b.inst(Kernel::MatMul, {xh, wh}, {y32});
  uint32_t x = b.f32({1 << 22}), u = b.buffer(plan::DType::BF16, {1 << 22}),
           v = b.buffer(plan::DType::BF16, {1 << 22}), w = b.buffer(plan::DType::BF16, {1 << 22});
  b.inst(Kernel::Cast, {x}, {u});
  b.inst(Kernel::Add, {u, v}, {w});
  const plan::Plan &p = b.build();
  InstructionCost product = predictInstruction(p, 0, h100());
  EXPECT_EQ(product.bound, CostBound::Compute);
  EXPECT_DOUBLE_EQ(product.seconds, 2.0 * n * n * n / 989e12);
  InstructionCost cast = predictInstruction(p, 1, h100());
  EXPECT_EQ(cast.bytes, (4u + 2u) << 22);
  InstructionCost add = predictInstruction(p, 2, h100());
  EXPECT_EQ(add.bytes, 3u * 2 << 22);
  EXPECT_DOUBLE_EQ(add.seconds, 3.0 * (2 << 22) / 3.35e12);
}

// K comes from the operand's contracted dim: with trans_a the first
// operand is stored [K, M]; batch dims count through the result. A thin
// matmul (K = 1) moves more bytes than it computes: memory-bound.
TEST(CostModel, MatmulReadsKFromTheContractedDim) {
  CostPlan b;
  uint32_t at = b.f32({4, 64, 32}), w = b.f32({4, 64, 16}), y = b.f32({4, 32, 16});
  b.inst(Kernel::MatMul, {at, w}, {y}, {1, 0});
  uint32_t g = b.f32({8192, 1}), h = b.f32({1, 8192}), outer = b.f32({8192, 8192});
  b.inst(Kernel::Gemm, {g, h}, {outer}, {0, 0});
  const plan::Plan &p = b.build();
  EXPECT_DOUBLE_EQ(predictInstruction(p, 0, h100()).flops, 2.0 * 4 * 32 * 16 * 64);
  InstructionCost thin = predictInstruction(p, 1, h100());
  EXPECT_DOUBLE_EQ(thin.flops, 2.0 * 8192 * 8192);
  EXPECT_EQ(thin.bound, CostBound::Memory);
  EXPECT_DOUBLE_EQ(thin.seconds, (2.0 * 8192 * 4 + 8192.0 * 8192 * 4) / 3.35e12);
}

// Elementwise kernels move their operands and results over memory
// bandwidth; a tiny one takes the launch floor; a Copy onto its own
// operand's bytes (a view) takes nothing.
TEST(CostModel, ElementwiseIsBytesOverBandwidth) {
  CostPlan b;
  uint32_t x = b.f32({1 << 20}), y = b.f32({1 << 20}), z = b.f32({1 << 20});
  uint32_t s = b.f32({4}), t = b.f32({4});
  b.inst(Kernel::Add, {x, y}, {z});
  b.inst(Kernel::Relu, {s}, {t});
  b.buffers.push_back(b.buffers[x]); // a buffer over x's bytes
  b.inst(Kernel::Copy, {x}, {uint32_t(b.buffers.size() - 1)});
  const plan::Plan &p = b.build();
  InstructionCost add = predictInstruction(p, 0, h100());
  EXPECT_EQ(add.bytes, 3u * 4 << 20);
  EXPECT_EQ(add.bound, CostBound::Memory);
  EXPECT_DOUBLE_EQ(add.seconds, 3.0 * (4 << 20) / 3.35e12);
  InstructionCost relu = predictInstruction(p, 1, h100());
  EXPECT_EQ(relu.bound, CostBound::Floor);
  EXPECT_DOUBLE_EQ(relu.seconds, h100().kernelFloor);
  EXPECT_EQ(predictInstruction(p, 2, h100()).seconds, 0);
}

// Ring cost: (g-1)/g * S / B + latency, S the full tensor, g from the ints
// (all-gather [g, ranks...], the others [reduction, g, ranks...]);
// all-reduce moves it twice; a group beyond one node uses the network.
TEST(CostModel, CollectivesUseTheRingCost) {
  CostPlan b;
  const int64_t n = 1 << 24; // 64 MiB of f32
  uint32_t shard = b.f32({n / 4}), full = b.f32({n}), out = b.f32({n / 4}), red = b.f32({n});
  uint32_t shard16 = b.f32({n / 16}), full16 = b.f32({n});
  b.inst(Kernel::AllGather, {shard}, {full}, {4, 0, 1, 2, 3});
  b.inst(Kernel::ReduceScatter, {full}, {out}, {1, 4, 0, 1, 2, 3});
  b.inst(Kernel::AllReduce, {full}, {red}, {0, 4, 0, 1, 2, 3});
  std::vector<int64_t> ranks16{16};
  for (int r = 0; r < 16; ++r)
    ranks16.push_back(r);
  b.inst(Kernel::AllGather, {shard16}, {full16}, ranks16);
  const plan::Plan &p = b.build();
  const double s = 4.0 * n;
  InstructionCost gather = predictInstruction(p, 0, h100());
  EXPECT_EQ(gather.groupSize, 4u);
  EXPECT_EQ(gather.bytes, uint64_t(s));
  EXPECT_EQ(gather.bound, CostBound::Communication);
  EXPECT_DOUBLE_EQ(gather.seconds, 0.75 * s / 350e9 + 10e-6);
  EXPECT_DOUBLE_EQ(predictInstruction(p, 1, h100()).seconds, 0.75 * s / 350e9 + 10e-6);
  EXPECT_DOUBLE_EQ(predictInstruction(p, 2, h100()).seconds, 1.5 * s / 350e9 + 10e-6);
  InstructionCost wide = predictInstruction(p, 3, h100());
  EXPECT_EQ(wide.groupSize, 16u);
  EXPECT_DOUBLE_EQ(wide.seconds, 15.0 / 16 * s / 50e9 + 10e-6);
}

// One stream: the step is the sum, all of its communication exposed.
TEST(CostModel, OneStreamIsSerial) {
  CostPlan b;
  uint32_t x = b.f32({1 << 20}), y = b.f32({1 << 20}), full = b.f32({1 << 21});
  b.inst(Kernel::Relu, {x}, {y});
  b.inst(Kernel::AllGather, {y}, {full}, {2, 0, 1});
  const plan::Plan &p = b.build();
  StepPrediction step = predictStep(p, h100());
  double relu = predictInstruction(p, 0, h100()).seconds;
  double gather = predictInstruction(p, 1, h100()).seconds;
  EXPECT_FALSE(step.overlapped);
  EXPECT_DOUBLE_EQ(step.stepSeconds, relu + gather);
  EXPECT_DOUBLE_EQ(step.start[1], relu);
  EXPECT_DOUBLE_EQ(step.computeSeconds, relu);
  EXPECT_DOUBLE_EQ(step.communicationSeconds, gather);
  EXPECT_DOUBLE_EQ(step.exposedCommunicationSeconds, gather);
}

// Two streams: A signals e0; the collective C (stream 1) waits for e0 and
// signals e1; B runs beside C; D waits for e1. D starts when the later of
// B and C ends.
TEST(CostModel, EventsOrderTwoStreams) {
  CostPlan b;
  b.numEvents = 2;
  uint32_t a0 = b.f32({1 << 20}), a1 = b.f32({1 << 20});
  uint32_t shard = b.f32({1 << 22}), full = b.f32({1 << 24});
  uint32_t b0 = b.f32({1 << 16}), b1 = b.f32({1 << 16}), d = b.f32({1 << 24});
  b.inst(Kernel::Relu, {a0}, {a1}).signal = 0;
  CostPlan::Inst &c = b.inst(Kernel::AllGather, {shard}, {full}, {4, 0, 1, 2, 3});
  c.stream = 1;
  c.waits = {0};
  c.signal = 1;
  b.inst(Kernel::Neg, {b0}, {b1});
  b.inst(Kernel::Exp, {full}, {d}).waits = {1};
  const plan::Plan &p = b.build();
  StepPrediction step = predictStep(p, h100());
  auto t = [&](uint32_t i) { return predictInstruction(p, i, h100()).seconds; };
  EXPECT_TRUE(step.overlapped);
  EXPECT_EQ(step.numStreams, 2u);
  EXPECT_DOUBLE_EQ(step.start[1], t(0));
  EXPECT_DOUBLE_EQ(step.start[2], t(0)); // beside the collective
  EXPECT_GT(t(1), t(2));
  EXPECT_DOUBLE_EQ(step.start[3], t(0) + t(1));
  EXPECT_DOUBLE_EQ(step.stepSeconds, t(0) + t(1) + t(3));
  EXPECT_DOUBLE_EQ(step.computeSeconds, t(0) + t(2) + t(3));
  EXPECT_DOUBLE_EQ(step.exposedCommunicationSeconds, t(1) - t(2));
}

// The host stream (3, --offload=cpu's optimizer): the gradient's copy to
// the host (copy stream, host link) signals e0; the update (host stream,
// host memory bandwidth) waits for it and runs beside the device's compute.
// Its time is the step's host part: neither device compute nor exposed
// communication, though it ends the step here.
TEST(CostModel, HostStreamRunsBesideTheDevice) {
  CostPlan b;
  b.numEvents = 1;
  uint32_t g = b.f32({1 << 20}), h = b.f32({1 << 20}), param = b.f32({1 << 20});
  b.buffers[h].region = b.buffers[param].region = plan::Region::Host;
  uint32_t x = b.f32({1 << 26}), y = b.f32({1 << 26});
  CostPlan::Inst &copy = b.inst(Kernel::Copy, {g}, {h});
  copy.stream = 2;
  copy.signal = 0;
  CostPlan::Inst &update = b.inst(Kernel::Sgd, {param, h}, {param});
  update.stream = 3;
  update.waits = {0};
  b.inst(Kernel::Relu, {x}, {y});
  const plan::Plan &p = b.build();
  StepPrediction step = predictStep(p, h100());
  auto t = [&](uint32_t i) { return predictInstruction(p, i, h100()).seconds; };
  EXPECT_DOUBLE_EQ(t(0), 4.0 * (1 << 20) / 50e9);  // the host link
  EXPECT_DOUBLE_EQ(t(1), 12.0 * (1 << 20) / 100e9); // host memory: read 2, write 1
  ASSERT_GT(t(2), t(0));
  ASSERT_GT(t(0) + t(1), t(2));
  EXPECT_EQ(step.numStreams, 3u);
  EXPECT_DOUBLE_EQ(step.start[1], t(0));
  EXPECT_DOUBLE_EQ(step.start[2], 0.0); // the device does not wait for it
  EXPECT_DOUBLE_EQ(step.stepSeconds, t(0) + t(1));
  EXPECT_DOUBLE_EQ(step.hostSeconds, t(1));
  EXPECT_DOUBLE_EQ(step.computeSeconds, t(2));
  EXPECT_DOUBLE_EQ(step.communicationSeconds, t(0));
  EXPECT_DOUBLE_EQ(step.exposedCommunicationSeconds, 0.0);
}

// The per-instruction replay the trace draws is the one the memory
// report measures: its largest element is the report's live peak.
TEST(CostModel, LiveBytesPeakWhereTheReportSays) {
  CostPlan b;
  uint32_t x = b.f32({16}), y = b.f32({16}), z = b.f32({16});
  b.inst(Kernel::Relu, {x}, {y});
  b.inst(Kernel::Neg, {y}, {z});
  b.inst(Kernel::Exp, {z}, {x});
  const plan::Plan &p = b.build();
  std::vector<uint64_t> live = arenaLiveBytes(p);
  ASSERT_EQ(live.size(), 3u);
  MemoryReport report = analyzeMemory(p);
  EXPECT_EQ(*std::max_element(live.begin(), live.end()), report.arenaLivePeak);
  EXPECT_EQ(live[report.peakInstruction], report.arenaLivePeak);
}

} // namespace
