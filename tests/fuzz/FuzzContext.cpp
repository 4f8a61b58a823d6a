//===- FuzzContext.cpp - the compiler targets' shared MLIR context --------===//
//
// See FuzzContext.h.
//
//===----------------------------------------------------------------------===//

#include "tests/fuzz/FuzzContext.h"

#include "compiler/RegisterDialects.h"

#include "mlir/IR/Diagnostics.h"

#include <memory>

namespace fsdp::fuzz {

namespace {
constexpr int kInputsPerContext = 2000;
}

mlir::MLIRContext &fuzzContext() {
  static std::unique_ptr<mlir::MLIRContext> context;
  static int uses = 0;
  if (!context || ++uses >= kInputsPerContext) {
    uses = 0;
    context.reset();
    mlir::DialectRegistry registry;
    registerFsdpDialects(registry);
    context = std::make_unique<mlir::MLIRContext>(registry, mlir::MLIRContext::Threading::DISABLED);
    context->loadAllAvailableDialects();
    context->getDiagEngine().registerHandler([](mlir::Diagnostic &) { return mlir::success(); });
  }
  return *context;
}

} // namespace fsdp::fuzz
