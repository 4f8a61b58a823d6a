//===- PlanCheck.h - semantic verification of a plan ----------------------===//
//
// Part of the plan library, so the compiler's analyses read plans by the
// same rules the runtime loads them with. After the FlatBuffers verifier has established
// that every field can be read, checkPlan establishes what the executor
// relies on: buffers fit their regions and match dtype x shape, operand
// indices are valid, each kernel has the operands, outputs and attributes
// its layout in plan.fbs prescribes, and bindings and parameters point at
// real buffers. Distributed plans add the collectives' group layouts,
// Flatten's offsets, the shard units and where each sharded parameter lies
// in its unit. Errors name the plan file and the offending entry.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SRC_PLANCHECK_H
#define FSDP_RUNTIME_SRC_PLANCHECK_H

#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fsdp::plan {
struct Plan;
} // namespace fsdp::plan

namespace fsdp::rt {

Status checkPlan(const plan::Plan &plan, const std::string &path);

/// The kernel's name as plan.fbs spells it, for messages and dumps.
const char *kernelName(uint16_t kernel);

/// Whether the kernel is a collective (AllGather, ReduceScatter, AllReduce).
bool isCollective(uint16_t kernel);

/// A collective's integer attributes read by their plan.fbs layout:
/// [reduction,] group_size, ranks... (AllGather has no reduction).
struct CollectiveGroups {
  int64_t reduction = 0; // 0 sum, 1 avg; 0 for AllGather
  int64_t groupSize = 0;
  const int64_t *ranks = nullptr; // the world's ranks, group by group
  size_t numRanks = 0;
};

/// Splits a collective's ints; false when they are too few to hold the
/// reduction and the group size. The layout is only checked by checkPlan.
bool readCollectiveGroups(uint16_t kernel, const int64_t *ints, size_t numInts,
                          CollectiveGroups &out);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SRC_PLANCHECK_H
