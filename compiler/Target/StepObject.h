//===- StepObject.h - the data a compiled step object carries -------------===//
//
// A compiled step (--emit=object, --emit=binary) is an object file that
// defines `fsdp_embedded_step` (runtime/embed/EmbeddedStep.h): the plan's
// FlatBuffer exactly as a plan file carries it after its header, with the
// header's content hash (so checkpoints move between the step binary and
// fsdp-run), the weights (by file name, or embedded), the text --help
// prints about what the step was compiled from, PTX, and the table of the
// Fused chains' generated functions. This file builds those definitions as
// LLVM-dialect globals in a module the caller may already hold generated
// functions in, optionally with a `main` that hands the step to the
// runtime's driver (fsdp_step_main). Embedded weights (gigabytes) skip MLIR
// attributes: they are attached to the translated llvm::Module directly.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_STEPOBJECT_H
#define FSDP_COMPILER_TARGET_STEPOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Module;
}

namespace fsdp {

/// One generated Fused chain: its fusedProgramKey and the symbols of the
/// functions the caller defined or declared in the module (an empty
/// avx512Symbol or ptxEntry is null in the table).
struct GeneratedFusedSymbols {
  uint64_t key = 0;
  std::string avx2Symbol, avx512Symbol, ptxEntry;
};

/// What --help says about the step: the compile's inputs and its plan's
/// per-rank peak.
struct StepInfo {
  std::string modelPath;
  uint64_t modelHash = 0; // contentHash of the model file
  std::string mode;       // "train" or "forward"
  int64_t worldSize = 1;
  std::string strategy; // --shard as written; empty: unsharded
  std::string ckpt;     // --ckpt as resolved
  uint64_t plannedPeakBytes = 0;
  std::string compiler; // "fsdp-opt <version>"
};

/// The paragraph stored as the step's `info`.
std::string formatStepInfo(const StepInfo &info);

struct StepObjectContents {
  /// The plan FlatBuffer (a plan file's bytes after its header) and the
  /// content hash its header carries.
  llvm::ArrayRef<uint8_t> plan;
  uint64_t planHash = 0;
  /// The weights file's name, beside the executable; empty when the plan
  /// has no parameters.
  std::string weightsFile;
  /// --embed-weights: the weights' size; their bytes come later, through
  /// attachEmbeddedWeights on the translated module.
  bool embedWeights = false;
  uint64_t embeddedWeightsSize = 0;
  std::string info;
  /// PTX modules; empty is null.
  std::string ptxSm80, ptxSm90;
  std::vector<GeneratedFusedSymbols> fused;
  /// --emit=binary: also define main() calling fsdp_step_main.
  bool defineMain = false;
};

/// The symbols this file defines.
inline constexpr const char *kEmbeddedStepSymbol = "fsdp_embedded_step";
inline constexpr const char *kEmbeddedWeightsSymbol = "fsdp_step_weights";
inline constexpr const char *kStepMainSymbol = "fsdp_step_main";

/// Adds fsdp_embedded_step and the globals it points to (and main with
/// `defineMain`) to `module`, which must hold only LLVM-dialect ops; the
/// fused table's functions must already be in it. Errors are emitted on
/// the module.
mlir::LogicalResult buildStepObject(mlir::ModuleOp module, const StepObjectContents &contents);

/// Gives the embedded weights global of a translated step module its bytes
/// (exactly `embeddedWeightsSize` of them). On failure `error` says why.
bool attachEmbeddedWeights(llvm::Module &module, llvm::ArrayRef<char> bytes, std::string &error);

/// Checks that the translated module's FsdpEmbeddedStep and
/// FsdpGeneratedFused layouts are the C header's under the module's data
/// layout (field offsets and sizes); `error` names the first field that is
/// not.
bool verifyStepLayout(const llvm::Module &module, std::string &error);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_STEPOBJECT_H
