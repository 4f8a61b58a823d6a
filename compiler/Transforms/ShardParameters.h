//===- ShardParameters.h - FSDP: flat-parameter units and collectives -----===//
//
// The distribution stage (docs/design.md, step 3). It takes the single-rank
// @train_step (forward, backward, one optimizer update per parameter) and
// makes it the step every rank of an FSDP group runs:
//   - the parameters that have an update are grouped into units by the wrap
//     policy, and each unit into flat buffers (one per distinct optimizer
//     setting, as torch's FlatParameter requires), padded so each of the
//     shard group's ranks holds an equal shard;
//   - the step takes those shards (and optimizer state shards) as arguments;
//     an `fsdp.all_gather` rebuilds a unit before it is used and
//     `fsdp.flat_view`s read its parameters in place; under --shard=full a
//     second gather serves the backward pass, so the first copy dies after
//     the unit's forward;
//   - each unit's gradients are packed (`fsdp.flatten`) and reduce-scattered
//     (`fsdp.reduce_scatter`, avg), or all-reduced under --shard=none, and
//     hybrid sharding adds an all-reduce across replica groups;
//   - the optimizer runs once per flat buffer on the local shard only;
//   - the returned loss is averaged over all ranks.
// Parameters without an update (frozen buffers, unused ones) stay
// replicated, as FSDP leaves modules' buffers.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_SHARDPARAMETERS_H
#define FSDP_COMPILER_TRANSFORMS_SHARDPARAMETERS_H

#include "compiler/Analysis/WrapPolicy.h"
#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace fsdp {

struct ShardOptions {
  /// --shard's kinds: full, grad-op, none, hybrid (with hybridGroupSize).
  using Strategy = ShardKind;
  int64_t worldSize = 1;
  Strategy strategy = Strategy::Full;
  int64_t hybridGroupSize = 0; // ranks per shard group under Hybrid
  WrapPolicy wrap;
  /// Gather and compute with copies rounded to this type (bf16, f16; the
  /// master shards stay f32), and reduce gradients in this type.
  DType paramDtype = DType::F32;
  DType reduceDtype = DType::F32;
  /// Every unit's shard size a multiple of the parameter alignment, as
  /// in-place gathered units always have. --clip-grad-norm asks for it:
  /// rank r's shard then covers the same elements under full and grad-op
  /// (and the slice --shard=none sums for rank r), so the gradient norm
  /// sums the same chunks and the strategies stay bitwise equal.
  bool alignShards = false;
};

/// Ranks a unit's flat buffer is split over: the world under full/grad-op,
/// G under hybrid:G, one (no split) under none.
int64_t shardGroupSize(const ShardOptions &options);

/// Ranks 0..n-1 in order, a collective's `groups` operand: with a group
/// size G, the groups of G consecutive ranks ({0,1},{2,3} for G = 2), or
/// the whole world for G = n.
llvm::SmallVector<int64_t> consecutiveGroups(int64_t n);

/// Elements of `element` type each parameter of a flat buffer starts at a
/// multiple of (64 bytes: in-place views keep the plan's alignment).
int64_t parameterAlignment(mlir::Type element);

mlir::LogicalResult shardParameters(mlir::ModuleOp module, const ShardOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_SHARDPARAMETERS_H
