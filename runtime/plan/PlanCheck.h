//===- PlanCheck.h - semantic verification of a plan ----------------------===//
//
// Part of the plan library, so the compiler's analyses read plans by the
// same rules the runtime loads them with. After the FlatBuffers verifier has established
// that every field can be read, checkPlan establishes what the executor
// relies on: buffers fit their regions and match dtype x shape, operand
// indices are valid, each kernel has the operands, outputs and attributes
// its row in Kernels.def prescribes, and bindings and parameters point at
// real buffers. Distributed plans add the collectives' group layouts,
// Flatten's offsets, the shard units and where each sharded parameter lies
// in its unit; training plans with an evaluation prefix, that it runs alone
// without changing the training (EvalPrefixCheck.h). Errors name the plan
// file and the offending entry. The
// kernel table's helpers (kernelName, isCollective, readCollectiveGroups)
// come with this header for its users.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_PLANCHECK_H
#define FSDP_RUNTIME_PLAN_PLANCHECK_H

#include "runtime/plan/KernelTable.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fsdp::plan {
struct Plan;
} // namespace fsdp::plan

namespace fsdp::rt {

/// The plan's streams (Instruction.stream). The host stream runs on the
/// host, beside the device: a thread per rank that runs optimizer updates
/// whose buffers all lie in the Host region (--offload=cpu). Nothing on
/// the other streams waits for it within a step; the end-of-step
/// synchronize orders the next step after it.
inline constexpr uint8_t kComputeStream = 0, kCommStream = 1, kCopyStream = 2, kHostStream = 3;
inline constexpr int kMaxStreams = 4;

Status checkPlan(const plan::Plan &plan, const std::string &path);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_PLANCHECK_H
