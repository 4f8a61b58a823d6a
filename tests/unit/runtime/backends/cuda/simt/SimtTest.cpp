//===- SimtTest.cpp - the SIMT scheduler's fibers, barriers and stacks -----===//
//
// The scheduler of runtime/backends/cuda/simt (Simt.cpp) on its own, not
// through a kernel family: a block-wide tree over __shared__ memory whose
// threads keep addressed arrays on their fiber stacks across barriers, a
// warp reduction by shuffles, many blocks reusing the pooled stacks, and
// launches from several OS threads at once. Under ASan and TSan
// (scripts/test.sh --sanitize=...) these are the regression tests of the
// stack-switch annotations (FiberSanitizer.h): without them ASan reports the
// fibers' frames as overflows of the launching thread's stack and TSan
// loses its shadow stacks.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/simt/Simt.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace {

constexpr unsigned kThreads = 256;

/// Each block sums blockIdx.x * 1000 + t over its threads. Every thread
/// keeps an array on its own stack, passed by address (so ASan puts it in a
/// frame with redzones, or on the fake stack), and reads it back after each
/// barrier: a switch that lost the fiber's stack shows as a wrong sum.
void blockSum(unsigned long long *sums) {
  __shared__ unsigned long long partial[kThreads];
  volatile unsigned long long mine[16];
  const unsigned t = threadIdx.x;
  for (unsigned i = 0; i < 16; ++i)
    mine[i] = blockIdx.x * 1000ull + t + i;
  partial[t] = mine[0];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride)
      partial[t] += partial[t + stride];
    __syncthreads();
    for (unsigned i = 0; i < 16; ++i)
      if (mine[i] != blockIdx.x * 1000ull + t + i)
        partial[0] = ~0ull; // poisons the sum: this thread's stack changed
  }
  __syncthreads();
  if (t == 0)
    sums[blockIdx.x] = partial[0];
}

/// Each warp sums its lanes by xor shuffles; lane 0 writes the warp's sum.
void warpSum(unsigned *sums) {
  unsigned v = threadIdx.x;
  for (int offset = warpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (threadIdx.x % warpSize == 0)
    sums[blockIdx.x * (blockDim.x / warpSize) + threadIdx.x / warpSize] = v;
}

unsigned long long expectedBlockSum(unsigned block) {
  return block * 1000ull * kThreads + kThreads * (kThreads - 1ull) / 2;
}

void runBlockSums(unsigned blocks, std::vector<unsigned long long> &sums) {
  sums.assign(blocks, 0);
  const char *error = fsdp::simt::launch(blockSum, dim3(blocks), dim3(kThreads), sums.data());
  ASSERT_EQ(error, nullptr) << error;
}

TEST(SimtScheduler, BarriersKeepEachFibersStack) {
  std::vector<unsigned long long> sums;
  runBlockSums(40, sums); // 40 blocks: every later block reuses pooled stacks
  for (unsigned b = 0; b < sums.size(); ++b)
    EXPECT_EQ(sums[b], expectedBlockSum(b)) << "block " << b;
}

TEST(SimtScheduler, WarpShufflesReduce) {
  constexpr unsigned blocks = 3, threads = 128, warps = threads / 32;
  std::vector<unsigned> sums(blocks * warps, 0);
  ASSERT_EQ(fsdp::simt::launch(warpSum, dim3(blocks), dim3(threads), sums.data()), nullptr);
  for (unsigned w = 0; w < sums.size(); ++w) {
    const unsigned first = (w % warps) * 32;
    EXPECT_EQ(sums[w], 32 * first + 31 * 32 / 2) << "warp " << w;
  }
}

TEST(SimtScheduler, LaunchesFromSeveralThreadsAtOnce) {
  // Each OS thread has its own stack pool and __shared__ copies; the
  // fibers of different threads run truly in parallel.
  constexpr unsigned kOsThreads = 4, kBlocks = 6;
  std::vector<std::vector<unsigned long long>> sums(kOsThreads);
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < kOsThreads; ++i)
    threads.emplace_back([&sums, i] { runBlockSums(kBlocks, sums[i]); });
  for (std::thread &t : threads)
    t.join();
  for (unsigned i = 0; i < kOsThreads; ++i)
    for (unsigned b = 0; b < kBlocks; ++b)
      EXPECT_EQ(sums[i][b], expectedBlockSum(b)) << "thread " << i << " block " << b;
}

} // namespace
