//===- Pipeline.cpp - which stages fsdp-opt runs for a set of options -----===//
//
// The tables below are the single record of what the compiler can do today.
// A flag is refused only if the user set it explicitly: defaults describe
// the pipeline that will run once its stages exist and change nothing now.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipeline.h"

namespace fsdp {
namespace {

struct PendingFlag {
  const char *flag;
  const char *arrivesWith;
};

/// Flags whose stage is not built yet, with the work that brings it.
const PendingFlag kPendingFlags[] = {
    {"world-size", "sharding arrives with the FSDP issue"},
    {"shard", "sharding arrives with the FSDP issue"},
    {"wrap", "wrap policies arrive with the FSDP issue"},
    {"param-dtype", "mixed precision arrives with the FSDP issue"},
    {"reduce-dtype", "mixed precision arrives with the FSDP issue"},
    {"ckpt", "activation checkpointing arrives with the memory issue"},
    {"prefetch", "scheduling arrives with the memory issue"},
    {"limit-all-gathers", "scheduling arrives with the memory issue"},
    {"offload", "offload arrives with the memory issue"},
    {"mem-budget", "memory planning arrives with the memory issue"},
    {"device", "the cost model arrives with the memory issue"},
    {"report-format", "reports arrive with the memory issue"},
    {"optimizer", "optimizers arrive with the training-step issue"},
    {"lr", "optimizers arrive with the training-step issue"},
    {"beta1", "optimizers arrive with the training-step issue"},
    {"beta2", "optimizers arrive with the training-step issue"},
    {"eps", "optimizers arrive with the training-step issue"},
    {"weight-decay", "optimizers arrive with the training-step issue"},
    {"momentum", "optimizers arrive with the training-step issue"},
    {"nesterov", "optimizers arrive with the training-step issue"},
    {"loss", "loss attachment arrives with the training-step issue"},
};

std::optional<std::string> pendingEmit(const CompileOptions &opts) {
  switch (opts.emit) {
  case EmitKind::Plan:
    if (opts.mode == Mode::Forward)
      return std::nullopt;
    return std::string("--emit=plan --mode=train: not implemented yet (the training step "
                       "arrives with the training-step issue; --mode=forward plans work)");
  case EmitKind::Binary:
    return std::string("--emit=binary: not implemented yet (step binaries arrive with the "
                       "training-step issue)");
  case EmitKind::Report:
  case EmitKind::Trace:
    return std::string("--emit=") + (opts.emit == EmitKind::Report ? "report" : "trace") +
           ": not implemented yet (reports and traces arrive with the memory issue)";
  case EmitKind::Mlir:
  case EmitKind::Summary:
    return std::nullopt;
  }
  return std::nullopt;
}

} // namespace

Stage lastRequestedStage(const CompileOptions &opts) {
  return opts.stopAfter.value_or(Stage::Memory);
}

Stage lastImplementedStage() { return Stage::Import; }

std::optional<std::string> findUnimplemented(const CompileOptions &opts) {
  if (std::optional<std::string> emit = pendingEmit(opts))
    return emit;
  for (const PendingFlag &pending : kPendingFlags)
    if (opts.explicitlySet.count(pending.flag))
      return std::string("--") + pending.flag + ": not implemented yet (" +
             pending.arrivesWith + ")";
  // A summary describes the imported model; MLIR output stops where asked.
  if (opts.emit == EmitKind::Mlir && lastRequestedStage(opts) > lastImplementedStage()) {
    std::string stage = stageName(lastRequestedStage(opts));
    return std::string(opts.stopAfter ? "--stop-after=" + stage
                                      : "--emit=mlir without --stop-after (the full "
                                        "pipeline)") +
           ": not implemented yet (only the '" + stageName(lastImplementedStage()) +
           "' stage exists; use --stop-after=" + stageName(lastImplementedStage()) + ")";
  }
  return std::nullopt;
}

} // namespace fsdp
