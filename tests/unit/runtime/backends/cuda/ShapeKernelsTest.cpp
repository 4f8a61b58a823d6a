//===- ShapeKernelsTest.cpp - CUDA data movement vs CPU --------------------===//
//
// The CUDA data-movement kernels (ShapeKernels.cu) under SIMT emulation
// against the CPU's, bit for bit, on the CPU test's cases (every element
// size 1, 2, 4, 8 and bool, with distinct per-element bit patterns so a
// misplaced element or a value moved through a float register cannot pass)
// plus sizes that span several blocks: copy (every dtype, aliased, empty),
// transposes that keep the innermost dim (strided copy) and that move it
// (shared-memory tiles, ragged and more tiles than blocks), rank 0 and
// zero size; slices with negative steps and zero-size results; expand
// broadcasts; concat and split with empty parts; gather with negative
// indices, scalar and empty index tensors, and out-of-range indices that
// both refuse, also where the result is empty; trilu both ways with large
// k, over stale output and in place; flatten with gaps, padding, inputs
// out of layout order, and the operands it refuses.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

#include <algorithm>

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kSizes[] = {DType::U8, DType::BF16, DType::F32, DType::I64, DType::Bool};

const DType kEveryDType[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                             DType::I16, DType::I32, DType::I64, DType::U8,   DType::U16,
                             DType::U32, DType::U64, DType::Bool};

/// An output whose buffer starts with stale values the kernel must
/// overwrite (both runs start from the same stale copy).
KernelCase &staleOut(KernelCase &c, DType dtype, Dims dims, uint64_t seed) {
  c.out(dtype, dims);
  c.outputs.back().tensor = pattern(dtype, std::move(dims), seed);
  return c;
}

Dims permuted(const Dims &in, const std::vector<int64_t> &perm) {
  Dims out(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    out[d] = in[perm[d]];
  return out;
}

TEST(CudaShape, CopyEveryDTypeAliasedAndEmpty) {
  for (DType t : kEveryDType) {
    SCOPED_TRACE(dtypeName(t));
    expectSameAsCpu(KernelCase(Kernel::Copy).in(pattern(t, {3, 4}, 1)).out(t, {12}), Match::Bits);
    expectSameAsCpu(KernelCase(Kernel::Copy).in(pattern(t, {37, 45}, 2)).out(t, {45, 37}),
                    Match::Bits);
    expectSameAsCpu(KernelCase(Kernel::Copy).in(pattern(t, {5, 7}, 3)).inPlace(0), Match::Bits);
  }
  expectSameAsCpu(KernelCase(Kernel::Copy).in(pattern(DType::F32, {0, 4}, 4)).out(DType::F32, {0}),
                  Match::Bits);
}

TEST(CudaShape, TransposeMatchesCpu) {
  struct Case {
    Dims in;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {
      {{37, 45}, {1, 0}},          {{70, 65}, {1, 0}},          {{2, 5, 3, 7}, {0, 2, 1, 3}},
      {{2, 3, 33, 17}, {0, 1, 3, 2}}, {{4, 5, 6}, {2, 0, 1}},   {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{1, 5, 1, 3}, {3, 1, 0, 2}}, {{3, 1}, {1, 0}},           {{6, 1, 4}, {2, 1, 0}},
      {{7}, {0}},                   {{}, {}},                   {{0, 3}, {1, 0}},
      {{2, 3, 4}, {0, 1, 2}},       {{3, 40, 2, 35}, {0, 3, 2, 1}},
      {{2, 3, 40, 5}, {1, 0, 2, 3}}, {{5, 64, 96}, {0, 2, 1}}, {{3, 31, 33}, {2, 1, 0}},
      {{1, 257}, {1, 0}},           {{257, 1}, {1, 0}},         {{33, 2, 65}, {2, 1, 0}},
  };
  for (DType t : kSizes)
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " rank " << c.in.size());
      KernelCase k(Kernel::Transpose);
      k.in(pattern(t, c.in, 2));
      staleOut(k, t, permuted(c.in, c.perm), 9);
      k.ints = c.perm;
      expectSameAsCpu(k, Match::Bits);
    }
  for (DType t : kEveryDType) {
    KernelCase k(Kernel::Transpose);
    k.in(pattern(t, {9, 31, 4}, 3)).out(t, {4, 9, 31});
    k.ints = {2, 0, 1};
    expectSameAsCpu(k, Match::Bits);
  }
}

TEST(CudaShape, SlicesWithNegativeStepsAndEmptyResults) {
  struct Case {
    Dims in;
    std::vector<int64_t> starts, ends, steps;
  };
  const Case cases[] = {
      {{4, 8}, {1, 2}, {3, 8}, {1, 1}},
      {{5, 6}, {4, 0}, {-1, 6}, {-1, 2}},
      {{4, 5, 6}, {3, 4, 5}, {-1, -1, -1}, {-2, -1, -3}},
      {{6, 7}, {5, 6}, {0, -1}, {-1, -1}},
      {{3, 9}, {0, 8}, {3, 0}, {1, -4}},
      {{4, 5}, {2, 0}, {2, 5}, {1, 1}}, // zero-size result
      {{0, 5}, {0, 1}, {0, 4}, {1, 1}},
      {{2, 3, 1, 4}, {1, 0, 0, 3}, {2, 3, 1, -1}, {1, 1, 1, -1}},
      {{10}, {9}, {-1}, {-3}},
      {{6, 50, 7}, {1, 49, 0}, {6, -1, 7}, {3, -2, 3}},
      {{3, 1200}, {2, 1199}, {-1, -1}, {-1, -1}}, // 3600 elements reversed
  };
  for (DType t : kSizes)
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " rank " << c.in.size());
      Dims out(c.in.size());
      for (size_t d = 0; d < c.in.size(); ++d) {
        int64_t span = c.ends[d] - c.starts[d], step = c.steps[d];
        int64_t n = step > 0 ? (span + step - 1) / step : (-span + -step - 1) / -step;
        out[d] = std::max<int64_t>(0, n);
      }
      KernelCase k(Kernel::Slice);
      k.in(pattern(t, c.in, 3));
      staleOut(k, t, out, 8);
      k.ints = c.starts;
      k.ints.insert(k.ints.end(), c.steps.begin(), c.steps.end());
      expectSameAsCpu(k, Match::Bits);
    }
}

TEST(CudaShape, ExpandBroadcasts) {
  const std::pair<Dims, Dims> cases[] = {
      {{3, 1}, {2, 3, 4}},       {{}, {5}},           {{4}, {3, 4}},
      {{1, 4}, {0, 4}},          {{2, 1, 3}, {2, 5, 3}}, {{2, 3}, {2, 3}},
      {{1, 1}, {4, 1, 6}},       {{5, 1, 1}, {5, 2, 3}}, {{3, 1, 5}, {2, 3, 400, 5}},
      {{}, {1000}},
  };
  for (DType t : kSizes)
    for (const auto &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " out rank " << c.second.size());
      KernelCase k(Kernel::Expand);
      k.in(pattern(t, c.first, 4));
      staleOut(k, t, c.second, 7);
      expectSameAsCpu(k, Match::Bits);
    }
}

struct ConcatCase {
  std::vector<Dims> parts;
  int64_t axis;
};
const ConcatCase kConcatCases[] = {
    {{{2, 3}, {2, 5}, {2, 0}}, 1},
    {{{2, 3}, {4, 3}}, 0},
    {{{2, 3}, {2, 1}}, -1},
    {{{2, 1, 4}, {2, 3, 4}}, 1},
    {{{3}, {0}, {4}}, 0},
    {{{0, 2}, {0, 5}}, 1},
    {{{4, 5, 6}, {4, 5, 3}, {4, 5, 1}}, 2},
    {{{4, 5, 6}, {4, 3, 6}, {4, 1, 6}}, -2},
    {{{7, 300}, {7, 1}, {7, 33}}, 1}, // 2338 elements
};

Dims joined(const ConcatCase &c) {
  const int rank = static_cast<int>(c.parts[0].size());
  const int axis = static_cast<int>(c.axis < 0 ? c.axis + rank : c.axis);
  Dims whole = c.parts[0];
  whole[axis] = 0;
  for (const Dims &p : c.parts)
    whole[axis] += p[axis];
  return whole;
}

TEST(CudaShape, ConcatAndSplitWithEmptyParts) {
  for (DType t : kSizes)
    for (const ConcatCase &c : kConcatCases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " axis " << c.axis);
      KernelCase cat(Kernel::Concat);
      for (size_t p = 0; p < c.parts.size(); ++p)
        cat.in(pattern(t, c.parts[p], 10 + p));
      staleOut(cat, t, joined(c), 5);
      cat.ints = {c.axis};
      expectSameAsCpu(cat, Match::Bits);
      KernelCase split(Kernel::Split);
      split.in(pattern(t, joined(c), 20));
      for (size_t p = 0; p < c.parts.size(); ++p)
        staleOut(split, t, c.parts[p], 30 + p);
      split.ints = {c.axis};
      expectSameAsCpu(split, Match::Bits);
    }
}

struct GatherCase {
  Dims data, indexDims;
  std::vector<double> indices;
  int64_t axis;
};

KernelCase gatherCase(DType t, DType it, const GatherCase &c) {
  const int axis = static_cast<int>(c.axis < 0 ? c.axis + c.data.size() : c.axis);
  Dims out(c.data.begin(), c.data.begin() + axis);
  out.insert(out.end(), c.indexDims.begin(), c.indexDims.end());
  out.insert(out.end(), c.data.begin() + axis + 1, c.data.end());
  KernelCase k(Kernel::Gather);
  k.in(pattern(t, c.data, 5)).in(values(it, c.indexDims, c.indices));
  staleOut(k, t, out, 6);
  k.ints = {c.axis};
  return k;
}

TEST(CudaShape, GatherWithNegativeScalarAndEmptyIndices) {
  const GatherCase cases[] = {
      {{5, 4}, {3}, {0, -1, 2}, 0},
      {{2, 5, 3}, {2, 2}, {4, -5, 0, 1}, 1},
      {{2, 5, 3}, {4}, {2, -1, 0, 0}, -1},
      {{6, 3}, {}, {-2}, 0},
      {{3, 4}, {0}, {}, 1},
      {{0, 4}, {2}, {3, -4}, 1},
      {{50, 16}, {2, 3}, {49, 0, 7, -50, 13, 13}, 0},
      {{10, 33}, {2, 3}, {0, -1, 4, 4, 9, -10}, 0},
      {{3, 7, 4}, {5}, {6, 0, -7, 3, 3}, 1},
      {{4, 1000}, {3}, {3, -4, 1}, 0}, // 3000 elements
  };
  for (DType t : kSizes)
    for (DType it : {DType::I32, DType::I64})
      for (const GatherCase &c : cases) {
        SCOPED_TRACE(testing::Message() << dtypeName(t) << " " << dtypeName(it) << " axis "
                                        << c.axis);
        expectSameAsCpu(gatherCase(t, it, c), Match::Bits);
      }
}

TEST(CudaShape, GatherOutOfRangeIndicesAreRefusedByBoth) {
  for (double bad : {5.0, -6.0, 1000.0})
    for (DType it : {DType::I32, DType::I64}) {
      SCOPED_TRACE(testing::Message() << dtypeName(it) << " index " << bad);
      expectSameAsCpu(gatherCase(DType::F32, it, {{3, 5}, {3}, {1, bad, 0}, 1}), Match::Bits);
      // The bad index among many good ones, the result spanning blocks.
      std::vector<double> many(600, 2);
      many[437] = bad;
      expectSameAsCpu(gatherCase(DType::BF16, it, {{3, 5}, {600}, many, 1}), Match::Bits);
      // Empty results: the CPU still checks every index.
      expectSameAsCpu(gatherCase(DType::F32, it, {{0, 5}, {2}, {1, bad}, 1}), Match::Bits);
      expectSameAsCpu(gatherCase(DType::I64, it, {{5, 0}, {1}, {bad}, 0}), Match::Bits);
    }
  expectSameAsCpu(gatherCase(DType::F32, DType::I32, {{4}, {1}, {4}, 0}), Match::Bits);
  expectSameAsCpu(gatherCase(DType::F32, DType::I64, {{3, 0}, {1}, {0}, 1}), Match::Bits);
  // Float indices: an unsupported index dtype.
  expectSameAsCpu(gatherCase(DType::F32, DType::F32, {{4}, {1}, {1}, 0}), Match::Bits);
}

TEST(CudaShape, TriluBothWaysOverStaleOutput) {
  const Dims shapes[] = {{4, 5}, {5, 4}, {2, 3, 4, 4}, {1, 1}, {0, 3, 3}, {3, 0}, {3, 40, 45}};
  for (DType t : kSizes)
    for (const Dims &dims : shapes)
      for (int64_t upper : {0, 1})
        for (int64_t k : {0, 1, 2, -1, -3, -100, 100}) {
          SCOPED_TRACE(testing::Message() << dtypeName(t) << " upper " << upper << " k " << k);
          KernelCase c(Kernel::Trilu);
          c.in(pattern(t, dims, 6));
          staleOut(c, t, dims, 7);
          c.ints = {upper, k};
          expectSameAsCpu(c, Match::Bits);
        }
  for (int64_t upper : {0, 1}) {
    KernelCase inPlace(Kernel::Trilu);
    inPlace.in(pattern(DType::F32, {2, 30, 20}, 8)).inPlace(0);
    inPlace.ints = {upper, -1};
    expectSameAsCpu(inPlace, Match::Bits);
  }
  KernelCase vector(Kernel::Trilu); // rank 1: refused
  vector.in(pattern(DType::F32, {5}, 9)).out(DType::F32, {5});
  vector.ints = {1, 0};
  expectSameAsCpu(vector, Match::Bits);
}

TEST(CudaShape, FlattenPlacesInputsAndZeroesTheRest) {
  struct Case {
    std::vector<Dims> parts;
    std::vector<int64_t> offsets;
    int64_t total;
  };
  const Case cases[] = {
      {{{2, 3}, {4}}, {0, 6}, 10},          // packed, no padding
      {{{2, 3}, {4}, {1}}, {1, 8, 13}, 16}, // gaps and end padding
      {{{3}, {2, 2}}, {5, 0}, 9},           // out of layout order
      {{{0}, {2}}, {3, 3}, 5},              // a zero-size input
      {{{3, 4}, {5}, {700}}, {0, 16, 40}, 800},
      {{{500}, {600}}, {300, 0}, 1100}, // overlapping: the later input wins
  };
  for (DType t : kSizes)
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " total " << c.total);
      KernelCase k(Kernel::Flatten);
      for (size_t p = 0; p < c.parts.size(); ++p)
        k.in(pattern(t, c.parts[p], 30 + p));
      staleOut(k, t, {c.total}, 99);
      k.ints = c.offsets;
      expectSameAsCpu(k, Match::Bits);
    }
}

TEST(CudaShape, FlattenRefusesInputsOutsideTheResult) {
  for (int64_t offset : {3, -1}) {
    KernelCase c(Kernel::Flatten);
    c.in(pattern(DType::F32, {4}, 1)).out(DType::F32, {6});
    c.ints = {offset};
    expectSameAsCpu(c, Match::Bits);
  }
  KernelCase tooBig(Kernel::Flatten);
  tooBig.in(pattern(DType::F32, {10}, 1)).out(DType::F32, {8});
  tooBig.ints = {0};
  expectSameAsCpu(tooBig, Match::Bits);
  KernelCase mixed(Kernel::Flatten);
  mixed.in(pattern(DType::F64, {2}, 1)).out(DType::F32, {6});
  mixed.ints = {0};
  expectSameAsCpu(mixed, Match::Bits);
}

/// Past kMaxBlocks * 256 elements every thread of the grid-stride loops
/// handles several elements.
TEST(CudaShape, PastTheGrid) {
  KernelCase t(Kernel::Transpose);
  t.in(pattern(DType::U8, {1100, 2001}, 1)).out(DType::U8, {2001, 1100});
  t.ints = {1, 0};
  expectSameAsCpu(t, Match::Bits);
  // Tiled (the innermost dim moves) with more tiles than blocks.
  KernelCase tiles(Kernel::Transpose);
  tiles.in(pattern(DType::F16, {8200, 2, 33}, 8)).out(DType::F16, {8200, 33, 2});
  tiles.ints = {0, 2, 1};
  expectSameAsCpu(tiles, Match::Bits);
  KernelCase cat(Kernel::Concat);
  cat.in(pattern(DType::BF16, {2, 1100001}, 2)).in(pattern(DType::BF16, {2, 3}, 3));
  cat.out(DType::BF16, {2, 1100004});
  cat.ints = {1};
  expectSameAsCpu(cat, Match::Bits);
  expectSameAsCpu(gatherCase(DType::F32, DType::I64, {{2, 1100001}, {2}, {1, -2}, 0}),
                  Match::Bits);
  std::vector<double> indices(2200000, 1);
  indices[2100000] = 2; // refused, from a thread's later pass
  expectSameAsCpu(gatherCase(DType::U8, DType::I32, {{2}, {2200000}, indices, 0}), Match::Bits);
  KernelCase tri(Kernel::Trilu);
  tri.in(pattern(DType::U8, {2, 1100, 1001}, 4));
  staleOut(tri, DType::U8, {2, 1100, 1001}, 5);
  tri.ints = {1, 3};
  expectSameAsCpu(tri, Match::Bits);
  KernelCase flat(Kernel::Flatten);
  flat.in(pattern(DType::F32, {2200000}, 6));
  staleOut(flat, DType::F32, {2200005}, 7);
  flat.ints = {2};
  expectSameAsCpu(flat, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
