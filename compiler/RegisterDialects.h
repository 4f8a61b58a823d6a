//===- RegisterDialects.h - the dialects every fsdp tool sees -------------===//
//
// One registration function shared by fsdp-opt and the tests (the pattern of
// Triton's RegisterTritonDialects.h), so every tool parses the same IR.
// The fsdp dialect's collectives are registered ahead of the passes that
// create them (the FSDP issue), so they can be written and tested now.
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
