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
#include "compiler/Pipelines/AutoCheckpoint.h"
#include "compiler/Transforms/FuseElementwise.h"
#include "compiler/Transforms/OffloadState.h"
#include "compiler/Transforms/RecomputeActivations.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/fsdp/FSDPDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {
namespace {

std::optional<std::string> pendingEmit(const CompileOptions &opts) {
  switch (opts.emit) {
  case EmitKind::Plan:
    return std::nullopt;
  case EmitKind::Binary:
    return std::string("--emit=binary: not implemented yet (a step binary embeds a plan in "
                       "fsdp-run; until then run the plan with fsdp-run)");
  case EmitKind::Report: // the emitted plan's memory (compiler/Analysis/MemoryReport.h)
  case EmitKind::Trace:  // its predicted timeline (compiler/Analysis/StepTrace.h)
  case EmitKind::Mlir:
  case EmitKind::Summary:
    return std::nullopt;
  }
  return std::nullopt;
}

/// Whether the step is already sharded (IR printed after the shard stage).
bool isSharded(mlir::ModuleOp module) {
  auto step = module.lookupSymbol<mlir::func::FuncOp>(kTrainStepName);
  if (!step)
    return false;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    if (step.getArgAttr(i, dist::kUnitAttr))
      return true;
  return false;
}

/// Whether the step's collectives already have streams (IR printed after
/// the schedule stage).
bool isScheduled(mlir::ModuleOp module) {
  auto step = module.lookupSymbol<mlir::func::FuncOp>(kTrainStepName);
  bool scheduled = false;
  if (step)
    step.walk([&](mlir::Operation *op) { scheduled |= op->hasAttr(dist::kStreamAttr); });
  return scheduled;
}

} // namespace


Stage lastRequestedStage(const CompileOptions &opts) {
  return opts.stopAfter.value_or(Stage::Memory);
}

// The memory stage assigns the plan's offsets in the plan emitter; its
// result is the plan (fsdp-run --dump, --emit=report), not IR.
Stage lastImplementedStage() { return Stage::Schedule; }

std::optional<std::string> findUnimplemented(const CompileOptions &opts) {
  if (std::optional<std::string> emit = pendingEmit(opts))
    return emit;
  // A summary describes the imported model; MLIR output stops where asked.
  if (opts.emit == EmitKind::Mlir && lastRequestedStage(opts) > lastImplementedStage()) {
    std::string stage = stageName(lastRequestedStage(opts));
    return std::string(opts.stopAfter ? "--stop-after=" + stage
                                      : "--emit=mlir without --stop-after (the full "
                                        "pipeline)") +
           ": not implemented yet (IR stops after the '" + stageName(lastImplementedStage()) +
           "' stage: use --stop-after=" + stageName(lastImplementedStage()) +
           "; the memory stage's offsets are in the plan: --emit=plan then fsdp-run --dump, "
           "or --emit=report)";
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

ShardOptions shardOptionsFor(const CompileOptions &opts) {
  ShardOptions o;
  o.worldSize = opts.worldSize;
  switch (opts.shard) {
  case ShardKind::Full: o.strategy = ShardOptions::Strategy::Full; break;
  case ShardKind::GradOp: o.strategy = ShardOptions::Strategy::GradOp; break;
  case ShardKind::None: o.strategy = ShardOptions::Strategy::None; break;
  case ShardKind::Hybrid: o.strategy = ShardOptions::Strategy::Hybrid; break;
  }
  o.hybridGroupSize = opts.hybridGroupSize;
  switch (opts.wrap) {
  case WrapKind::Blocks: o.wrap.kind = WrapPolicyKind::Blocks; break;
  case WrapKind::Size: o.wrap.kind = WrapPolicyKind::Size; break;
  case WrapKind::Regex: o.wrap.kind = WrapPolicyKind::Regex; break;
  }
  o.wrap.minParams = opts.wrapMinParams;
  o.wrap.regex = opts.wrapRegex;
  o.bf16Params = opts.paramDtype == DType::BF16;
  o.bf16Reduce = opts.reduceDtype == DType::BF16;
  return o;
}

PlanEmitOptions planEmitOptionsFor(const CompileOptions &opts) {
  PlanEmitOptions options;
  options.planPath = opts.outputPath;
  options.mode = opts.mode == Mode::Forward ? "forward" : "train";
  if (opts.mode == Mode::Train) {
    options.optimizer = opts.optimizer == OptimizerKind::Sgd ? "sgd" : "adamw";
    options.baseLr = opts.lr;
    options.worldSize = static_cast<uint32_t>(opts.worldSize);
    if (shardingRequested(opts))
      options.strategy = shardStrategyName(opts);
    options.paramDtype = opts.paramDtype == DType::BF16 ? "bf16" : "f32";
    options.reduceDtype = opts.reduceDtype == DType::BF16 ? "bf16" : "f32";
  }
  return options;
}

std::string shardStrategyName(const CompileOptions &opts) {
  switch (opts.shard) {
  case ShardKind::Full: return "full";
  case ShardKind::GradOp: return "grad-op";
  case ShardKind::None: return "none";
  case ShardKind::Hybrid: return "hybrid:" + std::to_string(opts.hybridGroupSize);
  }
  return "";
}

mlir::LogicalResult runStages(mlir::ModuleOp module, const CompileOptions &opts) {
  if (opts.mode == Mode::Forward || lastRequestedStage(opts) < Stage::Train)
    return mlir::success();
  // --ckpt=auto plans candidates from the module as it is now and goes on
  // with the one chosen; the choice is recorded for the driver to print.
  if (opts.ckpt == CkptKind::Auto && lastRequestedStage(opts) >= Stage::Checkpoint) {
    mlir::FailureOr<CheckpointChoice> choice = chooseCheckpointing(module, opts);
    if (mlir::failed(choice))
      return mlir::failure();
    module->setAttr(dist::kCheckpointChoiceAttr,
                    mlir::StringAttr::get(module.getContext(), choice->summary));
    return runStages(module, choice->opts);
  }
  // IR printed after an earlier stage (--stop-after=train) resumes there.
  if (!module.lookupSymbol(kTrainStepName)) {
    auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
    if (!forward)
      return module.emitError("no @forward function to train");
    if (mlir::failed(attachLoss(forward, lossSpecFor(opts))) ||
        mlir::failed(buildTrainStep(module, {opts.freezeRegex})) ||
        mlir::failed(applyOptimizer(module, optimizerOptionsFor(opts))))
      return mlir::failure();
  }
  // Checkpointing runs before sharding: the recomputed ops it places in the
  // backward pass then read each unit's backward all-gather.
  if (lastRequestedStage(opts) < Stage::Checkpoint)
    return mlir::success();
  if (opts.ckpt == CkptKind::Blocks || opts.ckpt == CkptKind::Selective) {
    RecomputeOptions recompute;
    recompute.blocks = opts.ckptBlocks;
    recompute.device = opts.device;
    recompute.policy = opts.ckpt == CkptKind::Blocks ? RecomputeOptions::Policy::Blocks
                                                      : RecomputeOptions::Policy::Selective;
    if (mlir::failed(recomputeActivations(module, recompute)))
      return mlir::failure();
  }
  if (lastRequestedStage(opts) < Stage::Shard || !shardingRequested(opts))
    return mlir::success();
  if (!isSharded(module)) {
    if (mlir::failed(shardParameters(module, shardOptionsFor(opts))))
      return mlir::failure();
    if (opts.offload == OffloadKind::Cpu && mlir::failed(offloadState(module)))
      return mlir::failure();
  }
  // Scheduling (compiler/Transforms/ScheduleCollectives.h) runs once, on the
  // sharded step: IR printed after it already carries its streams.
  if (lastRequestedStage(opts) < Stage::Schedule || isScheduled(module))
    return mlir::success();
  return scheduleCollectives(module, scheduleOptionsFor(opts));
}

ScheduleOptions scheduleOptionsFor(const CompileOptions &opts) {
  return {opts.prefetch, opts.limitAllGathers};
}

void prepareForEmission(mlir::ModuleOp module, const CompileOptions &opts) {
  if (opts.fusion == FusionKind::None)
    return;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    fuseElementwise(func);
}

} // namespace fsdp
