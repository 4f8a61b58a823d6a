//===- LossGradKernelsTest.cpp - CUDA loss gradients vs CPU ----------------===//
//
// The CUDA loss gradients (LossGradKernels.cu) under SIMT emulation against
// the CPU's, bit for bit: NLL's and softmax cross-entropy's gradients over
// reductions, class weights, ignore_index (absent, a valid class, -100),
// the layouts of LossCases.h (up to 50k result elements, so many blocks
// each repeat the mean's weight sum; an empty batch), f32/f64/f16/bf16
// with i32/i64 labels; a mean over only ignored positions; labels out of
// range refused by both, whichever block meets them.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/LossCases.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

KernelCase nllGradCase(DType t, const TestTensor &labels, const Dims &scores, int64_t reduction,
                       bool weighted, IgnoreSetting ignore) {
  KernelCase g(Kernel::NllLossGrad);
  g.in(labels);
  weighted ? (void)g.in(uniform(t, {scores[1]}, 2, 0.5, 2)) : (void)g.absent();
  g.in(uniform(t, lossDims(reduction, labels.dims), 3, 0.5, 1.5)).out(t, scores);
  g.ints = {reduction, ignore.ignores, ignore.value};
  return g;
}

/// log_prob may hold any values: the gradient only exponentiates them.
KernelCase sceGradCase(DType t, const TestTensor &labels, const Dims &scores, int64_t reduction,
                       bool weighted, IgnoreSetting ignore) {
  KernelCase g(Kernel::SoftmaxCrossEntropyGrad);
  g.in(uniform(t, scores, 4, -6, 0)).in(labels);
  weighted ? (void)g.in(uniform(t, {scores[1]}, 2, 0.5, 2)) : (void)g.absent();
  g.in(uniform(t, lossDims(reduction, labels.dims), 3, 0.5, 1.5)).out(t, scores);
  g.ints = {reduction, ignore.ignores, ignore.value};
  return g;
}

TEST(CudaLossGrad, NllAndSoftmaxCrossEntropyAreTheCpusBits) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (DType lt : {DType::I32, DType::I64})
      for (const LossLayout &l : kLossLayouts)
        for (const IgnoreSetting &ignore : kIgnoreSettings)
          for (int64_t reduction = 0; reduction <= 2; ++reduction)
            for (bool weighted : {false, true}) {
              SCOPED_TRACE(lossTrace(t, lt, l, reduction, weighted, ignore));
              TestTensor labels = labelsFor(lt, l.labels, l.scores[1], ignore.value);
              expectSameAsCpu(nllGradCase(t, labels, l.scores, reduction, weighted, ignore),
                              Match::Bits);
              expectSameAsCpu(sceGradCase(t, labels, l.scores, reduction, weighted, ignore),
                              Match::Bits);
            }
}

TEST(CudaLossGrad, AllIgnoredMean) {
  TestTensor labels = values(DType::I64, {2}, {-1, -1});
  for (bool weighted : {false, true}) {
    expectSameAsCpu(nllGradCase(DType::F32, labels, {2, 3}, 2, weighted, {true, -1}), Match::Bits);
    expectSameAsCpu(sceGradCase(DType::F32, labels, {2, 3}, 2, weighted, {true, -1}), Match::Bits);
  }
}

TEST(CudaLossGrad, LabelsOutOfRangeAreRefusedByBoth) {
  // Position 2900 of [3000, 7]: its elements are in the last blocks.
  for (int64_t bad : {7, -1})
    for (int64_t reduction = 0; reduction <= 2; ++reduction)
      for (int64_t position : {0, 2900}) {
        SCOPED_TRACE("label " + std::to_string(bad) + " reduction " + std::to_string(reduction) +
                     " at " + std::to_string(position));
        TestTensor labels = labelsFor(DType::I32, {3000}, 7, -100);
        labels.set(position, static_cast<double>(bad));
        expectSameAsCpu(nllGradCase(DType::F32, labels, {3000, 7}, reduction, true, {true, -100}),
                        Match::Bits);
        expectSameAsCpu(sceGradCase(DType::F32, labels, {3000, 7}, reduction, false, {false, 0}),
                        Match::Bits);
        // Ignoring exactly that value excuses it, on both.
        expectSameAsCpu(sceGradCase(DType::F32, labels, {3000, 7}, reduction, false, {true, bad}),
                        Match::Bits);
      }
}

TEST(CudaLossGrad, ShapeAndDTypeErrorsAreRefusedByBoth) {
  TestTensor labels = values(DType::I64, {2}, {0, 1});
  KernelCase wrongResult = sceGradCase(DType::F32, labels, {2, 3}, 1, false, {false, 0});
  wrongResult.outputs[0].tensor = TestTensor(DType::F64, {2, 3});
  expectSameAsCpu(wrongResult, Match::Bits);
  KernelCase floatLabels = nllGradCase(DType::F32, uniform(DType::F32, {2}, 1), {2, 3}, 1, false,
                                       {false, 0});
  expectSameAsCpu(floatLabels, Match::Bits);
  KernelCase shortLabels = nllGradCase(DType::F32, values(DType::I64, {3}, {0, 1, 2}), {2, 3}, 1,
                                       false, {false, 0});
  expectSameAsCpu(shortLabels, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
