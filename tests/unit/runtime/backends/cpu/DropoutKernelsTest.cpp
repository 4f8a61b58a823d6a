//===- DropoutKernelsTest.cpp - the counter-based dropout -----------------===//
//
// Checks that dropout's mask is a pure function of (seed, step, index):
// repeated calls agree, other seeds or steps differ, and a prefix of a
// tensor draws the same mask as the whole (what makes it independent of how
// elements are split over threads or shards); that kept elements are scaled
// by 1 / (1 - ratio) and dropped ones are zero; that the keep rate matches
// 1 - ratio; and that inference or ratio 0 is the identity with an all-true
// mask.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/support/Half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::makeRef;

/// Input i + 1 (exactly scalable by 2 in f32), its dropout and the mask.
struct DropoutRun {
  std::vector<float> in, out;
  std::vector<uint8_t> mask;
};

DropoutRun runDropout(int64_t count, float ratio, bool training, uint64_t seed, uint64_t step) {
  DropoutRun r;
  r.in.resize(count);
  for (int64_t i = 0; i < count; ++i)
    r.in[i] = static_cast<float>(i % 1000 + 1);
  r.out.assign(count, -1.0f);
  r.mask.assign(count, 7);
  const Status status =
      dropout(makeRef(DType::F32, {count}, r.in.data()), ratio, training, seed, step,
              makeRef(DType::F32, {count}, r.out.data()), makeRef(DType::Bool, {count}, r.mask.data()));
  EXPECT_TRUE(status.isOk()) << status.message();
  return r;
}

TEST(DropoutKernels, DeterministicPerSeedAndStep) {
  const DropoutRun a = runDropout(4096, 0.5f, true, 42, 3);
  const DropoutRun b = runDropout(4096, 0.5f, true, 42, 3);
  EXPECT_EQ(a.mask, b.mask);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.mask, runDropout(4096, 0.5f, true, 42, 4).mask);
  EXPECT_NE(a.mask, runDropout(4096, 0.5f, true, 43, 3).mask);
  // The mask of element i does not depend on how many elements there are.
  const DropoutRun prefix = runDropout(1000, 0.5f, true, 42, 3);
  EXPECT_TRUE(std::equal(prefix.mask.begin(), prefix.mask.end(), a.mask.begin()));
}

TEST(DropoutKernels, KeepRateAndScaling) {
  const int64_t count = 100000;
  for (float ratio : {0.5f, 0.1f, 0.9f}) {
    const DropoutRun r = runDropout(count, ratio, true, 7, 0);
    int64_t kept = 0;
    const float scale = 1.0f / (1.0f - ratio);
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_TRUE(r.mask[i] == 0 || r.mask[i] == 1) << i;
      if (r.mask[i]) {
        ++kept;
        ASSERT_EQ(r.out[i], r.in[i] * scale) << i;
      } else {
        ASSERT_EQ(r.out[i], 0.0f) << i;
      }
    }
    // Binomial standard deviation is at most 0.0016 here: 0.01 is > 6 sigma.
    EXPECT_NEAR(static_cast<double>(kept) / count, 1.0 - ratio, 0.01) << "ratio " << ratio;
  }
}

TEST(DropoutKernels, IdentityWhenNotDropping) {
  for (const auto &[ratio, training] : {std::pair{0.0f, true}, std::pair{0.5f, false}}) {
    const DropoutRun r = runDropout(1000, ratio, training, 1, 1);
    EXPECT_EQ(r.out, r.in);
    for (uint8_t m : r.mask)
      ASSERT_EQ(m, 1);
  }
}

TEST(DropoutKernels, SixteenBitFloats) {
  const int64_t count = 64;
  std::vector<uint16_t> in(count), out(count);
  std::vector<uint8_t> mask(count);
  for (int64_t i = 0; i < count; ++i)
    in[i] = floatToBf16(static_cast<float>(i));
  ASSERT_TRUE(dropout(makeRef(DType::BF16, {count}, in.data()), 0.5f, true, 9, 9,
                      makeRef(DType::BF16, {count}, out.data()),
                      makeRef(DType::Bool, {count}, mask.data()))
                  .isOk());
  // The f32 run with the same seed and step draws the same mask.
  const DropoutRun reference = runDropout(count, 0.5f, true, 9, 9);
  EXPECT_EQ(mask, reference.mask);
  for (int64_t i = 0; i < count; ++i)
    EXPECT_EQ(bf16ToFloat(out[i]), mask[i] ? 2.0f * i : 0.0f) << i;
}

TEST(DropoutKernels, NullMaskIsNotWritten) {
  std::vector<float> in(16, 1.0f), out(16);
  ASSERT_TRUE(dropout(makeRef(DType::F32, {16}, in.data()), 0.5f, true, 1, 2,
                      makeRef(DType::F32, {16}, out.data()), makeRef(DType::Bool, {16}, nullptr))
                  .isOk());
}

TEST(DropoutKernels, Errors) {
  std::vector<float> in(4), out(4);
  std::vector<uint8_t> mask(4);
  const TensorRef inRef = makeRef(DType::F32, {4}, in.data());
  const TensorRef outRef = makeRef(DType::F32, {4}, out.data());
  const TensorRef maskRef = makeRef(DType::Bool, {4}, mask.data());
  EXPECT_FALSE(dropout(inRef, 1.0f, true, 0, 0, outRef, maskRef).isOk());
  EXPECT_FALSE(dropout(inRef, -0.1f, true, 0, 0, outRef, maskRef).isOk());
  EXPECT_FALSE(dropout(inRef, 0.5f, true, 0, 0, outRef, outRef).isOk()); // mask not bool
  std::vector<int32_t> ints(4);
  const TensorRef intRef = makeRef(DType::I32, {4}, ints.data());
  EXPECT_FALSE(dropout(intRef, 0.5f, true, 0, 0, intRef, maskRef).isOk());
}

} // namespace
