//===- TrainPipeline.cpp - fsdp-train-pipeline for --pass-pipeline --------===//
//
// The pipeline fsdp-opt runs on ONNX input, registered so .mlir input can
// run it whole: fsdp-opt m.mlir
// --pass-pipeline='builtin.module(fsdp-train-pipeline{world-size=2 ckpt=blocks})'.
// Its options are fsdp-opt's stage flags under the same names, values and
// defaults (the choices are the passes' own typed options,
// compiler/Transforms/PassOptions.h). They fill a CompileOptions, marking
// the ones given as the flag parser does, and buildCompilePipeline adds the
// same passes fsdp-opt would. Three things stay fsdp-opt's: --ckpt=auto and
// --accum-reduce=auto, which compile candidates before the pipeline exists,
// and --stop-after
// (list the passes instead). Each pass checks its own options; the
// cross-flag rules of validateCompileOptions are fsdp-opt's.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace fsdp {
namespace {

struct TrainPipelineOptions : mlir::PassPipelineOptions<TrainPipelineOptions> {
  // The train stage (--loss, --freeze, the optimizer's flags).
  Option<std::string> xent{*this, "xent",
                           llvm::cl::desc("attach cross-entropy to this logits output "
                                          "(--loss=xent:OUTPUT; empty: the model's loss)")};
  Option<std::string> labels{*this, "labels",
                             llvm::cl::desc("the labels input of xent (--loss=xent:OUTPUT,LABELS)")};
  Option<std::string> freeze{*this, "freeze",
                             llvm::cl::desc("regex of parameters that are not trained")};
  Option<OptimizerOptions::Kind> optimizer{*this, "optimizer", llvm::cl::desc("adamw or sgd"),
                                           llvm::cl::init(OptimizerOptions::Kind::AdamW),
                                           optimizerValues()};
  Option<double> beta1{*this, "beta1", llvm::cl::init(CompileOptions().beta1)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(CompileOptions().beta2)};
  Option<double> eps{*this, "eps", llvm::cl::init(CompileOptions().eps)};
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("default: 0.01 under adamw, 0 under sgd")};
  Option<double> momentum{*this, "momentum", llvm::cl::init(CompileOptions().momentum)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<std::string> noDecay{*this, "no-decay",
                              llvm::cl::desc("regex of parameters without weight decay")};
  // The checkpoint stage (--ckpt; auto is fsdp-opt's).
  Option<CkptKind> ckpt{*this, "ckpt", llvm::cl::desc("none, blocks or selective"),
                        llvm::cl::init(CkptKind::None),
                        llvm::cl::values(clEnumValN(CkptKind::None, "none", "no checkpointing"),
                                         clEnumValN(CkptKind::Blocks, "blocks", "recompute whole blocks"),
                                         clEnumValN(CkptKind::Selective, "selective",
                                                    "keep matmul, gemm and softmax outputs"))};
  ListOption<int64_t> blocks{*this, "blocks",
                             llvm::cl::desc("the blocks to checkpoint (default: all)")};
  Option<DeviceKind> device{*this, "device", llvm::cl::desc("prices recomputation"),
                            llvm::cl::init(DeviceKind::H100), deviceValues()};
  // The shard and schedule stages.
  Option<int64_t> worldSize{*this, "world-size", llvm::cl::init(1)};
  Option<ShardSpec> shard{*this, "shard", llvm::cl::init(ShardSpec())};
  Option<WrapSpec> wrap{*this, "wrap", llvm::cl::init(WrapSpec())};
  Option<DType> paramDtype{*this, "param-dtype", llvm::cl::init(DType::F32), dtypeValues()};
  Option<DType> reduceDtype{*this, "reduce-dtype", llvm::cl::init(DType::F32), dtypeValues()};
  Option<bool> offload{*this, "offload", llvm::cl::desc("--offload=cpu"), llvm::cl::init(false)};
  // Gradient accumulation (--grad-accum; --accum-reduce=auto is fsdp-opt's).
  Option<int64_t> gradAccum{*this, "grad-accum", llvm::cl::desc("micro-batches per step"),
                            llvm::cl::init(1)};
  Option<AccumReduceKind> accumReduce{*this, "accum-reduce", llvm::cl::desc("each or last"),
                                      llvm::cl::init(AccumReduceKind::Each),
                                      accumReduceValues()};
  Option<int64_t> prefetch{*this, "prefetch", llvm::cl::init(CompileOptions().prefetch)};
  Option<int64_t> limitAllGathers{*this, "limit-all-gathers",
                                  llvm::cl::init(CompileOptions().limitAllGathers)};
  // Gradient clipping (fsdp-clip-gradients).
  Option<double> clipGradNorm{*this, "clip-grad-norm",
                              llvm::cl::desc("--clip-grad-norm=MAX (0: no clipping)"),
                              llvm::cl::init(0.0)};
  Option<ClipNormType> clipNormType{
      *this, "clip-norm-type", llvm::cl::desc("2 or inf"), llvm::cl::init(ClipNormType::Two),
      llvm::cl::values(clEnumValN(ClipNormType::Two, "2", "the 2-norm"),
                       clEnumValN(ClipNormType::Inf, "inf", "the largest |g|"))};
  Option<bool> logGradNorm{*this, "log-grad-norm", llvm::cl::init(false)};
  // Emission.
  Option<bool> fuse{*this, "fuse",
                    llvm::cl::desc("end with fsdp-fuse-elementwise, as before a plan is "
                                   "written"),
                    llvm::cl::init(false)};
};

/// The CompileOptions fsdp-opt would have for flags equal to `options`.
CompileOptions compileOptionsFor(const TrainPipelineOptions &options) {
  CompileOptions opts;
  // What the flag parser records: shardingRequested and
  // effectiveWeightDecay read whether a flag was given.
  auto given = [&](const auto &option, const char *flag) {
    if (option.hasValue())
      opts.explicitlySet.insert(flag);
  };
  opts.emit = options.fuse ? EmitKind::Plan : EmitKind::Mlir;
  opts.stopAfter = options.fuse ? Stage::Memory : Stage::Schedule;
  if (!options.xent.empty())
    opts.loss = LossKind::CrossEntropy;
  opts.lossOutput = options.xent;
  opts.lossLabels = options.labels;
  opts.freezeRegex = options.freeze;
  opts.optimizer = options.optimizer == OptimizerOptions::Kind::Sgd ? OptimizerKind::Sgd
                                                                    : OptimizerKind::AdamW;
  opts.beta1 = options.beta1;
  opts.beta2 = options.beta2;
  opts.eps = options.eps;
  if (options.weightDecay.hasValue())
    opts.weightDecay = options.weightDecay;
  given(options.weightDecay, "weight-decay");
  opts.momentum = options.momentum;
  opts.nesterov = options.nesterov;
  opts.noDecayRegex = options.noDecay;
  opts.ckpt = options.ckpt;
  if (!options.blocks.empty())
    opts.ckptBlocks.emplace(options.blocks.begin(), options.blocks.end());
  opts.device = options.device;
  opts.worldSize = options.worldSize;
  opts.shard = options.shard.getValue().kind;
  opts.hybridGroupSize = options.shard.getValue().hybridGroupSize;
  opts.wrap = options.wrap.getValue().kind;
  opts.wrapMinParams = options.wrap.getValue().minParams;
  opts.wrapRegex = options.wrap.getValue().regex;
  opts.paramDtype = options.paramDtype;
  opts.reduceDtype = options.reduceDtype;
  opts.offload = options.offload ? OffloadKind::Cpu : OffloadKind::None;
  given(options.worldSize, "world-size");
  given(options.shard, "shard");
  given(options.wrap, "wrap");
  given(options.paramDtype, "param-dtype");
  given(options.reduceDtype, "reduce-dtype");
  given(options.offload, "offload");
  opts.prefetch = options.prefetch;
  opts.limitAllGathers = options.limitAllGathers;
  opts.clipGradNorm = options.clipGradNorm;
  opts.clipNormType = options.clipNormType;
  opts.logGradNorm = options.logGradNorm;
  opts.gradAccum = options.gradAccum;
  opts.accumReduce = options.accumReduce;
  return opts;
}

} // namespace

void registerTrainPipeline() {
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "fsdp-train-pipeline",
      "The passes fsdp-opt runs after import, for its stage flags as options: train, "
      "checkpoint, shard, schedule and (fuse=true) elementwise fusion",
      [](mlir::OpPassManager &pm, const TrainPipelineOptions &options) {
        buildCompilePipeline(pm, compileOptionsFor(options));
      });
}

} // namespace fsdp
