//===- LossKernelsTest.cpp - CUDA classification losses vs CPU -------------===//
//
// The CUDA loss kernels (LossKernels.cu) under SIMT emulation against the
// CPU's: NLL over reductions, class weights, ignore_index (absent, a valid
// class, -100), the layouts of LossCases.h (up to thousands of positions,
// an empty batch), f32/f64/f16/bf16 with i32/i64 labels, bit for bit (the
// sums run in the CPU's order and precision on one block); a mean over
// only ignored positions (NaN on both); softmax cross-entropy, which is
// the CUDA log-softmax then the same NLL, within 1e-6 (1e-14 for f64) of
// the CPU because log-softmax's log of the row sum is each machine's
// library's (NormalizationKernelsTest.cpp); labels out of range and wrong
// dtypes refused by both.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/LossCases.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

KernelCase nllCase(DType t, const TestTensor &labels, const Dims &scores, int64_t reduction,
                   bool weighted, IgnoreSetting ignore) {
  KernelCase f(Kernel::NllLoss);
  f.in(uniform(t, scores, 1, -5, 0)).in(labels);
  weighted ? (void)f.in(uniform(t, {scores[1]}, 2, 0.5, 2)) : (void)f.absent();
  f.out(t, lossDims(reduction, labels.dims));
  f.ints = {reduction, ignore.ignores, ignore.value};
  return f;
}

KernelCase sceCase(DType t, const TestTensor &labels, const Dims &scores, int64_t reduction,
                   bool weighted, IgnoreSetting ignore) {
  KernelCase f(Kernel::SoftmaxCrossEntropy);
  f.in(uniform(t, scores, 5, -3, 3)).in(labels);
  weighted ? (void)f.in(uniform(t, {scores[1]}, 2, 0.5, 2)) : (void)f.absent();
  f.out(t, lossDims(reduction, labels.dims)).out(t, scores);
  f.ints = {reduction, ignore.ignores, ignore.value};
  return f;
}

TEST(CudaLoss, NllIsTheCpusBits) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (DType lt : {DType::I32, DType::I64})
      for (const LossLayout &l : kLossLayouts)
        for (const IgnoreSetting &ignore : kIgnoreSettings)
          for (int64_t reduction = 0; reduction <= 2; ++reduction)
            for (bool weighted : {false, true}) {
              SCOPED_TRACE(lossTrace(t, lt, l, reduction, weighted, ignore));
              TestTensor labels = labelsFor(lt, l.labels, l.scores[1], ignore.value);
              // An empty batch's mean is 0 / 0: NaN on both, but its sign
              // bit is each machine's (x86's default NaN is negative, and
              // the CPU build's 16-bit path gives a positive one), so
              // Close (NaN equals NaN) there.
              const bool empty = labels.size() == 0;
              expectSameAsCpu(nllCase(t, labels, l.scores, reduction, weighted, ignore),
                              empty ? Match::Close : Match::Bits, 0);
            }
}

TEST(CudaLoss, AllIgnoredMeanIsNaNOnBoth) {
  TestTensor labels = values(DType::I64, {2}, {-1, -1});
  for (int64_t reduction : {1, 2}) {
    KernelCase f = nllCase(DType::F32, labels, {2, 3}, reduction, false, {true, -1});
    expectSameAsCpu(f, Match::Bits);
  }
}

TEST(CudaLoss, SoftmaxCrossEntropyForward) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const LossLayout &l : kLossLayouts)
      for (int64_t reduction = 0; reduction <= 2; ++reduction)
        for (const IgnoreSetting &ignore : {kIgnoreSettings[0], kIgnoreSettings[2]}) {
          const bool weighted = reduction == 2;
          SCOPED_TRACE(lossTrace(t, DType::I64, l, reduction, weighted, ignore));
          TestTensor labels = labelsFor(DType::I64, l.labels, l.scores[1], ignore.value);
          expectSameAsCpu(sceCase(t, labels, l.scores, reduction, weighted, ignore),
                          Match::Close, t == DType::F64 ? 1e-14 : 1e-6);
        }
  // A wide class axis (the 16-lane row folds over several rounds).
  TestTensor labels = labelsFor(DType::I32, {40}, 1030, -100);
  expectSameAsCpu(sceCase(DType::F32, labels, {40, 1030}, 2, true, {true, -100}), Match::Close,
                  1e-6);
}

TEST(CudaLoss, LabelsOutOfRangeAreRefusedByBoth) {
  for (int64_t bad : {5, -1, 1000})
    for (int64_t reduction = 0; reduction <= 2; ++reduction) {
      SCOPED_TRACE("label " + std::to_string(bad) + " reduction " + std::to_string(reduction));
      TestTensor labels = labelsFor(DType::I64, {600}, 5, -100);
      labels.set(417, static_cast<double>(bad));
      expectSameAsCpu(nllCase(DType::F32, labels, {600, 5}, reduction, false, {true, -100}),
                      Match::Bits);
      expectSameAsCpu(sceCase(DType::F32, labels, {600, 5}, reduction, true, {false, 0}),
                      Match::Bits);
      // Ignoring exactly that value excuses it, on both.
      expectSameAsCpu(sceCase(DType::F32, labels, {600, 5}, reduction, false, {true, bad}),
                      Match::Close, 1e-6);
    }
}

TEST(CudaLoss, DTypeErrorsAreRefusedByBoth) {
  KernelCase floatLabels(Kernel::NllLoss);
  floatLabels.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {2}, 2)).absent();
  floatLabels.out(DType::F32, {});
  floatLabels.ints = {1, 0, 0};
  expectSameAsCpu(floatLabels, Match::Bits);
  KernelCase lossType(Kernel::NllLoss);
  lossType.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::I64, {2}, {0, 1})).absent();
  lossType.out(DType::F64, {});
  lossType.ints = {1, 0, 0};
  expectSameAsCpu(lossType, Match::Bits);
  KernelCase intScores(Kernel::NllLoss);
  intScores.in(uniform(DType::I32, {2, 3}, 1)).in(values(DType::I64, {2}, {0, 1})).absent();
  intScores.out(DType::I32, {});
  intScores.ints = {1, 0, 0};
  expectSameAsCpu(intScores, Match::Bits);
  KernelCase logProbType(Kernel::SoftmaxCrossEntropy);
  logProbType.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::I64, {2}, {0, 1})).absent();
  logProbType.out(DType::F32, {}).out(DType::F64, {2, 3});
  logProbType.ints = {1, 0, 0};
  expectSameAsCpu(logProbType, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
