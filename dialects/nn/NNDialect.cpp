//===- NNDialect.cpp - nn dialect registration ----------------------------===//
//
// Registers the nn ops with the dialect and instantiates the generated op
// definitions. Verifiers live with their op family (ElementwiseOps.cpp ...).
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/NNDialect.h"

using namespace mlir;
using namespace fsdp::nn;

#include "dialects/nn/NNDialect.cpp.inc"
#include "dialects/nn/NNInterfaces.cpp.inc"

void NNDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/nn/NNOps.cpp.inc"
      >();
}

// Custom assembly directives of the generated parsers and printers,
// defined with their op family (OptimizerOps.cpp).
namespace fsdp::nn {
ParseResult parseSgdTypes(OpAsmParser &parser, Type &param, Type &grad, Type &lr, Type &buffer,
                          Type &newParam, Type &newBuffer);
void printSgdTypes(OpAsmPrinter &printer, Operation *op, Type param, Type grad, Type lr,
                   Type buffer, Type newParam, Type newBuffer);
} // namespace fsdp::nn

#define GET_OP_CLASSES
#include "dialects/nn/NNOps.cpp.inc"
