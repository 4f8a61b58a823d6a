//===- GeneratedPtxRegistryTest.cpp - the step's PTX before any GPU -------===//
//
// What GeneratedPtxRegistry.h decides without a GPU: registration copies
// the module texts and maps each Fused program's key to its kernel entry
// (the key the Fused launch computes from the program and its broadcasts),
// refuses inconsistent tables, and a compute capability picks the right
// module text; a failed load's message carries the driver's error and the
// PTX compiler's log.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/GeneratedPtxRegistry.h"

#include "runtime/backends/FusedProgram.h"

#include <gtest/gtest.h>

#include <string>

namespace fsdp::rt::cuda {
namespace {

/// out0 = (in0 + in1) * in2, out1 = in0 + in1 (in2 broadcast).
const int64_t kInts[] = {2, FusedAdd, 0, 1, FusedMul, 3, 2, 4, 3};
const bool kBroadcastLast[] = {false, false, true};
const bool kNoBroadcast[] = {false, false, false};

uint64_t keyOf(const bool *scalar) { return fusedProgramKey(kInts, 9, scalar, 3); }

class GeneratedPtxRegistry : public ::testing::Test {
protected:
  void TearDown() override { clearGeneratedPtx(); }
};

TEST_F(GeneratedPtxRegistry, MapsEachProgramKeyToItsEntry) {
  std::string sm80 = ".version 7.8\n.target sm_80\n", sm90 = ".version 7.8\n.target sm_90\n";
  const FsdpGeneratedFused fused[] = {
      {keyOf(kBroadcastLast), nullptr, nullptr, "fused_0"},
      {keyOf(kNoBroadcast), nullptr, nullptr, "fused_1"},
      {12345, nullptr, nullptr, nullptr}, // CPU code only: not a PTX kernel
  };
  FsdpEmbeddedStep step{};
  step.abiVersion = FSDP_EMBEDDED_STEP_ABI;
  step.ptxSm80 = sm80.c_str();
  step.ptxSm90 = sm90.c_str();
  step.fused = fused;
  step.numFused = 3;
  ASSERT_TRUE(registerGeneratedPtx(step).isOk());
  // The texts are copies: the step's memory may go.
  sm80.assign(sm80.size(), 'x');
  std::shared_ptr<const GeneratedPtxSource> source = registeredGeneratedPtx();
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->sm80, ".version 7.8\n.target sm_80\n");
  EXPECT_EQ(source->sm90, ".version 7.8\n.target sm_90\n");
  ASSERT_EQ(source->entries.size(), 2u);
  // A broadcast changes the key: the two programs get their own kernels.
  EXPECT_NE(keyOf(kBroadcastLast), keyOf(kNoBroadcast));
  EXPECT_EQ(source->entries.at(keyOf(kBroadcastLast)), "fused_0");
  EXPECT_EQ(source->entries.at(keyOf(kNoBroadcast)), "fused_1");
  EXPECT_EQ(source->entries.count(12345), 0u);

  clearGeneratedPtx();
  EXPECT_EQ(registeredGeneratedPtx(), nullptr);
}

TEST_F(GeneratedPtxRegistry, AStepWithoutPtxKernelsRegistersNothing) {
  const FsdpGeneratedFused fused[] = {{1, nullptr, nullptr, nullptr}};
  ASSERT_TRUE(registerGeneratedPtx(nullptr, nullptr, fused, 1).isOk());
  EXPECT_EQ(registeredGeneratedPtx(), nullptr);
  ASSERT_TRUE(registerGeneratedPtx(nullptr, nullptr, nullptr, 0).isOk());
  EXPECT_EQ(registeredGeneratedPtx(), nullptr);
}

TEST_F(GeneratedPtxRegistry, RefusesInconsistentTables) {
  const FsdpGeneratedFused twice[] = {{7, nullptr, nullptr, "a"}, {7, nullptr, nullptr, "b"}};
  Status s = registerGeneratedPtx("ptx", nullptr, twice, 2);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("two kernels, a and b, for the Fused program of key 7"),
            std::string::npos)
      << s.message();

  const FsdpGeneratedFused one[] = {{7, nullptr, nullptr, "a"}};
  s = registerGeneratedPtx(nullptr, nullptr, one, 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("carries no PTX module"), std::string::npos) << s.message();

  FsdpEmbeddedStep step{};
  step.abiVersion = FSDP_EMBEDDED_STEP_ABI + 1;
  s = registerGeneratedPtx(step);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("ABI version"), std::string::npos) << s.message();
  EXPECT_EQ(registeredGeneratedPtx(), nullptr);

  // A refused registration leaves the previous one in place.
  ASSERT_TRUE(registerGeneratedPtx("ptx", nullptr, one, 1).isOk());
  EXPECT_FALSE(registerGeneratedPtx("ptx", nullptr, twice, 2).isOk());
  ASSERT_NE(registeredGeneratedPtx(), nullptr);
  EXPECT_EQ(registeredGeneratedPtx()->entries.at(7), "a");
}

TEST(ChoosePtxModule, PicksTheTextForTheComputeCapability) {
  GeneratedPtxSource both;
  both.sm80 = "80";
  both.sm90 = "90";
  struct Case {
    int major, minor;
    const char *text; // null: none
    const char *target;
  } cases[] = {
      {8, 0, "80", "sm_80"},  {8, 6, "80", "sm_80"},  {8, 9, "80", "sm_80"},
      {9, 0, "90", "sm_90"},  {10, 0, "80", "sm_80"}, {12, 0, "80", "sm_80"},
      {7, 5, nullptr, ""},    {6, 0, nullptr, ""},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(std::to_string(c.major) + "." + std::to_string(c.minor));
    PtxModuleChoice choice = choosePtxModule(both, c.major, c.minor);
    if (!c.text) {
      EXPECT_EQ(choice.text, nullptr);
      EXPECT_NE(choice.why.find("below 8.0"), std::string::npos) << choice.why;
      continue;
    }
    ASSERT_NE(choice.text, nullptr) << choice.why;
    EXPECT_EQ(*choice.text, c.text);
    EXPECT_STREQ(choice.target, c.target);
  }
}

TEST(ChoosePtxModule, FallsBackOnlyFromNewerToOlderTargets) {
  GeneratedPtxSource only80;
  only80.sm80 = "80";
  PtxModuleChoice choice = choosePtxModule(only80, 9, 0);
  ASSERT_NE(choice.text, nullptr);
  EXPECT_STREQ(choice.target, "sm_80"); // sm_80 PTX compiles for Hopper

  GeneratedPtxSource only90;
  only90.sm90 = "90";
  EXPECT_NE(choosePtxModule(only90, 9, 0).text, nullptr);
  choice = choosePtxModule(only90, 8, 0); // sm_90 PTX cannot run on Ampere
  EXPECT_EQ(choice.text, nullptr);
  EXPECT_NE(choice.why.find("no sm_80 PTX"), std::string::npos) << choice.why;
  EXPECT_EQ(choosePtxModule(only90, 10, 0).text, nullptr);
}

TEST(PtxLoadFailure, NamesTheTargetTheGpuAndTheCompilersLog) {
  EXPECT_EQ(ptxLoadFailure("sm_90", 1, "cuda driver: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX",
                           "ptxas application ptx input, line 7; error   : Unknown symbol"),
            "cuda: loading the generated PTX (sm_90) on GPU 1: cuda driver: cuModuleLoadDataEx: "
            "CUDA_ERROR_INVALID_PTX; the PTX compiler says: ptxas application ptx input, line 7; "
            "error   : Unknown symbol");
  EXPECT_EQ(ptxLoadFailure("sm_80", 0, "cuda driver: cuModuleLoadDataEx: error 999", ""),
            "cuda: loading the generated PTX (sm_80) on GPU 0: cuda driver: cuModuleLoadDataEx: "
            "error 999");
}

} // namespace
} // namespace fsdp::rt::cuda
