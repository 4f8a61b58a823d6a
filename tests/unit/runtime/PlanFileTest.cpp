//===- PlanFileTest.cpp - plans are verified on load ----------------------===//
//
// Builds small plans with the generated FlatBuffers API, writes them with
// writePlanFile and checks that loadPlan accepts the valid one and refuses,
// with a message naming the file, every kind of damage: truncation, a
// flipped byte anywhere, a foreign file, another format version, and
// well-formed FlatBuffers that break the plan's own rules (a buffer outside
// its region, an operand that names no buffer, a kernel with the wrong
// number of attributes).
//
//===----------------------------------------------------------------------===//

#include "fsdp/runtime/PlanFile.h"
#include "runtime/schema/plan_generated.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

using namespace fsdp;

struct PlanSpec {
  uint64_t bufferOffset = 0;
  uint32_t operand = 0;
  std::vector<int64_t> ints = {1};
  uint64_t arenaBytes = 64;
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
  auto root = plan::CreatePlan(fbb, rt::kPlanFormatVersion, fbb.CreateString("test"),
                               fbb.CreateString(""), fbb.CreateString("forward"), 1,
                               fbb.CreateVector(buffers), fbb.CreateVector(instructions), 0, 0,
                               fbb.CreateVector(in), fbb.CreateVector(out), 64, spec.arenaBytes);
  plan::FinishPlanBuffer(fbb, root);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

class PlanFileTest : public ::testing::Test {
protected:
  std::string path = ::testing::TempDir() + "fsdp-plan-test.plan";
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

} // namespace
