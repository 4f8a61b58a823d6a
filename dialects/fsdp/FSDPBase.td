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
    tensors, views into and packing of flat-parameter buffers, copies
    between host and device memory, and the discardable attributes below
    that record shard units, streams, recomputation and offloading.

    Why an own dialect rather than `mesh` or `mpi`: collectives here carry
    exactly the attributes the planner and the runtime need (an explicit,
    ordered rank group, FSDP's averaging reduction) and are values the
    memory planner places, without a device-mesh abstraction the plan
    would not use.

    The dialect verifies its discardable attributes; any other `fsdp.`
    attribute, or one of these where it may not appear, is an error.

    | Attribute | Where | Value | Meaning |
    |---|---|---|---|
    | `fsdp.world_size` | module | positive `i64` | the world size the step was sharded for; a plan must be emitted for it |
    | `fsdp.checkpoint_choice` | module | string | what `--ckpt=auto` chose, printed as a note |
    | `fsdp.unit` | function argument (a 1-D tensor) | dictionary | the argument is a flat-parameter shard of the unit described (below) |
    | `fsdp.host` | function argument | unit | the argument lives in host memory (`--offload=cpu`) |
    | `fsdp.stream` | `fsdp.all_gather`, `fsdp.reduce_scatter`, `fsdp.all_reduce`; `fsdp.to_device`, `fsdp.to_host`; `nn.adamw`, `nn.sgd` | `i64`: 0, or 1 (collectives), 2 (copies), 3 (updates) | the stream the op runs on: 0 compute (in program order), 1 communication, 2 copy, 3 host (asynchronous; an update there reads host operands only) |
    | `fsdp.recompute` | any op | non-empty string | the op is a recomputed clone of a forward op of the named block |
    | `fsdp.eval_loss` | any op | unit | the op computes the step's local mean loss, where an evaluation ends (the plan's `eval_end`; on micro-batch 0 only) |

    An `fsdp.unit` dictionary has exactly the keys `name` (non-empty
    string, the unit's name), `flat_numel` (`i64`, the unit's flat length:
    its parameters end to end, alignment gaps included), `padded_numel`
    (`i64`, at least `flat_numel` and a multiple of `group_size`: the
    flat buffer with its end padding),
    `group_size` (`i64` >= 1, the ranks the flat buffer is split over) and
    `params`, a non-empty array of dictionaries with exactly `name`
    (non-empty string, the parameter's name in the source model), `offset`
    (`i64`, its first element in the flat buffer) and `type` (a static
    tensor type of the argument's element type that ends within
    `flat_numel`). The argument holds one shard: `padded_numel /
    group_size` elements.

    Function results carry no `fsdp.` attribute.
  }];
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

class FSDP_Op<string mnemonic, list<Trait> traits = []>
    : Op<FSDP_Dialect, mnemonic, traits>;

def FSDP_FloatTensor : StaticShapeTensorOf<[F16, BF16, F32, F64]>;

#endif // FSDP_FSDP_BASE_TD
