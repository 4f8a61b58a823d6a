//===- FSDPBase.td - fsdp dialect definition -------------------*- tablegen -*-===//
//
// The `fsdp` dialect: what distribution adds to a training step. This file
// declares the dialect; each op family lives in its own FSDP<Family>Ops.td.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FSDP_BASE_TD
#define FSDP_FSDP_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def FSDP_Dialect : Dialect {
  let name = "fsdp";
  let cppNamespace = "::fsdp::dist";
  let summary = "Sharding, collectives and schedules of a distributed training step";
  let description = [{
    The `fsdp` dialect holds what turns a single-rank training step into a
    sharded one: collectives over groups of ranks on value-semantic
    tensors (this file's first ops), and, as the FSDP issue lands, shard
    units, flat-parameter layouts, release points and schedules.

    Why an own dialect rather than `mesh` or `mpi`: collectives here carry
    exactly the attributes the planner and the runtime need (an explicit,
    ordered rank group, FSDP's averaging reduction) and are values the
    memory planner places, without a device-mesh abstraction the plan
    would not use.
  }];
}

class FSDP_Op<string mnemonic, list<Trait> traits = []>
    : Op<FSDP_Dialect, mnemonic, traits>;

def FSDP_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;

#endif // FSDP_FSDP_BASE_TD
