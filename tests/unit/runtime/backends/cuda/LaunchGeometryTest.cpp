//===- LaunchGeometryTest.cpp - the elementwise launch shape ---------------===//
//
// elementwiseBlocks (LaunchGeometry.h), which both the backend's own
// elementwise kernels and the generated Fused kernels launch with: one
// thread per element, at least one block, capped at kMaxBlocks (beyond
// which the kernels loop grid-stride, so every element is still covered).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/LaunchGeometry.h"

#include <gtest/gtest.h>

#include <initializer_list>

namespace fsdp::rt::cuda {
namespace {

TEST(LaunchGeometry, OneThreadPerElementUpToTheCap) {
  EXPECT_EQ(kBlockThreads, 256);
  EXPECT_EQ(elementwiseBlocks(0), 1u);
  EXPECT_EQ(elementwiseBlocks(1), 1u);
  EXPECT_EQ(elementwiseBlocks(256), 1u);
  EXPECT_EQ(elementwiseBlocks(257), 2u);
  EXPECT_EQ(elementwiseBlocks(kMaxBlocks * kBlockThreads), static_cast<unsigned>(kMaxBlocks));
  EXPECT_EQ(elementwiseBlocks(kMaxBlocks * kBlockThreads + 1), static_cast<unsigned>(kMaxBlocks));
  // Beyond 2^32 elements: still the cap, no overflow of the unsigned grid.
  EXPECT_EQ(elementwiseBlocks(int64_t(1) << 40), static_cast<unsigned>(kMaxBlocks));
  for (int64_t n : {1, 255, 256, 1000, 2097151, 2097152, 2097153, 3000017}) {
    const int64_t blocks = elementwiseBlocks(n), threads = blocks * kBlockThreads;
    if (blocks < kMaxBlocks) { // every element its thread, no empty block
      EXPECT_GE(threads, n) << n;
      EXPECT_LT(threads - n, kBlockThreads) << n;
    } else {
      EXPECT_GT(n, (kMaxBlocks - 1) * kBlockThreads) << n;
    }
  }
}

} // namespace
} // namespace fsdp::rt::cuda
