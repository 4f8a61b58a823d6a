//===- FuseGelu.h - torch's exported GELU as one nn.gelu ------------------===//
//
// fsdp-fuse-gelu (Passes.td) rewrites the formula torch's exporters write
// for F.gelu below opset 20 (both approximations, TorchScript's and
// dynamo's operand orders) into one nn.gelu, so that a 16-bit compute dtype
// rounds GELU once, as torch's kernel does, instead of after every op of
// the formula.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_FUSEGELU_H
#define FSDP_COMPILER_TRANSFORMS_FUSEGELU_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {

/// Rewrites in `func`; returns how many GELUs it fused.
int fuseGelu(mlir::func::FuncOp func);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_FUSEGELU_H
