//===- KernelTableTest.cpp - the kernel table is the runtime's one contract ===//
//
// The runtime half of the proof that runtime/plan/Kernels.def is the single
// source of the kernel contract (the compiler half, that every row has an
// op that lowers to it, is tests/unit/compiler/KernelEncodingTest.cpp).
// Rows and plan.fbs's enum agree name by name (the build already ties
// their positions). Every compute row has a CPU implementation: an
// instruction built from the row's counts reaches a kernel rather than
// CpuLaunch's "not implemented" (a code past the table does not, which
// shows the check can fail). And PlanCheck accepts exactly what the row
// says: an instruction with the row's counts passes, one with an operand,
// an integer or a float attribute too many is refused.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/KernelTable.h"

#include "runtime/backends/cpu/CpuLaunch.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace fsdp;
using namespace fsdp::rt;

/// Every test tensor: f32[2, 2], so a "rank" count is 2.
constexpr int kTestRank = 2;
constexpr uint64_t kTestBytes = 4 * sizeof(float);

/// An instruction that fits `info`'s row: the fewest operands it allows,
/// every operand present, and attributes the layout accepts on f32[2, 2]
/// operands (identity permutations, whole slices, axis 0, a one-rank world).
struct RowInstruction {
  int inputs = 0, outputs = 0;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

RowInstruction instructionFor(uint16_t kernel) {
  const KernelInfo &info = *kernelInfo(kernel);
  RowInstruction inst;
  inst.inputs = info.minInputs;
  inst.outputs = info.outputs == kAny ? 1 : info.outputs == kOnePlusOptional ? 2 : info.outputs;
  switch (info.ints) {
  case kAny:
  case kNoneOrTwo:
    break;
  case kRank:
    inst.ints = {0, 1};
    break; // identity permutation
  case kTwiceRank:
    inst.ints = {0, 0, 1, 1};
    break; // starts 0, steps 1
  case kProgram:
    inst.ints = {0, 0};
    break; // no ops; result = input 0
  case kOwnLayout:
    if (kernel == static_cast<uint16_t>(plan::Kernel::Flatten))
      inst.ints.assign(inst.inputs, 0); // every input at offset 0
    else if (kernel == static_cast<uint16_t>(plan::Kernel::AllGather))
      inst.ints = {1, 0}; // group_size 1, ranks [0]
    else
      inst.ints = {0, 1, 0}; // sum, group_size 1, ranks [0]
    break;
  default:
    inst.ints.assign(info.ints, 0);
  }
  inst.floats.assign(info.floats, 0.0f);
  return inst;
}

TEST(KernelTable, RowsAreTheSchemaEnumByName) {
  ASSERT_EQ(kNumKernels, static_cast<size_t>(plan::Kernel::MAX) + 1);
  for (uint16_t k = 0; k < kNumKernels; ++k) {
    ASSERT_NE(kernelInfo(k), nullptr) << k;
    EXPECT_STREQ(kernelInfo(k)->name, plan::EnumNameKernel(static_cast<plan::Kernel>(k)));
    EXPECT_STREQ(kernelName(k), kernelInfo(k)->name);
    EXPECT_NE(std::string(kernelInfo(k)->operands), "") << kernelInfo(k)->name;
  }
  EXPECT_EQ(kernelInfo(static_cast<uint16_t>(kNumKernels)), nullptr);
  EXPECT_STREQ(kernelName(static_cast<uint16_t>(kNumKernels)), "unknown");
  std::vector<std::string> collectives;
  for (uint16_t k = 0; k < kNumKernels; ++k)
    if (isCollective(k))
      collectives.push_back(kernelName(k));
  EXPECT_EQ(collectives, (std::vector<std::string>{"AllGather", "ReduceScatter", "AllReduce"}));
}

/// Launches `kernel` on zero-filled f32[2, 2] tensors shaped by its row.
Status launchRow(uint16_t kernel, const RowInstruction &inst) {
  std::vector<std::vector<float>> storage(inst.inputs + inst.outputs, std::vector<float>(16, 0));
  std::vector<TensorRef> tensors(storage.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    tensors[i].rank = kTestRank;
    tensors[i].dims[0] = tensors[i].dims[1] = 2;
    tensors[i].data = storage[i].data();
  }
  Launch launch;
  launch.kernel = kernel;
  launch.inputs = tensors.data();
  launch.numInputs = inst.inputs;
  launch.outputs = tensors.data() + inst.inputs;
  launch.numOutputs = inst.outputs;
  launch.ints = inst.ints.data();
  launch.numInts = static_cast<int>(inst.ints.size());
  launch.floats = inst.floats.data();
  launch.numFloats = static_cast<int>(inst.floats.size());
  launch.name = kernelName(kernel);
  return launchCpuKernel(launch, 1);
}

TEST(KernelTable, EveryComputeRowHasACpuKernel) {
  const uint16_t past = static_cast<uint16_t>(kNumKernels);
  Status missing = launchRow(past, {1, 1, {}, {}});
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.message().find("not implemented"), std::string::npos) << missing.message();
  for (uint16_t k = 0; k < kNumKernels; ++k) {
    if (isCollective(k))
      continue; // run through a communicator, not a device
    Status s = launchRow(k, instructionFor(k));
    EXPECT_EQ(s.message().find("not implemented"), std::string::npos)
        << kernelName(k) << ": " << s.message();
  }
}

/// A one-instruction plan of `kernel` over persistent f32[2, 2] buffers:
/// inputs first, then outputs, then one spare.
std::vector<uint8_t> planFor(uint16_t kernel, const RowInstruction &inst) {
  flatbuffers::FlatBufferBuilder fbb;
  const int numBuffers = inst.inputs + inst.outputs + 1;
  std::vector<int64_t> shape(kTestRank, 2);
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  for (int i = 0; i < numBuffers; ++i)
    buffers.push_back(plan::CreateBuffer(
        fbb, fbb.CreateString("b" + std::to_string(i)), plan::DType::F32, fbb.CreateVector(shape),
        plan::Region::Persistent, i * kBufferAlignment, kTestBytes));
  std::vector<uint32_t> inputs, outputs;
  for (int i = 0; i < inst.inputs; ++i)
    inputs.push_back(i);
  for (int i = 0; i < inst.outputs; ++i)
    outputs.push_back(inst.inputs + i);
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions{plan::CreateInstruction(
      fbb, static_cast<plan::Kernel>(kernel), fbb.CreateVector(inputs), fbb.CreateVector(outputs),
      fbb.CreateVector(inst.ints), fbb.CreateVector(inst.floats), 0,
      fbb.CreateString(kernelName(kernel)))};
  std::vector<flatbuffers::Offset<plan::Binding>> none;
  auto root = plan::CreatePlan(
      fbb, kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString(""),
      fbb.CreateString("forward"), 1, fbb.CreateVector(buffers), fbb.CreateVector(instructions), 0,
      0, fbb.CreateVector(none), fbb.CreateVector(none), numBuffers * kBufferAlignment, 0);
  plan::FinishPlanBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

Status checkRow(uint16_t kernel, const RowInstruction &inst) {
  std::vector<uint8_t> bytes = planFor(kernel, inst);
  return checkPlan(*plan::GetPlan(bytes.data()), "row.plan");
}

TEST(KernelTable, PlanCheckAcceptsExactlyTheRow) {
  for (uint16_t k = 0; k < kNumKernels; ++k) {
    const KernelInfo &info = *kernelInfo(k);
    RowInstruction inst = instructionFor(k);
    Status ok = checkRow(k, inst);
    EXPECT_TRUE(ok.isOk()) << info.name << ": " << ok.message();

    // One operand too many, or with any number allowed, none at all.
    RowInstruction operands = inst;
    operands.inputs = info.maxInputs == kAny ? 0 : info.maxInputs + 1;
    if (info.ints == kOwnLayout && k == static_cast<uint16_t>(plan::Kernel::Flatten))
      operands.ints.assign(operands.inputs, 0);
    EXPECT_FALSE(checkRow(k, operands).isOk())
        << info.name << " with " << operands.inputs << " operands";

    RowInstruction floats = inst;
    floats.floats.push_back(0.0f);
    EXPECT_FALSE(checkRow(k, floats).isOk()) << info.name << " with a float too many";

    if (info.ints >= 0 || info.ints == kRank || info.ints == kTwiceRank) {
      RowInstruction ints = inst;
      ints.ints.push_back(0);
      EXPECT_FALSE(checkRow(k, ints).isOk()) << info.name << " with an integer too many";
    }
  }
}

} // namespace
