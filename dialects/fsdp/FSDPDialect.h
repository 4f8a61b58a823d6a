//===- FSDPDialect.h - the fsdp dialect -----------------------------------===//
//
// Declares the fsdp dialect, its ops (generated from FSDPOps.td) and the
// names of the discardable attributes it owns and verifies (Attributes.cpp;
// the dialect description in FSDPBase.td documents each). The C++
// namespace is `fsdp::dist`, not the dialect's name: the project's own
// namespace is `fsdp`, and an `fsdp::fsdp` would make every unqualified
// `fsdp::` inside it ambiguous. Folder `dialects/fsdp`, library
// `FSDPDialect` and the `fsdp.` prefix name the same dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_FSDP_FSDPDIALECT_H
#define FSDP_DIALECTS_FSDP_FSDPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/nn/NNInterfaces.h"

#include "dialects/fsdp/FSDPDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/fsdp/FSDPOps.h.inc"

namespace fsdp::dist {

/// On a function argument: the argument is a flat-parameter shard, and the
/// dictionary describes its unit {name, params = [{name, offset, type}],
/// flat_numel, padded_numel, group_size}; the plan's Unit and Parameter
/// tables are written from it (compiler/Transforms/ShardParameters.h).
inline constexpr llvm::StringLiteral kUnitAttr = "fsdp.unit";
/// On the module: the world size (a positive i64) the step was sharded for.
inline constexpr llvm::StringLiteral kWorldSizeAttr = "fsdp.world_size";
/// On an fsdp collective, offload copy or optimizer update: the stream it
/// runs on (i64: kComputeStream, kCommStream for collectives, kCopyStream
/// for to_device and to_host, kHostStream for an nn.adamw or nn.sgd whose
/// operands all live in host memory; absent: the compute stream,
/// synchronously in program order).
inline constexpr llvm::StringLiteral kStreamAttr = "fsdp.stream";
/// The stream values of `fsdp.stream`: a plan has at most these four. The
/// host stream runs on the host (a thread per rank, reading host memory),
/// not on the device.
inline constexpr int64_t kComputeStream = 0;
inline constexpr int64_t kCommStream = 1;
inline constexpr int64_t kCopyStream = 2;
inline constexpr int64_t kHostStream = 3;
/// On an op: a recomputed clone, naming (a non-empty string) the block whose
/// activation it recomputes (compiler/Transforms/RecomputeActivations.h).
inline constexpr llvm::StringLiteral kRecomputeAttr = "fsdp.recompute";
/// On a function argument (a unit attribute): the argument lives in host
/// memory (--offload=cpu, compiler/Transforms/OffloadState.h).
inline constexpr llvm::StringLiteral kHostAttr = "fsdp.host";
/// On the module: what --ckpt=auto chose, one line (a string) for the user.
inline constexpr llvm::StringLiteral kCheckpointChoiceAttr = "fsdp.checkpoint_choice";
/// On the op computing the step's loss (a unit attribute): this rank's
/// local mean loss, before any cross-rank average, which an evaluation
/// runs the step's program up to (compiler/Target/EvalPrefix.h). Passes
/// that clone the forward keep it on the first copy only (micro-batch 0).
inline constexpr llvm::StringLiteral kEvalLossAttr = "fsdp.eval_loss";
/// Gradient accumulation (--grad-accum, compiler/Transforms/
/// AccumulateMicroBatches.h). On the module: K, the micro-batches per step
/// (an i64 > 1; the plan's grad_accum); the choice per flat group (a
/// dictionary from group name to "each" or "last"); what
/// --accum-reduce=auto chose, one line for the user. On an all-gather: the
/// micro-batch (an i64 >= 1) it was cloned for.
inline constexpr llvm::StringLiteral kGradAccumAttr = "fsdp.grad_accum";
inline constexpr llvm::StringLiteral kAccumulationAttr = "fsdp.accumulation";
inline constexpr llvm::StringLiteral kAccumulationChoiceAttr = "fsdp.accumulation_choice";
inline constexpr llvm::StringLiteral kMicroBatchAttr = "fsdp.micro_batch";
/// On the module: what fsdp-fuse-attention did (compiler/Transforms/
/// FuseAttention.h), {fused = N (an i64 >= 0), unfused = ["LOC: why", ...]},
/// which --emit=summary and the report print.
inline constexpr llvm::StringLiteral kAttentionFusionAttr = "fsdp.attention_fusion";

/// Whether `v` lives in host memory: a function argument marked kHostAttr
/// or the result of an fsdp.to_host (what the host stream may touch).
bool isInHostMemory(mlir::Value v);

} // namespace fsdp::dist

#endif // FSDP_DIALECTS_FSDP_FSDPDIALECT_H
