//===- ConstantFoldingTest.cpp - host evaluation of shape arithmetic ------===//
//
// The importer folds torch's shape computations with these kernels; a wrong
// fold gives a wrong static shape silently, so each kernel is checked on
// small tensors against hand-computed results, including broadcasting,
// truncating integer division, negative gather indices and strided slices,
// and the generators and GatherND of the dynamo exporter's graphs.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ConstantFolding.h"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace {

using namespace fsdp::onnx;

Tensor ints(std::vector<int64_t> dims, std::vector<int64_t> values) {
  Tensor t;
  t.dtype = DType::Int64;
  t.dims = std::move(dims);
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

std::vector<int64_t> valuesOf(const Tensor &t) {
  std::vector<int64_t> values;
  for (int64_t i = 0; i < t.numElements(); ++i)
    values.push_back(t.intAt(i));
  return values;
}

TEST(ConstantFolding, BinaryBroadcastsAndTruncates) {
  std::string error;
  Tensor a = ints({2, 1}, {7, -7}), b = ints({2}, {2, 3});
  std::optional<Tensor> q = foldBinary("Div", a, b, {2, 2}, error);
  ASSERT_TRUE(q);
  EXPECT_EQ(valuesOf(*q), (std::vector<int64_t>{3, 2, -3, -2}));
  std::optional<Tensor> s = foldBinary("Sub", a, b, {2, 2}, error);
  EXPECT_EQ(valuesOf(*s), (std::vector<int64_t>{5, 4, -9, -10}));
  EXPECT_FALSE(foldBinary("Div", a, ints({}, {0}), {2, 1}, error));
  EXPECT_EQ(error, "integer division by zero in a constant expression");
}

TEST(ConstantFolding, GatherNegativeAndOutOfRange) {
  std::string error;
  Tensor shape = ints({3}, {2, 16, 32});
  std::optional<Tensor> last = foldGather(shape, ints({}, {-1}), 0, {}, error);
  ASSERT_TRUE(last);
  EXPECT_EQ(valuesOf(*last), (std::vector<int64_t>{32}));
  Tensor matrix = ints({2, 3}, {0, 1, 2, 3, 4, 5});
  std::optional<Tensor> cols = foldGather(matrix, ints({2}, {2, 0}), 1, {2, 2}, error);
  EXPECT_EQ(valuesOf(*cols), (std::vector<int64_t>{2, 0, 5, 3}));
  EXPECT_FALSE(foldGather(shape, ints({}, {3}), 0, {}, error));
}

TEST(ConstantFolding, ConcatSliceCastReshape) {
  Tensor a = ints({1}, {2}), b = ints({2}, {16, 4});
  Tensor joined = foldConcat({&a, &b}, 0, {3});
  EXPECT_EQ(valuesOf(joined), (std::vector<int64_t>{2, 16, 4}));
  Tensor range = ints({6}, {0, 1, 2, 3, 4, 5});
  EXPECT_EQ(valuesOf(foldSlice(range, {5}, {-2}, {3})), (std::vector<int64_t>{5, 3, 1}));
  std::optional<Tensor> f = foldCast(ints({2}, {3, -1}), DType::Float);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->floatAt(0), 3.0);
  EXPECT_EQ(f->floatAt(1), -1.0);
  std::optional<Tensor> flags = foldCast(ints({2}, {0, 7}), DType::Bool);
  EXPECT_EQ(valuesOf(*flags), (std::vector<int64_t>{0, 1}));
  EXPECT_FALSE(foldCast(range, DType::BFloat16)); // left to the runtime
  Tensor reshaped = foldReshape(range, {2, 3});
  EXPECT_EQ(reshaped.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(valuesOf(reshaped), valuesOf(range));
}

Tensor floats(std::vector<int64_t> dims, std::vector<float> values) {
  Tensor t;
  t.dtype = DType::Float;
  t.dims = std::move(dims);
  t.data.resize(values.size() * 4);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

TEST(ConstantFolding, CastFloatTruncatesOnlyWhenDefined) {
  std::optional<Tensor> i = foldCast(floats({3}, {3.7f, -3.7f, 0.0f}), DType::Int64);
  ASSERT_TRUE(i);
  EXPECT_EQ(valuesOf(*i), (std::vector<int64_t>{3, -3, 0}));
  std::optional<Tensor> b = foldCast(floats({2}, {0.5f, 0.0f}), DType::Bool);
  ASSERT_TRUE(b);
  EXPECT_EQ(valuesOf(*b), (std::vector<int64_t>{1, 0}));
  EXPECT_FALSE(foldCast(floats({1}, {1e30f}), DType::Int64));  // undefined
  EXPECT_FALSE(foldCast(floats({1}, {NAN}), DType::Int32));    // undefined
  EXPECT_FALSE(foldCast(floats({1}, {1.0f}), DType::Double));  // runtime cast
}

TEST(ConstantFolding, RangeCountsAndSigns) {
  std::string error;
  std::optional<Tensor> up = foldRange(ints({}, {3}), ints({}, {9}), ints({}, {3}), 100, error);
  ASSERT_TRUE(up);
  EXPECT_EQ(valuesOf(*up), (std::vector<int64_t>{3, 6}));
  std::optional<Tensor> down =
      foldRange(ints({}, {10}), ints({}, {4}), ints({}, {-2}), 100, error);
  ASSERT_TRUE(down);
  EXPECT_EQ(valuesOf(*down), (std::vector<int64_t>{10, 8, 6}));
  std::optional<Tensor> none = foldRange(ints({}, {5}), ints({}, {0}), ints({}, {1}), 100, error);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->dims, (std::vector<int64_t>{0}));
  std::optional<Tensor> f =
      foldRange(floats({}, {0.0f}), floats({}, {1.0f}), floats({}, {0.3f}), 100, error);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(f->floatAt(3), 0.0f + 3.0f * 0.3f);
  EXPECT_FALSE(foldRange(ints({}, {0}), ints({}, {5}), ints({}, {0}), 100, error));
  EXPECT_EQ(error, "Range delta is 0");
  EXPECT_FALSE(foldRange(ints({}, {0}), ints({}, {101}), ints({}, {1}), 100, error));
  // Extremes must not overflow the element count.
  EXPECT_FALSE(foldRange(ints({}, {INT64_MIN}), ints({}, {INT64_MAX}), ints({}, {1}), 100,
                         error));
}

TEST(ConstantFolding, FillExpandTransposeNot) {
  Tensor one = ints({1}, {7});
  EXPECT_EQ(valuesOf(foldFill(one, {2, 2})), (std::vector<int64_t>{7, 7, 7, 7}));
  Tensor row = ints({1, 3}, {0, 1, 2});
  Tensor grid = foldExpand(row, {2, 3});
  EXPECT_EQ(valuesOf(grid), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  Tensor t = foldTranspose(grid, {1, 0}, {3, 2});
  EXPECT_EQ(valuesOf(t), (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
  std::optional<Tensor> flags = foldCast(ints({3}, {0, 2, 0}), DType::Bool);
  ASSERT_TRUE(flags);
  EXPECT_EQ(valuesOf(foldNot(*flags)), (std::vector<int64_t>{1, 0, 1}));
}

TEST(ConstantFolding, GatherNDTuplesBatchesAndRange) {
  std::string error;
  Tensor data = ints({2, 2}, {0, 1, 2, 3});
  std::optional<Tensor> points = foldGatherND(data, ints({2, 2}, {0, 0, 1, 1}), 0, {2}, error);
  ASSERT_TRUE(points);
  EXPECT_EQ(valuesOf(*points), (std::vector<int64_t>{0, 3}));
  std::optional<Tensor> rows = foldGatherND(data, ints({2, 1}, {1, -2}), 0, {2, 2}, error);
  ASSERT_TRUE(rows);
  EXPECT_EQ(valuesOf(*rows), (std::vector<int64_t>{2, 3, 0, 1}));
  std::optional<Tensor> batched = foldGatherND(data, ints({2, 1}, {1, 0}), 1, {2}, error);
  ASSERT_TRUE(batched);
  EXPECT_EQ(valuesOf(*batched), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(foldGatherND(data, ints({1, 1}, {2}), 0, {1, 2}, error));
  EXPECT_EQ(error, "GatherND index out of range in a constant expression");
}

// --- folds of the torch 2.x export ops ----------------

TEST(ConstantFolding, CumSumEveryMode) {
  Tensor mask = ints({2, 3}, {1, 1, 0, 0, 1, 1});
  EXPECT_EQ(valuesOf(foldCumSum(mask, 1, false, false)),
            (std::vector<int64_t>{1, 2, 2, 0, 1, 2}));
  EXPECT_EQ(valuesOf(foldCumSum(mask, 1, true, false)),
            (std::vector<int64_t>{0, 1, 2, 0, 0, 1}));
  EXPECT_EQ(valuesOf(foldCumSum(mask, 1, false, true)),
            (std::vector<int64_t>{2, 1, 0, 2, 2, 1}));
  EXPECT_EQ(valuesOf(foldCumSum(mask, 1, true, true)),
            (std::vector<int64_t>{1, 0, 0, 2, 1, 0}));
  EXPECT_EQ(valuesOf(foldCumSum(mask, 0, false, false)),
            (std::vector<int64_t>{1, 1, 0, 1, 2, 1}));
  // int64 wraps instead of overflowing.
  Tensor big = ints({2}, {INT64_MAX, 1});
  EXPECT_EQ(valuesOf(foldCumSum(big, 0, false, false)),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN}));
}

TEST(ConstantFolding, TileAndPad) {
  Tensor a = ints({2, 1}, {1, 2});
  Tensor tiled = foldTile(a, {4, 2});
  EXPECT_EQ(tiled.dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(valuesOf(tiled), (std::vector<int64_t>{1, 1, 2, 2, 1, 1, 2, 2}));
  Tensor labels = ints({1, 3}, {5, 6, 7});
  Tensor padded = foldPad(labels, {1, 0}, -100, {2, 4});
  EXPECT_EQ(valuesOf(padded), (std::vector<int64_t>{-100, -100, -100, -100, 5, 6, 7, -100}));
}

} // namespace
