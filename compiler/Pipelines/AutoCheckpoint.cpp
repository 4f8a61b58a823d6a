//===- AutoCheckpoint.cpp - --ckpt=auto: recompute only what the budget needs -===//
//
// Pricing the blocks runs the train stage and the recompute pass on a
// clone (the pass reports every block and rewrites none); every candidate
// set is then planned in full by planMemory, the same path as
// --emit=report, and remembered, so a set the solver proposes twice is
// compiled once.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/AutoCheckpoint.h"

#include "compiler/Analysis/CheckpointSolver.h"
#include "compiler/Pipelines/MemoryBudget.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Transforms/RecomputeActivations.h"
#include "runtime/support/ByteSize.h"

#include <algorithm>
#include <cstdio>
#include <map>

using namespace mlir;

namespace fsdp {
namespace {

/// Real plans of the solver's choices before giving up on a fitting set:
/// each costs a full compile, and a miss that tightening a few times does
/// not close means the model is far from the planner for this model.
constexpr int kMaxSolves = 5;

/// `opts` checkpointing the blocks `chosen` selects (none: no checkpointing).
CompileOptions withSelection(const CompileOptions &opts, const std::vector<bool> &chosen) {
  std::vector<int64_t> blocks;
  for (size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i])
      blocks.push_back(static_cast<int64_t>(i));
  CompileOptions variant = opts;
  variant.ckpt = blocks.empty() ? CkptKind::None : CkptKind::Blocks;
  variant.ckptBlocks.reset();
  if (!blocks.empty())
    variant.ckptBlocks = std::move(blocks);
  return variant;
}

/// Every block of the model, as the recompute pass prices it on opts.device.
FailureOr<std::vector<BlockRecompute>> priceBlocks(ModuleOp imported,
                                                   const CompileOptions &opts) {
  OwningOpRef<ModuleOp> module(imported.clone());
  CompileOptions trainOnly = withSelection(opts, {});
  trainOnly.stopAfter = Stage::Train;
  if (failed(runStages(*module, trainOnly)))
    return failure();
  RecomputeOptions priceOnly;
  priceOnly.blocks.emplace(); // rewrite none
  priceOnly.device = opts.device;
  FailureOr<RecomputeResult> found = recomputeActivations(*module, priceOnly);
  if (failed(found))
    return failure();
  return std::move(found->blocks);
}

/// Matmul FLOPs as "12.3 MFLOP".
std::string formatFlops(double flops) {
  const char *prefixes[] = {"", "k", "M", "G", "T", "P"};
  int prefix = 0;
  while (flops >= 1000 && prefix < 5) {
    flops /= 1000;
    ++prefix;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %sFLOP", flops, prefixes[prefix]);
  return text;
}

} // namespace

FailureOr<CheckpointChoice> chooseCheckpointing(ModuleOp imported, const CompileOptions &opts) {
  if (!opts.memBudget)
    return emitError(imported.getLoc(), "--ckpt=auto needs --mem-budget to choose against");
  const uint64_t budget = static_cast<uint64_t>(*opts.memBudget);
  FailureOr<MemoryReport> none = planMemory(imported, withSelection(opts, {}));
  if (failed(none))
    return failure();
  if (none->peakBytes <= budget)
    return CheckpointChoice{withSelection(opts, {}),
                            "--ckpt=auto: no recomputation needed (planned peak " +
                                formatBytesWithCount(none->peakBytes) + " fits)"};

  FailureOr<std::vector<BlockRecompute>> blocks = priceBlocks(imported, opts);
  if (failed(blocks))
    return failure();
  std::vector<ChainBlock> chain;
  for (const BlockRecompute &block : *blocks)
    chain.push_back({block.heldBytes, block.freedBytes, block.seconds});
  const std::vector<bool> noBlock(chain.size(), false), allBlocks(chain.size(), true);
  std::map<std::vector<bool>, uint64_t> planned{{noBlock, none->peakBytes}};
  auto plannedPeak = [&](const std::vector<bool> &chosen) -> FailureOr<uint64_t> {
    if (auto it = planned.find(chosen); it != planned.end())
      return it->second;
    FailureOr<MemoryReport> plan = planMemory(imported, withSelection(opts, chosen));
    if (failed(plan))
      return failure();
    return planned[chosen] = plan->peakBytes;
  };
  // All blocks is the least any set reaches; when it misses, no set fits.
  FailureOr<uint64_t> all = plannedPeak(allBlocks);
  if (failed(all))
    return failure();

  // What the step holds besides block activations, from the two plans
  // already made: without checkpointing the peak is at the turn, so the
  // rest there is that peak less the modelled turn. With every block
  // checkpointed, the peak is at least any block's backward, so that peak
  // less the modelled backward bounds the rest there from above; it is
  // taken as no more than at the turn either (by a block's backward the
  // loss's activations and gradient are gone, and what replaces them,
  // the gradients in flight, is usually smaller). A guess too low shows
  // up as a miss in the real plan and is tightened below.
  std::optional<std::vector<bool>> fitting;
  if (*all <= budget) {
    auto rest = [](uint64_t real, uint64_t modelled) {
      return real > modelled ? real - modelled : 0;
    };
    auto left = [&](uint64_t fixed) { return budget > fixed ? budget - fixed : 0; };
    const uint64_t restAtTurn = rest(none->peakBytes, chainPeaks(chain, noBlock).turn);
    const uint64_t restAtBackward =
        std::min(restAtTurn, rest(*all, chainPeaks(chain, allBlocks).backward));
    ChainCapacity capacity{left(restAtTurn), left(restAtBackward)};
    for (int solve = 0; solve < kMaxSolves && !fitting; ++solve) {
      std::optional<ChainSelection> selection = solveCheckpointChain(chain, capacity);
      if (!selection)
        break;
      FailureOr<uint64_t> peak = plannedPeak(selection->chosen);
      if (failed(peak))
        return failure();
      if (*peak <= budget) {
        fitting = selection->chosen;
      } else {
        // The model was short by the miss: ask for that much more than
        // this selection gives, which also rules the selection out.
        uint64_t miss = *peak - budget;
        auto below = [&](uint64_t modelled) { return modelled > miss ? modelled - miss : 0; };
        capacity.turn = std::min(capacity.turn, below(selection->peaks.turn));
        capacity.backward = std::min(capacity.backward, below(selection->peaks.backward));
      }
    }
    if (!fitting) // the model could not find what the real plans show fits
      fitting = allBlocks;
  }

  // No fitting set: all blocks, the least the budget check can report on.
  const std::vector<bool> &chosen = fitting ? *fitting : allBlocks;
  FailureOr<uint64_t> peak = plannedPeak(chosen);
  if (failed(peak))
    return failure();
  double flops = 0, seconds = 0;
  for (size_t i = 0; i < chosen.size(); ++i)
    if (chosen[i]) {
      flops += (*blocks)[i].flops;
      seconds += (*blocks)[i].seconds;
    }
  const bool one = std::count(chosen.begin(), chosen.end(), true) == 1;
  std::string what = fitting ? std::string(one ? "recomputing block " : "recomputing blocks ") +
                                   formatBlockRanges(chosen) + " of the " +
                                   std::to_string(chosen.size()) + " blocks"
                             : "no set of blocks fits; recomputing all " +
                                   std::to_string(chosen.size()) + " blocks";
  return CheckpointChoice{
      withSelection(opts, chosen),
      "--ckpt=auto: " + what + " (+" + formatFlops(flops) + " in matmuls, " +
          formatSeconds(seconds) + " on " + deviceProfile(opts.device).name +
          " by the cost model): planned peak " + formatBytesWithCount(*peak) +
          " (without recomputation " + formatBytesWithCount(none->peakBytes) + ")"};
}

} // namespace fsdp
