//===- EmbeddedStepLoaderTest.cpp - a compiled step's runtime side --------===//
//
// What EmbeddedStepLoader does without a plan to run: a step of another ABI
// version is refused naming it, a Fused count without a table is refused,
// the process-wide step is what was published, and --help's description
// counts the generated kernels, their variants, the PTX modules and where
// the weights come from. (Loading a real step's plan and weights, and
// running it, is tests/e2e/test_step_runtime.py.)
//
//===----------------------------------------------------------------------===//

#include "runtime/embed/EmbeddedStepLoader.h"

#include "runtime/plan/PlanFile.h"

#include <gtest/gtest.h>

namespace {

using namespace fsdp::rt;

void noKernel(const float *const *, float *const *, int64_t, int64_t) {}

FsdpEmbeddedStep emptyStep() {
  FsdpEmbeddedStep step = {};
  step.abiVersion = FSDP_EMBEDDED_STEP_ABI;
  return step;
}

TEST(EmbeddedStepLoader, OtherAbiVersionIsRefused) {
  FsdpEmbeddedStep step = emptyStep();
  step.abiVersion = FSDP_EMBEDDED_STEP_ABI + 1;
  LoadedPlan plan;
  Status s = loadEmbeddedPlan(step, "/bin/step", plan);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "/bin/step: compiled step of ABI version " +
                             std::to_string(FSDP_EMBEDDED_STEP_ABI + 1) +
                             "; this runtime reads version " +
                             std::to_string(FSDP_EMBEDDED_STEP_ABI) +
                             " (rebuild it with this fsdp-opt)");
  step.abiVersion = FSDP_EMBEDDED_STEP_ABI; // the right version, no plan
  EXPECT_EQ(loadEmbeddedPlan(step, "/bin/step", plan).message(),
            "/bin/step: the embedded plan is empty");
}

TEST(EmbeddedStepLoader, FusedCountWithoutTableIsRefused) {
  FsdpEmbeddedStep step = emptyStep();
  EXPECT_TRUE(registerEmbeddedKernels(step).isOk()); // none: nothing to do
  step.numFused = 2;
  EXPECT_EQ(registerEmbeddedKernels(step).message(),
            "the compiled step lists 2 generated Fused kernels but carries no table");
}

TEST(EmbeddedStepLoader, PublishedStepIsTheProcesssStep) {
  EXPECT_EQ(embeddedStep(), nullptr);
  FsdpEmbeddedStep step = emptyStep();
  setEmbeddedStep(&step);
  EXPECT_EQ(embeddedStep(), &step);
  setEmbeddedStep(nullptr);
  EXPECT_EQ(embeddedStep(), nullptr);
}

TEST(EmbeddedStepLoader, DescriptionCountsKernelsAndNamesWeights) {
  FsdpGeneratedFused table[2] = {{1, noKernel, noKernel, "fused_1"}, {2, noKernel, nullptr, nullptr}};
  FsdpEmbeddedStep step = emptyStep();
  step.planHash = 0xabc;
  step.planSize = 128;
  step.info = "model m.onnx (hash 1234), world size 2, strategy full";
  step.fused = table;
  step.numFused = 2;
  step.ptxSm90 = ".version 8.0";
  step.weightsFile = "m.safetensors";
  std::string text = describeEmbeddedStep(step);
  EXPECT_NE(text.find("embedded plan, hash abc, 128 bytes"), std::string::npos) << text;
  EXPECT_NE(text.find("model m.onnx (hash 1234), world size 2, strategy full\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("generated Fused kernels: 2 (x86-64 AVX2, AVX-512 for 1"),
            std::string::npos) << text;
  EXPECT_NE(text.find("PTX entries for 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("PTX modules: sm_90\n"), std::string::npos) << text;
  EXPECT_NE(text.find("weights: m.safetensors, beside the executable"), std::string::npos)
      << text;
  step.weights = reinterpret_cast<const uint8_t *>("x");
  step.weightsSize = 1;
  step.fused = nullptr;
  step.numFused = 0;
  step.ptxSm90 = nullptr;
  text = describeEmbeddedStep(step);
  EXPECT_NE(text.find("generated Fused kernels: 0\nPTX modules: none\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("weights: embedded (1 bytes)"), std::string::npos) << text;
}

} // namespace
