//===- Pipeline.h - which stages fsdp-opt runs for a set of options -------===//
//
// Maps CompileOptions to the stages of docs/design.md's pipeline. What no
// stage produces (IR after the memory stage, which lives in the plan
// emitter) is refused here with "not implemented yet", never silently
// ignored. The stages are the passes of compiler/Transforms/Passes.td, and
// the pipeline runs them through an mlir::PassManager.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_PIPELINE_H
#define FSDP_COMPILER_PIPELINES_PIPELINE_H

#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Target/PlanEmitter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace fsdp {

/// The last stage the options ask for: --stop-after, or the whole pipeline.
Stage lastRequestedStage(const CompileOptions &opts);

/// The newest stage that exists in this build.
Stage lastImplementedStage();

/// Nullopt if everything `opts` asks for is implemented. The one thing that
/// is not is IR after the memory stage, which is the plan's (the plan
/// emitter places buffers; no pass does): --emit=mlir with
/// --stop-after=memory or without --stop-after gets
/// "--stop-after=memory: not implemented yet (IR stops after ...)".
std::optional<std::string> findUnimplemented(const CompileOptions &opts);

/// --shard as written: "full", "grad-op", "none" or "hybrid:G".
std::string shardStrategyName(const CompileOptions &opts);
/// The plan emitter's options for `opts`: --emit=plan, --emit=report and
/// --mem-budget's planned alternatives emit the same plan.
PlanEmitOptions planEmitOptionsFor(const CompileOptions &opts);

/// The stages a module has already been through: IR printed after
/// --stop-after=train (or shard, schedule) resumes where it stopped.
struct PipelineStart {
  bool trained = false;   // @train_step exists
  bool sharded = false;   // its arguments are shard units
  bool scheduled = false; // its collectives have streams
  bool gradNorm = false;  // it outputs grad_norm (fsdp-clip-gradients ran)
  bool accumulated = false; // it runs --grad-accum's micro-batches
};
PipelineStart pipelineStartOf(mlir::ModuleOp module);

/// Adds to `pm` (anchored on builtin.module) the passes `opts` asks for
/// after import, for a module that has been through `start`: in train mode
/// fsdp-attach-loss, fsdp-build-train-step and fsdp-apply-optimizer (the
/// train stage), fsdp-recompute-activations (--ckpt), fsdp-shard-parameters
/// and fsdp-offload-state (the shard stage), fsdp-clip-gradients
/// (--clip-grad-norm, --log-grad-norm), fsdp-schedule-collectives;
/// then, when a plan is emitted, fsdp-fuse-elementwise on every function.
/// `opts.ckpt` must not be auto: runStages resolves it first.
void buildCompilePipeline(mlir::OpPassManager &pm, const CompileOptions &opts,
                          const PipelineStart &start = {});

/// Sets up the pass manager runStages runs, before it runs; the driver
/// applies MLIR's command-line instrumentation (--mlir-print-ir-*,
/// --mlir-timing, reproducers) with it.
using PassManagerSetup = llvm::function_ref<mlir::LogicalResult(mlir::PassManager &)>;

/// Runs the stages after import that `opts` asks for on `module` through an
/// mlir::PassManager built by buildCompilePipeline. --ckpt=auto is resolved
/// first (recorded in dist::kCheckpointChoiceAttr) by compiling candidates, whose
/// pass managers are not set up. Errors are emitted on the module.
mlir::LogicalResult runStages(mlir::ModuleOp module, const CompileOptions &opts,
                              PassManagerSetup setup = nullptr);

/// Registers fsdp-train-pipeline: buildCompilePipeline for .mlir input,
/// with fsdp-opt's stage flags as pipeline options
/// (--pass-pipeline='builtin.module(fsdp-train-pipeline{world-size=2})').
void registerTrainPipeline();

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_PIPELINE_H
