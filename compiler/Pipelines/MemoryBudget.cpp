//===- MemoryBudget.cpp - refuse plans that do not fit --mem-budget -------===//
//
// Suggestions are compiled, not guessed: each candidate configuration runs
// the same stages on a clone of the imported module and is measured by the
// same analysis as --emit=report. Candidates are the flags that lower the
// per-rank peak in FSDP's own terms (shard fully, spread over more ranks,
// recompute activations once that stage exists); a candidate whose stage
// is not implemented yet is skipped rather than predicted.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/MemoryBudget.h"

#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Target/PlanEmitter.h"
#include "runtime/schema/plan_generated.h"

#include <algorithm>
#include <cstdio>

using namespace mlir;

namespace fsdp {

std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[64];
  if (unit == 0)
    std::snprintf(text, sizeof(text), "%llu B", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(text, sizeof(text), "%.2f %s (%llu B)", value, units[unit],
                  static_cast<unsigned long long>(bytes));
  return text;
}

FailureOr<MemoryReport> planMemory(ModuleOp imported, const CompileOptions &opts) {
  OwningOpRef<ModuleOp> module(imported.clone());
  if (failed(runStages(*module, opts)))
    return failure();
  prepareForEmission(*module, opts);
  PlanEmitOptions options = planEmitOptionsFor(opts);
  std::vector<uint8_t> bytes;
  options.planBytes = &bytes;
  if (failed(emitPlan(*module, options,
                      [](const std::string &) { return std::optional<rt::TensorRef>(); })))
    return failure();
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!plan::VerifyPlanBuffer(verifier))
    return emitError(imported.getLoc(), "internal error: the emitted plan fails verification");
  return analyzeMemory(*plan::GetPlan(bytes.data()));
}

std::vector<BudgetSuggestion> suggestSmallerPlans(ModuleOp imported, const CompileOptions &opts) {
  struct Candidate {
    std::string flags;
    CompileOptions opts;
  };
  std::vector<Candidate> candidates;
  auto add = [&](const std::string &flags, CompileOptions variant) {
    // Variants are marked as given so the shard stage runs for them.
    variant.explicitlySet.insert("world-size");
    variant.explicitlySet.insert("shard");
    variant.memBudget.reset();
    std::string why;
    if (validateCompileOptions(variant, why) && !findUnimplemented(variant))
      candidates.push_back({flags, std::move(variant)});
  };
  const bool sharded = opts.shard == ShardKind::Full || opts.shard == ShardKind::Hybrid;
  if (!sharded && opts.worldSize > 1) {
    CompileOptions full = opts;
    full.shard = ShardKind::Full;
    add("--shard=full", full);
  }
  for (int64_t factor : {2, 4}) {
    CompileOptions wider = opts;
    wider.worldSize = opts.worldSize * factor;
    std::string flags = "--world-size=" + std::to_string(wider.worldSize);
    if (!sharded) {
      wider.shard = ShardKind::Full;
      flags += " --shard=full";
    }
    add(flags, wider);
  }
  if (opts.ckpt == CkptKind::None) {
    CompileOptions ckpt = opts;
    ckpt.ckpt = CkptKind::Blocks;
    ckpt.explicitlySet.insert("ckpt");
    add("--ckpt=blocks", ckpt);
  }
  std::vector<BudgetSuggestion> suggestions;
  for (const Candidate &c : candidates) {
    // A candidate that does not compile is no suggestion; its diagnostics
    // would only confuse the one error the user needs.
    ScopedDiagnosticHandler quiet(imported.getContext(), [](Diagnostic &) { return success(); });
    FailureOr<MemoryReport> report = planMemory(imported, c.opts);
    if (succeeded(report))
      suggestions.push_back({c.flags, report->peakBytes});
  }
  return suggestions;
}

std::string overBudgetMessage(const MemoryReport &report, uint64_t budget,
                              const std::vector<BudgetSuggestion> &suggestions) {
  const RankMemory &rank = report.ranks.front();
  std::string text = "the plan needs " + formatBytes(report.peakBytes) +
                     " per rank, over --mem-budget=" + formatBytes(budget) + ".\n";
  text += "  at its peak (instruction " + std::to_string(report.peakInstruction) + " '" +
          report.peakInstructionName + "'): activations " + formatBytes(rank.activations) +
          ", parameters " + formatBytes(rank.parameters) + ", optimizer state " +
          formatBytes(rank.optimizerState) + ", gradients " + formatBytes(rank.gradients) +
          ", gathered parameters " + formatBytes(rank.communication) + ", inputs/outputs " +
          formatBytes(rank.io) + ", unusable arena gaps " + formatBytes(rank.fragmentation);
  std::vector<BudgetSuggestion> sorted = suggestions;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const BudgetSuggestion &a, const BudgetSuggestion &b) {
                     return (a.peakBytes <= budget) > (b.peakBytes <= budget);
                   });
  if (sorted.empty())
    return text + "\n  no other configuration tried compiles smaller";
  text += "\n  planned alternatives:";
  for (const BudgetSuggestion &s : sorted)
    text += "\n    " + s.flags + ": " + formatBytes(s.peakBytes) +
            (s.peakBytes <= budget ? " (fits)" : " (does not fit)");
  return text;
}

} // namespace fsdp
