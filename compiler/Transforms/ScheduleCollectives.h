//===- ScheduleCollectives.h - async collectives and all-gather prefetch --===//
//
// The scheduling stage (docs/design.md, step 5). It takes the sharded @train_step
// and fixes, at compile time, where every collective is issued and on which
// stream it runs:
//   - every fsdp collective gets `fsdp.stream = 1`: it runs asynchronously
//     on the communication stream. The plan emitter turns that into the
//     start/wait pair of the plan: the collective is issued at its position
//     (after every compute instruction before it), and the first compute
//     instruction that reads its result waits for it; reduce-scatters and
//     all-reduces thus overlap the backward of the next unit;
//   - with prefetch K, the all-gather of the unit K places ahead is issued
//     when a unit starts (right after that unit's own all-gather), in the
//     forward in unit order and in the backward in its reverse order, so
//     the gather overlaps the compute of the units in between;
//   - with limit L, a gather is not issued while L non-root units are
//     already gathered and not yet released (last reader not yet run); it
//     waits for the next release instead, and never goes later than where
//     the shard stage put it (K = 0).
//   - each optimizer update moves up behind the reduce-scatter (or
//     all-reduce) that follows the one reducing its gradient, so the
//     optimizer step overlaps the rest of the backward;
//   - under --offload=cpu, offload copies get `fsdp.stream = 2` (the copy
//     stream), and each update that reads host memory only and whose
//     results are the step's in-place updates `fsdp.stream = 3` (the host
//     stream: a host thread per rank runs it as soon as its gradient has
//     landed in host memory, while the device goes on with the backward).
// Only positions and streams change, so results are bitwise identical for
// every K and L.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_SCHEDULECOLLECTIVES_H
#define FSDP_COMPILER_TRANSFORMS_SCHEDULECOLLECTIVES_H

#include "compiler/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace fsdp {

/// Schedules the collectives of @train_step in `module` (a no-op on a step
/// without collectives) with the pass's options, declared in Passes.td:
/// prefetch K (units gathered ahead of the one computing) and
/// limit-all-gathers L (non-root units in full at once; 0: no limit).
/// Fails on a negative prefetch or limit.
mlir::LogicalResult scheduleCollectives(mlir::ModuleOp module,
                                        const ScheduleCollectivesPassOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_SCHEDULECOLLECTIVES_H
