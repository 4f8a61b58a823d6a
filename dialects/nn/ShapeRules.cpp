//===- ShapeRules.cpp - static shape rules of nn ops ----------------------===//
//
// Implements the shape arithmetic declared in ShapeRules.h. These functions
// are the single definition of each op's shape semantics (ONNX's, for static
// shapes); keep diagnostics lowercase and specific, because they reach users
// through both the verifier and the importer's per-node errors.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/ShapeRules.h"
#include "runtime/support/ElementCount.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <limits>

using namespace mlir;
using llvm::ArrayRef;

namespace fsdp::nn {

std::string formatShape(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os);
  os << "]";
  return s;
}

int64_t numElements(ArrayRef<int64_t> shape) { return saturatedElementCount(shape); }

std::optional<int64_t> checkedNumElements(ArrayRef<int64_t> shape) {
  return checkedElementCount(shape);
}

FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank, ErrorFn error) {
  if (axis < -rank || axis >= rank) {
    error("axis " + llvm::Twine(axis) + " is out of range for rank " +
          llvm::Twine(rank));
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

FailureOr<Shape> broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                                 ErrorFn error) {
  size_t rank = 0;
  for (ArrayRef<int64_t> s : shapes)
    rank = std::max(rank, s.size());
  Shape result(rank, 1);
  for (ArrayRef<int64_t> s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t &r = result[offset + i];
      int64_t d = s[i];
      if (d == r || d == 1)
        continue;
      if (r == 1) {
        r = d;
        continue;
      }
      std::string all;
      for (ArrayRef<int64_t> t : shapes)
        all += (all.empty() ? "" : ", ") + formatShape(t);
      error("shapes " + all + " are not broadcast-compatible");
      return failure();
    }
  }
  return result;
}

bool broadcastsTo(ArrayRef<int64_t> from, ArrayRef<int64_t> to) {
  if (from.size() > to.size())
    return false;
  size_t offset = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[offset + i])
      return false;
  return true;
}

FailureOr<Shape> matmulShape(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs,
                             ErrorFn error) {
  if (lhs.empty() || rhs.empty()) {
    error("matmul operands must have rank >= 1");
    return failure();
  }
  // Promote 1-D operands to matrices, remembering to drop the added dims.
  Shape l(lhs.begin(), lhs.end()), r(rhs.begin(), rhs.end());
  bool lhsVector = l.size() == 1, rhsVector = r.size() == 1;
  if (lhsVector)
    l.insert(l.begin(), 1);
  if (rhsVector)
    r.push_back(1);
  int64_t k = l.back(), k2 = r[r.size() - 2];
  if (k != k2) {
    error("contracting dimensions differ: lhs " + formatShape(lhs) + ", rhs " +
          formatShape(rhs));
    return failure();
  }
  ArrayRef<int64_t> lb = ArrayRef<int64_t>(l).drop_back(2);
  ArrayRef<int64_t> rb = ArrayRef<int64_t>(r).drop_back(2);
  FailureOr<Shape> batch = broadcastShapes({lb, rb}, error);
  if (failed(batch))
    return failure();
  Shape result = *batch;
  if (!lhsVector)
    result.push_back(l[l.size() - 2]);
  if (!rhsVector)
    result.push_back(r.back());
  return result;
}

FailureOr<Shape> gemmShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                           std::optional<ArrayRef<int64_t>> c, bool transA,
                           bool transB, ErrorFn error) {
  if (a.size() != 2 || b.size() != 2) {
    error("gemm operands must be 2-D, got " + formatShape(a) + " and " +
          formatShape(b));
    return failure();
  }
  int64_t m = transA ? a[1] : a[0], ka = transA ? a[0] : a[1];
  int64_t kb = transB ? b[1] : b[0], n = transB ? b[0] : b[1];
  if (ka != kb) {
    error("contracting dimensions differ: op(a) is " + llvm::Twine(m) + "x" +
          llvm::Twine(ka) + ", op(b) is " + llvm::Twine(kb) + "x" +
          llvm::Twine(n));
    return failure();
  }
  Shape result{m, n};
  if (c && !broadcastsTo(*c, result)) {
    error("bias of shape " + formatShape(*c) + " does not broadcast to " +
          formatShape(result));
    return failure();
  }
  return result;
}

FailureOr<Shape> transposeShape(ArrayRef<int64_t> input, ArrayRef<int64_t> perm,
                                ErrorFn error) {
  if (perm.size() != input.size()) {
    error("perm has " + llvm::Twine(perm.size()) +
          " entries for an input of rank " + llvm::Twine(input.size()));
    return failure();
  }
  Shape result;
  llvm::SmallVector<bool, 6> seen(input.size(), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(input.size()) || seen[p]) {
      error("perm " + formatShape(perm) + " is not a permutation");
      return failure();
    }
    seen[p] = true;
    result.push_back(input[p]);
  }
  return result;
}

FailureOr<Shape> concatShape(ArrayRef<ArrayRef<int64_t>> inputs, int64_t axis,
                             ErrorFn error) {
  if (inputs.empty()) {
    error("concat needs at least one input");
    return failure();
  }
  Shape result(inputs[0].begin(), inputs[0].end());
  if (axis < 0 || axis >= static_cast<int64_t>(result.size())) {
    error("axis " + llvm::Twine(axis) + " is out of range for rank " +
          llvm::Twine(result.size()));
    return failure();
  }
  for (ArrayRef<int64_t> s : inputs.drop_front()) {
    bool ok = s.size() == result.size();
    for (size_t i = 0; ok && i < s.size(); ++i)
      ok = static_cast<int64_t>(i) == axis || s[i] == result[i];
    if (!ok) {
      error("input shapes " + formatShape(inputs[0]) + " and " + formatShape(s) +
            " differ outside axis " + llvm::Twine(axis));
      return failure();
    }
    // Sizes come from untrusted models: a sum past int64 is an error.
    if (llvm::AddOverflow(result[axis], s[axis], result[axis])) {
      error("concatenated size along axis " + llvm::Twine(axis) + " overflows int64");
      return failure();
    }
  }
  return result;
}

void clampSliceBounds(int64_t dim, int64_t step, int64_t &start, int64_t &end) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else if (dim == 0) {
    // [0, dim - 1] is empty; std::clamp must not see lo > hi. (0, -1) is
    // the canonical empty backward slice that sliceShape accepts.
    start = 0;
    end = -1;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
}

FailureOr<Shape> sliceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> starts,
                            ArrayRef<int64_t> ends, ArrayRef<int64_t> steps,
                            ErrorFn error) {
  size_t rank = input.size();
  if (starts.size() != rank || ends.size() != rank || steps.size() != rank) {
    error("starts, ends and steps need one entry per dimension (" +
          llvm::Twine(rank) + ")");
    return failure();
  }
  Shape result;
  for (size_t i = 0; i < rank; ++i) {
    int64_t dim = input[i], start = starts[i], end = ends[i], step = steps[i];
    bool inRange = step > 0 ? (start >= 0 && start <= dim && end >= 0 && end <= dim)
                            : (start >= 0 && start <= std::max<int64_t>(dim - 1, 0) &&
                               end >= -1 && end <= dim - 1);
    if (step == 0 || step == std::numeric_limits<int64_t>::min() || !inRange) {
      error("dimension " + llvm::Twine(i) + " (size " + llvm::Twine(dim) +
            "): start " + llvm::Twine(start) + ", end " + llvm::Twine(end) +
            ", step " + llvm::Twine(step) + " are not a clamped slice");
      return failure();
    }
    // ceil(span / |step|), written so that neither `-step` (step = INT64_MIN)
    // nor `span + stride - 1` (huge steps) can overflow. A zero-sized
    // dimension is empty whatever the bounds (backward: start 0, end -1).
    int64_t span = step > 0 ? end - start : start - end;
    uint64_t stride = step > 0 ? static_cast<uint64_t>(step)
                               : 0 - static_cast<uint64_t>(step);
    result.push_back(dim == 0 || span <= 0
                         ? 0
                         : static_cast<int64_t>(
                               (static_cast<uint64_t>(span) - 1) / stride + 1));
  }
  return result;
}

FailureOr<Shape> gatherShape(ArrayRef<int64_t> data, ArrayRef<int64_t> indices,
                             int64_t axis, ErrorFn error) {
  if (axis < 0 || axis >= static_cast<int64_t>(data.size())) {
    error("axis " + llvm::Twine(axis) + " is out of range for rank " +
          llvm::Twine(data.size()));
    return failure();
  }
  Shape result(data.begin(), data.begin() + axis);
  result.append(indices.begin(), indices.end());
  result.append(data.begin() + axis + 1, data.end());
  return result;
}

FailureOr<Shape> reduceShape(ArrayRef<int64_t> input, ArrayRef<int64_t> axes,
                             bool keepdims, ErrorFn error) {
  int64_t rank = input.size();
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] < 0 || axes[i] >= rank || (i > 0 && axes[i] <= axes[i - 1])) {
      error("axes " + formatShape(axes) +
            " must be sorted, unique and in [0, " + llvm::Twine(rank) + ")");
      return failure();
    }
  }
  Shape result;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(axes, i))
      result.push_back(input[i]);
    else if (keepdims)
      result.push_back(1);
  }
  return result;
}

Shape layerNormStatShape(ArrayRef<int64_t> input, int64_t axis) {
  Shape result(input.begin(), input.end());
  for (size_t i = axis; i < result.size(); ++i)
    result[i] = 1;
  return result;
}

FailureOr<Shape> classificationLossShape(ArrayRef<int64_t> scores,
                                         ArrayRef<int64_t> labels,
                                         std::optional<ArrayRef<int64_t>> weights,
                                         llvm::StringRef reduction,
                                         ErrorFn error) {
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    error("reduction must be one of none, sum, mean; got '" + reduction + "'");
    return failure();
  }
  if (scores.size() < 2) {
    error("scores must be [N, C, d...], got " + formatShape(scores));
    return failure();
  }
  Shape expectedLabels{scores[0]};
  expectedLabels.append(scores.begin() + 2, scores.end());
  if (Shape(labels.begin(), labels.end()) != expectedLabels) {
    error("labels have shape " + formatShape(labels) + ", expected " +
          formatShape(expectedLabels) + " for scores " + formatShape(scores));
    return failure();
  }
  if (weights && (weights->size() != 1 || (*weights)[0] != scores[1])) {
    error("weights must be [C] = [" + llvm::Twine(scores[1]) + "], got " +
          formatShape(*weights));
    return failure();
  }
  if (reduction == "none")
    return expectedLabels;
  return Shape{};
}

// --- shapes of the torch 2.x export ops ---------------

FailureOr<Shape> padShape(ArrayRef<int64_t> input, ArrayRef<int64_t> pads, ErrorFn error) {
  size_t rank = input.size();
  if (pads.size() != 2 * rank) {
    error("pads has " + llvm::Twine(pads.size()) + " entries, expected 2 x rank = " +
          llvm::Twine(2 * rank));
    return failure();
  }
  Shape shape;
  for (size_t i = 0; i < rank; ++i) {
    int64_t begin = pads[i], end = pads[rank + i], dim = 0;
    if (begin < 0 || end < 0) {
      error("pads of dimension " + llvm::Twine(i) + " are negative (" + llvm::Twine(begin) +
            ", " + llvm::Twine(end) + ")");
      return failure();
    }
    if (llvm::AddOverflow(input[i], begin, dim) || llvm::AddOverflow(dim, end, dim)) {
      error("padded dimension " + llvm::Twine(i) + " overflows int64");
      return failure();
    }
    shape.push_back(dim);
  }
  return shape;
}

FailureOr<Shape> tileShape(ArrayRef<int64_t> input, ArrayRef<int64_t> repeats, ErrorFn error) {
  if (repeats.size() != input.size()) {
    error("repeats has " + llvm::Twine(repeats.size()) + " entries for rank " +
          llvm::Twine(input.size()));
    return failure();
  }
  Shape shape;
  for (size_t i = 0; i < input.size(); ++i) {
    int64_t dim = 0;
    if (repeats[i] < 0) {
      error("repeats[" + llvm::Twine(i) + "] = " + llvm::Twine(repeats[i]) + " is negative");
      return failure();
    }
    if (llvm::MulOverflow(input[i], repeats[i], dim)) {
      error("tiled dimension " + llvm::Twine(i) + " overflows int64");
      return failure();
    }
    shape.push_back(dim);
  }
  return shape;
}

FailureOr<Shape> attentionShape(ArrayRef<int64_t> query, ArrayRef<int64_t> key,
                                ArrayRef<int64_t> value, std::optional<ArrayRef<int64_t>> mask,
                                ErrorFn error) {
  if (query.size() != 4 || key.size() != 4 || value.size() != 4) {
    error("query, key and value must have rank 4 ([batch, heads, sequence, head dim]), got " +
          formatShape(query) + ", " + formatShape(key) + " and " + formatShape(value));
    return failure();
  }
  const int64_t heads = query[1], kvHeads = key[1];
  if (key[0] != query[0] || value[0] != query[0] || value[1] != kvHeads || value[2] != key[2] ||
      key[3] != query[3]) {
    error("key " + formatShape(key) + " and value " + formatShape(value) +
          " do not match query " + formatShape(query) +
          " (same batch and head dim, key and value the same heads and length)");
    return failure();
  }
  if (kvHeads <= 0 || heads % kvHeads != 0) {
    error("query's " + llvm::Twine(heads) + " heads are not a multiple of key's " +
          llvm::Twine(kvHeads));
    return failure();
  }
  if (mask) {
    const Shape scores{query[0], heads, query[2], key[2]};
    if (mask->size() > 4 || !broadcastsTo(*mask, scores)) {
      error("mask of shape " + formatShape(*mask) + " does not broadcast to the scores' " +
            formatShape(scores));
      return failure();
    }
  }
  return Shape{query[0], heads, query[2], value[3]};
}

} // namespace fsdp::nn
