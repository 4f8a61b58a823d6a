//===- NNDialect.h - the nn dialect ---------------------------------------===//
//
// Declares the nn dialect and all its ops (generated from NNOps.td). Include
// this one header to use the dialect; the shape rules shared with the
// importers are in ShapeRules.h.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_NN_NNDIALECT_H
#define FSDP_DIALECTS_NN_NNDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/nn/NNDialect.h.inc"
#include "dialects/nn/NNInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/nn/NNOps.h.inc"

namespace fsdp::nn {

/// Names of the attributes the frontends put on the forward function.
/// `nn.param` on an argument: the parameter's name in the source model.
/// `nn.input` on an argument / `nn.output` on a result: the graph's name.
/// `nn.source` on the module: the model file initial values come from.
inline constexpr llvm::StringLiteral kParamAttr = "nn.param";
inline constexpr llvm::StringLiteral kInputAttr = "nn.input";
inline constexpr llvm::StringLiteral kOutputAttr = "nn.output";
inline constexpr llvm::StringLiteral kSourceAttr = "nn.source";

/// Attributes of the training step (compiler/Autodiff/, compiler/Transforms/).
/// `nn.state` on an argument: optimizer state, named "<param>.exp_avg" etc.
/// `nn.lr` / `nn.step` on an argument: the per-step learning rate (f64) and
/// step number (i64, from 1) the runtime writes before each step.
/// `nn.update` on a result: the new value of the parameter or state argument
/// of that name, which the plan updates in place.
/// `nn.grad` on a result (between autodiff and the optimizer): the gradient
/// of the named parameter.
inline constexpr llvm::StringLiteral kStateAttr = "nn.state";
inline constexpr llvm::StringLiteral kLrAttr = "nn.lr";
inline constexpr llvm::StringLiteral kStepAttr = "nn.step";
inline constexpr llvm::StringLiteral kUpdateAttr = "nn.update";
inline constexpr llvm::StringLiteral kGradAttr = "nn.grad";
/// Dynamic loss scaling (--param-dtype=f16): `nn.loss_scale` and
/// `nn.inv_loss_scale` on f32 scalar arguments the runtime writes before
/// each step (the scale seeding the backward pass, and its reciprocal that
/// unscales the reduced gradients); `nn.found_inf` on the f32 scalar result
/// that is non-zero when a gradient was inf or NaN on any rank (the step's
/// optimizer updates were skipped).
inline constexpr llvm::StringLiteral kLossScaleAttr = "nn.loss_scale";
inline constexpr llvm::StringLiteral kInvLossScaleAttr = "nn.inv_loss_scale";
inline constexpr llvm::StringLiteral kFoundInfAttr = "nn.found_inf";
/// Mixed precision (compiler/Transforms/MixedPrecision.cpp): `nn.keep_f32`
/// on a parameter argument that --keep-f32 keeps out of the low-precision
/// compute, so the sharder gathers it in f32.
inline constexpr llvm::StringLiteral kKeepF32Attr = "nn.keep_f32";

/// The operands an optimizer update (nn.adamw, nn.sgd) overwrites when the
/// plan writes its results in place: the parameter and its state, the old
/// values of its results, in result order. Empty for any other op.
llvm::SmallVector<mlir::Value> updatedOperands(mlir::Operation *op);

} // namespace fsdp::nn

#endif // FSDP_DIALECTS_NN_NNDIALECT_H
