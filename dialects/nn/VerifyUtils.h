//===- VerifyUtils.h - helpers shared by nn op verifiers ------------------===//
//
// Private to the dialect: glue between ShapeRules (which report through an
// ErrorFn) and op verifiers (which report through emitOpError), so each
// verifier is one call to the rule plus a comparison with the result type.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_NN_VERIFYUTILS_H
#define FSDP_DIALECTS_NN_VERIFYUTILS_H

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"

namespace fsdp::nn::detail {

inline llvm::ArrayRef<int64_t> shapeOf(mlir::Value v) {
  return llvm::cast<mlir::ShapedType>(v.getType()).getShape();
}

inline mlir::Type elementTypeOf(mlir::Value v) {
  return llvm::cast<mlir::ShapedType>(v.getType()).getElementType();
}

/// Emits "result shape [..] does not match the expected [..]" unless equal.
inline mlir::LogicalResult checkResultShape(mlir::Operation *op, mlir::Value result,
                                            llvm::ArrayRef<int64_t> expected) {
  if (shapeOf(result) == expected)
    return mlir::success();
  return op->emitOpError("result shape ")
         << formatShape(shapeOf(result)) << " does not match the expected "
         << formatShape(expected);
}

/// Runs a shape rule with errors reported on `op`, then checks `result`.
template <typename Rule>
mlir::LogicalResult verifyShapeRule(mlir::Operation *op, mlir::Value result,
                                    Rule rule) {
  auto emit = [&](const llvm::Twine &message) { op->emitOpError(message); };
  mlir::FailureOr<Shape> expected = rule(ErrorFn(emit));
  if (mlir::failed(expected))
    return mlir::failure();
  return checkResultShape(op, result, *expected);
}

} // namespace fsdp::nn::detail

#endif // FSDP_DIALECTS_NN_VERIFYUTILS_H
