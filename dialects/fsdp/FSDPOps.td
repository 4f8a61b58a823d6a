//===- FSDPOps.td - all fsdp ops -------------------------------*- tablegen -*-===//
//
// The single TableGen root of the fsdp dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FSDP_OPS_TD
#define FSDP_FSDP_OPS_TD

include "dialects/fsdp/FSDPBase.td"
include "dialects/fsdp/FSDPCollectiveOps.td"
include "dialects/fsdp/FSDPFlatParamOps.td"
include "dialects/fsdp/FSDPOffloadOps.td"

#endif // FSDP_FSDP_OPS_TD
