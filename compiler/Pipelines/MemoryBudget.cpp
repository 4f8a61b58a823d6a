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
#include "runtime/plan/plan_generated.h"
#include "runtime/support/ByteSize.h"

#include <algorithm>
#include <cstdint>

using namespace mlir;

namespace fsdp {

FailureOr<std::vector<uint8_t>> emitPlanInMemory(ModuleOp module, const CompileOptions &opts) {
  PlanEmitOptions options = planEmitOptionsFor(opts);
  std::vector<uint8_t> bytes;
  options.planBytes = &bytes;
  if (failed(emitPlan(module, options,
                      [](const std::string &) { return std::optional<rt::TensorRef>(); })))
    return failure();
  // The emitter just built it, but the analyses walk every offset: verify
  // as the runtime's loader does before reading a field.
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!plan::VerifyPlanBuffer(verifier))
    return emitError(module.getLoc(), "internal error: the emitted plan fails verification");
  return bytes;
}

FailureOr<PlannedStep> planStep(ModuleOp imported, const CompileOptions &opts) {
  OwningOpRef<ModuleOp> module(imported.clone());
  if (failed(runStages(*module, opts)))
    return failure();
  FailureOr<std::vector<uint8_t>> bytes = emitPlanInMemory(*module, opts);
  if (failed(bytes))
    return failure();
  const plan::Plan &plan = *plan::GetPlan(bytes->data());
  return PlannedStep{analyzeMemory(plan), predictStep(plan, deviceProfile(opts.device))};
}

FailureOr<MemoryReport> planMemory(ModuleOp imported, const CompileOptions &opts) {
  FailureOr<PlannedStep> step = planStep(imported, opts);
  if (failed(step))
    return failure();
  return std::move(step->memory);
}

PredictedTime predictedTimeOf(const StepPrediction &step, const DeviceProfile &device) {
  PredictedTime t;
  t.device = device.name;
  t.deviceDescription = device.description;
  t.stepSeconds = step.stepSeconds;
  t.computeSeconds = step.computeSeconds;
  t.communicationSeconds = step.communicationSeconds;
  t.exposedSeconds = step.exposedCommunicationSeconds;
  t.hostSeconds = step.hostSeconds;
  t.overlapped = step.overlapped;
  return t;
}

std::vector<ConfigurationRow> compareConfigurations(ModuleOp imported, const CompileOptions &opts,
                                                    const PlannedStep &chosen) {
  struct Variant {
    const char *name;
    ShardKind shard;
    CkptKind ckpt;
    bool offload;
  };
  const Variant variants[] = {{"none (DDP)", ShardKind::None, CkptKind::None, false},
                              {"grad-op", ShardKind::GradOp, CkptKind::None, false},
                              {"full", ShardKind::Full, CkptKind::None, false},
                              {"full + ckpt", ShardKind::Full, CkptKind::Blocks, false},
                              {"full + offload", ShardKind::Full, CkptKind::None, true}};
  // An unsharded plan (world size 1, no shard flag) is none of the rows,
  // nor is one that checkpoints only some blocks (--ckpt=auto's choice).
  const bool offloaded = opts.offload == OffloadKind::Cpu;
  const bool chosenIsVariant = shardingRequested(opts) &&
                               (opts.shard == ShardKind::None || opts.shard == ShardKind::GradOp ||
                                opts.shard == ShardKind::Full) &&
                               (!offloaded || (opts.shard == ShardKind::Full &&
                                               opts.ckpt == CkptKind::None)) &&
                               (opts.ckpt == CkptKind::None ||
                                (opts.ckpt == CkptKind::Blocks && !opts.ckptBlocks));
  auto fill = [](ConfigurationRow &row, const PlannedStep &step) {
    row.peakBytes = step.memory.peakBytes;
    row.stepSeconds = step.prediction.stepSeconds;
  };
  std::vector<ConfigurationRow> rows;
  for (const Variant &v : variants) {
    ConfigurationRow row;
    row.name = v.name;
    row.flags = "--shard=" + std::string(v.shard == ShardKind::None     ? "none"
                                          : v.shard == ShardKind::GradOp ? "grad-op"
                                                                         : "full");
    if (v.ckpt == CkptKind::Blocks)
      row.flags += " --ckpt=blocks";
    if (v.offload) {
      row.flags += " --offload=cpu";
      row.note = "device memory; shards, gradient shards and optimizer state are in host memory";
    }
    row.chosen =
        chosenIsVariant && opts.shard == v.shard && opts.ckpt == v.ckpt && offloaded == v.offload;
    if (row.chosen) {
      fill(row, chosen);
      rows.push_back(std::move(row));
      continue;
    }
    CompileOptions variant = opts;
    variant.shard = v.shard;
    variant.ckpt = v.ckpt;
    variant.ckptBlocks.reset(); // every block
    variant.offload = v.offload ? OffloadKind::Cpu : OffloadKind::None;
    // Marked as given so the shard stage runs at world size 1 too.
    variant.explicitlySet.insert("world-size");
    variant.explicitlySet.insert("shard");
    variant.explicitlySet.insert("ckpt");
    variant.memBudget.reset();
    std::string why;
    if (!validateCompileOptions(variant, why) || findUnimplemented(variant)) {
      row.note = "not planned: " + (why.empty() ? *findUnimplemented(variant) : why);
      rows.push_back(std::move(row));
      continue;
    }
    // Its diagnostics would only confuse the report of the chosen plan.
    ScopedDiagnosticHandler quiet(imported.getContext(), [](Diagnostic &) { return success(); });
    FailureOr<PlannedStep> step = planStep(imported, variant);
    if (succeeded(step))
      fill(row, *step);
    else
      row.note = "does not compile";
    rows.push_back(std::move(row));
  }
  if (!chosenIsVariant) {
    ConfigurationRow row;
    row.name = "chosen";
    row.flags = shardingRequested(opts) ? "--shard=" + shardStrategyName(opts)
                                        : std::string("unsharded (no --shard, world size 1)");
    if (opts.ckpt != CkptKind::None)
      row.flags += opts.ckpt == CkptKind::Blocks      ? " --ckpt=blocks"
                   : opts.ckpt == CkptKind::Selective ? " --ckpt=selective"
                                                      : " --ckpt=auto";
    row.chosen = true;
    fill(row, chosen);
    rows.push_back(std::move(row));
  }
  return rows;
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
    // Without a budget --ckpt=auto has nothing to choose against: the
    // variant recomputes every block, the least memory auto could reach.
    if (variant.ckpt == CkptKind::Auto) {
      variant.ckpt = CkptKind::Blocks;
      variant.ckptBlocks.reset();
    }
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
  std::string text = "the plan needs " + formatBytesWithCount(report.peakBytes) +
                     " per rank, over --mem-budget=" + formatBytesWithCount(budget) + ".\n";
  text += "  at its peak (instruction " + std::to_string(report.peakInstruction) + " '" +
          report.peakInstructionName + "'): activations " + formatBytesWithCount(rank.activations) +
          ", parameters " + formatBytesWithCount(rank.parameters) + ", optimizer state " +
          formatBytesWithCount(rank.optimizerState) + ", gradients " + formatBytesWithCount(rank.gradients) +
          ", gathered parameters " + formatBytesWithCount(rank.communication) + ", inputs/outputs " +
          formatBytesWithCount(rank.io) + ", unusable arena gaps " + formatBytesWithCount(rank.fragmentation);
  // The few largest transient tensors there are what a user can act on.
  const size_t named = std::min<size_t>(report.largestAtPeak.size(), 3);
  for (size_t i = 0; i < named; ++i) {
    const LiveTensor &t = report.largestAtPeak[i];
    text += std::string(i ? "; " : "\n  largest there: ") + "'" + t.name + "' (" + t.category +
            ", " + formatBytes(t.bytes, 2) + ")";
  }
  std::vector<BudgetSuggestion> sorted = suggestions;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](const BudgetSuggestion &a, const BudgetSuggestion &b) {
                     return (a.peakBytes <= budget) > (b.peakBytes <= budget);
                   });
  if (sorted.empty())
    return text + "\n  no other configuration tried compiles smaller";
  text += "\n  planned alternatives:";
  for (const BudgetSuggestion &s : sorted)
    text += "\n    " + s.flags + ": " + formatBytesWithCount(s.peakBytes) +
            (s.peakBytes <= budget ? " (fits)" : " (does not fit)");
  return text;
}

} // namespace fsdp
