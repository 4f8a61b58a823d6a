//===- FSDPCollectiveOps.td - collectives over rank groups -----*- tablegen -*-===//
//
// The three collectives FSDP needs, with NCCL's semantics, on the local
// rank's value: all_gather concatenates every rank's tensor along dim 0 in
// group order, reduce_scatter reduces tensors split along dim 0 and keeps
// this rank's chunk, all_reduce reduces whole tensors, each within this
// rank's group (below); `reduction` is "sum", "avg" (sum, then one
// division by the group size, which is how FSDP averages gradients) or
// "max" (an inf-norm gradient clip's combine). They
// communicate, so they are not Pure: a collective whose result is unused
// still has to run on every rank. The schedule stage marks them
// `fsdp.stream = 1` to run them asynchronously on the communication stream
// (the attribute is documented in FSDPBase.td).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FSDP_COLLECTIVE_OPS_TD
#define FSDP_FSDP_COLLECTIVE_OPS_TD

// Every collective names its groups the way the plan does: `groups` lists
// all ranks of the world, group after group, each group of `group_size`
// ranks in ascending order. The IR is SPMD (every rank runs the same ops),
// so one op describes, for instance, the shard groups {0,1} and {2,3} of
// hybrid sharding at once; each rank takes part in the group listing it.

include "dialects/fsdp/FSDPBase.td"
include "dialects/nn/NNInterfaces.td"

def FSDP_AllGatherOp : FSDP_Op<"all_gather", [NN_EncodedKernel]> {
  let summary = "concatenate every rank's tensor along dim 0 (ncclAllGather)";
  let description = [{
    With `persistent`, the result keeps a buffer of its own for the whole
    step and across steps, and the input (a unit's shard argument, of the
    result's element type) is this rank's chunk of that buffer: NCCL's
    in-place all-gather. A unit gathered once per step (--shard=grad-op)
    then holds its parameters once, not a shard plus a gathered copy; the
    optimizer's in-place update of the shard must follow every read of the
    result.
  }];
  let arguments = (ins FSDP_FloatTensor:$input, DenseI64ArrayAttr:$groups, I64Attr:$group_size,
                       UnitAttr:$persistent);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_ReduceScatterOp : FSDP_Op<"reduce_scatter", [NN_EncodedKernel]> {
  let summary = "reduce across ranks and keep this rank's dim-0 chunk (ncclReduceScatter)";
  let arguments = (ins FSDP_FloatTensor:$input, DenseI64ArrayAttr:$groups, I64Attr:$group_size, StrAttr:$reduction);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def FSDP_AllReduceOp : FSDP_Op<"all_reduce", [AllTypesMatch<["input", "result"]>, NN_EncodedKernel]> {
  let summary = "reduce across ranks (ncclAllReduce)";
  let arguments = (ins FSDP_FloatTensor:$input, DenseI64ArrayAttr:$groups, I64Attr:$group_size, StrAttr:$reduction);
  let results = (outs FSDP_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // FSDP_FSDP_COLLECTIVE_OPS_TD
