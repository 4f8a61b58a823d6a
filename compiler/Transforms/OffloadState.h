//===- OffloadState.h - --offload=cpu: shards and state in host memory ----===//
//
// The offload half of the shard stage (docs/design.md's --offload=cpu, FSDP's
// CPUOffload, ZeRO-Offload): on the sharded @train_step, every unit's flat
// shard, its optimizer state and the lr/step scalars the optimizer reads
// become host-memory arguments (`fsdp.host`), so device memory holds only
// what a step computes with. The device reads a shard through a copy
// (fsdp.to_device) made right before each op that reads it (its all-gather,
// or its bf16 cast), and each reduced gradient shard is copied to the host
// (fsdp.to_host) right after its reduction, where the optimizer updates the
// shard and its state in place. Parameter views read in place from a
// replicated flat buffer (--shard=none) share one device copy. A unit the
// shard stage gathered in place (`persistent`) is gathered into a copy
// instead: its shard is no longer a chunk of device memory. Copies move
// bytes unchanged, so an offloaded step computes the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_OFFLOADSTATE_H
#define FSDP_COMPILER_TRANSFORMS_OFFLOADSTATE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace fsdp {

/// Moves the sharded step's persistent state to host memory. Fails when the
/// step has no shard units (it was not sharded).
mlir::LogicalResult offloadState(mlir::ModuleOp module);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_OFFLOADSTATE_H
