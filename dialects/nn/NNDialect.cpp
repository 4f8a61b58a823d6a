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

#define GET_OP_CLASSES
#include "dialects/nn/NNOps.cpp.inc"
