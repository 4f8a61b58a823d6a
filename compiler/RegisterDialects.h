//===- RegisterDialects.h - the dialects every fsdp tool sees -------------===//
//
// One registration function shared by fsdp-opt and the tests (the pattern of
// Triton's RegisterTritonDialects.h), so every tool parses and verifies the
// same IR: the nn and fsdp dialects (with the fsdp dialect's attribute
// verifiers) and func.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_REGISTERDIALECTS_H
#define FSDP_COMPILER_REGISTERDIALECTS_H

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace fsdp {

inline void registerFsdpDialects(mlir::DialectRegistry &registry) {
  registry.insert<nn::NNDialect, dist::FSDPDialect, mlir::func::FuncDialect>();
}

} // namespace fsdp

#endif // FSDP_COMPILER_REGISTERDIALECTS_H
