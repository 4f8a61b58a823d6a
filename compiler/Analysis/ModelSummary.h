//===- ModelSummary.h - what an imported model contains -------------------===//
//
// Counts what `fsdp-opt --emit=summary` prints for an imported forward
// function: parameters (with their source names, shapes and bytes), batch
// inputs, outputs and the nn ops used. Works on any module in the nn
// dialect, so .mlir input gets the same summary as ONNX.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_MODELSUMMARY_H
#define FSDP_COMPILER_ANALYSIS_MODELSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsdp {

struct TensorSummary {
  std::string name;
  std::string type; // e.g. "tensor<64x32xf32>"
  int64_t elements = 0;
  int64_t bytes = 0;
};

struct ModelSummary {
  std::string source, producer;
  int64_t opset = 0;
  std::vector<TensorSummary> parameters, inputs, outputs;
  int64_t parameterElements = 0, parameterBytes = 0;
  std::map<std::string, int64_t> opCounts; // op name -> count
  /// fsdp-fuse-attention's record, when it ran: how many attentions it
  /// fused and, for each it left unfused, "LOC: why".
  bool attentionFusionRan = false;
  int64_t attentionFused = 0;
  std::vector<std::string> attentionUnfused;
};

/// Summarizes `@forward` (or the first function) of `module`; fails with a
/// diagnostic if the module has no function.
mlir::FailureOr<ModelSummary> summarizeModel(mlir::ModuleOp module);

/// The human-readable table fsdp-opt prints.
void printModelSummary(const ModelSummary &summary, llvm::raw_ostream &os);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_MODELSUMMARY_H
