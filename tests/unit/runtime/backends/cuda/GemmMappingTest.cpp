//===- GemmMappingTest.cpp - the cuBLAS mapping executed through cblas ----===//
//
// Every product shape the plans use, mapped by GemmMapping.h to its
// column-major description and executed through cblas with CblasColMajor
// (CblasGemm.h, what cuBLAS would be asked to do), against the CPU kernel's
// row-major result: a Linear layer x[B,T,C] @ W^T (the folded case),
// attention's q @ k^T over [B,H,T,D], the backward's transposed operands,
// batch broadcasting on one and on both sides (the outer loop), 1-D
// promotion, and gemm with alpha/beta. A wrong transpose flag, leading
// dimension or stride gives a wrong product here.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cuda/GemmMapping.h"
#include "runtime/backends/cuda/simt/CblasGemm.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fsdp::rt::cuda {
namespace {

using cpu::kerneltest::Dims;
using cpu::kerneltest::TestTensor;

TestTensor filled(DType t, Dims dims, uint32_t seed) {
  TestTensor x(t, std::move(dims));
  x.fillUniform(seed, -1, 1);
  return x;
}

/// Maps and runs a matmul both ways and compares (f32 and f64).
void expectMatMul(Dims aDims, Dims bDims, Dims outDims, bool transA, bool transB,
                  bool expectFolded = false, int64_t expectOuter = 1) {
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(std::string(dtypeName(t)));
    TestTensor a = filled(t, aDims, 1), b = filled(t, bDims, 2);
    TestTensor want(t, outDims), got(t, outDims);
    ASSERT_TRUE(cpu::matmul(a.ref(), b.ref(), want.ref(), transA, transB).isOk());
    GemmMapping mapping;
    ASSERT_TRUE(mapMatMul(a.ref(), b.ref(), got.ref(), transA, transB, mapping).isOk());
    if (expectFolded) { // one call, no batch: the batch became rows
      EXPECT_EQ(mapping.call.batch, 1);
    }
    EXPECT_EQ(mapping.outer.numElements(), expectOuter);
    if (t == DType::F32)
      runColumnMajorGemm(mapping, a.as<float>(), b.as<float>(), got.as<float>());
    else
      runColumnMajorGemm(mapping, a.as<double>(), b.as<double>(), got.as<double>());
    for (int64_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got.get(i), want.get(i), 1e-5 * std::max(1.0, std::fabs(want.get(i))))
          << "element " << i;
  }
}

TEST(GemmMapping, PlainAndTransposedMatrices) {
  expectMatMul({5, 7}, {7, 3}, {5, 3}, false, false);
  expectMatMul({7, 5}, {7, 3}, {5, 3}, true, false);
  expectMatMul({5, 7}, {3, 7}, {5, 3}, false, true);
  expectMatMul({7, 5}, {3, 7}, {5, 3}, true, true);
  expectMatMul({1, 9}, {9, 1}, {1, 1}, false, false);
}

TEST(GemmMapping, LinearLayerFoldsTheBatchIntoRows) {
  // x[B,T,C] @ W^T with W stored [out, in]: one call with B*T rows.
  expectMatMul({2, 6, 8}, {5, 8}, {2, 6, 5}, false, true, true);
  expectMatMul({2, 6, 8}, {8, 5}, {2, 6, 5}, false, false, true);
}

TEST(GemmMapping, AttentionAndItsBackwardAreStridedBatches) {
  // q @ k^T over [B, H, T, D] (k stored untransposed: transB), then p @ v.
  expectMatMul({2, 3, 4, 8}, {2, 3, 4, 8}, {2, 3, 4, 4}, false, true);
  expectMatMul({2, 3, 4, 4}, {2, 3, 4, 8}, {2, 3, 4, 8}, false, false);
  // The backward's transposed left operand (dW = x^T @ dy per batch).
  expectMatMul({2, 3, 4, 8}, {2, 3, 4, 5}, {2, 3, 8, 5}, true, false);
}

TEST(GemmMapping, BroadcastBatchesOnOneAndBothSides) {
  expectMatMul({3, 4, 5}, {1, 5, 2}, {3, 4, 2}, false, false);
  expectMatMul({1, 4, 5}, {3, 5, 2}, {3, 4, 2}, false, false);
  // Both sides broadcast: no single strided batch covers it.
  expectMatMul({2, 1, 4, 5}, {1, 3, 5, 2}, {2, 3, 4, 2}, false, false, false, 2);
  expectMatMul({2, 1, 4, 5}, {1, 3, 2, 5}, {2, 3, 4, 2}, false, true, false, 2);
}

TEST(GemmMapping, VectorsArePromoted) {
  expectMatMul({7}, {7, 3}, {3}, false, false);
  expectMatMul({4, 7}, {7}, {4}, false, false);
  expectMatMul({2, 4, 7}, {7}, {2, 4}, false, false);
  expectMatMul({7}, {2, 7, 3}, {2, 3}, false, false);
}

TEST(GemmMapping, GemmScalesAndAccumulatesOntoTheBias) {
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      TestTensor a = filled(DType::F32, transA ? Dims{6, 4} : Dims{4, 6}, 3);
      TestTensor b = filled(DType::F32, transB ? Dims{5, 6} : Dims{6, 5}, 4);
      TestTensor bias = filled(DType::F32, {5}, 5);
      TestTensor want(DType::F32, {4, 5}), got(DType::F32, {4, 5});
      TensorRef biasRef = bias.ref();
      ASSERT_TRUE(
          cpu::gemm(a.ref(), b.ref(), &biasRef, 0.5f, 2.0f, transA, transB, want.ref()).isOk());
      for (int64_t i = 0; i < got.size(); ++i) // the bias broadcast first, as the kernel does
        got.set(i, bias.get(i % 5));
      GemmMapping mapping;
      ASSERT_TRUE(mapGemm(a.ref(), b.ref(), &biasRef, got.ref(), 0.5f, 2.0f, transA, transB,
                          mapping)
                      .isOk());
      runColumnMajorGemm(mapping, a.as<float>(), b.as<float>(), got.as<float>());
      for (int64_t i = 0; i < want.size(); ++i)
        ASSERT_NEAR(got.get(i), want.get(i), 1e-5) << transA << transB << " element " << i;
    }
}

TEST(GemmMapping, RefusesWhatTheCpuKernelRefuses) {
  TestTensor a(DType::F32, {3, 4}), b(DType::F32, {5, 2}), out(DType::F32, {3, 2});
  GemmMapping mapping;
  EXPECT_FALSE(mapMatMul(a.ref(), b.ref(), out.ref(), false, false, mapping).isOk());
  TestTensor v(DType::F32, {4});
  EXPECT_FALSE(mapMatMul(v.ref(), a.ref(), out.ref(), true, false, mapping).isOk());
  EXPECT_FALSE(mapGemm(v.ref(), a.ref(), nullptr, out.ref(), 1, 0, false, false, mapping).isOk());
  // Results and batch dims that do not fit the operands (the backends would
  // otherwise run off a buffer).
  TestTensor c(DType::F32, {4, 2}), wide(DType::F32, {3, 5}), batched(DType::F32, {3, 3, 4});
  EXPECT_TRUE(mapMatMul(a.ref(), c.ref(), out.ref(), false, false, mapping).isOk());
  EXPECT_FALSE(mapMatMul(a.ref(), c.ref(), wide.ref(), false, false, mapping).isOk());
  TestTensor out2(DType::F32, {2, 3, 2});
  EXPECT_FALSE(mapMatMul(batched.ref(), c.ref(), out2.ref(), false, false, mapping).isOk());
  EXPECT_FALSE(mapGemm(a.ref(), b.ref(), nullptr, out.ref(), 1, 0, false, false, mapping).isOk());
  EXPECT_FALSE(mapGemm(a.ref(), c.ref(), nullptr, wide.ref(), 1, 0, false, false, mapping).isOk());
  TestTensor row(DType::F32, {3}), column(DType::F32, {3, 1});
  const TensorRef rowRef = row.ref(), columnRef = column.ref();
  EXPECT_FALSE(mapGemm(a.ref(), c.ref(), &rowRef, out.ref(), 1, 1, false, false, mapping).isOk());
  EXPECT_TRUE(
      mapGemm(a.ref(), c.ref(), &columnRef, out.ref(), 1, 1, false, false, mapping).isOk());
}

} // namespace
} // namespace fsdp::rt::cuda
