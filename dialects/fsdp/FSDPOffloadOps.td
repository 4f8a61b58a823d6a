//===- FSDPOffloadOps.td - state kept in host memory ------*- tablegen -*-===//
//
// --offload=cpu keeps each unit's parameter shard, its gradient shard and
// its optimizer state in host memory (step arguments marked `fsdp.host`),
// as FSDP's CPUOffload and ZeRO-Offload do; the optimizer then updates them
// on the host. Two copies cross the link: a shard to the device before the
// device reads it (its all-gather), and a reduced gradient shard to the
// host for the update. Values are unchanged by either, so an offloaded
// step computes the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FSDP_OFFLOAD_OPS_TD
#define FSDP_FSDP_OFFLOAD_OPS_TD

include "dialects/fsdp/FSDPBase.td"
include "dialects/nn/NNInterfaces.td"

def FSDP_ToDeviceOp : FSDP_Op<"to_device", [Pure, AllTypesMatch<["input", "result"]>, NN_Kernel]> {
  let summary = "copy a host-memory value to device memory";
  let arguments = (ins FSDP_FloatTensor:$input);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def FSDP_ToHostOp : FSDP_Op<"to_host", [Pure, AllTypesMatch<["input", "result"]>, NN_Kernel]> {
  let summary = "copy a device-memory value to host memory";
  let arguments = (ins FSDP_FloatTensor:$input);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

#endif // FSDP_FSDP_OFFLOAD_OPS_TD
