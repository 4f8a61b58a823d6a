//===- GpuTestMain.h - the main of the GPU suite's gtest binaries ---------===//
//
// Every GPU gtest binary starts the same way: without a CUDA device it
// says how many tests it did not run and why, and exits 77, which ctest
// reports as skipped (SKIP_RETURN_CODE), so a machine without a GPU never
// counts them as passed; with one it runs them all.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_GPU_GPUTESTMAIN_H
#define FSDP_TESTS_GPU_GPUTESTMAIN_H

#include "runtime/backends/cuda/CudaDevice.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace fsdp::rt::test {

/// gtest's main for the tests named by `what`; `gpus` (optional) receives
/// the number of CUDA devices.
inline int runGpuTests(int argc, char **argv, const char *what, int *gpus = nullptr) {
  ::testing::InitGoogleTest(&argc, argv);
  std::string why;
  const int count = fsdp::rt::countCudaDevices(&why);
  if (gpus)
    *gpus = count;
  if (count == 0) {
    std::printf("no GPU: %d %s not run (%s)\n",
                ::testing::UnitTest::GetInstance()->total_test_count(), what,
                why.empty() ? "no CUDA-capable device" : why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}

} // namespace fsdp::rt::test

#endif // FSDP_TESTS_GPU_GPUTESTMAIN_H
