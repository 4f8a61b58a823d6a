//===- ShapeKernelsTest.cpp - CUDA data movement vs CPU --------------------===//
//
// The CUDA data-movement kernels (ShapeKernels.cu) under SIMT emulation
// against the CPU's, bit for bit: copy, transposes that keep and that move
// the innermost dim, concat and split on every axis, slices with negative
// steps, expand, gather with negative and out-of-range indices (refused by
// both), trilu both ways with large k, and flatten with gaps, over element
// sizes 1 to 8 and sizes that span several blocks.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kSizes[] = {DType::Bool, DType::F16, DType::F32, DType::I64};

TEST(CudaShape, CopyTransposeExpand) {
  for (DType t : kSizes) {
    expectSameAsCpu(KernelCase(Kernel::Copy).in(uniform(t, {30, 77}, 1)).out(t, {77, 30}),
                    Match::Bits);
    for (std::vector<int64_t> perm : {std::vector<int64_t>{0, 2, 1, 3}, {3, 2, 1, 0}, {1, 0, 2, 3}}) {
      Dims in = {2, 3, 40, 5}, out(4);
      for (int d = 0; d < 4; ++d)
        out[d] = in[perm[d]];
      KernelCase c(Kernel::Transpose);
      c.in(uniform(t, in, 2)).out(t, out);
      c.ints = perm;
      expectSameAsCpu(c, Match::Bits);
    }
    expectSameAsCpu(KernelCase(Kernel::Expand).in(uniform(t, {3, 1, 5}, 3)).out(t, {2, 3, 400, 5}),
                    Match::Bits);
  }
}

TEST(CudaShape, ConcatAndSplitOnEveryAxis) {
  for (DType t : kSizes)
    for (int64_t axis : {0, 1, 2, -1}) {
      Dims a = {4, 5, 6}, b = a, c = a, whole = a;
      const int ax = static_cast<int>(axis < 0 ? axis + 3 : axis);
      b[ax] = 3;
      c[ax] = 1;
      whole[ax] = a[ax] + 3 + 1;
      KernelCase cat(Kernel::Concat);
      cat.in(uniform(t, a, 1)).in(uniform(t, b, 2)).in(uniform(t, c, 3)).out(t, whole);
      cat.ints = {axis};
      expectSameAsCpu(cat, Match::Bits);
      KernelCase split(Kernel::Split);
      split.in(uniform(t, whole, 4)).out(t, a).out(t, b).out(t, c);
      split.ints = {axis};
      expectSameAsCpu(split, Match::Bits);
    }
}

TEST(CudaShape, SlicesWithPositiveAndNegativeSteps) {
  for (DType t : kSizes) {
    KernelCase c(Kernel::Slice);
    c.in(uniform(t, {6, 50, 7}, 5)).out(t, {2, 25, 3});
    c.ints = {1, 49, 0, 3, -2, 3}; // starts ++ steps
    expectSameAsCpu(c, Match::Bits);
  }
}

TEST(CudaShape, GatherWithNegativeAndBadIndices) {
  for (DType t : kSizes)
    for (DType it : {DType::I32, DType::I64}) {
      KernelCase rows(Kernel::Gather);
      rows.in(uniform(t, {10, 33}, 6)).in(values(it, {2, 3}, {0, -1, 4, 4, 9, -10})).out(
          t, {2, 3, 33});
      rows.ints = {0};
      expectSameAsCpu(rows, Match::Bits);
      KernelCase mid(Kernel::Gather);
      mid.in(uniform(t, {3, 7, 4}, 7)).in(values(it, {5}, {6, 0, -7, 3, 3})).out(t, {3, 5, 4});
      mid.ints = {1};
      expectSameAsCpu(mid, Match::Bits);
    }
  KernelCase bad(Kernel::Gather);
  bad.in(uniform(DType::F32, {4, 2}, 8)).in(values(DType::I64, {2}, {1, 4})).out(DType::F32,
                                                                                 {2, 2});
  bad.ints = {0};
  expectSameAsCpu(bad, Match::Bits);
}

TEST(CudaShape, TriluBothWays) {
  for (DType t : kSizes)
    for (int64_t upper : {0, 1})
      for (int64_t k : {-2, 0, 1, 100, -100}) {
        KernelCase c(Kernel::Trilu);
        c.in(uniform(t, {3, 9, 11}, 9)).out(t, {3, 9, 11});
        c.ints = {upper, k};
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaShape, FlattenWithGapsAndPadding) {
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c(Kernel::Flatten);
    c.in(uniform(t, {3, 4}, 1)).in(uniform(t, {5}, 2)).in(uniform(t, {700}, 3)).out(t, {800});
    c.ints = {0, 16, 40};
    expectSameAsCpu(c, Match::Bits);
  }
  KernelCase tooBig(Kernel::Flatten);
  tooBig.in(uniform(DType::F32, {10}, 1)).out(DType::F32, {8});
  tooBig.ints = {0};
  expectSameAsCpu(tooBig, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
