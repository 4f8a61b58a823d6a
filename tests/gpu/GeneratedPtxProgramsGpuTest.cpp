//===- GeneratedPtxProgramsGpuTest.cpp - the compiler's PTX on a GPU ------===//
//
// The PTX the compiler really generates for Fused chains, run on a GPU and
// compared with the CPU interpreter. The programs are the CPU codegen
// test's (tests/unit/compiler/Target/FusedTestPrograms.h: every op code,
// broadcasts in each position, several results); buildPtxFusedKernels and
// emitFusedPtx turn them into sm_80 and sm_90 modules here, in the
// process, exactly as fsdp-opt --emit=binary does, and the table a
// compiled step registers (registerGeneratedPtx) is built from their
// specs. Each program runs on n in {1, 7, 1000, 3000017} (a single
// element, a partial block, several blocks, more elements than the grid
// has threads) three ways: its kernel launched directly, the CUDA device's
// Fused launch (Device::launch, which the executor calls), and that launch
// captured into a CUDA graph and replayed. Results must be the
// interpreter's bits (a NaN only as a NaN: sameBits, and see below), and
// within 1 ulp for results that depend on log, the one op that calls a
// math library (libdevice's __nv_logf on the GPU, glibc's logf on the
// CPU: both faithfully rounded, not the same function). Without a GPU it
// prints "no GPU: ..." and exits 77 (ctest: skipped; label gpu,
// scripts/test-gpu.sh).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/FusedCodegen.h"
#include "compiler/Target/LlvmObject.h"
#include "tests/unit/compiler/Target/FusedTestPrograms.h"

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cuda/CudaDevice.h"
#include "runtime/backends/cuda/GeneratedPtx.h"
#include "tests/gpu/GpuTestMain.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace fsdp;
using namespace fsdp::rt;
using namespace fsdp::fusedtest;

using fsdp::rt::cpu::kerneltest::makeRef;

namespace {

const int64_t kSizes[] = {1, 7, 1000, 3000017};

/// The program with no input broadcast: how the runtime keys it at n = 1,
/// where every input has n elements (decodeFusedProgram), so the step's
/// table needs it too for the Fused launch to run generated code there.
Program unbroadcast(Program p) {
  p.scalar.assign(p.scalar.size(), false);
  return p;
}

/// The key the Fused launch looks up for `p` over n elements.
uint64_t runtimeKey(const Program &p, int64_t n) {
  FusedKernelSpec spec = (n == 1 ? unbroadcast(p) : p).spec();
  return spec.key;
}

/// What a compiled step carries: the modules' text and one table row per
/// distinct spec (the test programs and their unbroadcast forms).
struct GeneratedModules {
  std::string sm80, sm90, error;
  std::vector<std::string> entries; // kept alive for the table's pointers
  std::vector<FsdpGeneratedFused> table;
};

GeneratedModules generate() {
  GeneratedModules out;
  std::map<uint64_t, FusedKernelSpec> byKey;
  std::vector<FusedKernelSpec> specs;
  for (const Program &p : testPrograms())
    for (const Program &q : {p, unbroadcast(p)}) {
      FusedKernelSpec s = q.spec();
      if (byKey.emplace(s.key, s).second)
        specs.push_back(s);
    }
  mlir::MLIRContext context;
  FusedPtx ptx;
  if (failed(generateFusedPtx(&context, specs, ptx, out.error)))
    return out;
  if (ptx.entries.size() != specs.size()) {
    out.error = "generateFusedPtx named " + std::to_string(ptx.entries.size()) +
                " entries for " + std::to_string(specs.size()) + " specs";
    return out;
  }
  out.sm80 = std::move(ptx.sm80);
  out.sm90 = std::move(ptx.sm90);
  out.entries = std::move(ptx.entries);
  for (size_t i = 0; i < specs.size(); ++i)
    out.table.push_back({specs[i].key, nullptr, nullptr, out.entries[i].c_str()});
  return out;
}

/// Orders float bit patterns so that adjacent floats differ by 1 (-0 and
/// +0 both 0).
int64_t ordered(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits < 0 ? -static_cast<int64_t>(bits & 0x7fffffff) : bits;
}

/// The comparison. Bits as the CPU test compares them (sameBits: the same
/// bytes, or both NaN): IEEE 754 leaves a NaN result's sign and payload to
/// the implementation, and they do differ: x86's SSE arithmetic gives its
/// default NaN (negative, 0xffc00000) or passes an input NaN's payload on,
/// a GPU's arithmetic need not do either, and LLVM's optimizer rewrites
/// sign-only operations around NaNs (-(x * x) into (-x) * x). Only that a
/// NaN is a NaN is the interpreter's contract; any other value must match
/// in every bit, signed zeros included. A result that depends on log may
/// differ by 1 ulp (infinities and NaNs still exactly).
bool agrees(float got, float want, bool dependsOnLog) {
  if (sameBits(got, want))
    return true;
  if (!dependsOnLog || std::isnan(got) || std::isnan(want) || std::isinf(got) || std::isinf(want))
    return false;
  const int64_t d = ordered(got) - ordered(want);
  return d >= -1 && d <= 1;
}

TensorRef f32(void *data, int64_t n) {
  return makeRef(DType::F32, {n}, data);
}

const float kUnwritten = 123.0f; // what every result holds before a run

/// One program over n elements: its inputs, the interpreter's results, and
/// device buffers (Device::allocate) for both.
struct Case {
  const Program *p = nullptr;
  FusedKernelSpec spec; // its ints are the launches' attribute
  int64_t n = 0;
  std::vector<std::vector<float>> in, want;
  std::vector<DeviceMemory> dIn, dOut;
  std::vector<TensorRef> inRefs, outRefs; // device operands
  std::vector<bool> loggy;
  Device *device = nullptr;

  void make(Device &d, const Program &program, int64_t count, uint32_t seed) {
    device = &d, p = &program, n = count;
    spec = p->spec();
    loggy = p->logResults();
    std::vector<TensorRef> hostIn, hostOut;
    for (int i = 0; i < p->numInputs; ++i)
      in.push_back(values(p->scalar[i] ? 1 : n, seed * 31 + i));
    want.assign(spec.numOutputs, std::vector<float>(n));
    for (auto &v : in)
      hostIn.push_back(f32(v.data(), static_cast<int64_t>(v.size())));
    for (auto &v : want)
      hostOut.push_back(f32(v.data(), n));
    Status s =
        cpu::fusedElementwise(hostIn.data(), p->numInputs, spec.ints.data(),
                              static_cast<int>(spec.ints.size()), hostOut.data(), spec.numOutputs);
    ASSERT_TRUE(s.isOk()) << s.message();
    for (auto &v : in) {
      DeviceMemory m;
      ASSERT_TRUE(d.allocate(v.size() * 4, m).isOk());
      dIn.push_back(m);
      ASSERT_TRUE(d.copyToDevice(m.base, v.data(), v.size() * 4).isOk());
      inRefs.push_back(f32(m.base, static_cast<int64_t>(v.size())));
    }
    for (int j = 0; j < spec.numOutputs; ++j) {
      DeviceMemory m;
      ASSERT_TRUE(d.allocate(n * 4, m).isOk());
      dOut.push_back(m);
      outRefs.push_back(f32(m.base, n));
    }
    ASSERT_NO_FATAL_FAILURE(clearResults());
  }
  ~Case() {
    if (!device)
      return;
    for (DeviceMemory &m : dIn)
      device->release(m);
    for (DeviceMemory &m : dOut)
      device->release(m);
  }

  /// Every result element kUnwritten (not a NaN, which would match the
  /// interpreter's NaNs), so an element a kernel skips fails.
  void clearResults() {
    const std::vector<float> fill(n, kUnwritten);
    for (DeviceMemory &m : dOut)
      ASSERT_TRUE(device->copyToDevice(m.base, fill.data(), n * 4).isOk());
  }

  std::vector<const float *> inputPointers() const {
    std::vector<const float *> out;
    for (const DeviceMemory &m : dIn)
      out.push_back(static_cast<const float *>(m.base));
    return out;
  }
  std::vector<float *> outputPointers() const {
    std::vector<float *> out;
    for (const DeviceMemory &m : dOut)
      out.push_back(static_cast<float *>(m.base));
    return out;
  }

  Launch fusedLaunch() const {
    Launch l;
    l.kernel = static_cast<uint16_t>(plan::Kernel::Fused);
    l.inputs = inRefs.data();
    l.numInputs = static_cast<int>(inRefs.size());
    l.outputs = outRefs.data();
    l.numOutputs = static_cast<int>(outRefs.size());
    l.ints = spec.ints.data();
    l.numInts = static_cast<int>(spec.ints.size());
    l.name = "GeneratedPtxProgramsGpuTest";
    return l;
  }

  /// Copies the results back and compares every element.
  void expectInterpreter(const std::string &how) const {
    const std::string what = p->label() + " " + how + ", n " + std::to_string(n);
    for (size_t j = 0; j < dOut.size(); ++j) {
      std::vector<float> got(n);
      ASSERT_TRUE(device->copyToHost(got.data(), dOut[j].base, n * 4).isOk());
      for (int64_t i = 0; i < n; ++i)
        ASSERT_TRUE(agrees(got[i], want[j][i], loggy[j]))
            << what << ": result " << j << (loggy[j] ? " (log: 1 ulp)" : "") << " element " << i
            << ": GPU " << bitsOf(got[i]) << ", interpreter " << bitsOf(want[j][i])
            << " (inputs: " << inputsAt(i) << ")";
    }
  }

  std::string inputsAt(int64_t i) const {
    std::string text;
    for (size_t k = 0; k < in.size(); ++k)
      text += (k ? " " : "") + bitsOf(in[k][p->scalar[k] ? 0 : i]);
    return text;
  }
};

class GeneratedPtxPrograms : public ::testing::Test {
protected:
  static void SetUpTestSuite() { modules = new GeneratedModules(generate()); }

  void SetUp() override {
    ASSERT_TRUE(modules->error.empty()) << modules->error;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    Status s = cuda::registerGeneratedPtx(modules->sm80.c_str(), modules->sm90.c_str(),
                                          modules->table.data(),
                                          static_cast<uint32_t>(modules->table.size()));
    ASSERT_TRUE(s.isOk()) << s.message();
    // The device loads the registered PTX when created, as a step's does.
    s = createCudaDevice(DeviceOptions{}, device_);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_TRUE(device_->createStream(stream_).isOk());
    // The same module loaded apart: which keys the device's launch finds.
    std::string note;
    s = cuda::GeneratedPtx::load(0, loaded_, &note);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_NE(loaded_, nullptr) << note;
  }
  void TearDown() override {
    stream_.reset();
    device_.reset();
    loaded_.reset();
    cuda::clearGeneratedPtx();
  }

  /// Every program on every size, run by `run` (which leaves the results
  /// in the case's device buffers), against the interpreter.
  template <typename Run> void forEachCase(const char *how, Run run) {
    uint32_t seed = 1;
    for (const Program &p : testPrograms())
      for (int64_t n : kSizes) {
        Case c;
        ASSERT_NO_FATAL_FAILURE(c.make(*device_, p, n, seed++));
        ASSERT_NO_FATAL_FAILURE(run(c));
        ASSERT_NO_FATAL_FAILURE(c.expectInterpreter(how));
      }
  }

  static inline GeneratedModules *modules = nullptr; // for the process's life
  std::unique_ptr<Device> device_;
  std::unique_ptr<Stream> stream_;
  std::unique_ptr<cuda::GeneratedPtx> loaded_;
};

TEST_F(GeneratedPtxPrograms, TheDriverLoadsEveryGeneratedKernel) {
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  EXPECT_STREQ(loaded_->target(), major == 9 ? "sm_90" : "sm_80");
  EXPECT_EQ(loaded_->size(), modules->table.size());
  // The Fused launch finds a generated kernel for every program and size
  // run below, so those runs are the generated code's, not the backend's
  // own kernel's (FusedKernels.cu dispatches by key; GeneratedPtxGpuTest
  // proves it does).
  for (const Program &p : testPrograms())
    for (int64_t n : kSizes)
      EXPECT_NE(loaded_->find(runtimeKey(p, n)), nullptr) << p.label() << ", n " << n;
}

TEST_F(GeneratedPtxPrograms, DirectLaunchesMatchTheInterpreter) {
  CUstream stream = cuda::nativeStream(*stream_);
  forEachCase("direct launch", [&](Case &c) {
    CUfunction f = loaded_->find(c.spec.key);
    ASSERT_NE(f, nullptr);
    const std::vector<const float *> in = c.inputPointers();
    const std::vector<float *> out = c.outputPointers();
    Status s = loaded_->launch(f, stream, in.data(), static_cast<int>(in.size()), out.data(),
                               static_cast<int>(out.size()), c.n, "test");
    ASSERT_TRUE(s.isOk()) << s.message();
    s = device_->synchronize(*stream_);
    ASSERT_TRUE(s.isOk()) << s.message();
  });
}

TEST_F(GeneratedPtxPrograms, TheDevicesFusedLaunchMatchesTheInterpreter) {
  forEachCase("Device::launch", [&](Case &c) {
    const Launch launch = c.fusedLaunch();
    Status s = device_->launch(*stream_, launch, 0);
    ASSERT_TRUE(s.isOk()) << s.message();
    s = device_->synchronize(*stream_);
    ASSERT_TRUE(s.isOk()) << s.message();
  });
}

TEST_F(GeneratedPtxPrograms, CapturedIntoACudaGraphMatchesTheInterpreter) {
  ASSERT_TRUE(device_->canCapture());
  forEachCase("CUDA graph", [&](Case &c) {
    const Launch launch = c.fusedLaunch();
    Stream *streams[] = {stream_.get()};
    ASSERT_TRUE(device_->beginCapture(streams, 1).isOk());
    Status launched = device_->launch(*stream_, launch, 0);
    std::unique_ptr<Graph> graph;
    Status captured = device_->endCapture(graph);
    ASSERT_TRUE(launched.isOk()) << launched.message();
    ASSERT_TRUE(captured.isOk()) << captured.message();
    // Replayed twice, the results cleared before each: the graph's own
    // work writes them, not the capture.
    for (int replay = 0; replay < 2; ++replay) {
      ASSERT_NO_FATAL_FAILURE(c.clearResults());
      ASSERT_TRUE(device_->replay(*stream_, *graph).isOk());
      Status s = device_->synchronize(*stream_);
      ASSERT_TRUE(s.isOk()) << s.message();
      ASSERT_NO_FATAL_FAILURE(c.expectInterpreter("CUDA graph replay " + std::to_string(replay)));
    }
  });
}

} // namespace

int main(int argc, char **argv) {
  return fsdp::rt::test::runGpuTests(argc, argv, "generated-PTX program GPU tests");
}
