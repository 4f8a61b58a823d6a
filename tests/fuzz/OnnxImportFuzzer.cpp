//===- OnnxImportFuzzer.cpp - libFuzzer target: ONNX models ----------------===//
//
// A model file goes through what fsdp-opt does before its passes: the
// bounded protobuf read and validation of ModelReader (external data
// resolved beside the file, here a directory of this process's own), the
// decision of which initializers are parameters, and the import into the
// nn dialect with its shape inference and constant folding, ending in a
// module the verifier accepts. Any refusal must come back as an error.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"
#include "frontends/onnx/OnnxModel.h"
#include "tests/fuzz/FuzzContext.h"
#include "tests/fuzz/FuzzSupport.h"

#include "mlir/IR/Verifier.h"

using namespace fsdp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = fuzz::writeScratchFile("model.onnx", data, size);
  std::string error;
  onnx::ReadOptions readOptions;
  std::optional<onnx::Model> model = onnx::readModel(path, readOptions, error);
  if (!model)
    return 0;
  onnx::ImportOptions importOptions; // parameters decided from the model alone
  mlir::OwningOpRef<mlir::ModuleOp> module =
      onnx::importModel(fuzz::fuzzContext(), *model, importOptions, error);
  if (module && mlir::failed(mlir::verify(*module))) {
    // The importer promises a verified module or an error: anything else
    // is a bug for the fuzzer to report.
    __builtin_trap();
  }
  return 0;
}
