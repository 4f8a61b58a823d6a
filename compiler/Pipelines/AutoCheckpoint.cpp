//===- AutoCheckpoint.cpp - --ckpt=auto: recompute only what the budget needs -===//
//
// Counting blocks runs the train stage and the recompute pass on a clone
// (the pass reports how many blocks it finds); every candidate count is
// then planned in full by planMemory, the same path as --emit=report.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/AutoCheckpoint.h"

#include "compiler/Pipelines/MemoryBudget.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Transforms/RecomputeActivations.h"

using namespace mlir;

namespace fsdp {
namespace {

/// `opts` with checkpointing of the first `count` blocks (0: none).
CompileOptions withBlocks(const CompileOptions &opts, int64_t count) {
  CompileOptions variant = opts;
  variant.ckpt = count == 0 ? CkptKind::None : CkptKind::Blocks;
  variant.ckptBlocks = count == 0 ? -1 : count;
  return variant;
}

/// The number of blocks the recompute pass finds in the model.
FailureOr<int64_t> countBlocks(ModuleOp imported, const CompileOptions &opts) {
  OwningOpRef<ModuleOp> module(imported.clone());
  CompileOptions trainOnly = withBlocks(opts, 0);
  trainOnly.stopAfter = Stage::Train;
  if (failed(runStages(*module, trainOnly)))
    return failure();
  RecomputeOptions countOnly;
  countOnly.maxBlocks = 0; // find the blocks, rewrite none
  FailureOr<RecomputeResult> found = recomputeActivations(*module, countOnly);
  if (failed(found))
    return failure();
  return found->blocks;
}

} // namespace

FailureOr<CheckpointChoice> chooseCheckpointing(ModuleOp imported, const CompileOptions &opts) {
  if (!opts.memBudget)
    return emitError(imported.getLoc(), "--ckpt=auto needs --mem-budget to choose against");
  const uint64_t budget = static_cast<uint64_t>(*opts.memBudget);
  FailureOr<MemoryReport> none = planMemory(imported, withBlocks(opts, 0));
  if (failed(none))
    return failure();
  if (none->peakBytes <= budget)
    return CheckpointChoice{withBlocks(opts, 0),
                            "--ckpt=auto: no recomputation needed (planned peak " +
                                formatBytes(none->peakBytes) + " fits)"};
  FailureOr<int64_t> blocks = countBlocks(imported, opts);
  if (failed(blocks))
    return failure();
  // Smallest count in [1, blocks] that fits; `blocks` when none does.
  int64_t lo = 1, hi = *blocks;
  uint64_t chosenPeak = 0;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    FailureOr<MemoryReport> plan = planMemory(imported, withBlocks(opts, mid));
    if (failed(plan))
      return failure();
    if (plan->peakBytes <= budget) {
      hi = mid;
      chosenPeak = plan->peakBytes;
    } else {
      lo = mid + 1;
    }
  }
  if (chosenPeak == 0) { // no count fitted: all blocks, for the budget error
    FailureOr<MemoryReport> plan = planMemory(imported, withBlocks(opts, lo));
    if (failed(plan))
      return failure();
    chosenPeak = plan->peakBytes;
  }
  return CheckpointChoice{
      withBlocks(opts, lo),
      "--ckpt=auto: recomputing the first " + std::to_string(lo) + " of " +
          std::to_string(*blocks) + " blocks: planned peak " + formatBytes(chosenPeak) +
          " (without recomputation " + formatBytes(none->peakBytes) + ")"};
}

} // namespace fsdp
