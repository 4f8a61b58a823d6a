//===- ShapeKernelsTest.cpp - copy/transpose/concat/split/slice/... ----===//
//
// Checks the data-movement CPU kernels against naive references written
// here: each output element is located in the input by unravelling its
// index and applying the op's index map, and compared bit for bit. Inputs
// hold a distinct pattern per element, so a misplaced element cannot pass.
// Every element size (1, 2, 4, 8 bytes) is covered, with shapes that hit
// the fast paths (inner-contiguous rows, tiled transposes with ragged
// tiles, broadcast fills) and the edge cases (negative slice steps, size-1
// and zero-size dims, negative axes and indices, out-of-range gathers).
// Flatten (FSDP's flat gradient buffer) is checked for zeroed gaps and
// padding with its inputs in layout order and out of it.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using Shape = std::vector<int64_t>;

/// An owning tensor whose elements read and write as raw bit patterns.
/// A test tensor filled with distinct per-element bit patterns.
struct Buffer : kerneltest::TestTensor {
  using TestTensor::TestTensor;
  /// Distinct nonzero patterns (mod the element width; bool holds 0/1).
  void fillPattern(uint64_t seed) {
    for (int64_t i = 0; i < size(); ++i) {
      uint64_t v = (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull ^ seed;
      setBits(i, dtype == DType::Bool ? (i + seed) % 2 : v | 1);
    }
  }
};

Shape unravel(int64_t flat, const Shape &dims) {
  Shape coord(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    coord[d] = flat % dims[d];
    flat /= dims[d];
  }
  return coord;
}

int64_t ravel(const Shape &coord, const Shape &dims) {
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    flat = flat * dims[d] + coord[d];
  return flat;
}

/// Expects out[i] == in[source(coords of i)] for every output element.
template <typename Map> void expectGathered(const Buffer &out, const Buffer &in, Map source) {
  for (int64_t i = 0; i < out.size(); ++i)
    ASSERT_EQ(out.getBits(i), in.getBits(ravel(source(unravel(i, out.dims)), in.dims)))
        << "output element " << i;
}

const DType kSizes[] = {DType::U8, DType::BF16, DType::F32, DType::I64, DType::Bool};

TEST(CopyTest, ReshapesAndIgnoresAliasing) {
  for (DType t : kSizes) {
    Buffer in(t, {3, 4}), out(t, {12});
    in.fillPattern(1);
    ASSERT_TRUE(copy(in.ref(), out.ref()).isOk());
    for (int64_t i = 0; i < 12; ++i)
      ASSERT_EQ(out.getBits(i), in.getBits(i));
    ASSERT_TRUE(copy(in.ref(), in.ref()).isOk());
  }
  Buffer empty(DType::F32, {0, 4});
  EXPECT_TRUE(copy(empty.ref(), empty.ref()).isOk());
}

TEST(TransposeTest, MatchesReference) {
  struct Case { Shape in, perm; };
  const Case cases[] = {
      {{37, 45}, {1, 0}},          {{70, 65}, {1, 0}},          {{2, 5, 3, 7}, {0, 2, 1, 3}},
      {{2, 3, 33, 17}, {0, 1, 3, 2}}, {{4, 5, 6}, {2, 0, 1}},   {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{1, 5, 1, 3}, {3, 1, 0, 2}}, {{3, 1}, {1, 0}},           {{6, 1, 4}, {2, 1, 0}},
      {{7}, {0}},                   {{}, {}},                   {{0, 3}, {1, 0}},
      {{2, 3, 4}, {0, 1, 2}},       {{3, 40, 2, 35}, {0, 3, 2, 1}},
  };
  for (DType t : kSizes)
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " rank " << c.in.size());
      Shape outDims(c.in.size());
      for (size_t d = 0; d < c.in.size(); ++d)
        outDims[d] = c.in[c.perm[d]];
      Buffer in(t, c.in), out(t, outDims);
      in.fillPattern(2);
      ASSERT_TRUE(transpose(in.ref(), c.perm.data(), out.ref()).isOk());
      expectGathered(out, in, [&](const Shape &o) {
        Shape src(o.size());
        for (size_t d = 0; d < o.size(); ++d)
          src[c.perm[d]] = o[d];
        return src;
      });
    }
}

/// nn.slice's clamped (start, end, step) per dim; the result dim is
/// max(0, ceil((end - start) / step)).
struct SliceCase { Shape in, starts, ends, steps; };

TEST(SliceTest, MatchesReferenceIncludingNegativeSteps) {
  const SliceCase cases[] = {
      {{4, 8}, {1, 2}, {3, 8}, {1, 1}},
      {{5, 6}, {4, 0}, {-1, 6}, {-1, 2}},
      {{4, 5, 6}, {3, 4, 5}, {-1, -1, -1}, {-2, -1, -3}},
      {{6, 7}, {5, 6}, {0, -1}, {-1, -1}},
      {{3, 9}, {0, 8}, {3, 0}, {1, -4}},
      {{4, 5}, {2, 0}, {2, 5}, {1, 1}}, // zero-size result
      {{0, 5}, {0, 1}, {0, 4}, {1, 1}},
      {{2, 3, 1, 4}, {1, 0, 0, 3}, {2, 3, 1, -1}, {1, 1, 1, -1}},
      {{10}, {9}, {-1}, {-3}},
  };
  for (DType t : kSizes)
    for (const SliceCase &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " rank " << c.in.size());
      Shape outDims(c.in.size());
      for (size_t d = 0; d < c.in.size(); ++d) {
        int64_t span = c.ends[d] - c.starts[d], step = c.steps[d];
        int64_t n = step > 0 ? (span + step - 1) / step : (-span + -step - 1) / -step;
        outDims[d] = std::max<int64_t>(0, n);
      }
      Buffer in(t, c.in), out(t, outDims);
      in.fillPattern(3);
      ASSERT_TRUE(slice(in.ref(), c.starts.data(), c.steps.data(), out.ref()).isOk());
      expectGathered(out, in, [&](const Shape &o) {
        Shape src(o.size());
        for (size_t d = 0; d < o.size(); ++d)
          src[d] = c.starts[d] + o[d] * c.steps[d];
        return src;
      });
    }
}

TEST(ExpandTest, MatchesReference) {
  const std::pair<Shape, Shape> cases[] = {
      {{3, 1}, {2, 3, 4}}, {{}, {5}},       {{4}, {3, 4}},       {{1, 4}, {0, 4}},
      {{2, 1, 3}, {2, 5, 3}}, {{2, 3}, {2, 3}}, {{1, 1}, {4, 1, 6}}, {{5, 1, 1}, {5, 2, 3}},
  };
  for (DType t : kSizes)
    for (const auto &c : cases) {
      const Shape &inDims = c.first, &outDims = c.second; // lambdas can't capture bindings
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " out rank " << outDims.size());
      Buffer in(t, inDims), out(t, outDims);
      in.fillPattern(4);
      ASSERT_TRUE(expand(in.ref(), out.ref()).isOk());
      expectGathered(out, in, [&](const Shape &o) {
        Shape src(inDims.size());
        size_t shift = outDims.size() - inDims.size();
        for (size_t d = 0; d < inDims.size(); ++d)
          src[d] = inDims[d] == 1 ? 0 : o[d + shift];
        return src;
      });
    }
}

struct ConcatCase { std::vector<Shape> parts; int64_t axis; };
const ConcatCase kConcatCases[] = {
    {{{2, 3}, {2, 5}, {2, 0}}, 1}, {{{2, 3}, {4, 3}}, 0},      {{{2, 3}, {2, 1}}, -1},
    {{{2, 1, 4}, {2, 3, 4}}, 1},   {{{3}, {0}, {4}}, 0},       {{{0, 2}, {0, 5}}, 1},
};

/// The whole tensor of a concat case and, for each of its elements, the
/// (part, element) it comes from.
struct Joined { Shape whole; std::vector<std::pair<int, int64_t>> origin; };

Joined join(const ConcatCase &c) {
  int rank = static_cast<int>(c.parts[0].size());
  int axis = static_cast<int>(c.axis < 0 ? c.axis + rank : c.axis);
  Joined j{c.parts[0], {}};
  j.whole[axis] = 0;
  for (const Shape &p : c.parts)
    j.whole[axis] += p[axis];
  int64_t n = 1;
  for (int64_t d : j.whole)
    n *= d;
  for (int64_t i = 0; i < n; ++i) {
    Shape coord = unravel(i, j.whole);
    int part = 0;
    while (coord[axis] >= c.parts[part][axis])
      coord[axis] -= c.parts[part++][axis];
    j.origin.emplace_back(part, ravel(coord, c.parts[part]));
  }
  return j;
}

TEST(ConcatTest, MatchesReference) {
  for (DType t : kSizes)
    for (const ConcatCase &c : kConcatCases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " axis " << c.axis);
      std::vector<Buffer> parts;
      std::vector<TensorRef> refs;
      for (size_t p = 0; p < c.parts.size(); ++p) {
        parts.emplace_back(t, c.parts[p]);
        parts.back().fillPattern(10 + p);
      }
      for (const Buffer &b : parts)
        refs.push_back(b.ref());
      Joined j = join(c);
      Buffer out(t, j.whole);
      ASSERT_TRUE(concat(refs.data(), static_cast<int>(refs.size()), c.axis, out.ref()).isOk());
      for (int64_t i = 0; i < out.size(); ++i)
        ASSERT_EQ(out.getBits(i), parts[j.origin[i].first].getBits(j.origin[i].second)) << i;
    }
}

TEST(SplitTest, MatchesReference) {
  for (DType t : kSizes)
    for (const ConcatCase &c : kConcatCases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " axis " << c.axis);
      Joined j = join(c);
      Buffer in(t, j.whole);
      in.fillPattern(20);
      std::vector<Buffer> parts;
      std::vector<TensorRef> refs;
      for (const Shape &p : c.parts)
        parts.emplace_back(t, p);
      for (const Buffer &b : parts)
        refs.push_back(b.ref());
      ASSERT_TRUE(split(in.ref(), c.axis, refs.data(), static_cast<int>(refs.size())).isOk());
      for (int64_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(parts[j.origin[i].first].getBits(j.origin[i].second), in.getBits(i)) << i;
    }
}

struct GatherCase { Shape data, indexDims; std::vector<int64_t> indices; int64_t axis; };

TEST(GatherTest, MatchesReferenceWithNegativeIndices) {
  const GatherCase cases[] = {
      {{5, 4}, {3}, {0, -1, 2}, 0},
      {{2, 5, 3}, {2, 2}, {4, -5, 0, 1}, 1},
      {{2, 5, 3}, {4}, {2, -1, 0, 0}, -1},
      {{6, 3}, {}, {-2}, 0},
      {{3, 4}, {0}, {}, 1},
      {{0, 4}, {2}, {3, -4}, 1},
      {{50, 16}, {2, 3}, {49, 0, 7, -50, 13, 13}, 0},
  };
  for (DType t : kSizes)
    for (DType it : {DType::I32, DType::I64})
      for (const GatherCase &c : cases) {
        SCOPED_TRACE(testing::Message() << dtypeName(t) << " " << dtypeName(it) << " axis " << c.axis);
        int axis = static_cast<int>(c.axis < 0 ? c.axis + c.data.size() : c.axis);
        Shape outDims(c.data.begin(), c.data.begin() + axis);
        outDims.insert(outDims.end(), c.indexDims.begin(), c.indexDims.end());
        outDims.insert(outDims.end(), c.data.begin() + axis + 1, c.data.end());
        Buffer data(t, c.data), indices(it, c.indexDims), out(t, outDims);
        data.fillPattern(5);
        for (size_t i = 0; i < c.indices.size(); ++i)
          indices.setBits(static_cast<int64_t>(i), static_cast<uint64_t>(c.indices[i]));
        ASSERT_TRUE(gather(data.ref(), indices.ref(), c.axis, out.ref()).isOk());
        size_t indexRank = c.indexDims.size();
        expectGathered(out, data, [&](const Shape &o) {
          Shape src(o.begin(), o.begin() + axis);
          Shape indexCoord(o.begin() + axis, o.begin() + axis + indexRank);
          int64_t v = c.indices[ravel(indexCoord, c.indexDims)];
          src.push_back(v < 0 ? v + c.data[axis] : v);
          src.insert(src.end(), o.begin() + axis + indexRank, o.end());
          return src;
        });
      }
}

TEST(GatherTest, OutOfRangeIndexIsAnErrorNamingIt) {
  for (int64_t bad : {5, -6, 1000}) {
    Buffer data(DType::F32, {3, 5}), indices(DType::I64, {3}), out(DType::F32, {3, 3});
    indices.setBits(0, 1), indices.setBits(1, static_cast<uint64_t>(bad)), indices.setBits(2, 0);
    Status s = gather(data.ref(), indices.ref(), 1, out.ref());
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("index " + std::to_string(bad)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("dimension 1"), std::string::npos) << s.message();
  }
  Buffer data(DType::F32, {4}), indices(DType::I32, {1}), out(DType::F32, {1});
  indices.setBits(0, 4);
  EXPECT_FALSE(gather(data.ref(), indices.ref(), 0, out.ref()).isOk());
  Buffer floatIndices(DType::F32, {1});
  EXPECT_FALSE(gather(data.ref(), floatIndices.ref(), 0, out.ref()).isOk());
}

TEST(TriluTest, MatchesReference) {
  const Shape shapes[] = {{4, 5}, {5, 4}, {2, 3, 4, 4}, {1, 1}, {0, 3, 3}, {3, 0}};
  for (DType t : kSizes)
    for (const Shape &dims : shapes)
      for (bool upper : {true, false})
        for (int64_t k : {0, 1, 2, -1, -3, -100, 100}) {
          SCOPED_TRACE(testing::Message() << dtypeName(t) << " upper " << upper << " k " << k);
          Buffer in(t, dims), out(t, dims);
          in.fillPattern(6);
          out.fillPattern(7); // stale data that must be overwritten
          ASSERT_TRUE(trilu(in.ref(), upper, k, out.ref()).isOk());
          for (int64_t e = 0; e < out.size(); ++e) {
            Shape coord = unravel(e, dims);
            int64_t i = coord[dims.size() - 2], j = coord[dims.size() - 1];
            bool keep = upper ? j - i >= k : j - i <= k;
            ASSERT_EQ(out.getBits(e), keep ? in.getBits(e) : 0u) << e;
          }
        }
}

TEST(TriluTest, InPlace) {
  Buffer in(DType::F32, {3, 3}), expected(DType::F32, {3, 3});
  in.fillPattern(8);
  ASSERT_TRUE(trilu(in.ref(), /*upper=*/false, 0, expected.ref()).isOk());
  ASSERT_TRUE(trilu(in.ref(), /*upper=*/false, 0, in.ref()).isOk());
  for (int64_t e = 0; e < 9; ++e)
    EXPECT_EQ(in.getBits(e), expected.getBits(e));
  EXPECT_EQ(in.getBits(1), 0u);
  EXPECT_NE(in.getBits(3), 0u);
}

struct FlattenCase { std::vector<Shape> parts; std::vector<int64_t> offsets; int64_t total; };

TEST(FlattenTest, PlacesInputsAndZeroesTheRest) {
  const FlattenCase cases[] = {
      {{{2, 3}, {4}}, {0, 6}, 10},       // packed, no padding
      {{{2, 3}, {4}, {1}}, {1, 8, 13}, 16}, // gaps and end padding
      {{{3}, {2, 2}}, {5, 0}, 9},        // out of layout order
      {{{0}, {2}}, {3, 3}, 5},           // a zero-size input
  };
  for (DType t : kSizes)
    for (const FlattenCase &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " total " << c.total);
      std::vector<Buffer> parts;
      std::vector<TensorRef> refs;
      for (size_t p = 0; p < c.parts.size(); ++p) {
        parts.emplace_back(t, c.parts[p]);
        parts.back().fillPattern(30 + p);
      }
      for (const Buffer &b : parts)
        refs.push_back(b.ref());
      Buffer out(t, {c.total});
      out.fillPattern(99); // stale values must not survive
      ASSERT_TRUE(flatten(refs.data(), c.offsets.data(), static_cast<int>(refs.size()), out.ref())
                      .isOk());
      std::vector<uint64_t> expected(c.total, 0);
      for (size_t p = 0; p < parts.size(); ++p)
        for (int64_t i = 0; i < parts[p].size(); ++i)
          expected[c.offsets[p] + i] = parts[p].getBits(i);
      for (int64_t i = 0; i < c.total; ++i)
        ASSERT_EQ(out.getBits(i), expected[i]) << i;
    }
}

TEST(FlattenTest, InputsOutsideTheResultAreErrors) {
  Buffer a(DType::F32, {4}), out(DType::F32, {6}), wide(DType::F64, {2});
  TensorRef refs[] = {a.ref()};
  const int64_t past[] = {3}, negative[] = {-1}, fits[] = {0};
  EXPECT_NE(flatten(refs, past, 1, out.ref()).message().find("does not fit in 6 x f32"),
            std::string::npos);
  EXPECT_FALSE(flatten(refs, negative, 1, out.ref()).isOk());
  TensorRef mixed[] = {wide.ref()};
  EXPECT_FALSE(flatten(mixed, fits, 1, out.ref()).isOk());
}

} // namespace
