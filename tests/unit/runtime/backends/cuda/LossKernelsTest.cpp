//===- LossKernelsTest.cpp - CUDA losses and their gradients vs CPU --------===//
//
// The CUDA loss kernels (LossKernels.cu, LossGradKernels.cu) under SIMT
// emulation against the CPU's: NLL and softmax cross-entropy forward and
// backward over reductions, class weights, ignore_index, [N, C] and
// [N, C, d...] layouts, f32/f64/f16/bf16 with i32/i64 labels, and labels
// out of range (refused by both). The sums run in the CPU's order on one
// thread, so results are bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

/// Labels in [0, c) for `dims`, with `ignored` at every fifth position.
TestTensor labelsFor(DType t, Dims dims, int64_t c, int64_t ignored) {
  TestTensor labels(t, std::move(dims));
  for (int64_t i = 0; i < labels.size(); ++i)
    labels.set(i, i % 5 == 3 ? ignored : (i * 7 + 3) % c);
  return labels;
}

struct Layout {
  Dims scores, labels;
};
const Layout kLayouts[] = {{{6, 5}, {6}}, {{3, 4, 7}, {3, 7}}, {{2, 11, 3, 5}, {2, 3, 5}}};

Dims lossDims(int64_t reduction, const Dims &labels) {
  return reduction == 0 ? labels : Dims{};
}

TEST(CudaLoss, NllForwardAndBackward) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (DType lt : {DType::I32, DType::I64})
      for (const Layout &l : kLayouts)
        for (int64_t reduction = 0; reduction <= 2; ++reduction)
          for (bool weighted : {false, true})
            for (bool ignore : {false, true}) {
              const int64_t c = l.scores[1];
              SCOPED_TRACE(std::string(dtypeName(t)) + " reduction " +
                           std::to_string(reduction) + (weighted ? " weighted" : "") +
                           (ignore ? " ignore" : ""));
              TestTensor labels = labelsFor(lt, l.labels, c, ignore ? -100 : 1);
              KernelCase f(Kernel::NllLoss);
              f.in(uniform(t, l.scores, 1, -5, 0)).in(labels);
              weighted ? (void)f.in(uniform(t, {c}, 2, 0.5, 2)) : (void)f.absent();
              f.out(t, lossDims(reduction, l.labels));
              f.ints = {reduction, ignore, -100};
              expectSameAsCpu(f, Match::Bits);

              KernelCase g(Kernel::NllLossGrad);
              g.in(labels);
              weighted ? (void)g.in(uniform(t, {c}, 2, 0.5, 2)) : (void)g.absent();
              g.in(uniform(t, lossDims(reduction, l.labels), 3, 0.5, 1.5)).out(t, l.scores);
              g.ints = {reduction, ignore, -100};
              expectSameAsCpu(g, Match::Bits);

              // log_prob from the forward's log-softmax stand-in: any values.
              KernelCase sg(Kernel::SoftmaxCrossEntropyGrad);
              sg.in(uniform(t, l.scores, 4, -6, 0)).in(labels);
              weighted ? (void)sg.in(uniform(t, {c}, 2, 0.5, 2)) : (void)sg.absent();
              sg.in(uniform(t, lossDims(reduction, l.labels), 3, 0.5, 1.5)).out(t, l.scores);
              sg.ints = {reduction, ignore, -100};
              expectSameAsCpu(sg, Match::Bits);
            }
}

TEST(CudaLoss, SoftmaxCrossEntropyForward) {
  for (DType t : {DType::F32, DType::F64})
    for (const Layout &l : kLayouts)
      for (int64_t reduction = 0; reduction <= 2; ++reduction) {
        KernelCase f(Kernel::SoftmaxCrossEntropy);
        f.in(uniform(t, l.scores, 5, -3, 3)).in(labelsFor(DType::I64, l.labels, l.scores[1], 2));
        f.absent().out(t, lossDims(reduction, l.labels)).out(t, l.scores);
        f.ints = {reduction, 0, 0};
        expectSameAsCpu(f, Match::Close, t == DType::F64 ? 1e-14 : 1e-6);
      }
}

TEST(CudaLoss, LabelsOutOfRangeAreRefusedByBoth) {
  TestTensor labels = labelsFor(DType::I64, {6}, 5, 1);
  labels.set(4, 5);
  KernelCase f(Kernel::NllLoss);
  f.in(uniform(DType::F32, {6, 5}, 1)).in(labels).absent().out(DType::F32, {});
  f.ints = {2, 0, 0};
  expectSameAsCpu(f, Match::Bits);
  KernelCase none(Kernel::NllLoss);
  none.in(uniform(DType::F32, {6, 5}, 1)).in(labels).absent().out(DType::F32, {6});
  none.ints = {0, 0, 0};
  expectSameAsCpu(none, Match::Bits);
  labels.set(4, -1);
  KernelCase g(Kernel::NllLossGrad);
  g.in(labels).absent().in(uniform(DType::F32, {}, 2)).out(DType::F32, {6, 5});
  g.ints = {2, 0, 0};
  expectSameAsCpu(g, Match::Bits);
  KernelCase sg(Kernel::SoftmaxCrossEntropyGrad);
  sg.in(uniform(DType::F32, {6, 5}, 1)).in(labels).absent().in(uniform(DType::F32, {}, 2)).out(
      DType::F32, {6, 5});
  sg.ints = {1, 0, 0};
  expectSameAsCpu(sg, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
