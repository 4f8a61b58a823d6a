//===- ConstantFolding.h - host evaluation of shape arithmetic ------------===//
//
// torch.onnx.export computes shapes in the graph (Shape -> Gather -> Add ->
// Div -> Unsqueeze -> Concat -> Reshape). To give every nn op a static type
// the importer evaluates those chains on the host. These kernels work on
// small integer/bool tensors (and int -> float casts); handlers call them
// when all of a node's inputs are known constants, so the chain leaves no
// ops behind. Float compute on constants is not folded: it stays in the
// graph with its exact runtime semantics.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_CONSTANTFOLDING_H
#define FSDP_FRONTENDS_ONNX_CONSTANTFOLDING_H

#include "frontends/onnx/OnnxModel.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace fsdp::onnx {

/// Largest constant (in elements) the importer evaluates on the host.
inline constexpr int64_t kMaxFoldElements = 1 << 16;

/// True if `t` has data, is integer or bool, and is small enough to fold.
bool isFoldableInteger(const Tensor &t);

/// Elementwise Add/Sub/Mul/Div with numpy broadcasting to `shape`, in the
/// operands' integer dtype (Div truncates). nullopt with `error` set on
/// division by zero.
std::optional<Tensor> foldBinary(llvm::StringRef opType, const Tensor &lhs,
                                 const Tensor &rhs, llvm::ArrayRef<int64_t> shape,
                                 std::string &error);
Tensor foldNeg(const Tensor &input);

/// Cast to an integer, bool, float or double dtype; nullopt for others.
/// Float inputs fold only to integer and bool dtypes, and only when every
/// value is finite and within int64.
std::optional<Tensor> foldCast(const Tensor &input, DType to);

/// Same data, new dims (Reshape, Squeeze, Unsqueeze, Identity).
Tensor foldReshape(const Tensor &input, llvm::ArrayRef<int64_t> shape);

/// Gather along `axis` (normalized); nullopt with `error` for an index out
/// of range.
std::optional<Tensor> foldGather(const Tensor &data, const Tensor &indices,
                                 int64_t axis, llvm::ArrayRef<int64_t> shape,
                                 std::string &error);
Tensor foldConcat(llvm::ArrayRef<const Tensor *> inputs, int64_t axis,
                  llvm::ArrayRef<int64_t> shape);
/// Starts/steps per dimension as nn.slice takes them.
Tensor foldSlice(const Tensor &input, llvm::ArrayRef<int64_t> starts,
                 llvm::ArrayRef<int64_t> steps, llvm::ArrayRef<int64_t> shape);

// --- generators and data movement of the dynamo exporter's graphs --------
// These copy elements byte for byte, so they fold any fixed-size dtype.

/// Range(start, limit, delta) of scalar constants of one integer, float or
/// double dtype; nullopt with `error` set for delta 0, another dtype or more
/// than `maxElements` elements.
std::optional<Tensor> foldRange(const Tensor &start, const Tensor &limit,
                                const Tensor &delta, int64_t maxElements,
                                std::string &error);
/// A tensor of `shape` filled with the one element of `value`.
Tensor foldFill(const Tensor &value, llvm::ArrayRef<int64_t> shape);
/// GatherND with `batchDims` leading batch dimensions; `shape` is the
/// result's. nullopt with `error` for an index out of range.
std::optional<Tensor> foldGatherND(const Tensor &data, const Tensor &indices,
                                   int64_t batchDims, llvm::ArrayRef<int64_t> shape,
                                   std::string &error);

/// Expand: `input` broadcast to `shape`.
Tensor foldExpand(const Tensor &input, llvm::ArrayRef<int64_t> shape);
/// Transpose by `perm`; `shape` is the result's.
Tensor foldTranspose(const Tensor &input, llvm::ArrayRef<int64_t> perm,
                     llvm::ArrayRef<int64_t> shape);
/// Logical not of a bool tensor.
Tensor foldNot(const Tensor &input);

/// Elementwise comparison ("eq", "lt", "le", "gt", "ge") or logic ("and",
/// "or", "xor") with numpy broadcasting to `shape`; a bool result. Operands
/// of any dtype with data (float comparisons are exact on the widened
/// values; NaN compares false).
Tensor foldPredicate(llvm::StringRef op, const Tensor &lhs, const Tensor &rhs,
                     llvm::ArrayRef<int64_t> shape);
/// torch.maximum / torch.minimum (`isMax`) with broadcasting, in the
/// operands' integer dtype.
Tensor foldMinMax(bool isMax, const Tensor &lhs, const Tensor &rhs,
                  llvm::ArrayRef<int64_t> shape);

/// A 1-D int64 tensor (Shape's result).
Tensor makeInt64Tensor(llvm::ArrayRef<int64_t> values);

// --- folds of torch 2.x export ops -----------------
// Integer tensors only (isFoldableInteger), so mask and position chains
// built from constants leave no ops behind.

/// CumSum along the normalized `axis`, wrapping in int64 then stored in the
/// input's dtype.
Tensor foldCumSum(const Tensor &input, int64_t axis, bool exclusive, bool reverse);
/// Tile to `shape` (each dim a multiple of the input's).
Tensor foldTile(const Tensor &input, llvm::ArrayRef<int64_t> shape);
/// Constant pad with non-negative leading counts `begins` to `shape`.
Tensor foldPad(const Tensor &input, llvm::ArrayRef<int64_t> begins, int64_t value,
               llvm::ArrayRef<int64_t> shape);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_CONSTANTFOLDING_H
