//===- GeneratedPtxGpuTest.cpp - generated PTX for Fused chains on a GPU --===//
//
// The CUDA backend's generated-PTX path (runtime/backends/cuda/GeneratedPtx.h)
// on a real GPU: the registered module text that fits the GPU loads, its
// entry is found by the Fused program's key, the kernel launched directly,
// through the Fused launch (kernels/FusedKernels.cu) and inside a captured
// CUDA graph gives the CPU interpreter's bits (the fixture's ops are add and
// mul, which both round the same; a chain with exp/log/erf may differ from
// glibc by an ulp on libdevice, as the backend's own kernel does); a program
// whose key is not registered runs the backend's own kernel; a module the
// driver refuses, or one lacking a registered entry, is an error saying
// why. The PTX is a hand-written fixture (tests/gpu/fixtures) with the
// generated kernels' parameters, so the loader and dispatch are tested
// apart from the generator; GeneratedPtxProgramsGpuTest.cpp runs the
// compiler's own PTX. Without a GPU it prints "no GPU: ..." and exits 77
// (ctest: skipped; label gpu, scripts/test-gpu.sh).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cuda/CudaDevice.h"
#include "runtime/backends/cuda/CudaKernels.h"
#include "runtime/backends/cuda/GeneratedPtx.h"
#include "tests/gpu/GpuTestMain.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

using namespace fsdp::rt;

using fsdp::rt::cpu::kerneltest::makeRef;

namespace {

const char *const kEntry = "fsdp_test_fused_add_mul";

/// The fixture's program: out0 = (in0 + in1) * in2, out1 = in0 + in1.
std::vector<int64_t> addMulInts() { return {2, FusedAdd, 0, 1, FusedMul, 3, 2, 4, 3}; }
/// The same with a subtraction: another program, another key.
std::vector<int64_t> subMulInts() { return {2, FusedSub, 0, 1, FusedMul, 3, 2, 4, 3}; }

uint64_t keyOf(const std::vector<int64_t> &ints, bool broadcastLast) {
  const bool scalar[3] = {false, false, broadcastLast};
  return fusedProgramKey(ints.data(), static_cast<int>(ints.size()), scalar, 3);
}

std::string fixtureSm80() {
  std::ifstream in(FSDP_PTX_FIXTURE);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string fixtureSm90() {
  std::string text = fixtureSm80();
  const size_t at = text.find("\n.target sm_80");
  if (at != std::string::npos)
    text.replace(at, 14, "\n.target sm_90");
  return text;
}

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

TensorRef f32(float *data, int64_t n) {
  return makeRef(DType::F32, {n}, data);
}

/// Device buffers for one launch and the CPU's answer for `ints`.
struct Operands {
  int64_t n = 0;
  bool broadcast = true;
  std::vector<float> a, b, c, want0, want1;
  float *dIn[3] = {};
  float *dOut[2] = {};

  void make(int64_t count, bool broadcastLast, const std::vector<int64_t> &ints) {
    n = count;
    broadcast = broadcastLast;
    std::mt19937 rng(static_cast<unsigned>(count));
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    a.resize(n), b.resize(n), c.resize(broadcast ? 1 : n);
    for (float &x : a)
      x = u(rng);
    for (float &x : b)
      x = u(rng);
    for (float &x : c)
      x = u(rng);
    want0.assign(n, 0), want1.assign(n, 0);
    TensorRef in[3] = {f32(a.data(), n), f32(b.data(), n),
                       f32(c.data(), static_cast<int64_t>(c.size()))};
    TensorRef out[2] = {f32(want0.data(), n), f32(want1.data(), n)};
    Status s = cpu::fusedElementwise(in, 3, ints.data(), static_cast<int>(ints.size()), out, 2);
    ASSERT_TRUE(s.isOk()) << s.message();
    const std::vector<float> *host[3] = {&a, &b, &c};
    for (int i = 0; i < 3; ++i) {
      CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&dIn[i]), host[i]->size() * 4));
      CUDA_OK(cudaMemcpy(dIn[i], host[i]->data(), host[i]->size() * 4, cudaMemcpyHostToDevice));
    }
    for (float *&o : dOut) {
      CUDA_OK(cudaMalloc(reinterpret_cast<void **>(&o), n * 4));
      CUDA_OK(cudaMemset(o, 0xff, n * 4)); // NaNs: an unwritten element fails
    }
  }
  ~Operands() {
    for (float *p : dIn)
      cudaFree(p);
    for (float *p : dOut)
      cudaFree(p);
  }
  TensorRef in(int i) const {
    return f32(dIn[i], i == 2 && broadcast ? 1 : n);
  }
  TensorRef out(int i) const { return f32(dOut[i], n); }

  void expectCpuBits(const char *how) const {
    std::vector<float> got0(n), got1(n);
    ASSERT_EQ(cudaMemcpy(got0.data(), dOut[0], n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got1.data(), dOut[1], n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(got0.data(), want0.data(), n * 4), 0) << how << ": result 0, n " << n;
    EXPECT_EQ(std::memcmp(got1.data(), want1.data(), n * 4), 0) << how << ": result 1, n " << n;
  }
};

class GeneratedPtxGpu : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    const FsdpGeneratedFused fused[] = {{keyOf(addMulInts(), true), nullptr, nullptr, kEntry}};
    sm80_ = fixtureSm80();
    sm90_ = fixtureSm90();
    ASSERT_NE(sm80_.find(kEntry), std::string::npos) << "fixture " << FSDP_PTX_FIXTURE;
    ASSERT_TRUE(registerFixture(sm80_.c_str(), sm90_.c_str(), fused, 1));
    std::string note;
    Status s = cuda::GeneratedPtx::load(0, loaded_, &note);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_NE(loaded_, nullptr) << note;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
  }
  void TearDown() override {
    if (stream_)
      cudaStreamDestroy(stream_);
    loaded_.reset();
    cuda::clearGeneratedPtx();
  }
  static bool registerFixture(const char *sm80, const char *sm90, const FsdpGeneratedFused *fused,
                              uint32_t count) {
    Status s = cuda::registerGeneratedPtx(sm80, sm90, fused, count);
    EXPECT_TRUE(s.isOk()) << s.message();
    return s.isOk();
  }
  cuda::KernelContext context() const {
    cuda::KernelContext ctx;
    ctx.stream = stream_;
    ctx.generated = loaded_.get();
    return ctx;
  }
  Status fused(const Operands &o, const std::vector<int64_t> &ints) const {
    TensorRef in[3] = {o.in(0), o.in(1), o.in(2)};
    TensorRef out[2] = {o.out(0), o.out(1)};
    return cuda::fusedElementwise(context(), in, 3, ints.data(), static_cast<int>(ints.size()),
                                  out, 2);
  }

  std::string sm80_, sm90_;
  std::unique_ptr<cuda::GeneratedPtx> loaded_;
  cudaStream_t stream_ = nullptr;
};

TEST_F(GeneratedPtxGpu, LoadsTheModuleForThisGpu) {
  int major = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  EXPECT_STREQ(loaded_->target(), major == 9 ? "sm_90" : "sm_80");
  EXPECT_EQ(loaded_->size(), 1u);
  EXPECT_NE(loaded_->find(keyOf(addMulInts(), true)), nullptr);
  EXPECT_EQ(loaded_->find(keyOf(addMulInts(), false)), nullptr);
  EXPECT_EQ(loaded_->find(keyOf(subMulInts(), true)), nullptr);
}

TEST_F(GeneratedPtxGpu, DirectLaunchGivesTheCpusBits) {
  // One block, a partial block, and more elements than threads (the
  // kernel's grid-stride loop covers the rest).
  for (int64_t n : {int64_t(1), int64_t(1000), int64_t(3000017)}) {
    Operands o;
    ASSERT_NO_FATAL_FAILURE(o.make(n, true, addMulInts()));
    CUfunction f = loaded_->find(keyOf(addMulInts(), true));
    ASSERT_NE(f, nullptr);
    Status s = loaded_->launch(f, stream_, o.dIn, 3, o.dOut, 2, n, "test");
    ASSERT_TRUE(s.isOk()) << s.message();
    CUDA_OK(cudaStreamSynchronize(stream_));
    o.expectCpuBits("cuLaunchKernel");
  }
}

TEST_F(GeneratedPtxGpu, TheFusedLaunchRunsTheKernelOfItsKey) {
  // The fixture registered under the subtraction program's key: the Fused
  // launch of that program must run the fixture (an addition), so the
  // result is the addition program's - proof the dispatch goes by key.
  const FsdpGeneratedFused swapped[] = {{keyOf(subMulInts(), true), nullptr, nullptr, kEntry}};
  ASSERT_TRUE(registerFixture(sm80_.c_str(), sm90_.c_str(), swapped, 1));
  std::unique_ptr<cuda::GeneratedPtx> other;
  ASSERT_TRUE(cuda::GeneratedPtx::load(0, other).isOk());
  ASSERT_NE(other, nullptr);
  loaded_.swap(other);
  Operands o;
  ASSERT_NO_FATAL_FAILURE(o.make(4099, true, addMulInts()));
  Status s = fused(o, subMulInts());
  ASSERT_TRUE(s.isOk()) << s.message();
  CUDA_OK(cudaStreamSynchronize(stream_));
  o.expectCpuBits("Fused launch of the swapped key");
}

TEST_F(GeneratedPtxGpu, TheFusedLaunchGivesTheCpusBitsEitherWay) {
  // Registered (broadcast c) and not (c of n elements: another key, the
  // backend's own kernel).
  for (bool broadcast : {true, false}) {
    Operands o;
    ASSERT_NO_FATAL_FAILURE(o.make(70001, broadcast, addMulInts()));
    Status s = fused(o, addMulInts());
    ASSERT_TRUE(s.isOk()) << s.message();
    CUDA_OK(cudaStreamSynchronize(stream_));
    o.expectCpuBits(broadcast ? "generated kernel" : "backend's own kernel");
  }
}

TEST_F(GeneratedPtxGpu, IsCapturedIntoACudaGraph) {
  Operands o;
  ASSERT_NO_FATAL_FAILURE(o.make(300007, true, addMulInts()));
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CUDA_OK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeGlobal));
  Status s = fused(o, addMulInts());
  CUDA_OK(cudaStreamEndCapture(stream_, &graph));
  ASSERT_TRUE(s.isOk()) << s.message();
  size_t nodes = 0;
  CUDA_OK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EXPECT_EQ(nodes, 1u);
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    for (float *p : o.dOut)
      CUDA_OK(cudaMemset(p, 0xff, o.n * 4));
    CUDA_OK(cudaGraphLaunch(exec, stream_));
    CUDA_OK(cudaStreamSynchronize(stream_));
    o.expectCpuBits("graph replay");
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_F(GeneratedPtxGpu, RefusedModulesSayWhy) {
  const FsdpGeneratedFused fused[] = {{1, nullptr, nullptr, kEntry}};
  std::unique_ptr<cuda::GeneratedPtx> bad;
  ASSERT_TRUE(registerFixture(".version 7.8\n.target sm_80\n.address_size 64\nnot ptx;\n",
                              nullptr, fused, 1));
  Status s = cuda::GeneratedPtx::load(0, bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(bad, nullptr);
  EXPECT_NE(s.message().find("cuda: loading the generated PTX (sm_80) on GPU 0: cuda driver: "
                             "cuModuleLoadDataEx: "),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("the PTX compiler says: "), std::string::npos) << s.message();

  const FsdpGeneratedFused missing[] = {{1, nullptr, nullptr, "no_such_kernel"}};
  ASSERT_TRUE(registerFixture(sm80_.c_str(), nullptr, missing, 1));
  s = cuda::GeneratedPtx::load(0, bad);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("has no kernel no_such_kernel"), std::string::npos) << s.message();
}

TEST_F(GeneratedPtxGpu, TheCudaDeviceLoadsItWhenCreated) {
  DeviceOptions options;
  std::unique_ptr<Device> device;
  Status s = createCudaDevice(options, device);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_NE(device, nullptr);
}

} // namespace

int main(int argc, char **argv) {
  return fsdp::rt::test::runGpuTests(argc, argv, "generated-PTX GPU tests");
}
