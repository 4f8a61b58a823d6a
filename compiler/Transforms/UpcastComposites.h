//===- UpcastComposites.h - torch's f32 composites under 16-bit compute ---===//
//
// fsdp-upcast-composites (Passes.td) recomputes the exported formulas of
// functions torch runs as one f32 kernel even on 16-bit tensors (RMSNorm,
// SiLU) in f32 from the widened input of a bf16/f16 @forward, rounding
// once, instead of after each of the formula's ops.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_UPCASTCOMPOSITES_H
#define FSDP_COMPILER_TRANSFORMS_UPCASTCOMPOSITES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {

/// Rewrites in `func`; returns how many composites it upcast.
int upcastComposites(mlir::func::FuncOp func);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_UPCASTCOMPOSITES_H
