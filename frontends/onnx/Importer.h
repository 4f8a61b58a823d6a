//===- Importer.h - ONNX model to nn dialect ------------------------------===//
//
// Public entry point of the ONNX frontend. The result is a module holding
// one `func.func @forward`: parameters first (the initializers
// ParameterProvenance.h decides are parameters, marked `nn.param` with
// their torch name; `nn.initializer` names the initializer holding the
// value where that differs, `nn.frozen` marks one that is not trained),
// then the graph inputs (marked `nn.input`), returning the graph outputs
// (marked `nn.output`). Every other initializer is a constant. Shape
// computations fold away during import, so every type in the result is
// static.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_IMPORTER_H
#define FSDP_FRONTENDS_ONNX_IMPORTER_H

#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/ParameterProvenance.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <map>
#include <string>
#include <vector>

namespace fsdp::onnx {

struct ImportOptions {
  /// Known values of graph inputs. The importer consults them only where an
  /// operator needs a compile-time constant (Reshape's shape, Slice's
  /// bounds, ...) and the graph feeds that operand from an input; the input
  /// itself stays in the signature. ONNX's node tests use this, since they
  /// pass shapes as inputs.
  std::map<std::string, Tensor> inputValues;
  /// Which initializers are parameters; null: decided from the model alone
  /// (decideParameters without a manifest, its warnings dropped).
  const ParameterProvenance *provenance = nullptr;
};

/// Argument attributes beside `nn.param` (see the file comment).
inline constexpr const char *kInitializerAttr = "nn.initializer";
inline constexpr const char *kFrozenAttr = "nn.frozen";

/// Imports `model` into a new module in `context`. On failure returns null
/// and sets `error` to a message naming the file and, where there is one,
/// the node: `m.onnx: node 'n' (Op, domain ai.onnx, opset 17): reason`.
mlir::OwningOpRef<mlir::ModuleOp> importModel(mlir::MLIRContext &context,
                                              const Model &model,
                                              const ImportOptions &options,
                                              std::string &error);

/// One row of the supported-operator table.
struct SupportedOp {
  const char *domain; // "" for ai.onnx
  const char *opType;
  int64_t minOpset, maxOpset;
  const char *notes;
};

/// The supported-operator table, in the order docs/ops.md lists it.
std::vector<SupportedOp> supportedOps();

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_IMPORTER_H
