//===- FuseElementwise.h - chains of elementwise ops into nn.fused --------===//
//
// Groups elementwise ops of one shape and one element type (f32, bf16 or
// f16; arithmetic, activations and their gradients) whose operands are full
// tensors of that shape or single elements of that type, and replaces each
// group of two or more with one nn.fused, so the runtime makes one pass over
// memory instead of one per op. Intermediates used outside a group become
// extra results. The ops compute the same bits fused or not (the runtime
// shares their scalar math, and rounds each bf16/f16 op's result as its
// unfused kernel stores it), so this only saves memory traffic and arena
// space.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_FUSEELEMENTWISE_H
#define FSDP_COMPILER_TRANSFORMS_FUSEELEMENTWISE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {

/// Fuses in `func`; returns the number of nn.fused ops created.
int fuseElementwise(mlir::func::FuncOp func);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_FUSEELEMENTWISE_H
