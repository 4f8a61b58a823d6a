//===- FusedCodegenLowPrecisionTest.cpp - bf16/f16 generated Fused code ---===//
//
// Generated code for a bf16 or f16 program must store the interpreter's
// bits: it loads 16-bit elements, computes each op in f32 and rounds its
// result to the storage dtype after every op, as the interpreter (and each
// unfused kernel) does. The test programs of FusedTestPrograms.h, in each
// dtype, JIT-compiled (AVX2 and, where the CPU has it, AVX-512), run with
// every one of the 65536 bit patterns as the first input (NaN payloads,
// infinities, subnormals, both zeros) and random and special values as the
// others, whole and split across ranges, against cpu::fusedElementwise. A
// NaN result may differ from the interpreter's in sign and payload (IEEE
// leaves them open, and LLVM folds -(x * x) into (-x) * x: FusedTestPrograms.h,
// sameBits); a chain of negations, which no optimizer may change, is
// compared bit for bit, NaN included. Also: the CPU kernel runs registered
// bf16 code under the key collectFusedKernels gives a plan's bf16 Fused
// instruction (the dtype is part of the key; an f32 program's key is what it
// was), and ptxas assembles the bf16/f16 PTX for sm_80 and sm_90.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/FusedCodegen.h"

#include "tests/unit/compiler/Target/FusedJit.h"
#include "tests/unit/compiler/Target/FusedTestPrograms.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/GeneratedFused.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/support/Half.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <unistd.h>

using namespace fsdp;
using namespace fsdp::rt;
using namespace fsdp::fusedtest;

using fsdp::rt::cpu::kerneltest::makeRef;

namespace {

constexpr int64_t kPatterns = 65536;

uint16_t toStorage(DType dt, float v) {
  return dt == DType::BF16 ? floatToBf16(v) : floatToF16(v);
}
bool isNan16(DType dt, uint16_t h) {
  return (h & 0x7fffu) > (dt == DType::BF16 ? 0x7f80u : 0x7c00u);
}

/// Negations only: nothing an optimizer may refold, so every bit counts.
Program negations() {
  return {"negations", 1, {false}, {{FusedNeg, 0, U}, {FusedNeg, 1, U}}, {1, 2}};
}

std::vector<Program> programsUnderTest() {
  std::vector<Program> programs = testPrograms();
  programs.push_back(negations());
  return programs;
}

/// Inputs of `p` over n elements: the first non-broadcast one every
/// pattern in order (then random ones), the others values() rounded.
std::vector<std::vector<uint16_t>> inputsFor(const Program &p, DType dt, int64_t n, uint32_t seed) {
  std::vector<std::vector<uint16_t>> in(p.numInputs);
  bool patternsGiven = false;
  for (int i = 0; i < p.numInputs; ++i) {
    const int64_t m = p.scalar[i] ? 1 : n;
    std::vector<float> v = values(m, seed * 31 + i);
    in[i].resize(m);
    for (int64_t e = 0; e < m; ++e)
      in[i][e] = !p.scalar[i] && !patternsGiven && e < kPatterns ? static_cast<uint16_t>(e)
                                                                 : toStorage(dt, v[e]);
    patternsGiven = patternsGiven || !p.scalar[i];
  }
  return in;
}

class FusedCodegenLowPrecision : public ::testing::TestWithParam<DType> {
protected:
  /// The programs' functions in this dtype, JIT-loaded once per dtype.
  static const fusedjit::LoadedFused &loadedFor(DType dt) {
    static std::map<DType, std::unique_ptr<fusedjit::LoadedFused>> loaded;
    std::unique_ptr<fusedjit::LoadedFused> &slot = loaded[dt];
    if (!slot) {
      std::vector<FusedKernelSpec> specs;
      for (const Program &p : programsUnderTest())
        specs.push_back(p.spec(dt));
      slot = std::make_unique<fusedjit::LoadedFused>(fusedjit::loadCpuFusedKernels(specs));
    }
    return *slot;
  }

  static bool hasAvx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }

  static Status interpret(const Program &p, DType dt, std::vector<std::vector<uint16_t>> &in,
                          std::vector<std::vector<uint16_t>> &out) {
    const FusedKernelSpec spec = p.spec(dt);
    std::vector<TensorRef> inRefs, outRefs;
    for (auto &v : in)
      inRefs.push_back(makeRef(dt, {static_cast<int64_t>(v.size())}, v.data()));
    for (auto &v : out)
      outRefs.push_back(makeRef(dt, {static_cast<int64_t>(v.size())}, v.data()));
    return cpu::fusedElementwise(inRefs.data(), p.numInputs, spec.ints.data(),
                                 static_cast<int>(spec.ints.size()), outRefs.data(),
                                 spec.numOutputs);
  }

  static void check(const Program &p, DType dt, FsdpFusedFn fn, int64_t n, uint32_t seed,
                    const std::string &what) {
    const int numOutputs = static_cast<int>(p.results.size());
    std::vector<std::vector<uint16_t>> in = inputsFor(p, dt, n, seed);
    std::vector<std::vector<uint16_t>> expected(numOutputs, std::vector<uint16_t>(n)),
        got(numOutputs, std::vector<uint16_t>(n, 0x1234));
    Status s = interpret(p, dt, in, expected);
    ASSERT_TRUE(s.isOk()) << s.message();
    std::vector<const float *> inPtrs;
    std::vector<float *> outPtrs;
    for (auto &v : in)
      inPtrs.push_back(reinterpret_cast<const float *>(v.data()));
    for (auto &v : got)
      outPtrs.push_back(reinterpret_cast<float *>(v.data()));
    const bool strict = std::string(p.name) == "negations";
    auto compare = [&](const char *how) {
      for (int j = 0; j < numOutputs; ++j)
        for (int64_t i = 0; i < n; ++i) {
          const uint16_t g = got[j][i], e = expected[j][i];
          ASSERT_TRUE(g == e || (!strict && isNan16(dt, g) && isNan16(dt, e)))
              << what << " " << how << ": result " << j << " element " << i << ": generated 0x"
              << std::hex << g << ", interpreter 0x" << e << " (first input 0x"
              << in[0][p.scalar[0] ? 0 : i] << ")";
        }
    };
    fn(inPtrs.data(), outPtrs.data(), 0, n);
    compare("whole");
    for (auto &v : got)
      std::fill(v.begin(), v.end(), 0x4321);
    const int64_t split = n / 3 + 1;
    fn(inPtrs.data(), outPtrs.data(), split, n);
    fn(inPtrs.data(), outPtrs.data(), 0, split);
    compare("split");
  }

  void runVariant(int index) {
    const DType dt = GetParam();
    const fusedjit::LoadedFused &loaded = loadedFor(dt);
    ASSERT_TRUE(loaded.error.empty()) << loaded.error;
    if (index == 1 && !hasAvx512())
      GTEST_SKIP() << "this CPU has no AVX-512 (x86-64-v4): its variant cannot run here";
    uint32_t seed = 1;
    for (const Program &p : programsUnderTest()) {
      const FsdpGeneratedFused &fns = loaded.byKey.at(p.spec(dt).key);
      for (int64_t n : {int64_t(1), int64_t(9), int64_t(17), kPatterns + 13}) {
        check(p, dt, index == 0 ? fns.avx2 : fns.avx512, n, seed++,
              p.label() + " " + dtypeName(dt) + (index == 0 ? " avx2" : " avx512"));
        if (HasFatalFailure())
          return;
      }
    }
  }
};

TEST_P(FusedCodegenLowPrecision, Avx2MatchesTheInterpreter) { runVariant(0); }
TEST_P(FusedCodegenLowPrecision, Avx512MatchesTheInterpreter) { runVariant(1); }

// The CPU kernel runs registered code for a bf16/f16 program by the key a
// plan's instruction gets, and not for the f32 program of the same ints.
TEST_P(FusedCodegenLowPrecision, TheCpuKernelFindsTheCodeByTheDtypesKey) {
  const DType dt = GetParam();
  flatbuffers::FlatBufferBuilder fb;
  const plan::DType planDt = dt == DType::BF16 ? plan::DType::BF16 : plan::DType::F16;
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
  for (int i = 0; i < 3; ++i)
    buffers.push_back(plan::CreateBuffer(fb, fb.CreateString("b"), planDt,
                                         fb.CreateVector(std::vector<int64_t>{4, 8})));
  // tanh(x + y) over full-size inputs.
  const std::vector<int64_t> ints = {2, FusedAdd, 0, 1, FusedTanh, 2, -1, 3};
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions = {plan::CreateInstruction(
      fb, plan::Kernel::Fused, fb.CreateVector(std::vector<uint32_t>{0, 1}),
      fb.CreateVector(std::vector<uint32_t>{2}), fb.CreateVector(ints))};
  fb.Finish(plan::CreatePlan(fb, 1, 0, 0, 0, 1, fb.CreateVector(buffers),
                             fb.CreateVector(instructions)));
  std::vector<FusedKernelSpec> specs = collectFusedKernels(*plan::GetPlan(fb.GetBufferPointer()));
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].dtype, dt);
  bool flags[2] = {false, false};
  EXPECT_EQ(specs[0].key, fusedProgramKey(ints.data(), 8, flags, 2, dt));
  EXPECT_NE(specs[0].key, fusedProgramKey(ints.data(), 8, flags, 2, DType::F32));

  fusedjit::LoadedFused loaded = fusedjit::loadCpuFusedKernels(specs);
  ASSERT_TRUE(loaded.error.empty()) << loaded.error;
  static std::atomic<int64_t> calledElements{0};
  static FsdpFusedFn real = nullptr;
  real = loaded.byKey.at(specs[0].key).avx2;
  calledElements = 0;
  FsdpFusedFn counting = [](const float *const *i, float *const *o, int64_t b, int64_t e) {
    calledElements += e - b;
    real(i, o, b, e);
  };
  Program chain{"addTanh", 2, {false, false}, {{FusedAdd, 0, 1}, {FusedTanh, 2, U}}, {3}};
  const int64_t n = 50001;
  std::vector<std::vector<uint16_t>> in = inputsFor(chain, dt, n, 5);
  std::vector<std::vector<uint16_t>> interpreted(1, std::vector<uint16_t>(n)),
      generated(1, std::vector<uint16_t>(n));
  ASSERT_TRUE(interpret(chain, dt, in, interpreted).isOk());
  const FsdpGeneratedFused table[] = {{specs[0].key, counting, nullptr, nullptr}};
  cpu::registerGeneratedFused(table, 1);
  const Status status = interpret(chain, dt, in, generated);
  cpu::unregisterGeneratedFused(table, 1);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(calledElements.load(), n);
  for (int64_t i = 0; i < n; ++i)
    ASSERT_TRUE(generated[0][i] == interpreted[0][i] ||
                (isNan16(dt, generated[0][i]) && isNan16(dt, interpreted[0][i])))
        << "element " << i;
}

TEST_P(FusedCodegenLowPrecision, PtxasAssemblesTheKernels) {
  const std::string ptxas = FSDP_PTXAS;
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0)
    GTEST_SKIP() << "ptxas not found (CUDA toolkit); the PTX cannot be assembled here";
  mlir::MLIRContext context;
  std::vector<FusedKernelSpec> specs;
  for (const Program &p : programsUnderTest())
    specs.push_back(p.spec(GetParam()));
  FusedPtx modules;
  std::string error;
  ASSERT_TRUE(succeeded(generateFusedPtx(&context, specs, modules, error))) << error;
  for (int sm : {80, 90}) {
    const std::string &ptx = sm == 80 ? modules.sm80 : modules.sm90;
    // 16-bit elements: loaded and stored as such.
    EXPECT_NE(ptx.find("ld.global.u16"), std::string::npos);
    EXPECT_NE(ptx.find("st.global.u16"), std::string::npos);
    char path[] = "/tmp/fsdp-fused16-XXXXXX.ptx";
    int fd = mkstemps(path, 4);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << ptx;
    const std::string command =
        ptxas + " --gpu-name sm_" + std::to_string(sm) + " " + path + " -o /dev/null 2>&1";
    FILE *pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string log;
    char buffer[256];
    while (fgets(buffer, sizeof buffer, pipe))
      log += buffer;
    const int rc = pclose(pipe);
    unlink(path);
    EXPECT_EQ(rc, 0) << "ptxas sm_" << sm << ":\n" << log;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedCodegenLowPrecision,
                         ::testing::Values(DType::BF16, DType::F16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

} // namespace
