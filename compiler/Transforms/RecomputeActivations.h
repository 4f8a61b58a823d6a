//===- RecomputeActivations.h - activation checkpointing ------------------===//
//
// The checkpoint stage (docs/design.md, step 4, `--ckpt`). It runs on the
// single-rank @train_step the train stage builds (forward ops, the loss op,
// backward ops, optimizer updates) and before the shard stage, so the ops
// it moves into the backward pass read each unit's backward all-gather.
//
// A block is what `--wrap=blocks` calls a unit (compiler/Analysis/
// WrapPolicy.h: `layers.3.`, `encoder.layers.0.` ...), formed from the
// trainable parameters. A block's forward region is the contiguous run of
// forward ops from the first op that reads one of its parameters up to,
// not including, the next op that reads a trainable parameter of another
// unit (another block or the root), or the loss op. For a GPT that is
// ln1 .. residual add of the MLP; for nn.Transformer the last encoder
// layer's region also holds the encoder's final norm, whose output the
// decoder reads and which is therefore kept.
//
// Inside a region, a value is dropped when the backward pass reads it and
// no forward op outside the region does; values read outside the region
// (the block's output, which is the next block's input; masks shared by
// blocks) and constants stay saved. The backward reads a recomputed copy
// instead: the region's ops that the dropped values need (and only those)
// are cloned, in order, right before the first backward op that reads one
// of them, from the region's inputs (values defined before it, or kept).
//   blocks     every value of the region may be dropped: a block keeps
//              only its input (and outputs it shares with later ops);
//   selective  the outputs of nn.matmul, nn.gemm and nn.softmax (the
//              attention scores and probabilities) are kept too; only the
//              cheap ops between them (elementwise, layer norm, shape
//              ops) are recomputed.
// Clones are the same ops on the same inputs, so every bit is unchanged;
// only pure ops are recomputed (nn.dropout is: its mask is a pure function
// of the op's seed, the step and the element index). Each clone carries
// `fsdp.recompute = "<block>"`.
//
// Any set of blocks can be checkpointed (RecomputeOptions::blocks); every
// block is reported whether rewritten or not (what it holds, what
// checkpointing it frees and what its recomputation costs), which is what
// --ckpt=auto chooses a set from.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_RECOMPUTEACTIVATIONS_H
#define FSDP_COMPILER_TRANSFORMS_RECOMPUTEACTIVATIONS_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace fsdp {

struct RecomputeOptions {
  /// What a checkpointed block recomputes: --ckpt's Blocks or Selective
  /// (None and Auto are the pipeline's to resolve, never passed here).
  CkptKind policy = CkptKind::Blocks;
  /// The blocks to checkpoint, by index in model order (the order of
  /// RecomputeResult::blocks); unset: all of them. An empty list rewrites
  /// nothing and only reports, which is how --ckpt=auto prices the blocks
  /// (compiler/Pipelines/AutoCheckpoint.h) before choosing a set.
  std::optional<std::vector<int64_t>> blocks;
  /// The device whose cost model prices each block's recomputation.
  DeviceKind device = defaults::device;
};

/// What checkpointing one block would save and cost under the policy,
/// whether or not it was chosen. Bytes count each value once, as the
/// memory planner allocates it (before elementwise fusion).
struct BlockRecompute {
  std::string name; // the unit, e.g. "layers.3"
  /// The region's values the backward pass reads, all held from the
  /// forward pass until their backward use when the block is not
  /// checkpointed; a checkpointed block brings them back while its
  /// backward runs.
  uint64_t heldBytes = 0;
  /// What checkpointing releases between the forward pass and the block's
  /// backward: the values it drops, less the values the recomputation
  /// reads that the backward would otherwise not keep (its inputs, when no
  /// gradient reads them). Never more than heldBytes; 0 when the block has
  /// nothing to drop.
  uint64_t freedBytes = 0;
  /// The forward ops it would clone, priced once each by the cost model
  /// (compiler/Analysis/OpCost.h) on RecomputeOptions::device.
  double flops = 0;
  uint64_t bytesMoved = 0;
  double seconds = 0;
};

/// What the rewrite found.
struct RecomputeResult {
  std::vector<BlockRecompute> blocks; // every block of the forward pass, in order
};

/// Rewrites @train_step as described above. Fails (with a diagnostic) when
/// there is no @train_step, when it is already sharded, or when the
/// parameter names show no repeated blocks to checkpoint.
mlir::FailureOr<RecomputeResult> recomputeActivations(mlir::ModuleOp module,
                                                      const RecomputeOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_RECOMPUTEACTIVATIONS_H
