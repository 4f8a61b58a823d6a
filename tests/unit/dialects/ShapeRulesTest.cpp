//===- ShapeRulesTest.cpp - the shape arithmetic of nn ops ----------------===//
//
// ShapeRules is the one definition of each op's shape semantics, used by the
// importer and the verifiers alike; these cases pin the ONNX/numpy corner
// cases directly (1-D matmul promotion, negative-step slices, broadcasting
// with zero-size dims) so a change shows up here before it shows up as a
// model that imports with the wrong type.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/ShapeRules.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace {

using namespace fsdp::nn;

struct Errors {
  std::string last;
  int count = 0;
  void operator()(const llvm::Twine &message) {
    last = message.str();
    ++count;
  }
};

Shape S(std::initializer_list<int64_t> dims) { return Shape(dims); }

TEST(ShapeRules, BroadcastFollowsNumpy) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*broadcastShapes({S({3, 4, 5}), S({5})}, fn), S({3, 4, 5}));
  EXPECT_EQ(*broadcastShapes({S({2, 1}), S({1, 3}), S({})}, fn), S({2, 3}));
  EXPECT_EQ(*broadcastShapes({S({0, 1}), S({1, 4})}, fn), S({0, 4}));
  EXPECT_EQ(errors.count, 0);
  EXPECT_TRUE(mlir::failed(broadcastShapes({S({3, 4}), S({5})}, fn)));
  EXPECT_EQ(errors.last, "shapes [3, 4], [5] are not broadcast-compatible");
}

TEST(ShapeRules, MatmulPromotesVectors) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*matmulShape(S({4}), S({4, 3}), fn), S({3}));
  EXPECT_EQ(*matmulShape(S({2, 3, 4}), S({4}), fn), S({2, 3}));
  EXPECT_EQ(*matmulShape(S({4}), S({4}), fn), S({}));
  EXPECT_EQ(*matmulShape(S({5, 1, 2, 3}), S({4, 3, 6}), fn), S({5, 4, 2, 6}));
  EXPECT_TRUE(mlir::failed(matmulShape(S({2, 3}), S({4, 5}), fn)));
  EXPECT_EQ(errors.last, "contracting dimensions differ: lhs [2, 3], rhs [4, 5]");
}

TEST(ShapeRules, GemmTransposesAndChecksBias) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*gemmShape(S({4, 3}), S({5, 4}), S({1, 5}), true, true, fn), S({3, 5}));
  EXPECT_EQ(*gemmShape(S({2, 3}), S({3, 4}), std::nullopt, false, false, fn), S({2, 4}));
  EXPECT_TRUE(mlir::failed(gemmShape(S({2, 3}), S({3, 4}), S({3}), false, false, fn)));
  EXPECT_EQ(errors.last, "bias of shape [3] does not broadcast to [2, 4]");
}

TEST(ShapeRules, SliceClampsLikeOnnx) {
  // Positive step, out-of-range end.
  int64_t start = 1, end = 1000;
  clampSliceBounds(10, 1, start, end);
  EXPECT_EQ(start, 1);
  EXPECT_EQ(end, 10);
  // Negative step over the whole axis: end clamps to -1 ("through 0").
  start = -1;
  end = INT64_MIN;
  clampSliceBounds(10, -1, start, end);
  EXPECT_EQ(start, 9);
  EXPECT_EQ(end, -1);
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*sliceShape(S({10}), {9}, {-1}, {-1}, fn), S({10}));
  EXPECT_EQ(*sliceShape(S({20, 10}), {0, 1}, {20, 10}, {3, 2}, fn), S({7, 5}));
  EXPECT_EQ(*sliceShape(S({5}), {3}, {1}, {1}, fn), S({0}));
  EXPECT_TRUE(mlir::failed(sliceShape(S({5}), {0}, {5}, {0}, fn)));
}

TEST(ShapeRules, ReduceGatherConcatTranspose) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*reduceShape(S({3, 2, 2}), {1}, true, fn), S({3, 1, 2}));
  EXPECT_EQ(*reduceShape(S({3, 2, 2}), {0, 2}, false, fn), S({2}));
  EXPECT_TRUE(mlir::failed(reduceShape(S({3, 2}), {1, 0}, true, fn)));
  EXPECT_EQ(*gatherShape(S({5, 4, 3}), S({2, 7}), 1, fn), S({5, 2, 7, 3}));
  EXPECT_EQ(*gatherShape(S({10}), S({}), 0, fn), S({}));
  EXPECT_EQ(*concatShape({S({2, 3}), S({4, 3})}, 0, fn), S({6, 3}));
  EXPECT_TRUE(mlir::failed(concatShape({S({2, 3}), S({4, 2})}, 0, fn)));
  EXPECT_EQ(*transposeShape(S({2, 3, 4}), {2, 0, 1}, fn), S({4, 2, 3}));
  EXPECT_TRUE(mlir::failed(transposeShape(S({2, 3, 4}), {0, 0, 1}, fn)));
}

TEST(ShapeRules, ClassificationLoss) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*classificationLossShape(S({3, 5, 2}), S({3, 2}), S({5}), "none", fn), S({3, 2}));
  EXPECT_EQ(*classificationLossShape(S({3, 5}), S({3}), std::nullopt, "mean", fn), S({}));
  EXPECT_TRUE(mlir::failed(classificationLossShape(S({3, 5}), S({3}), S({4}), "sum", fn)));
  EXPECT_TRUE(mlir::failed(classificationLossShape(S({3, 5}), S({3}), std::nullopt, "avg", fn)));
  EXPECT_EQ(errors.last, "reduction must be one of none, sum, mean; got 'avg'");
}

// --- Pad and Tile -------------------------------------

TEST(ShapeRules, PadAddsLeadingAndTrailing) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*padShape(S({2, 5}), {0, 0, 0, 1}, fn), S({2, 6}));
  EXPECT_EQ(*padShape(S({0, 3}), {1, 0, 2, 0}, fn), S({3, 3}));
  EXPECT_EQ(*padShape(S({}), {}, fn), S({}));
  EXPECT_EQ(errors.count, 0);
  EXPECT_TRUE(mlir::failed(padShape(S({2, 5}), {0, 1}, fn)));
  EXPECT_EQ(errors.last, "pads has 2 entries, expected 2 x rank = 4");
  EXPECT_TRUE(mlir::failed(padShape(S({2}), {-1, 0}, fn)));
  EXPECT_EQ(errors.last, "pads of dimension 0 are negative (-1, 0)");
  EXPECT_TRUE(mlir::failed(padShape(S({2}), {INT64_MAX, 0}, fn)));
  EXPECT_EQ(errors.last, "padded dimension 0 overflows int64");
}

TEST(ShapeRules, TileMultipliesDims) {
  Errors errors;
  auto fn = [&](const llvm::Twine &m) { errors(m); };
  EXPECT_EQ(*tileShape(S({2, 3}), {2, 1}, fn), S({4, 3}));
  EXPECT_EQ(*tileShape(S({2, 3}), {0, 5}, fn), S({0, 15}));
  EXPECT_EQ(errors.count, 0);
  EXPECT_TRUE(mlir::failed(tileShape(S({2, 3}), {2}, fn)));
  EXPECT_EQ(errors.last, "repeats has 1 entries for rank 2");
  EXPECT_TRUE(mlir::failed(tileShape(S({2}), {-2}, fn)));
  EXPECT_EQ(errors.last, "repeats[0] = -2 is negative");
  EXPECT_TRUE(mlir::failed(tileShape(S({1LL << 40}), {1LL << 40}, fn)));
  EXPECT_EQ(errors.last, "tiled dimension 0 overflows int64");
}

} // namespace
