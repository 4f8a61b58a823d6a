//===- GeneratedPtxTest.cpp - generated PTX where there is no GPU ---------===//
//
// GeneratedPtx.h on a machine without a GPU or driver: with nothing
// registered a device loads nothing (and never opens the driver); with PTX
// registered, the CUDA device still fails the way it always has there -
// "no CUDA-capable device", CUDA's own reason - not on the missing driver
// library, and a direct load reports CUDA's reason rather than crashing.
// On a GPU machine these skip: tests/gpu/GeneratedPtxGpuTest.cpp runs the
// PTX there.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDevice.h"
#include "runtime/backends/cuda/GeneratedPtx.h"

#include <gtest/gtest.h>

namespace fsdp::rt::cuda {
namespace {

const FsdpGeneratedFused kFused[] = {{42, nullptr, nullptr, "fsdp_fused_42"}};

class GeneratedPtxWithoutGpu : public ::testing::Test {
protected:
  void SetUp() override {
    if (int gpus = countCudaDevices(&why_); gpus > 0)
      GTEST_SKIP() << gpus << " GPUs here: tests/gpu/GeneratedPtxGpuTest.cpp covers them";
  }
  void TearDown() override { clearGeneratedPtx(); }
  std::string why_;
};

TEST_F(GeneratedPtxWithoutGpu, NothingRegisteredLoadsNothing) {
  clearGeneratedPtx();
  std::unique_ptr<GeneratedPtx> loaded;
  std::string note = "unset";
  ASSERT_TRUE(GeneratedPtx::load(0, loaded, &note).isOk());
  EXPECT_EQ(loaded, nullptr);
  EXPECT_EQ(note, "unset");
}

TEST_F(GeneratedPtxWithoutGpu, TheDeviceStillReportsNoGpu) {
  ASSERT_TRUE(registerGeneratedPtx(".version 7.8\n.target sm_80\n", nullptr, kFused, 1).isOk());
  DeviceOptions options;
  std::unique_ptr<Device> device;
  Status s = createCudaDevice(options, device);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(device, nullptr);
  EXPECT_EQ(s.message(), "cuda: " + (why_.empty() ? "no CUDA-capable device is detected" : why_));

  std::unique_ptr<GeneratedPtx> loaded;
  s = GeneratedPtx::load(0, loaded);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(loaded, nullptr);
  EXPECT_EQ(s.message().rfind("cuda: compute capability of GPU 0: ", 0), 0u) << s.message();
}

} // namespace
} // namespace fsdp::rt::cuda
