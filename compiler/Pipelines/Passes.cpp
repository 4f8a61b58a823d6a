//===- Passes.cpp - the compiler's stages as MLIR passes ------------------===//
//
// Thin wrappers: each pass turns its options into the stage's options
// struct and calls the same function the fsdp-opt pipeline calls, so the
// pass and the pipeline cannot drift apart.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/Passes.h"

#include "compiler/Autodiff/AttachLoss.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/ApplyOptimizer.h"
#include "compiler/Transforms/FuseElementwise.h"
#include "compiler/Transforms/OffloadState.h"
#include "compiler/Transforms/RecomputeActivations.h"
#include "compiler/Transforms/ScheduleCollectives.h"
#include "compiler/Transforms/ShardParameters.h"
#include "compiler/Pipelines/Pipeline.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace fsdp {
namespace {

struct AttachLossPass : PassWrapper<AttachLossPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(AttachLossPass)
  AttachLossPass() = default;
  AttachLossPass(const AttachLossPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-attach-loss"; }
  StringRef getDescription() const final {
    return "Leave @forward returning only the training loss (the model's, or cross-entropy "
           "attached to an output)";
  }
  void runOnOperation() final {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function");
      return signalPassFailure();
    }
    if (failed(attachLoss(forward, {!xent.empty(), xent, labels})))
      signalPassFailure();
  }
  Option<std::string> xent{*this, "xent", llvm::cl::desc("logits output for cross-entropy")};
  Option<std::string> labels{*this, "labels", llvm::cl::desc("labels input name")};
};

struct BuildTrainStepPass : PassWrapper<BuildTrainStepPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BuildTrainStepPass)
  BuildTrainStepPass() = default;
  BuildTrainStepPass(const BuildTrainStepPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-build-train-step"; }
  StringRef getDescription() const final {
    return "Reverse-mode autodiff: @forward becomes @train_step returning the loss and the "
           "parameters' gradients";
  }
  void runOnOperation() final {
    if (failed(buildTrainStep(getOperation(), {freeze})))
      signalPassFailure();
  }
  Option<std::string> freeze{*this, "freeze", llvm::cl::desc("regex of untrained parameters")};
};

struct ApplyOptimizerPass : PassWrapper<ApplyOptimizerPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApplyOptimizerPass)
  ApplyOptimizerPass() = default;
  ApplyOptimizerPass(const ApplyOptimizerPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-apply-optimizer"; }
  StringRef getDescription() const final {
    return "Append AdamW or SGD updates of every parameter to @train_step";
  }
  void runOnOperation() final {
    OptimizerOptions o;
    if (optimizer != "adamw" && optimizer != "sgd") {
      getOperation().emitError("optimizer must be adamw or sgd, not '") << optimizer << "'";
      return signalPassFailure();
    }
    o.kind = optimizer == "sgd" ? OptimizerOptions::Kind::Sgd : OptimizerOptions::Kind::AdamW;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weightDecay = weightDecay;
    o.momentum = momentum;
    o.nesterov = nesterov;
    o.noDecayRegex = noDecay;
    if (failed(applyOptimizer(getOperation(), o)))
      signalPassFailure();
  }
  Option<std::string> optimizer{*this, "optimizer", llvm::cl::init("adamw")};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(0.0)};
  Option<double> momentum{*this, "momentum", llvm::cl::init(0.0)};
  Option<bool> nesterov{*this, "nesterov", llvm::cl::init(false)};
  Option<std::string> noDecay{*this, "no-decay", llvm::cl::desc("regex of undecayed params")};
};

struct ShardParametersPass : PassWrapper<ShardParametersPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ShardParametersPass)
  ShardParametersPass() = default;
  ShardParametersPass(const ShardParametersPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-shard-parameters"; }
  void getDependentDialects(DialectRegistry &registry) const final {
    registry.insert<dist::FSDPDialect>();
  }
  StringRef getDescription() const final {
    return "FSDP: flat-parameter units, all-gathers, gradient reduce-scatters and sharded "
           "optimizer updates in @train_step";
  }
  void runOnOperation() final {
    // The flag parser (CompileOptions) owns the spelling of these values;
    // the pass reuses it so both accept exactly the same text.
    CompileOptions parsed;
    std::string error;
    for (const std::string &arg :
         {"--world-size=" + std::to_string(worldSize), "--shard=" + shard, "--wrap=" + wrap,
          "--param-dtype=" + paramDtype, "--reduce-dtype=" + reduceDtype})
      if (parseCompileFlag(arg, parsed, error) != FlagParse::Ok) {
        getOperation().emitError(error.empty() ? "bad option " + arg : error);
        return signalPassFailure();
      }
    if (!validateCompileOptions(parsed, error)) {
      getOperation().emitError(error);
      return signalPassFailure();
    }
    if (failed(shardParameters(getOperation(), shardOptionsFor(parsed))))
      signalPassFailure();
  }
  Option<int64_t> worldSize{*this, "world-size", llvm::cl::init(1)};
  Option<std::string> shard{*this, "shard", llvm::cl::init("full")};
  Option<std::string> wrap{*this, "wrap", llvm::cl::init("blocks")};
  Option<std::string> paramDtype{*this, "param-dtype", llvm::cl::init("f32")};
  Option<std::string> reduceDtype{*this, "reduce-dtype", llvm::cl::init("f32")};
};

struct RecomputeActivationsPass
    : PassWrapper<RecomputeActivationsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RecomputeActivationsPass)
  RecomputeActivationsPass() = default;
  RecomputeActivationsPass(const RecomputeActivationsPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-recompute-activations"; }
  StringRef getDescription() const final {
    return "Activation checkpointing: the backward pass of @train_step reads recomputed "
           "copies of each block's forward values instead of saved ones";
  }
  void runOnOperation() final {
    if (ckpt != "blocks" && ckpt != "selective") {
      getOperation().emitError("ckpt must be blocks or selective, not '") << ckpt << "'";
      return signalPassFailure();
    }
    RecomputeOptions o;
    o.policy = ckpt == "blocks" ? RecomputeOptions::Policy::Blocks
                                : RecomputeOptions::Policy::Selective;
    if (blocks.hasValue())
      o.blocks.emplace(blocks.begin(), blocks.end());
    if (failed(recomputeActivations(getOperation(), o)))
      signalPassFailure();
  }
  Option<std::string> ckpt{*this, "ckpt", llvm::cl::init("blocks"),
                           llvm::cl::desc("blocks or selective")};
  ListOption<int64_t> blocks{*this, "blocks",
                             llvm::cl::desc("indices of the blocks to checkpoint, in model order "
                                            "(default: all)")};
};

struct OffloadStatePass : PassWrapper<OffloadStatePass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OffloadStatePass)
  StringRef getArgument() const final { return "fsdp-offload-state"; }
  StringRef getDescription() const final {
    return "Shards, optimizer state and the optimizer's scalars of the sharded @train_step in "
           "host memory, with copies to and from the device";
  }
  void runOnOperation() final {
    if (failed(offloadState(getOperation())))
      signalPassFailure();
  }
};

struct ScheduleCollectivesPass
    : PassWrapper<ScheduleCollectivesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScheduleCollectivesPass)
  ScheduleCollectivesPass() = default;
  ScheduleCollectivesPass(const ScheduleCollectivesPass &other) : PassWrapper(other) {}
  StringRef getArgument() const final { return "fsdp-schedule-collectives"; }
  StringRef getDescription() const final {
    return "Collectives of the sharded @train_step on the communication stream, all-gathers "
           "prefetched K units ahead with at most L non-root units in full";
  }
  void runOnOperation() final {
    if (failed(scheduleCollectives(getOperation(), {prefetch, limit})))
      signalPassFailure();
  }
  Option<int64_t> prefetch{*this, "prefetch", llvm::cl::init(1),
                           llvm::cl::desc("units gathered ahead (0: at first use)")};
  Option<int64_t> limit{*this, "limit-all-gathers", llvm::cl::init(2),
                        llvm::cl::desc("non-root units in full at once (0: no limit)")};
};

struct FuseElementwisePass : PassWrapper<FuseElementwisePass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(FuseElementwisePass)
  StringRef getArgument() const final { return "fsdp-fuse-elementwise"; }
  StringRef getDescription() const final {
    return "Fuse chains of f32 elementwise ops into nn.fused (one pass over memory)";
  }
  void runOnOperation() final { fuseElementwise(getOperation()); }
};

} // namespace

void registerFsdpPasses() {
  PassRegistration<FuseElementwisePass>();
  PassRegistration<AttachLossPass>();
  PassRegistration<BuildTrainStepPass>();
  PassRegistration<ApplyOptimizerPass>();
  PassRegistration<RecomputeActivationsPass>();
  PassRegistration<ShardParametersPass>();
  PassRegistration<OffloadStatePass>();
  PassRegistration<ScheduleCollectivesPass>();
}

} // namespace fsdp
