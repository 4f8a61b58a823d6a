//===- AutoAccumulation.cpp - --accum-reduce=auto -------------------------===//
//
// Greedy by predicted seconds saved per extra byte: the knapsack is small
// (a unit per block) and the byte estimate (the accumulator's growth from a
// shard to the flat buffer) is what the arena must hold on top of the
// all-`each` plan at worst, so the greedy set is confirmed by planning it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/AutoAccumulation.h"

#include "compiler/Analysis/AccumulationCost.h"
#include "compiler/Pipelines/MemoryBudget.h"
#include "runtime/support/ByteSize.h"

#include <algorithm>

namespace fsdp {

mlir::FailureOr<AccumulationChoice> chooseAccumulation(mlir::ModuleOp imported,
                                                       const CompileOptions &opts) {
  AccumulationChoice choice;
  choice.opts = opts;
  if (!opts.memBudget) {
    choice.opts.accumReduce = AccumReduceKind::Last;
    choice.summary = "--accum-reduce=auto: last for every unit (no --mem-budget: one gradient "
                     "reduction per step instead of " +
                     std::to_string(opts.gradAccum) + ")";
    return choice;
  }
  const uint64_t budget = static_cast<uint64_t>(*opts.memBudget);
  CompileOptions each = opts;
  each.accumReduce = AccumReduceKind::Each;
  mlir::FailureOr<MemoryReport> base = planMemory(imported, each);
  if (mlir::failed(base))
    return mlir::failure();
  choice.opts = each;
  choice.opts.accumReduce = AccumReduceKind::Auto;
  choice.opts.accumLastUnits.emplace();
  std::vector<UnitAccumulation> costs =
      accumulationCosts(*base, static_cast<uint32_t>(opts.gradAccum), {}, deviceProfile(opts.device));
  auto extra = [](const UnitAccumulation &a) {
    return a.lastBytes > a.eachBytes ? a.lastBytes - a.eachBytes : 0;
  };
  // Most seconds saved per extra byte first (free savings before all).
  std::stable_sort(costs.begin(), costs.end(), [&](const auto &a, const auto &b) {
    return (a.eachSeconds - a.lastSeconds) * (extra(b) + 1.0) >
           (b.eachSeconds - b.lastSeconds) * (extra(a) + 1.0);
  });
  uint64_t headroom = base->peakBytes < budget ? budget - base->peakBytes : 0, used = 0;
  std::vector<std::string> &last = *choice.opts.accumLastUnits;
  for (const UnitAccumulation &a : costs)
    if (a.lastSeconds < a.eachSeconds && used + extra(a) <= headroom) {
      used += extra(a);
      last.push_back(a.name);
    }
  // Confirm by planning; each unit dropped frees its accumulator.
  uint64_t peak = base->peakBytes;
  while (!last.empty()) {
    mlir::FailureOr<MemoryReport> planned = planMemory(imported, choice.opts);
    if (mlir::failed(planned))
      return mlir::failure();
    peak = planned->peakBytes;
    if (peak <= budget)
      break;
    last.pop_back();
    peak = base->peakBytes;
  }
  std::string names;
  for (const std::string &name : last)
    names += (names.empty() ? "" : ", ") + name;
  choice.summary = "--accum-reduce=auto: last for " + std::to_string(last.size()) + " of " +
                   std::to_string(costs.size()) + " units" +
                   (names.empty() ? "" : " (" + names + ")") + ", each for the rest; planned peak " +
                   formatBytesWithCount(peak) + " of the --mem-budget " + formatBytesWithCount(budget);
  return choice;
}

} // namespace fsdp
