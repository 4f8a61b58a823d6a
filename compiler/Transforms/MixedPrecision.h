//===- MixedPrecision.h - the element types of --param-dtype -------------===//
//
// What fsdp-mixed-precision (MixedPrecision.cpp) and the sharder
// (ShardParameters.cpp) agree on: the MLIR element type a low-precision
// --param-dtype or --reduce-dtype names, so the dtype a unit is gathered in
// is the dtype the forward computes in.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_MIXEDPRECISION_H
#define FSDP_COMPILER_TRANSFORMS_MIXEDPRECISION_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Types.h"

namespace fsdp {

/// bf16 or f16 for those dtypes; a null type for f32 (nothing to cast).
mlir::Type lowPrecisionType(mlir::MLIRContext *context, DType dtype);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_MIXEDPRECISION_H
