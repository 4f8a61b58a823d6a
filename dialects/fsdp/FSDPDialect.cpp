//===- FSDPDialect.cpp - fsdp dialect registration ------------------------===//
//
// Registers the fsdp ops and instantiates their generated definitions;
// verifiers live with their op family (CollectiveOps.cpp, FlatParamOps.cpp)
// and those of the dialect's attributes in Attributes.cpp.
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"

using namespace mlir;
using namespace fsdp::dist;

#include "dialects/fsdp/FSDPDialect.cpp.inc"

void FSDPDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/fsdp/FSDPOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/fsdp/FSDPOps.cpp.inc"
