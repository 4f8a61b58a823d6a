//===- ShapeRules.h - static shape rules of nn ops ------------------------===//
//
// The shape arithmetic of each nn op, written once and used twice: the ONNX
// importer calls these to type the ops it builds, and the op verifiers call
// them to check IR from any source. Each rule returns the result shape, or
// reports why the operands are invalid through `error` and returns failure.
// Dimensions are static (no dynamic sizes reach the nn dialect).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_NN_SHAPERULES_H
#define FSDP_DIALECTS_NN_SHAPERULES_H

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <optional>
#include <string>

namespace fsdp::nn {

using Shape = llvm::SmallVector<int64_t, 6>;
using ErrorFn = llvm::function_ref<void(const llvm::Twine &)>;

/// "[2, 3, 4]", for diagnostics.
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Maps `axis` in [-rank, rank) to [0, rank); failure if out of range.
mlir::FailureOr<int64_t> normalizeAxis(int64_t axis, int64_t rank,
                                       ErrorFn error);

/// Numpy multidirectional broadcast of all `shapes`.
mlir::FailureOr<Shape> broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                                       ErrorFn error);

/// True if `from` broadcasts to exactly `to` (ONNX unidirectional broadcast).
bool broadcastsTo(llvm::ArrayRef<int64_t> from, llvm::ArrayRef<int64_t> to);

/// numpy.matmul, including 1-D promotion.
mlir::FailureOr<Shape> matmulShape(llvm::ArrayRef<int64_t> lhs,
                                   llvm::ArrayRef<int64_t> rhs, ErrorFn error);

/// Gemm: `op(a) @ op(b)` of 2-D operands; `c` (if any) must broadcast to it.
mlir::FailureOr<Shape> gemmShape(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                                 std::optional<llvm::ArrayRef<int64_t>> c,
                                 bool transA, bool transB, ErrorFn error);

mlir::FailureOr<Shape> transposeShape(llvm::ArrayRef<int64_t> input,
                                      llvm::ArrayRef<int64_t> perm, ErrorFn error);

/// `axis` must already be in [0, rank).
mlir::FailureOr<Shape> concatShape(llvm::ArrayRef<llvm::ArrayRef<int64_t>> inputs,
                                   int64_t axis, ErrorFn error);

/// Starts/ends/steps per dimension, clamped as nn.slice documents.
mlir::FailureOr<Shape> sliceShape(llvm::ArrayRef<int64_t> input,
                                  llvm::ArrayRef<int64_t> starts,
                                  llvm::ArrayRef<int64_t> ends,
                                  llvm::ArrayRef<int64_t> steps, ErrorFn error);

/// Clamps one ONNX Slice (start, end) pair for a dimension of size `dim`
/// (the importer's half of the slice rule).
void clampSliceBounds(int64_t dim, int64_t step, int64_t &start, int64_t &end);

mlir::FailureOr<Shape> gatherShape(llvm::ArrayRef<int64_t> data,
                                   llvm::ArrayRef<int64_t> indices,
                                   int64_t axis, ErrorFn error);

/// `axes` sorted, unique, in [0, rank).
mlir::FailureOr<Shape> reduceShape(llvm::ArrayRef<int64_t> input,
                                   llvm::ArrayRef<int64_t> axes, bool keepdims,
                                   ErrorFn error);

/// LayerNormalization's mean / inv_std_dev shape for normalization from
/// `axis` (in [0, rank)): the input shape with dims >= axis set to 1.
Shape layerNormStatShape(llvm::ArrayRef<int64_t> input, int64_t axis);

/// Loss shape of SoftmaxCrossEntropyLoss / NegativeLogLikelihoodLoss given
/// scores `[N, C, d...]`, labels `[N, d...]`, optional weights `[C]`.
mlir::FailureOr<Shape> classificationLossShape(
    llvm::ArrayRef<int64_t> scores, llvm::ArrayRef<int64_t> labels,
    std::optional<llvm::ArrayRef<int64_t>> weights, llvm::StringRef reduction,
    ErrorFn error);

/// Number of elements of a static shape, saturated at INT64_MAX when the
/// product overflows: callers compare it against their limits (fold sizes,
/// the 2^48-element bound), which a hostile shape then fails instead of
/// wrapping past (signed overflow found by fuzz-onnx-import in Pad).
int64_t numElements(llvm::ArrayRef<int64_t> shape);
/// Number of elements, or nullopt if the product overflows int64 (for
/// verifiers, which see IR from any source).
std::optional<int64_t> checkedNumElements(llvm::ArrayRef<int64_t> shape);

// --- shapes of the torch 2.x export ops ---------------
/// Constant Pad: `pads` is every dim's leading count, then every dim's
/// trailing count (2 x rank entries, non-negative).
mlir::FailureOr<Shape> padShape(llvm::ArrayRef<int64_t> input,
                                llvm::ArrayRef<int64_t> pads, ErrorFn error);
/// Tile: one non-negative repeat count per dimension.
mlir::FailureOr<Shape> tileShape(llvm::ArrayRef<int64_t> input,
                                 llvm::ArrayRef<int64_t> repeats, ErrorFn error);

/// Scaled dot-product attention: query [B, H, Tq, D], key [B, Hkv, Tk, D],
/// value [B, Hkv, Tk, Dv] with Hkv dividing H, and an optional mask that
/// broadcasts (numpy, rank <= 4) to [B, H, Tq, Tk]; the result is
/// [B, H, Tq, Dv] (the log-sum-exp is its first three dims).
mlir::FailureOr<Shape> attentionShape(llvm::ArrayRef<int64_t> query, llvm::ArrayRef<int64_t> key,
                                      llvm::ArrayRef<int64_t> value,
                                      std::optional<llvm::ArrayRef<int64_t>> mask,
                                      ErrorFn error);

} // namespace fsdp::nn

#endif // FSDP_DIALECTS_NN_SHAPERULES_H
