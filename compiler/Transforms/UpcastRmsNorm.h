//===- UpcastRmsNorm.h - RMSNorm computed in f32 under 16-bit compute -----===//
//
// fsdp-upcast-rms-norm (Passes.td) recomputes each exported RMSNorm of a
// bf16/f16 @forward in f32 from a widened input and rounds once, as every
// RMSNorm torch users train does (F.rms_norm, transformers' norms); the
// exported chain would otherwise round after each of its ops.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_UPCASTRMSNORM_H
#define FSDP_COMPILER_TRANSFORMS_UPCASTRMSNORM_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {

/// Rewrites in `func`; returns how many norms it upcast.
int upcastRmsNorms(mlir::func::FuncOp func);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_UPCASTRMSNORM_H
