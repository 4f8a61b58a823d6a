//===- TrainPipeline.cpp - fsdp-train-pipeline for --pass-pipeline --------===//
//
// The pipeline fsdp-opt runs on ONNX input, registered so .mlir input can
// run it whole: fsdp-opt m.mlir
// --pass-pipeline='builtin.module(fsdp-train-pipeline{world-size=2 ckpt=blocks})'.
// Its options are fsdp-opt's stage flags under the same names, values and
// defaults: those that map one to one are generated from their rows of
// compiler/Pipelines/CompileFlags.def (PIPELINE Option), the rest are
// mapped here by hand (the choices are the passes' own typed options,
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
  // The flags whose PIPELINE column in CompileFlags.def is Option: an option
  // of the same name, type and default, its help the flag's.
#define FSDP_PIPELINE_Option(NAME, FIELD, TYPE, HELP)                                          \
  Option<TYPE> FIELD{*this, NAME, llvm::cl::desc(HELP), llvm::cl::init(defaults::FIELD),       \
                     flagChoices<TYPE>(NAME)};
#define FSDP_PIPELINE_NoOption(NAME, FIELD, TYPE, HELP)
#define FSDP_FLAG(NAME, FIELD, TYPE, DEFAULT, VALUE, STAGE, SCOPE, PIPELINE, HELP)            \
  FSDP_PIPELINE_##PIPELINE(NAME, FIELD, TYPE, HELP)
#include "compiler/Pipelines/CompileFlags.def"
#undef FSDP_PIPELINE_Option
#undef FSDP_PIPELINE_NoOption

  // The flags it maps by hand. --loss=xent:OUTPUT[,LABELS] is two options.
  Option<std::string> xent{*this, "xent",
                           llvm::cl::desc("attach cross-entropy to this logits output "
                                          "(--loss=xent:OUTPUT; empty: the model's loss)")};
  Option<std::string> labels{*this, "labels",
                             llvm::cl::desc("the labels input of xent (--loss=xent:OUTPUT,LABELS)")};
  // Unset: torch's default for the optimizer, as the flag (effectiveWeightDecay).
  Option<double> weightDecay{*this, "weight-decay",
                             llvm::cl::desc("default: 0.01 under adamw, 0 under sgd")};
  // The checkpoint stage (--ckpt; auto is fsdp-opt's).
  Option<CkptKind> ckpt{*this, "ckpt", llvm::cl::desc("none, blocks or selective"),
                        llvm::cl::init(defaults::ckpt),
                        flagChoices("ckpt", {CkptKind::None, CkptKind::Blocks,
                                             CkptKind::Selective})};
  ListOption<int64_t> blocks{*this, "blocks",
                             llvm::cl::desc("the blocks to checkpoint (default: all)")};
  // --shard and --wrap with their parameters; --offload=cpu as a switch.
  Option<ShardSpec> shard{*this, "shard", llvm::cl::init(ShardSpec())};
  Option<WrapSpec> wrap{*this, "wrap", llvm::cl::init(WrapSpec())};
  Option<bool> offload{*this, "offload", llvm::cl::desc("--offload=cpu"), llvm::cl::init(false)};
  // --accum-reduce=auto is fsdp-opt's.
  Option<AccumReduceKind> accumReduce{
      *this, "accum-reduce", llvm::cl::desc("each or last"),
      llvm::cl::init(AccumReduceKind::Each),
      flagChoices("accum-reduce", {AccumReduceKind::Each, AccumReduceKind::Last})};
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
#define FSDP_PIPELINE_Option(NAME, FIELD)                                                      \
  opts.FIELD = options.FIELD;                                                                  \
  given(options.FIELD, NAME);
#define FSDP_PIPELINE_NoOption(NAME, FIELD)
#define FSDP_FLAG(NAME, FIELD, TYPE, DEFAULT, VALUE, STAGE, SCOPE, PIPELINE, HELP)            \
  FSDP_PIPELINE_##PIPELINE(NAME, FIELD)
#include "compiler/Pipelines/CompileFlags.def"
#undef FSDP_PIPELINE_Option
#undef FSDP_PIPELINE_NoOption
  opts.emit = options.fuse ? EmitKind::Plan : EmitKind::Mlir;
  opts.stopAfter = options.fuse ? Stage::Memory : Stage::Schedule;
  if (!options.xent.empty())
    opts.loss = LossKind::CrossEntropy;
  opts.lossOutput = options.xent;
  opts.lossLabels = options.labels;
  if (options.weightDecay.hasValue())
    opts.weightDecay = options.weightDecay;
  given(options.weightDecay, "weight-decay");
  opts.ckpt = options.ckpt;
  if (!options.blocks.empty())
    opts.ckptBlocks.emplace(options.blocks.begin(), options.blocks.end());
  opts.shard = options.shard.getValue().kind;
  opts.hybridGroupSize = options.shard.getValue().hybridGroupSize;
  opts.wrap = options.wrap.getValue().kind;
  opts.wrapMinParams = options.wrap.getValue().minParams;
  opts.wrapRegex = options.wrap.getValue().regex;
  opts.offload = options.offload ? OffloadKind::Cpu : OffloadKind::None;
  given(options.shard, "shard");
  given(options.wrap, "wrap");
  given(options.offload, "offload");
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
