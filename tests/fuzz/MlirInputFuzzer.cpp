//===- MlirInputFuzzer.cpp - libFuzzer target: .mlir input to fsdp-opt -----===//
//
// fsdp-opt accepts .mlir files in our dialects (nn, fsdp) as well as
// ONNX. The input is parsed as fsdp-opt parses it and verified, which runs
// every op's verifier, our dialects' included, on whatever the parser
// built. MLIR's own parser is Debian's build; crashes there are reported
// upstream, ours are fixed here.
//
//===----------------------------------------------------------------------===//

#include "tests/fuzz/FuzzContext.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  // parseSourceString verifies after parsing, as fsdp-opt's parse does.
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &fsdp::fuzz::fuzzContext());
  (void)module;
  return 0;
}
