//===- Pipeline.cpp - which stages fsdp-opt runs for a set of options -----===//
//
// The tables below are the single record of what the compiler can do today.
// A flag is refused only if the user set it explicitly: defaults describe
// the pipeline that will run once its stages exist and change nothing now.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipeline.h"

#include "compiler/Autodiff/AttachLoss.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/ApplyOptimizer.h"
#include "compiler/Transforms/FuseElementwise.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
};

std::optional<std::string> pendingEmit(const CompileOptions &opts) {
  switch (opts.emit) {
  case EmitKind::Plan:
    return std::nullopt;
  case EmitKind::Binary:
    return std::string("--emit=binary: not implemented yet (a step binary embeds a plan in "
                       "fsdp-run; until then run the plan with fsdp-run)");
  case EmitKind::Trace:
    return std::string("--emit=trace: not implemented yet (traces arrive with the memory "
                       "issue)");
  case EmitKind::Report: // the emitted plan's memory (compiler/Analysis/MemoryReport.h)
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

Stage lastImplementedStage() { return Stage::Train; }

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

LossSpec lossSpecFor(const CompileOptions &opts) {
  return {opts.loss == LossKind::CrossEntropy, opts.lossOutput, opts.lossLabels};
}

OptimizerOptions optimizerOptionsFor(const CompileOptions &opts) {
  OptimizerOptions o;
  o.kind = opts.optimizer == OptimizerKind::Sgd ? OptimizerOptions::Kind::Sgd
                                                : OptimizerOptions::Kind::AdamW;
  o.beta1 = opts.beta1;
  o.beta2 = opts.beta2;
  o.eps = opts.eps;
  o.weightDecay = effectiveWeightDecay(opts);
  o.momentum = opts.momentum;
  o.nesterov = opts.nesterov;
  o.noDecayRegex = opts.noDecayRegex;
  return o;
}

mlir::LogicalResult runStages(mlir::ModuleOp module, const CompileOptions &opts) {
  if (opts.mode == Mode::Forward || lastRequestedStage(opts) < Stage::Train)
    return mlir::success();
  // IR printed after the train stage (--stop-after=train) compiles as is.
  if (module.lookupSymbol(kTrainStepName))
    return mlir::success();
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  if (!forward)
    return module.emitError("no @forward function to train");
  if (mlir::failed(attachLoss(forward, lossSpecFor(opts))) ||
      mlir::failed(buildTrainStep(module, {opts.freezeRegex})) ||
      mlir::failed(applyOptimizer(module, optimizerOptionsFor(opts))))
    return mlir::failure();
  return mlir::success();
}

void prepareForEmission(mlir::ModuleOp module, const CompileOptions &opts) {
  if (opts.fusion == FusionKind::None)
    return;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    fuseElementwise(func);
}

} // namespace fsdp
