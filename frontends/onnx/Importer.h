//===- Importer.h - ONNX model to nn dialect ------------------------------===//
//
// Public entry point of the ONNX frontend. The result is a module holding
// one `func.func @forward`: parameters first (float initializers, marked
// `nn.param` with the exporter's exact name), then the graph inputs (marked
// `nn.input`), returning the graph outputs (marked `nn.output`). Integer and
// bool initializers are constants, not parameters. Shape computations fold
// away during import, so every type in the result is static.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_IMPORTER_H
#define FSDP_FRONTENDS_ONNX_IMPORTER_H

#include "frontends/onnx/OnnxModel.h"

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
};

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

/// The supported-operator table, in the order the README lists it.
std::vector<SupportedOp> supportedOps();

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_IMPORTER_H
