//===- EmitStep.h - fsdp-opt's compiled-step outputs ----------------------===//
//
// --emit=binary, --emit=object, --emit=llvm and --emit=llvm-ir: the plan
// --emit=plan would write (same flags, same bytes, same content hash, the
// weights file beside the output under the same naming) embedded in an
// LLVM module (compiler/Target/StepObject.h), then printed, compiled to an
// object file with a C header, or compiled and linked with the runtime
// library (libfsdp_runtime.a) into a standalone executable.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_OPT_EMITSTEP_H
#define FSDP_TOOLS_FSDP_OPT_EMITSTEP_H

#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Target/PlanSerializer.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <functional>
#include <string>

namespace fsdp {

/// Returns 0 when a plan's per-rank peak fits --mem-budget, else prints why
/// and returns 1 (the driver's checkBudget).
using BudgetCheck = std::function<int(uint64_t peakBytes)>;

/// Emits `module` (after the stages) as the compiled step `opts.emit` asks
/// for. An empty `weights` means the model was read from shapes only: no
/// weights file is written (the step then runs with --weights or --resume)
/// and --embed-weights is refused. `argv0` locates the runtime library
/// beside fsdp-opt. Returns the exit code; errors are printed.
int emitCompiledStep(const CompileOptions &opts, mlir::ModuleOp module,
                     const WeightLookup &weights, const BudgetCheck &checkBudget,
                     const char *argv0);

/// The file names a compiled step's output implies: "step.o" -> base
/// "step" (header step.h, weights step.safetensors); a binary's base is its
/// own name; .ll and .mlir are dropped like .o.
std::string compiledStepBase(const std::string &outputPath, EmitKind emit);

} // namespace fsdp

#endif // FSDP_TOOLS_FSDP_OPT_EMITSTEP_H
