//===- FusedCodegenTest.cpp - generated Fused code vs the interpreter -----===//
//
// Generated code must compute the interpreter's bits. The CPU functions of
// programs covering every op code (unary, binary, gradients), broadcast
// inputs in each position, several results and reused intermediates are
// emitted as an object file (the path compiled steps ship), loaded into
// this process with LLVM's ORC JIT, and run, both the AVX2 and (on a CPU
// that has it) the AVX-512 variant, over sizes around the vector widths,
// on random values and the special ones the formulas branch on (signed
// zeros, infinities, NaN, denormals, exp's clamp limits, the erf and tanh
// series thresholds); each result is compared with the interpreter's
// (cpu::fusedElementwise) by memcmp (a NaN only as a NaN: see sameBits),
// also in place and over split ranges. The programs and values are
// FusedTestPrograms.h's, which the GPU test runs through the PTX kernels.
// The NVPTX kernels are assembled by ptxas for sm_80 and sm_90; plans'
// Fused instructions are collected once per distinct program.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/FusedCodegen.h"

#include "tests/unit/compiler/Target/FusedJit.h"
#include "tests/unit/compiler/Target/FusedTestPrograms.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include "compiler/Target/LlvmObject.h"
#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/GeneratedFused.h"
#include "runtime/embed/EmbeddedStep.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"


#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <unistd.h>

using namespace fsdp;
using namespace fsdp::rt;
using namespace fsdp::fusedtest;

using fsdp::rt::cpu::kerneltest::makeRef;

namespace {

TensorRef refOf(std::vector<float> &data) {
  return makeRef(DType::F32, {static_cast<int64_t>(data.size())}, data.data());
}

struct Variant {
  const char *name;
  int index; // 0 avx2, 1 avx512
};

/// The test programs' CPU functions, from one object file, loaded once.
class FusedCodegen : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    programs = new std::vector<Program>(testPrograms());
    std::vector<FusedKernelSpec> specs;
    for (const Program &p : *programs)
      specs.push_back(p.spec());
    loaded = new fusedjit::LoadedFused(fusedjit::loadCpuFusedKernels(specs));
  }

  static bool hasAvx512() {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  }

  /// Runs `p` over n elements by the interpreter and by `fn` (whole, and
  /// split in two ranges; then in place over input `inPlace`'s buffer when
  /// it is not broadcast), comparing the bytes of every result.
  static void check(const Program &p, FsdpFusedFn fn, int64_t n, uint32_t seed,
                    const std::string &what) {
    const FusedKernelSpec spec = p.spec();
    std::vector<std::vector<float>> in(p.numInputs);
    for (int i = 0; i < p.numInputs; ++i)
      in[i] = values(p.scalar[i] ? 1 : n, seed * 31 + i);
    std::vector<std::vector<float>> expected(spec.numOutputs, std::vector<float>(n)),
        got(spec.numOutputs, std::vector<float>(n, 123.0f));
    std::vector<TensorRef> inRefs, outRefs;
    for (auto &v : in)
      inRefs.push_back(refOf(v));
    for (auto &v : expected)
      outRefs.push_back(refOf(v));
    Status s = cpu::fusedElementwise(inRefs.data(), p.numInputs, spec.ints.data(),
                                     static_cast<int>(spec.ints.size()), outRefs.data(),
                                     spec.numOutputs);
    ASSERT_TRUE(s.isOk()) << s.message();

    std::vector<const float *> inPtrs;
    std::vector<float *> outPtrs;
    for (auto &v : in)
      inPtrs.push_back(v.data());
    for (auto &v : got)
      outPtrs.push_back(v.data());
    auto inputsAt = [&](int64_t i) {
      std::string text;
      for (int k = 0; k < p.numInputs; ++k) {
        uint32_t bits;
        std::memcpy(&bits, &in[k][p.scalar[k] ? 0 : i], 4);
        char hex[16];
        std::snprintf(hex, sizeof hex, "%s0x%08x", k ? " " : "", bits);
        text += hex;
      }
      return text;
    };
    auto compare = [&](const char *how) {
      for (int j = 0; j < spec.numOutputs; ++j)
        for (int64_t i = 0; i < n; ++i)
          ASSERT_TRUE(sameBits(got[j][i], expected[j][i]))
              << what << " " << how << ": result " << j << " element " << i << " of " << n
              << ": generated " << bitsOf(got[j][i]) << ", interpreter " << bitsOf(expected[j][i])
              << " (inputs: " << inputsAt(i) << ")";
    };
    fn(inPtrs.data(), outPtrs.data(), 0, n);
    compare("whole");
    for (auto &v : got)
      std::fill(v.begin(), v.end(), 7.0f);
    const int64_t split = n / 3;
    fn(inPtrs.data(), outPtrs.data(), split, n);
    fn(inPtrs.data(), outPtrs.data(), 0, split);
    compare("split");

    // In place: the first result over the first non-broadcast input.
    for (int i = 0; i < p.numInputs; ++i) {
      if (p.scalar[i])
        continue;
      std::vector<std::vector<float>> copy = in;
      std::vector<const float *> ptrs;
      for (auto &v : copy)
        ptrs.push_back(v.data());
      for (auto &v : got)
        std::fill(v.begin(), v.end(), 5.0f);
      std::vector<float *> outs = outPtrs;
      outs[0] = copy[i].data();
      fn(ptrs.data(), outs.data(), 0, n);
      got[0] = copy[i];
      compare("in place");
      break;
    }
  }

  void runVariant(const Variant &variant) {
    ASSERT_TRUE(loaded->error.empty()) << loaded->error;
    if (variant.index == 1 && !hasAvx512())
      GTEST_SKIP() << "this CPU has no AVX-512 (x86-64-v4): its variant cannot run here";
    uint32_t seed = 1;
    for (const Program &p : *programs) {
      const FsdpGeneratedFused &fns = loaded->byKey.at(p.spec().key);
      FsdpFusedFn fn = variant.index == 0 ? fns.avx2 : fns.avx512;
      for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 33, 1000}) {
        const std::string what = p.label() + " " + variant.name;
        check(p, fn, n, seed++, what);
        if (HasFatalFailure())
          return;
      }
    }
  }

  static inline std::vector<Program> *programs = nullptr;
  static inline fusedjit::LoadedFused *loaded = nullptr; // kept for the process's life
};

TEST_F(FusedCodegen, Avx2MatchesTheInterpreterBitForBit) { runVariant({"avx2", 0}); }

TEST_F(FusedCodegen, Avx512MatchesTheInterpreterBitForBit) { runVariant({"avx512", 1}); }

// The CPU backend runs registered generated code in place of its
// interpreter, split across threads, with the same bits.
TEST_F(FusedCodegen, TheCpuKernelRunsRegisteredCodeWithTheSameBits) {
  ASSERT_TRUE(loaded->error.empty()) << loaded->error;
  const Program &p = programs->at(programs->size() - 1); // geluGrad
  const FusedKernelSpec spec = p.spec();
  const int64_t n = 100003;
  std::vector<std::vector<float>> in(p.numInputs);
  for (int i = 0; i < p.numInputs; ++i)
    in[i] = values(p.scalar[i] ? 1 : n, 77 + i);
  std::vector<std::vector<float>> interpreted(2, std::vector<float>(n)),
      generated(2, std::vector<float>(n));
  auto run = [&](std::vector<std::vector<float>> &out) {
    std::vector<TensorRef> inRefs, outRefs;
    for (auto &v : in)
      inRefs.push_back(refOf(v));
    for (auto &v : out)
      outRefs.push_back(refOf(v));
    return cpu::fusedElementwise(inRefs.data(), p.numInputs, spec.ints.data(),
                                 static_cast<int>(spec.ints.size()), outRefs.data(), 2);
  };
  ASSERT_TRUE(run(interpreted).isOk());
  // A function that marks the call, to see the kernel dispatch to it.
  static std::atomic<int64_t> calledElements{0};
  static FsdpFusedFn real = loaded->byKey.at(spec.key).avx2;
  FsdpFusedFn counting = [](const float *const *i, float *const *o, int64_t b, int64_t e) {
    calledElements += e - b;
    real(i, o, b, e);
  };
  const FsdpGeneratedFused table[] = {{spec.key, counting, nullptr, nullptr}};
  cpu::registerGeneratedFused(table, 1);
  const Status status = run(generated);
  cpu::unregisterGeneratedFused(table, 1);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(calledElements.load(), n);
  for (int j = 0; j < 2; ++j)
    for (int64_t i = 0; i < n; ++i)
      ASSERT_TRUE(sameBits(generated[j][i], interpreted[j][i]))
          << "result " << j << " element " << i << ": generated " << bitsOf(generated[j][i])
          << ", interpreter " << bitsOf(interpreted[j][i]);
}

// A spec the runtime would refuse gets no code.
TEST(FusedCodegenErrors, AMalformedProgramIsRefused) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  FusedKernelSpec bad;
  bad.ints = {1, NumFusedOps, 0, -1, 1}; // an op code out of range
  bad.numInputs = 1;
  bad.numOutputs = 1;
  bad.scalar = {false};
  std::string message;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    message = d.str();
    return mlir::success();
  });
  std::vector<std::pair<std::string, std::string>> symbols;
  EXPECT_TRUE(failed(buildCpuFusedKernels(*module, {bad}, symbols)));
  EXPECT_NE(message.find("invalid operands"), std::string::npos) << message;
  EXPECT_TRUE(symbols.empty());
}

// Building a spec again (say, a second plan with the same program) names
// the functions built already instead of defining them twice.
TEST(FusedCodegenErrors, ASpecBuiltTwiceIsDefinedOnce) {
  mlir::MLIRContext context;
  context.loadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  const FusedKernelSpec spec = testPrograms().front().spec();
  std::vector<std::pair<std::string, std::string>> symbols;
  ASSERT_TRUE(succeeded(buildCpuFusedKernels(*module, {spec}, symbols)));
  ASSERT_TRUE(succeeded(buildCpuFusedKernels(*module, {spec}, symbols)));
  ASSERT_EQ(symbols.size(), 2u);
  EXPECT_EQ(symbols[0], symbols[1]);
  EXPECT_EQ(symbols[0].first, fusedKernelName(spec.key) + "_avx2");
  int functions = 0;
  for (auto fn : module->getOps<mlir::LLVM::LLVMFuncOp>())
    functions += fn.isExternal() ? 0 : 1;
  EXPECT_EQ(functions, 2);
}

// --- plans' Fused instructions ---------------------------------------------------

std::vector<uint8_t> planWithFused() {
  flatbuffers::FlatBufferBuilder fb;
  auto buffer = [&](std::vector<int64_t> shape, plan::DType dtype = plan::DType::F32) {
    return plan::CreateBuffer(fb, fb.CreateString("b"), dtype, fb.CreateVector(shape));
  };
  std::vector<flatbuffers::Offset<plan::Buffer>> buffers = {
      buffer({4, 8}), buffer({1}), buffer({4, 8}), buffer({32}), buffer({4, 8}, plan::DType::F64)};
  auto fused = [&](std::vector<uint32_t> in, std::vector<uint32_t> out,
                   std::vector<int64_t> ints) {
    return plan::CreateInstruction(fb, plan::Kernel::Fused, fb.CreateVector(in),
                                   fb.CreateVector(out), fb.CreateVector(ints));
  };
  std::vector<flatbuffers::Offset<plan::Instruction>> instructions = {
      fused({0, 1}, {2}, {1, FusedAdd, 0, 1, 2}),    // y + broadcast
      fused({0, 3}, {2}, {1, FusedAdd, 0, 1, 2}),    // another program: no broadcast
      fused({3, 1}, {0}, {1, FusedAdd, 0, 1, 2}),    // the first again, other buffers
      fused({0}, {2}, {1, NumFusedOps, 0, -1, 1}),   // malformed: the interpreter's error
      fused({4}, {2}, {1, FusedNeg, 0, -1, 1}),      // f64: refused by the runtime too
      plan::CreateInstruction(fb, plan::Kernel::Add, fb.CreateVector<uint32_t>({0, 0}),
                              fb.CreateVector<uint32_t>({2}))};
  auto root = plan::CreatePlan(fb, 1, 0, 0, 0, 1, fb.CreateVector(buffers),
                               fb.CreateVector(instructions));
  fb.Finish(root);
  return {fb.GetBufferPointer(), fb.GetBufferPointer() + fb.GetSize()};
}

TEST(CollectFusedKernels, OneSpecPerDistinctProgramAndBroadcasts) {
  std::vector<uint8_t> bytes = planWithFused();
  std::vector<FusedKernelSpec> specs = collectFusedKernels(*plan::GetPlan(bytes.data()));
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].scalar, (std::vector<bool>{false, true}));
  EXPECT_EQ(specs[1].scalar, (std::vector<bool>{false, false}));
  const std::vector<int64_t> ints = {1, FusedAdd, 0, 1, 2};
  for (const FusedKernelSpec &s : specs) {
    EXPECT_EQ(s.ints, ints);
    EXPECT_EQ(s.numInputs, 2);
    EXPECT_EQ(s.numOutputs, 1);
    bool flags[2] = {s.scalar[0], s.scalar[1]};
    EXPECT_EQ(s.key, fusedProgramKey(ints.data(), 5, flags, 2));
  }
  EXPECT_NE(specs[0].key, specs[1].key);
}

// --- NVPTX --------------------------------------------------------------------

TEST(FusedCodegenPtx, PtxasAssemblesTheKernelsForSm80AndSm90) {
  const std::string ptxas = FSDP_PTXAS;
  if (ptxas.empty() || access(ptxas.c_str(), X_OK) != 0)
    GTEST_SKIP() << "ptxas not found (CUDA toolkit); the PTX cannot be assembled here";
  mlir::MLIRContext context;
  std::vector<FusedKernelSpec> specs;
  for (const Program &p : testPrograms())
    specs.push_back(p.spec());
  FusedPtx modules;
  std::string error;
  ASSERT_TRUE(succeeded(generateFusedPtx(&context, specs, modules, error))) << error;
  const std::vector<std::string> &entries = modules.entries;
  ASSERT_EQ(entries.size(), specs.size());
  for (int sm : {80, 90}) {
    const std::string &ptx = sm == 80 ? modules.sm80 : modules.sm90;
    EXPECT_NE(ptx.find(".target sm_" + std::to_string(sm)), std::string::npos);
    for (const std::string &entry : entries)
      EXPECT_NE(ptx.find(".visible .entry " + entry), std::string::npos) << entry;
    // libdevice is linked in and internal: no call leaves the module.
    EXPECT_EQ(ptx.find(".extern"), std::string::npos);
    char path[] = "/tmp/fsdp-fused-XXXXXX.ptx";
    int fd = mkstemps(path, 4);
    ASSERT_GE(fd, 0);
    close(fd);
    std::ofstream(path) << ptx;
    const std::string command = ptxas + " --gpu-name sm_" + std::to_string(sm) + " " + path +
                                " -o /dev/null 2>&1";
    FILE *pipe = popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char line[512];
    while (fgets(line, sizeof line, pipe))
      output += line;
    const int status = pclose(pipe);
    std::remove(path);
    EXPECT_EQ(status, 0) << command << "\n" << output;
  }
}

} // namespace
