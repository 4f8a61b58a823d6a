//===- HandlerUtils.h - helpers shared by the op-family handlers ----------===//
//
// Small pieces every family uses: typed access to an input's shape, building
// a result type, and binding an output either as a folded constant or as a
// new op's result. Private to frontends/onnx/ops.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_OPS_HANDLERUTILS_H
#define FSDP_FRONTENDS_ONNX_OPS_HANDLERUTILS_H

#include "frontends/onnx/ConstantFolding.h"
#include "frontends/onnx/ImportContext.h"

namespace fsdp::onnx::detail {

/// Shape and element type of input `i`; failure if it is absent/undefined.
struct InputInfo {
  mlir::Value value;
  mlir::RankedTensorType type;
  llvm::ArrayRef<int64_t> shape() const { return type.getShape(); }
  mlir::Type element() const { return type.getElementType(); }
  int64_t rank() const { return type.getRank(); }
};

inline mlir::FailureOr<InputInfo> getInput(ImportContext &ctx, size_t i) {
  mlir::FailureOr<mlir::Value> value = ctx.input(i);
  if (mlir::failed(value))
    return mlir::failure();
  return InputInfo{*value, llvm::cast<mlir::RankedTensorType>(value->getType())};
}

/// Input `i`, which must be a float tensor (the math ops and the float
/// classes IsNaN/IsInf).
inline mlir::FailureOr<InputInfo> getFloatInput(ImportContext &ctx, size_t i) {
  mlir::FailureOr<InputInfo> input = getInput(ctx, i);
  if (mlir::failed(input))
    return mlir::failure();
  if (!llvm::isa<mlir::FloatType>(input->element()))
    return ctx.error("input must be a float tensor");
  return input;
}

/// Input 0 and the node's `axis` attribute normalized against its rank;
/// the prologue of every op that works along one axis.
struct AxisInput {
  InputInfo input;
  int64_t axis;
};

inline mlir::FailureOr<AxisInput> getInputAndAxis(ImportContext &ctx, int64_t defaultAxis) {
  int64_t axisAttr = ctx.intAttr("axis", defaultAxis);
  mlir::FailureOr<InputInfo> input = getInput(ctx, 0);
  if (mlir::failed(input) || ctx.failed())
    return mlir::failure();
  mlir::FailureOr<int64_t> axis = nn::normalizeAxis(axisAttr, input->rank(), ctx.errorFn());
  if (mlir::failed(axis))
    return mlir::failure();
  return AxisInput{*input, *axis};
}

/// Binds output 0 to a reshaped view of input 0: a folded constant if the
/// input is one, else an nn.reshape (or the input itself if shapes match).
inline mlir::LogicalResult bindReshape(ImportContext &ctx, llvm::ArrayRef<int64_t> shape) {
  if (const Tensor *constant = ctx.constantInput(0); constant && constant->hasData)
    return ctx.setConstantOutput(0, foldReshape(*constant, shape));
  mlir::FailureOr<InputInfo> input = getInput(ctx, 0);
  if (mlir::failed(input))
    return mlir::failure();
  if (input->shape() == shape)
    return ctx.setOutput(0, input->value);
  auto type = ctx.tensorType(shape, input->element());
  return ctx.setOutput(0, ctx.builder().create<nn::ReshapeOp>(ctx.loc(), type,
                                                               input->value));
}

/// Normalizes a list of axes against `rank`, in their order (Slice's and
/// Pad's axes pair with other lists); an axis given twice is an error.
/// Linear in axes + rank: a model may list tens of thousands of axes.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxesInOrder(ImportContext &ctx, llvm::ArrayRef<int64_t> axes, int64_t rank) {
  llvm::SmallVector<int64_t> result;
  std::vector<bool> seen;
  for (int64_t axis : axes) {
    mlir::FailureOr<int64_t> normalized = nn::normalizeAxis(axis, rank, ctx.errorFn());
    if (mlir::failed(normalized))
      return mlir::failure();
    if (seen.empty())
      seen.resize(rank); // only once an axis is in range, so rank > 0
    if (seen[*normalized]) {
      (void)ctx.error("axis " + llvm::Twine(axis) + " appears more than once");
      return mlir::failure();
    }
    seen[*normalized] = true;
    result.push_back(*normalized);
  }
  return result;
}

/// Normalizes a list of axes against `rank`; sorted unique result.
inline mlir::FailureOr<llvm::SmallVector<int64_t>>
normalizeAxes(ImportContext &ctx, llvm::ArrayRef<int64_t> axes, int64_t rank) {
  mlir::FailureOr<llvm::SmallVector<int64_t>> result = normalizeAxesInOrder(ctx, axes, rank);
  if (mlir::succeeded(result))
    llvm::sort(*result);
  return result;
}

} // namespace fsdp::onnx::detail

#endif // FSDP_FRONTENDS_ONNX_OPS_HANDLERUTILS_H
