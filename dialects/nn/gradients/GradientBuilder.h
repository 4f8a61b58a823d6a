//===- GradientBuilder.h - building blocks of gradient rules --------------===//
//
// Gradient rules (the GradientOpInterface implementations in this folder)
// build ordinary nn ops. This builder derives each op's result type from its
// operands with the same shape rules the verifiers use, so a rule reads like
// the math: `g.mul(grad, g.scalarLike(x, 2.0))`. `sumTo` is the one place
// that undoes numpy broadcasting: every rule returns gradients of exactly
// its operands' shapes by summing over broadcast dimensions.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_NN_GRADIENTS_GRADIENTBUILDER_H
#define FSDP_DIALECTS_NN_GRADIENTS_GRADIENTBUILDER_H

#include "dialects/nn/NNDialect.h"

#include "mlir/IR/Builders.h"

namespace fsdp::nn {

class GradientBuilder {
public:
  GradientBuilder(mlir::OpBuilder &builder, mlir::Location loc) : b(builder), loc(loc) {}

  // Elementwise arithmetic with numpy broadcasting; the result type is the
  // broadcast shape with the first operand's element type.
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  mlir::Value sub(mlir::Value lhs, mlir::Value rhs);
  mlir::Value mul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value div(mlir::Value lhs, mlir::Value rhs);
  mlir::Value pow(mlir::Value base, mlir::Value exponent);
  mlir::Value neg(mlir::Value v);
  mlir::Value log(mlir::Value v);
  mlir::Value where(mlir::Value cond, mlir::Value x, mlir::Value y);
  /// nn.compare with `predicate` (eq, lt, le, gt, ge): a bool mask.
  mlir::Value compare(llvm::StringRef predicate, mlir::Value lhs, mlir::Value rhs);
  mlir::Value cast(mlir::Value v, mlir::Type elementType);

  /// A rank-0 constant of `elementType` (broadcasts against anything).
  mlir::Value scalar(mlir::Type elementType, double value);
  /// A rank-0 constant with `like`'s element type.
  mlir::Value scalarLike(mlir::Value like, double value);
  /// A zero tensor of `type` (a gradient nothing flowed into).
  mlir::Value zeros(mlir::Type type);

  mlir::Value reshape(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  mlir::Value transpose(mlir::Value v, llvm::ArrayRef<int64_t> perm);
  /// Swaps the last two dimensions (rank >= 2).
  mlir::Value transposeLast2(mlir::Value v);
  mlir::Value expand(mlir::Value v, llvm::ArrayRef<int64_t> shape);
  mlir::Value matmul(mlir::Value lhs, mlir::Value rhs);
  mlir::Value reduceSum(mlir::Value v, llvm::ArrayRef<int64_t> axes, bool keepdims);

  /// Sums `grad` over the dimensions numpy broadcasting added or stretched to
  /// reach its shape from `shape`, and returns it with exactly `shape`.
  mlir::Value sumTo(mlir::Value grad, llvm::ArrayRef<int64_t> shape);
  /// sumTo the shape of `like`.
  mlir::Value sumToShapeOf(mlir::Value grad, mlir::Value like);

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, mlir::Type elementType) {
    return mlir::RankedTensorType::get(shape, elementType);
  }

private:
  template <typename Op> mlir::Value binary(mlir::Value lhs, mlir::Value rhs);

  mlir::OpBuilder &b;
  mlir::Location loc;
};

/// Shape and element type of a ranked tensor value.
llvm::ArrayRef<int64_t> shapeOfValue(mlir::Value v);
mlir::Type elementTypeOfValue(mlir::Value v);
/// True for values that carry gradients (float tensors).
bool isDifferentiable(mlir::Value v);

} // namespace fsdp::nn

#endif // FSDP_DIALECTS_NN_GRADIENTS_GRADIENTBUILDER_H
