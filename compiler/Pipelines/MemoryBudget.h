//===- MemoryBudget.h - refuse plans that do not fit --mem-budget ---------===//
//
// `--mem-budget=SIZE` makes memory a compile-time contract: a plan whose
// per-rank peak (persistent region + arena, exactly what fsdp-run
// allocates) exceeds it is an error, not an out-of-memory crash after
// launch. The error says what is live at the peak and, because the
// compiler can plan any configuration before launch, which other flags
// would fit and with what predicted peak: each suggestion is a real plan of
// the same model compiled in memory, not an estimate.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_MEMORYBUDGET_H
#define FSDP_COMPILER_PIPELINES_MEMORYBUDGET_H

#include "compiler/Analysis/CostModel.h"
#include "compiler/Analysis/MemoryReport.h"
#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdp {

/// Emits `module` (already through runStages, which fuses it for a plan)
/// as a plan in memory, no
/// file and no weights, verified as the runtime's loader verifies it:
/// what --emit=report and --emit=trace analyze.
mlir::FailureOr<std::vector<uint8_t>> emitPlanInMemory(mlir::ModuleOp module,
                                                       const CompileOptions &opts);

/// A configuration planned in memory: its memory and its step predicted
/// on opts.device.
struct PlannedStep {
  MemoryReport memory;
  StepPrediction prediction;
};

/// Compiles `imported` (the module as imported, before any stage; it is
/// cloned, not changed) with `opts` into an in-memory plan and analyzes its
/// memory and predicted time. Failure means the configuration does not
/// compile (its diagnostics are reported).
mlir::FailureOr<PlannedStep> planStep(mlir::ModuleOp imported, const CompileOptions &opts);
/// planStep's memory alone.
mlir::FailureOr<MemoryReport> planMemory(mlir::ModuleOp imported, const CompileOptions &opts);

/// The report's configuration comparison at opts' world size: none (DDP),
/// grad-op, full, full + --ckpt=blocks, each planned from `imported` with
/// opts' other flags, and full + offload (not implemented yet, no
/// numbers); `chosen` (the reported plan) fills the row it matches
/// instead of being compiled again, or is appended when it matches none.
/// A variant that fails to compile gets a note instead of numbers.
std::vector<ConfigurationRow> compareConfigurations(mlir::ModuleOp imported,
                                                    const CompileOptions &opts,
                                                    const PlannedStep &chosen);

/// The report's prediction line for `step` on `device`.
PredictedTime predictedTimeOf(const StepPrediction &step, const DeviceProfile &device);

/// Another configuration of the same model and its planned peak per rank.
struct BudgetSuggestion {
  std::string flags; // e.g. "--world-size=4" or "--shard=full"
  uint64_t peakBytes = 0;
};

/// Configurations that change one or two flags of `opts` towards less
/// memory per rank (full sharding, a larger world, both), planned from
/// `imported`; those that fail to compile are left out.
std::vector<BudgetSuggestion> suggestSmallerPlans(mlir::ModuleOp imported,
                                                  const CompileOptions &opts);

/// The error text for a plan of `report` over `budget` bytes: the peak, the
/// budget, what is live at the peak, and `suggestions` (those that fit
/// first).
std::string overBudgetMessage(const MemoryReport &report, uint64_t budget,
                              const std::vector<BudgetSuggestion> &suggestions);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_MEMORYBUDGET_H
