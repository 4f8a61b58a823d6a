//===- RegisterDialects.h - the dialects every fsdp tool sees -------------===//
//
// One registration function shared by fsdp-opt and the tests (the pattern of
// Triton's RegisterTritonDialects.h), so every tool parses the same IR.
// Later issues add the fsdp dialect and pass registrations here.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_REGISTERDIALECTS_H
#define FSDP_COMPILER_REGISTERDIALECTS_H

#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"

namespace fsdp {

inline void registerFsdpDialects(mlir::DialectRegistry &registry) {
  registry.insert<nn::NNDialect, mlir::func::FuncDialect>();
}

} // namespace fsdp

#endif // FSDP_COMPILER_REGISTERDIALECTS_H
