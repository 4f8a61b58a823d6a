//===- Pipeline.cpp - which stages fsdp-opt runs for a set of options -----===//
//
// The stages are passes (compiler/Transforms/Passes.td); this
// file decides which run, with which options, and runs them through an
// mlir::PassManager, so MLIR's IR printing, timing and crash reproducers
// see the ONNX path exactly as they see --pass-pipeline on .mlir input.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipeline.h"

#include "compiler/Analysis/CostModel.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Pipelines/AutoAccumulation.h"
#include "compiler/Pipelines/AutoCheckpoint.h"
#include "compiler/Transforms/ClipGradients.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ScheduleCollectives.h"
#include "compiler/Transforms/ShardParameters.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace fsdp {

Stage lastRequestedStage(const CompileOptions &opts) {
  return opts.stopAfter.value_or(Stage::Memory);
}

// The memory stage assigns the plan's offsets in the plan emitter
// (compiler/Target/PlanPlacement.cpp, ArenaAllocator.cpp), not in a pass:
// its result is the plan (fsdp-run --dump, --emit=report), never IR, so
// --stop-after=memory with --emit=mlir stays a clear refusal.
Stage lastImplementedStage() { return Stage::Schedule; }

std::optional<std::string> findUnimplemented(const CompileOptions &opts) {
  // Every --emit kind is implemented; a summary describes the imported model; MLIR output stops where asked.
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

PlanEmitOptions planEmitOptionsFor(const CompileOptions &opts) {
  PlanEmitOptions options;
  options.planPath = opts.outputPath;
  options.mode = opts.mode == Mode::Forward ? "forward" : "train";
  options.costDevice = &deviceProfile(opts.device);
  if (opts.mode == Mode::Train) {
    options.optimizer = opts.optimizer == OptimizerKind::Sgd ? "sgd" : "adamw";
    options.baseLr = opts.lr;
    options.worldSize = static_cast<uint32_t>(opts.worldSize);
    if (shardingRequested(opts))
      options.strategy = shardStrategyName(opts);
    options.paramDtype = dtypeText(opts.paramDtype);
    options.reduceDtype = dtypeText(opts.reduceDtype);
    if (opts.paramDtype == DType::F16)
      options.lossScaleGrowthInterval = static_cast<uint32_t>(opts.lossScaleGrowthInterval);
  }
  return options;
}

std::string shardStrategyName(const CompileOptions &opts) {
  return shardValueText(opts.shard, opts.hybridGroupSize);
}

PipelineStart pipelineStartOf(mlir::ModuleOp module) {
  PipelineStart start;
  start.trained = module.lookupSymbol(kTrainStepName) != nullptr;
  start.accumulated = module->hasAttr(dist::kGradAccumAttr);
  auto step = module.lookupSymbol<mlir::func::FuncOp>(kTrainStepName);
  if (!step)
    return start;
  for (unsigned i = 0; i < step.getNumArguments(); ++i)
    start.sharded |= static_cast<bool>(step.getArgAttr(i, dist::kUnitAttr));
  step.walk([&](mlir::Operation *op) { start.scheduled |= op->hasAttr(dist::kStreamAttr); });
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto name = step.getResultAttrOfType<mlir::StringAttr>(i, nn::kOutputAttr))
      start.gradNorm |= name.getValue() == kGradNormOutput;
  return start;
}

namespace {

/// fsdp-fuse-gelu, fsdp-mixed-precision and fsdp-upcast-composites on
/// @forward under --param-dtype=bf16|f16.
void addMixedPrecision(mlir::OpPassManager &pm, const CompileOptions &opts) {
  if (opts.paramDtype == DType::F32)
    return;
  MixedPrecisionPassOptions mixed;
  mixed.paramDtype = opts.paramDtype;
  mixed.outputDtype = opts.outputDtype ? dtypeText(*opts.outputDtype) : "";
  mixed.castForwardInputs = opts.castForwardInputs == OnOff::On;
  mixed.keepF32 = opts.keepF32Regex;
  mixed.freeze = opts.freezeRegex;
  // torch's 16-bit GELU rounds once; the exported formula would round per op.
  pm.addPass(createFuseGeluPass());
  pm.addPass(createMixedPrecisionPass(mixed));
  // torch computes RMSNorm and SiLU in f32; their exported formulas would round per op.
  pm.addPass(createUpcastCompositesPass());
}

/// fsdp-fuse-attention on @forward unless --fuse-attention=off; first, so
/// mixed precision retypes the fused op and autodiff differentiates it.
void addAttentionFusion(mlir::OpPassManager &pm, const CompileOptions &opts) {
  if (opts.fuseAttention == OnOff::On)
    pm.addPass(createFuseAttentionPass({opts.freezeRegex, opts.mode == Mode::Train}));
}

/// The train, checkpoint, shard and schedule stages.
void addTrainingPasses(mlir::OpPassManager &pm, const CompileOptions &opts,
                       const PipelineStart &start) {
  Stage last = lastRequestedStage(opts);
  if (!start.trained) {
    addAttentionFusion(pm, opts);
    // Mixed precision retypes @forward first, so the loss attached to its
    // outputs and the backward built from it compute in its dtypes.
    addMixedPrecision(pm, opts);
    AttachLossPassOptions loss;
    loss.xent = opts.loss == LossKind::CrossEntropy ? opts.lossOutput : "";
    loss.labels = opts.lossLabels;
    pm.addPass(createAttachLossPass(loss));
    // fp16 seeds the backward pass with the loss scale (unscaled after
    // sharding, below).
    pm.addPass(createBuildTrainStepPass({opts.freezeRegex, opts.paramDtype == DType::F16}));
    ApplyOptimizerPassOptions optimizer;
    optimizer.optimizer = opts.optimizer;
    optimizer.beta1 = opts.beta1;
    optimizer.beta2 = opts.beta2;
    optimizer.eps = opts.eps;
    optimizer.weightDecay = effectiveWeightDecay(opts);
    optimizer.momentum = opts.momentum;
    optimizer.nesterov = opts.nesterov;
    optimizer.noDecay = opts.noDecayRegex;
    pm.addPass(createApplyOptimizerPass(optimizer));
  }
  // Checkpointing runs before sharding: the recomputed ops it places in the
  // backward pass then read each unit's backward all-gather.
  if (last < Stage::Checkpoint)
    return;
  if (opts.ckpt == CkptKind::Blocks || opts.ckpt == CkptKind::Selective) {
    RecomputeActivationsPassOptions recompute;
    recompute.ckpt = opts.ckpt;
    if (opts.ckptBlocks)
      recompute.blocks = *opts.ckptBlocks;
    recompute.device = opts.device;
    pm.addPass(createRecomputeActivationsPass(recompute));
  }
  if (last < Stage::Shard)
    return;
  // --grad-accum unrolls the step right after sharding (an unsharded step
  // too), before any pass that rewrites the accumulated gradients.
  auto accumulate = [&] {
    if (opts.gradAccum == 1 || start.accumulated)
      return; // K = 1 is the step as it is; the pass refuses K < 1
    AccumulateMicroBatchesPassOptions accum;
    accum.microBatches = opts.gradAccum;
    accum.reduce = opts.accumReduce == AccumReduceKind::Last ? AccumReduceKind::Last
                                                            : AccumReduceKind::Each;
    if (opts.accumReduce == AccumReduceKind::Auto && opts.accumLastUnits)
      accum.lastUnits = *opts.accumLastUnits;
    pm.addPass(createAccumulateMicroBatchesPass(accum));
  };
  if (shardingRequested(opts) && !start.sharded) {
    ShardParametersPassOptions shard;
    shard.worldSize = opts.worldSize;
    shard.shard = {opts.shard, opts.hybridGroupSize};
    shard.wrap = {opts.wrap, opts.wrapMinParams, opts.wrapRegex};
    shard.paramDtype = opts.paramDtype;
    shard.reduceDtype = opts.reduceDtype;
    // Clipping sums the same shards under every strategy (ClipGradients.h).
    shard.alignShards = gradNormRequested(opts);
    pm.addPass(createShardParametersPass(shard));
    accumulate();
    // Passes that rewrite the reduced gradients, in the agreed order.
    if (opts.paramDtype == DType::F16)
      pm.addPass(createUnscaleGradientsPass());
    if (opts.offload == OffloadKind::Cpu)
      pm.addPass(createOffloadStatePass());
  } else {
    accumulate();
  }
  // Passes that rewrite the gradients the optimizer updates read, on the
  // sharded (or single-rank) and accumulated step, only when their flag is
  // given.
  if (gradNormRequested(opts) && !start.gradNorm) {
    ClipGradientsPassOptions clip;
    clip.maxNorm = opts.clipGradNorm;
    clip.normType = opts.clipNormType == ClipNormType::Inf ? "inf" : "2";
    pm.addPass(createClipGradientsPass(clip));
  }
  if (!shardingRequested(opts))
    return;
  // Scheduling runs once, on the sharded step: IR printed after it already
  // carries its streams.
  if (last < Stage::Schedule || start.scheduled)
    return;
  pm.addPass(createScheduleCollectivesPass({opts.prefetch, opts.limitAllGathers}));
}

/// Whether the output is a plan (written, or analyzed in memory).
bool emitsPlan(const CompileOptions &opts) {
  return opts.emit == EmitKind::Plan || opts.emit == EmitKind::Report ||
         opts.emit == EmitKind::Trace || emitsCompiledStep(opts.emit);
}

} // namespace

void buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &opts,
                          const PipelineStart &start) {
  if (opts.mode == Mode::Train && lastRequestedStage(opts) >= Stage::Train)
    addTrainingPasses(pm, opts, start);
  // A forward plan computes in --param-dtype too (no stage: nothing else
  // runs on it).
  if (opts.mode == Mode::Forward) {
    addAttentionFusion(pm, opts);
    addMixedPrecision(pm, opts);
  }
  // Elementwise fusion is a lowering decision made just before a plan is
  // written, not a stage: it changes no value, only how many passes over
  // memory the plan makes, so IR output (--emit=mlir) stays unfused.
  if (emitsPlan(opts) && opts.fusion != FusionKind::None &&
      lastRequestedStage(opts) == Stage::Memory)
    pm.addNestedPass<mlir::func::FuncOp>(createFuseElementwisePass());
}

mlir::LogicalResult runStages(mlir::ModuleOp module, const CompileOptions &opts,
                              PassManagerSetup setup) {
  if (opts.mode == Mode::Train && lastRequestedStage(opts) >= Stage::Train) {
    // --ckpt=auto plans candidates from the module as it is now and goes on
    // with the one chosen; the choice is recorded for the driver to print.
    // It runs before the pass manager, not as a pass, because what it
    // chooses decides which passes the pipeline holds (and each candidate
    // is compiled by a pipeline of its own).
    if (opts.ckpt == CkptKind::Auto && lastRequestedStage(opts) >= Stage::Checkpoint) {
      mlir::FailureOr<CheckpointChoice> choice = chooseCheckpointing(module, opts);
      if (mlir::failed(choice))
        return mlir::failure();
      module->setAttr(dist::kCheckpointChoiceAttr,
                      mlir::StringAttr::get(module.getContext(), choice->summary));
      return runStages(module, choice->opts, setup);
    }
    // --accum-reduce=auto likewise plans candidates first (after
    // --ckpt=auto has chosen, so they carry its choice).
    if (opts.gradAccum > 1 && opts.accumReduce == AccumReduceKind::Auto &&
        !opts.accumLastUnits && lastRequestedStage(opts) >= Stage::Shard) {
      mlir::FailureOr<AccumulationChoice> choice = chooseAccumulation(module, opts);
      if (mlir::failed(choice))
        return mlir::failure();
      module->setAttr(dist::kAccumulationChoiceAttr,
                      mlir::StringAttr::get(module.getContext(), choice->summary));
      return runStages(module, choice->opts, setup);
    }
    // IR printed after an earlier stage (--stop-after=train) resumes there;
    // anything else must start from @forward.
    if (!module.lookupSymbol(kTrainStepName) &&
        !module.lookupSymbol<mlir::func::FuncOp>("forward"))
      return module.emitError("no @forward function to train");
  }
  mlir::PassManager pm(module.getContext(), mlir::ModuleOp::getOperationName());
  buildCompilePipeline(pm, opts, pipelineStartOf(module));
  if (setup && mlir::failed(setup(pm)))
    return mlir::failure();
  return pm.run(module);
}

} // namespace fsdp
