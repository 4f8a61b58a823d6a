//===- OpCost.h - the cost model's roofline for one op of the IR ----------===//
//
// compiler/Analysis/CostModel.h prices the instructions of an emitted
// plan; choices made before a plan exists (which blocks --ckpt=auto
// recomputes) need the same price for an op of the IR. This applies the
// same roofline (computeKernelCost) to an op's tensor operands and
// results, so the two can never disagree about what a kernel costs. It
// knows nothing of fusion or views: an op is priced as if it ran alone,
// which overstates cheap elementwise chains the emitter would fuse.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_OPCOST_H
#define FSDP_COMPILER_ANALYSIS_OPCOST_H

#include "compiler/Analysis/CostModel.h"

#include "mlir/IR/Operation.h"

namespace fsdp {

/// Bytes of a statically shaped tensor `type` (elements times the element
/// width rounded up to bytes); 0 for anything else.
uint64_t tensorBytes(mlir::Type type);

/// The predicted cost of running `op` once on `device`: nn.matmul and
/// nn.gemm by their flops or their bytes, whichever is slower, every other
/// op by the bytes of its tensor operands and results.
InstructionCost opCost(mlir::Operation *op, const DeviceProfile &device);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_OPCOST_H
