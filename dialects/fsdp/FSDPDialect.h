//===- FSDPDialect.h - the fsdp dialect -----------------------------------===//
//
// Declares the fsdp dialect and its ops (generated from FSDPOps.td).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_DIALECTS_FSDP_FSDPDIALECT_H
#define FSDP_DIALECTS_FSDP_FSDPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/fsdp/FSDPDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/fsdp/FSDPOps.h.inc"

#endif // FSDP_DIALECTS_FSDP_FSDPDIALECT_H
