//===- AccumulationCost.h - what each gradient-accumulation choice costs --===//
//
// Under --grad-accum=K every unit (flat group) accumulates its gradient over
// the K micro-batches one of two ways (compiler/Transforms/
// AccumulateMicroBatches.h): `each` reduces every micro-batch's gradient and
// holds a reduced-shard accumulator; `last` holds the unsharded flat
// gradient across micro-batches and reduces once. Per unit this prices both
// from the plan's layout: the accumulator's bytes per rank (held from the
// first micro-batch's gradient to the optimizer) and the predicted time of
// the unit's reductions and accumulating adds per step, from the cost
// model's collective and kernel costs (datasheet rates, not measurements).
// --accum-reduce=auto chooses from these numbers, and --emit=report prints
// them beside the choice.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_ACCUMULATIONCOST_H
#define FSDP_COMPILER_ANALYSIS_ACCUMULATIONCOST_H

#include "compiler/Analysis/CostModel.h"
#include "compiler/Analysis/MemoryReport.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fsdp {

/// Both choices for every unit of `report` (its layout, strategy, reduce
/// dtype and world size) at K micro-batches on `device`; `chosen` maps a
/// unit to its choice.
std::vector<UnitAccumulation>
accumulationCosts(const MemoryReport &report, uint32_t microBatches,
                  const std::map<std::string, std::string> &chosen,
                  const DeviceProfile &device);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_ACCUMULATIONCOST_H
