//===- Pipeline.h - which stages fsdp-opt runs for a set of options -------===//
//
// Maps CompileOptions to the stages of docs/design.md's pipeline and knows which
// of them exist yet. Flags and outputs whose stage has not landed are refused
// here with "not implemented yet" (never silently ignored); a stage that
// lands moves its flags from the refused table to the implemented one.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_PIPELINE_H
#define FSDP_COMPILER_PIPELINES_PIPELINE_H

#include "compiler/Autodiff/AttachLoss.h"
#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Transforms/ApplyOptimizer.h"
#include "compiler/Transforms/ScheduleCollectives.h"
#include "compiler/Target/PlanEmitter.h"
#include "compiler/Transforms/ShardParameters.h"

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <string>

namespace fsdp {

/// The last stage the options ask for: --stop-after, or the whole pipeline.
Stage lastRequestedStage(const CompileOptions &opts);

/// The newest stage that exists in this build.
Stage lastImplementedStage();

/// Nullopt if everything `opts` asks for is implemented; otherwise the
/// message for the first flag or output that is not, e.g.
/// "--emit=binary: not implemented yet (a step binary embeds a plan in ...)".
std::optional<std::string> findUnimplemented(const CompileOptions &opts);

/// The loss and optimizer settings `opts` describes.
LossSpec lossSpecFor(const CompileOptions &opts);
OptimizerOptions optimizerOptionsFor(const CompileOptions &opts);
ShardOptions shardOptionsFor(const CompileOptions &opts);
ScheduleOptions scheduleOptionsFor(const CompileOptions &opts);
/// The plan emitter's options for `opts`: --emit=plan, --emit=report and
/// --mem-budget's planned alternatives emit the same plan.
PlanEmitOptions planEmitOptionsFor(const CompileOptions &opts);

/// --shard as written: "full", "grad-op", "none" or "hybrid:G".
std::string shardStrategyName(const CompileOptions &opts);

/// Runs the stages after import that `opts` asks for and this build has:
/// in train mode, loss selection, autodiff and the optimizer (@forward
/// becomes @train_step). Errors are emitted on the module; what --ckpt=auto
/// chose is recorded on it (`fsdp.checkpoint_choice`).
mlir::LogicalResult runStages(mlir::ModuleOp module, const CompileOptions &opts);

/// Lowering decisions made just before a plan is written: elementwise
/// fusion (compiler/Transforms/FuseElementwise.h). Not a stage of its own:
/// it changes no value, only how many passes over memory the plan makes.
void prepareForEmission(mlir::ModuleOp module, const CompileOptions &opts);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_PIPELINE_H
