//===- MlirInputFuzzer.cpp - libFuzzer target: .mlir input to fsdp-opt -----===//
//
// fsdp-opt accepts .mlir files in our dialects (nn, fsdp) as well as
// ONNX. The input is parsed as fsdp-opt parses it and verified, which runs
// every op's verifier, our dialects' included, on whatever the parser
// built. MLIR's own parser is Debian's build; crashes there are reported
// upstream and the input refused before parsing as fsdp-opt refuses it
// (tools/fsdp-opt/MlirInputGuard.h); ours are fixed here.
//
//===----------------------------------------------------------------------===//

#include "tests/fuzz/FuzzContext.h"
#include "tests/fuzz/FuzzSupport.h"
#include "tools/fsdp-opt/MlirInputGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/SourceMgr.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Read back as fsdp-opt reads its input (openInputFile: a buffer with the
  // NUL terminator MLIR's lexer stops at), parsed and verified as its
  // compileMlir does.
  std::string error;
  auto input = mlir::openInputFile(fsdp::fuzz::writeScratchFile("input.mlir", data, size), &error);
  if (!input)
    __builtin_trap(); // the scratch file was just written
  if (fsdp::findIntegerBoolArray(input->getBuffer()))
    return 0; // refused before parsing, as fsdp-opt refuses it (MlirInputGuard.h)
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &fsdp::fuzz::fuzzContext());
  (void)module;
  return 0;
}
