//===- FusedKernelsTest.cpp - the CUDA fused elementwise kernel vs CPU -----===//
//
// The fused kernel (FusedKernels.cu) under SIMT emulation against the CPU's:
// every op code alone and in chains, broadcast scalars, several results,
// element counts spanning several blocks, and malformed programs, which
// both backends refuse (they share the decoder); bf16 and f16 programs
// (each op rounded to the storage dtype) over every 16-bit pattern, and
// programs mixing dtypes, refused by both. All bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

#include <initializer_list>

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

/// A Fused case over `inputs` with `ops` ({op, a, b} each) and results
/// `results` (value ids), each of `n` elements.
KernelCase fused(std::vector<TestTensor> inputs, std::vector<std::vector<int64_t>> ops,
                 std::vector<int64_t> results, int64_t n, DType dtype = DType::F32) {
  KernelCase c(Kernel::Fused);
  for (TestTensor &t : inputs)
    c.in(std::move(t));
  c.ints = {static_cast<int64_t>(ops.size())};
  for (const auto &op : ops)
    c.ints.insert(c.ints.end(), op.begin(), op.end());
  c.ints.insert(c.ints.end(), results.begin(), results.end());
  for (size_t i = 0; i < results.size(); ++i)
    c.out(dtype, {n});
  return c;
}

TEST(CudaFused, EveryOpAloneMatchesBitForBit) {
  const int64_t n = 3001;
  for (int64_t op = 0; op < 16; ++op) {
    SCOPED_TRACE("op " + std::to_string(op));
    bool unary = op >= 4 && op <= 11;
    double lo = op == 7 || op == 8 ? 0.01 : -4; // log, sqrt
    std::vector<TestTensor> in{uniform(DType::F32, {n}, 1, lo, 4),
                               uniform(DType::F32, {n}, 2, -4, 4)};
    expectSameAsCpu(fused(std::move(in), {{op, 0, unary ? -1 : 1}}, {2}, n), Match::Bits);
  }
}

TEST(CudaFused, ChainsWithScalarsAndSeveralResults) {
  // gelu-like: x * 0.5 * (1 + erf(x * c)), and its pieces as results too.
  const int64_t n = 2049;
  std::vector<TestTensor> in{uniform(DType::F32, {n}, 3), values(DType::F32, {1}, {0.70710678}),
                             values(DType::F32, {1}, {0.5}), values(DType::F32, {1}, {1.0})};
  expectSameAsCpu(fused(std::move(in),
                        {{2, 0, 1}, {9, 4, -1}, {0, 5, 3}, {2, 0, 2}, {2, 7, 6}},
                        {8, 5}, n),
                  Match::Bits);
  // A tanh gradient chain reading an earlier result twice.
  std::vector<TestTensor> in2{uniform(DType::F32, {n}, 4), uniform(DType::F32, {n}, 5)};
  expectSameAsCpu(fused(std::move(in2), {{10, 0, -1}, {14, 2, 1}, {2, 3, 2}}, {4, 3}, n),
                  Match::Bits);
  // One element (no broadcast) and special values.
  std::vector<TestTensor> in3{values(DType::F32, {1}, {NAN}), values(DType::F32, {1}, {-0.0})};
  expectSameAsCpu(fused(std::move(in3), {{0, 0, 1}, {5, 1, -1}}, {2, 3}, 1), Match::Bits);
}

TEST(CudaFused, MalformedProgramsAreRefusedByBoth) {
  auto two = [] {
    return std::vector<TestTensor>{uniform(DType::F32, {8}, 1), uniform(DType::F32, {8}, 2)};
  };
  expectSameAsCpu(fused(two(), {{99, 0, 1}}, {2}, 8), Match::Bits);   // unknown op
  expectSameAsCpu(fused(two(), {{0, 0, 2}}, {2}, 8), Match::Bits);    // operand not yet computed
  expectSameAsCpu(fused(two(), {{4, 0, 1}}, {2}, 8), Match::Bits);    // unary with a b
  expectSameAsCpu(fused(two(), {{0, 0, 1}}, {1}, 8), Match::Bits);    // result is an input
  std::vector<TestTensor> wrong{uniform(DType::F32, {8}, 1), uniform(DType::F32, {3}, 2)};
  expectSameAsCpu(fused(std::move(wrong), {{0, 0, 1}}, {2}, 8), Match::Bits); // bad count
}

class CudaFusedLowPrecision : public ::testing::TestWithParam<DType> {};

TEST_P(CudaFusedLowPrecision, EveryOpInAChainOverEveryPatternMatchesBitForBit) {
  const DType dt = GetParam();
  const int64_t n = 65536;
  TestTensor patterns(dt, {n});
  for (int64_t i = 0; i < n; ++i)
    patterns.setBits(i, static_cast<uint64_t>(i));
  for (int64_t op = 0; op < 16; ++op) {
    SCOPED_TRACE("op " + std::to_string(op));
    const int64_t b = op >= 4 && op <= 11 ? -1 : 1;
    // op(x, y), then * scale (a broadcast scalar), then op again: the
    // intermediates' rounding shows in the results (the last and the first).
    std::vector<TestTensor> in{patterns, uniform(dt, {n}, 2, -3, 3), values(dt, {1}, {0.3})};
    expectSameAsCpu(fused(std::move(in), {{op, 0, b}, {2, 3, 2}, {op, 4, b}}, {5, 3}, n, dt),
                    Match::Bits);
  }
}

TEST_P(CudaFusedLowPrecision, GeluChainAndMixedDTypes) {
  const DType dt = GetParam();
  const int64_t n = 2049;
  std::vector<TestTensor> in{uniform(dt, {n}, 3, -4, 4), values(dt, {1}, {0.70710678}),
                             values(dt, {1}, {0.5}), values(dt, {1}, {1.0})};
  expectSameAsCpu(fused(std::move(in), {{2, 0, 1}, {9, 4, -1}, {0, 5, 3}, {2, 0, 2}, {2, 7, 6}},
                        {8, 5}, n, dt),
                  Match::Bits);
  // An f32 scalar with a low-precision tensor, and f32 results of
  // low-precision inputs: refused by both.
  std::vector<TestTensor> mixed{uniform(dt, {8}, 1), values(DType::F32, {1}, {2.0})};
  expectSameAsCpu(fused(std::move(mixed), {{2, 0, 1}}, {2}, 8, dt), Match::Bits);
  std::vector<TestTensor> narrowIn{uniform(dt, {8}, 1), uniform(dt, {8}, 2)};
  expectSameAsCpu(fused(std::move(narrowIn), {{0, 0, 1}}, {2}, 8, DType::F32), Match::Bits);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CudaFusedLowPrecision, ::testing::Values(DType::BF16, DType::F16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

} // namespace
} // namespace fsdp::rt::cuda::simttest
