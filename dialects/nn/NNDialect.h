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

} // namespace fsdp::nn

#endif // FSDP_DIALECTS_NN_NNDIALECT_H
