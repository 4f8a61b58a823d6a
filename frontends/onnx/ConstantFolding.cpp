//===- ConstantFolding.cpp - host evaluation of shape arithmetic ----------===//
//
// Index arithmetic over row-major tensors plus integer element read/write.
// Everything computes in int64 and stores back into the operand dtype, which
// is exact for the shape-sized values these chains carry.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ConstantFolding.h"

#include "runtime/support/ElementCount.h"

#include <cmath>
#include <cstring>

namespace fsdp::onnx {
namespace {

Tensor emptyLike(DType dtype, llvm::ArrayRef<int64_t> shape) {
  Tensor t;
  t.dtype = dtype;
  t.dims.assign(shape.begin(), shape.end());
  t.data.resize(static_cast<size_t>(t.numElements()) * dtypeSize(dtype));
  return t;
}

void storeInt(Tensor &t, int64_t i, int64_t v) {
  size_t size = dtypeSize(t.dtype);
  if (t.dtype == DType::Bool)
    v = v != 0;
  std::memcpy(t.data.data() + i * size, &v, size); // little-endian low bytes
}

void storeFloat(Tensor &t, int64_t i, double v) {
  if (t.dtype == DType::Double) {
    std::memcpy(t.data.data() + i * 8, &v, 8);
  } else {
    float f = static_cast<float>(v);
    std::memcpy(t.data.data() + i * 4, &f, 4);
  }
}

std::vector<int64_t> stridesOf(llvm::ArrayRef<int64_t> shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  // Saturated: a shape with a 0 may have other dimensions near INT64_MAX;
  // strides are only used to index a tensor that has elements.
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    if (__builtin_mul_overflow(strides[i + 1], shape[i + 1], &strides[i]))
      strides[i] = INT64_MAX;
  return strides;
}

/// Flat index into a tensor of shape `from` that broadcasts to `to`, for the
/// multi-index `index` of `to`.
int64_t broadcastIndex(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to,
                       llvm::ArrayRef<int64_t> index) {
  std::vector<int64_t> strides = stridesOf(from);
  size_t offset = to.size() - from.size();
  int64_t flat = 0;
  for (size_t d = 0; d < from.size(); ++d)
    flat += (from[d] == 1 ? 0 : index[offset + d]) * strides[d];
  return flat;
}

/// Calls `body(flat, index)` for every element of `shape` in row-major order.
template <typename Body>
void forEachIndex(llvm::ArrayRef<int64_t> shape, Body body) {
  int64_t total = saturatedElementCount(shape);
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    body(flat, llvm::ArrayRef<int64_t>(index));
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

} // namespace

bool isFoldableInteger(const Tensor &t) {
  return t.hasData && t.isInteger() && t.numElements() <= kMaxFoldElements;
}

std::optional<Tensor> foldBinary(llvm::StringRef opType, const Tensor &lhs,
                                 const Tensor &rhs, llvm::ArrayRef<int64_t> shape,
                                 std::string &error) {
  Tensor out = emptyLike(lhs.dtype, shape);
  bool ok = true;
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t a = lhs.intAt(broadcastIndex(lhs.dims, shape, index));
    int64_t b = rhs.intAt(broadcastIndex(rhs.dims, shape, index));
    // Two's-complement wrap-around like the runtime's integer kernels, in
    // unsigned arithmetic: signed overflow (and INT64_MIN / -1, which traps
    // on x86) must not be reachable from a model's constants.
    uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    int64_t r = 0;
    if (opType == "Add")
      r = static_cast<int64_t>(ua + ub);
    else if (opType == "Sub")
      r = static_cast<int64_t>(ua - ub);
    else if (opType == "Mul")
      r = static_cast<int64_t>(ua * ub);
    else if (b == 0)
      ok = false;
    else if (lhs.dtype == DType::UInt64)
      r = static_cast<int64_t>(ua / ub);
    else if (b == -1)
      r = static_cast<int64_t>(0 - ua);
    else
      r = a / b;
    storeInt(out, flat, r);
  });
  if (!ok) {
    error = "integer division by zero in a constant expression";
    return std::nullopt;
  }
  return out;
}

Tensor foldPredicate(llvm::StringRef op, const Tensor &lhs, const Tensor &rhs,
                     llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(DType::Bool, shape);
  bool exact = lhs.isFloat() || rhs.isFloat();
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t i = broadcastIndex(lhs.dims, shape, index);
    int64_t j = broadcastIndex(rhs.dims, shape, index);
    // Integers compare as int64 (exact, unlike a trip through double).
    auto cmp = [&](auto a, auto b) {
      if (op == "eq") return a == b;
      if (op == "lt") return a < b;
      if (op == "le") return a <= b;
      if (op == "gt") return a > b;
      if (op == "ge") return a >= b;
      bool x = a != 0, y = b != 0;
      if (op == "and") return x && y;
      if (op == "or") return x || y;
      return x != y; // xor
    };
    bool r = exact ? cmp(lhs.floatAt(i), rhs.floatAt(j)) : cmp(lhs.intAt(i), rhs.intAt(j));
    storeInt(out, flat, r);
  });
  return out;
}

Tensor foldMinMax(bool isMax, const Tensor &lhs, const Tensor &rhs,
                  llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(lhs.dtype, shape);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t a = lhs.intAt(broadcastIndex(lhs.dims, shape, index));
    int64_t b = rhs.intAt(broadcastIndex(rhs.dims, shape, index));
    storeInt(out, flat, isMax == (a > b) ? a : b);
  });
  return out;
}

Tensor foldNeg(const Tensor &input) {
  Tensor out = emptyLike(input.dtype, input.dims);
  for (int64_t i = 0, n = input.numElements(); i < n; ++i)
    storeInt(out, i, static_cast<int64_t>(0 - static_cast<uint64_t>(input.intAt(i))));
  return out;
}

std::optional<Tensor> foldCast(const Tensor &input, DType to) {
  Tensor out = emptyLike(to, input.dims);
  bool toFloat = to == DType::Float || to == DType::Double;
  if (!toFloat && dtypeSize(to) == 0)
    return std::nullopt;
  if (!toFloat && (to == DType::Float16 || to == DType::BFloat16))
    return std::nullopt;
  if (input.isFloat()) {
    // Float to integer truncates toward zero, to bool is `x != 0`, as the
    // runtime's cast; values it leaves undefined (NaN, out of range) are
    // not folded. Float to float stays a runtime cast.
    if (toFloat)
      return std::nullopt;
    for (int64_t i = 0, n = input.numElements(); i < n; ++i) {
      double v = input.floatAt(i);
      if (!std::isfinite(v) || std::fabs(v) >= 9.2e18)
        return std::nullopt;
      storeInt(out, i, to == DType::Bool ? v != 0 : static_cast<int64_t>(v));
    }
    return out;
  }
  for (int64_t i = 0, n = input.numElements(); i < n; ++i) {
    if (toFloat)
      storeFloat(out, i, static_cast<double>(input.intAt(i)));
    else
      storeInt(out, i, input.intAt(i));
  }
  return out;
}

Tensor foldReshape(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  Tensor out = input;
  out.name.clear();
  out.dims.assign(shape.begin(), shape.end());
  return out;
}

std::optional<Tensor> foldGather(const Tensor &data, const Tensor &indices,
                                 int64_t axis, llvm::ArrayRef<int64_t> shape,
                                 std::string &error) {
  Tensor out = emptyLike(data.dtype, shape);
  std::vector<int64_t> dataStrides = stridesOf(data.dims);
  int64_t axisSize = data.dims[axis];
  size_t indexRank = indices.dims.size();
  std::vector<int64_t> indexStrides = stridesOf(indices.dims);
  bool ok = true;
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t indexFlat = 0;
    for (size_t d = 0; d < indexRank; ++d)
      indexFlat += index[axis + d] * indexStrides[d];
    int64_t k = indices.intAt(indexFlat);
    if (k < 0)
      k += axisSize;
    if (k < 0 || k >= axisSize) {
      ok = false;
      return;
    }
    int64_t src = 0;
    for (int64_t d = 0; d < static_cast<int64_t>(data.dims.size()); ++d) {
      int64_t coordinate = d < axis ? index[d]
                           : d == axis ? k
                                       : index[d - 1 + indexRank];
      src += coordinate * dataStrides[d];
    }
    storeInt(out, flat, data.intAt(src));
  });
  if (!ok) {
    error = "gather index out of range in a constant expression";
    return std::nullopt;
  }
  return out;
}

Tensor foldConcat(llvm::ArrayRef<const Tensor *> inputs, int64_t axis,
                  llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(inputs[0]->dtype, shape);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t position = index[axis];
    for (const Tensor *input : inputs) {
      if (position < input->dims[axis]) {
        std::vector<int64_t> local(index.begin(), index.end());
        local[axis] = position;
        std::vector<int64_t> strides = stridesOf(input->dims);
        int64_t src = 0;
        for (size_t d = 0; d < local.size(); ++d)
          src += local[d] * strides[d];
        storeInt(out, flat, input->intAt(src));
        return;
      }
      position -= input->dims[axis];
    }
  });
  return out;
}

Tensor foldSlice(const Tensor &input, llvm::ArrayRef<int64_t> starts,
                 llvm::ArrayRef<int64_t> steps, llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(input.dtype, shape);
  std::vector<int64_t> strides = stridesOf(input.dims);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d)
      src += (starts[d] + index[d] * steps[d]) * strides[d];
    storeInt(out, flat, input.intAt(src));
  });
  return out;
}

std::optional<Tensor> foldRange(const Tensor &start, const Tensor &limit,
                                const Tensor &delta, int64_t maxElements,
                                std::string &error) {
  DType dtype = start.dtype;
  bool isFloat = dtype == DType::Float || dtype == DType::Double;
  bool isInt = dtype == DType::Int16 || dtype == DType::Int32 || dtype == DType::Int64;
  if (!isFloat && !isInt) {
    error = "Range on " + dtypeName(dtype) + " is not supported (int16, int32, int64, "
            "float and double are)";
    return std::nullopt;
  }
  int64_t count = 0;
  if (isInt) {
    int64_t first = start.intAt(0), last = limit.intAt(0), step = delta.intAt(0);
    if (step == 0) {
      error = "Range delta is 0";
      return std::nullopt;
    }
    // ceil((last - first) / step) in 128 bits: int64 extremes cannot overflow.
    __int128 span = static_cast<__int128>(last) - first;
    __int128 n = span / step + ((span % step != 0) && ((span > 0) == (step > 0)) ? 1 : 0);
    count = n <= 0 ? 0 : n > maxElements ? maxElements + 1 : static_cast<int64_t>(n);
  } else {
    double first = start.floatAt(0), last = limit.floatAt(0), step = delta.floatAt(0);
    if (step == 0 || std::isnan(first) || std::isnan(last) || std::isnan(step)) {
      error = "Range delta is 0 or an operand is NaN";
      return std::nullopt;
    }
    double n = std::ceil((last - first) / step);
    count = !(n > 0) ? 0 : n > static_cast<double>(maxElements) ? maxElements + 1
                                                                 : static_cast<int64_t>(n);
  }
  if (count > maxElements) {
    error = "Range has more than " + std::to_string(maxElements) +
            " elements, more than the importer builds on the host";
    return std::nullopt;
  }
  Tensor out = emptyLike(dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::Float) // computed in the operands' type, as specified
      storeFloat(out, i, static_cast<float>(start.floatAt(0)) +
                             static_cast<float>(i) * static_cast<float>(delta.floatAt(0)));
    else if (dtype == DType::Double)
      storeFloat(out, i, start.floatAt(0) + static_cast<double>(i) * delta.floatAt(0));
    else
      storeInt(out, i, static_cast<int64_t>(static_cast<uint64_t>(start.intAt(0)) +
                                            static_cast<uint64_t>(i) *
                                                static_cast<uint64_t>(delta.intAt(0))));
  }
  return out;
}

Tensor foldFill(const Tensor &value, llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(value.dtype, shape);
  size_t size = dtypeSize(value.dtype);
  for (int64_t i = 0, n = out.numElements(); i < n; ++i)
    std::memcpy(out.data.data() + i * size, value.data.data(), size);
  return out;
}

std::optional<Tensor> foldGatherND(const Tensor &data, const Tensor &indices,
                                   int64_t batchDims, llvm::ArrayRef<int64_t> shape,
                                   std::string &error) {
  Tensor out = emptyLike(data.dtype, shape);
  size_t size = dtypeSize(data.dtype);
  int64_t depth = indices.dims.back();
  std::vector<int64_t> dataStrides = stridesOf(data.dims);
  // Each index tuple selects a contiguous block: the trailing data dims.
  int64_t block = saturatedElementCount(
      llvm::ArrayRef<int64_t>(data.dims).drop_front(batchDims + depth));
  std::vector<int64_t> tupleShape(indices.dims.begin(), indices.dims.end() - 1);
  bool ok = true;
  forEachIndex(tupleShape, [&](int64_t tuple, llvm::ArrayRef<int64_t> index) {
    if (!ok)
      return;
    int64_t src = 0;
    for (int64_t d = 0; d < batchDims; ++d)
      src += index[d] * dataStrides[d];
    for (int64_t k = 0; k < depth; ++k) {
      int64_t dim = data.dims[batchDims + k];
      int64_t v = indices.intAt(tuple * depth + k);
      if (v < 0)
        v += dim;
      if (v < 0 || v >= dim) {
        ok = false;
        return;
      }
      src += v * dataStrides[batchDims + k];
    }
    std::memcpy(out.data.data() + tuple * block * size, data.data.data() + src * size,
                block * size);
  });
  if (!ok) {
    error = "GatherND index out of range in a constant expression";
    return std::nullopt;
  }
  return out;
}

Tensor foldExpand(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(input.dtype, shape);
  size_t size = dtypeSize(input.dtype);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    std::memcpy(out.data.data() + flat * size,
                input.data.data() + broadcastIndex(input.dims, shape, index) * size, size);
  });
  return out;
}

Tensor foldTranspose(const Tensor &input, llvm::ArrayRef<int64_t> perm,
                     llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(input.dtype, shape);
  size_t size = dtypeSize(input.dtype);
  std::vector<int64_t> strides = stridesOf(input.dims);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d)
      src += index[d] * strides[perm[d]];
    std::memcpy(out.data.data() + flat * size, input.data.data() + src * size, size);
  });
  return out;
}

Tensor foldNot(const Tensor &input) {
  Tensor out = emptyLike(input.dtype, input.dims);
  for (int64_t i = 0, n = input.numElements(); i < n; ++i)
    storeInt(out, i, input.intAt(i) == 0);
  return out;
}

Tensor makeInt64Tensor(llvm::ArrayRef<int64_t> values) {
  Tensor t = emptyLike(DType::Int64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    storeInt(t, i, values[i]);
  return t;
}

// --- folds of torch 2.x export ops -----------------

Tensor foldCumSum(const Tensor &input, int64_t axis, bool exclusive, bool reverse) {
  Tensor out = emptyLike(input.dtype, input.dims);
  std::vector<int64_t> strides = stridesOf(input.dims);
  int64_t len = input.dims[axis], stride = strides[axis];
  // Each line along `axis` starts where the axis index is 0.
  forEachIndex(input.dims, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    if (index[axis] != 0)
      return;
    uint64_t sum = 0;
    for (int64_t step = 0; step < len; ++step) {
      int64_t at = flat + (reverse ? len - 1 - step : step) * stride;
      uint64_t v = static_cast<uint64_t>(input.intAt(at));
      if (!exclusive)
        sum += v;
      storeInt(out, at, static_cast<int64_t>(sum));
      if (exclusive)
        sum += v;
    }
  });
  return out;
}

Tensor foldTile(const Tensor &input, llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(input.dtype, shape);
  std::vector<int64_t> strides = stridesOf(input.dims);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t src = 0;
    for (size_t d = 0; d < index.size(); ++d)
      src += (index[d] % input.dims[d]) * strides[d];
    storeInt(out, flat, input.intAt(src));
  });
  return out;
}

Tensor foldPad(const Tensor &input, llvm::ArrayRef<int64_t> begins, int64_t value,
               llvm::ArrayRef<int64_t> shape) {
  Tensor out = emptyLike(input.dtype, shape);
  std::vector<int64_t> strides = stridesOf(input.dims);
  forEachIndex(shape, [&](int64_t flat, llvm::ArrayRef<int64_t> index) {
    int64_t src = 0;
    bool inside = true;
    for (size_t d = 0; d < index.size(); ++d) {
      int64_t i = index[d] - begins[d];
      inside &= i >= 0 && i < input.dims[d];
      src += i * strides[d];
    }
    storeInt(out, flat, inside ? input.intAt(src) : value);
  });
  return out;
}

} // namespace fsdp::onnx
