//===- PlanCheck.h - semantic verification of a plan ----------------------===//
//
// Private to the runtime. After the FlatBuffers verifier has established
// that every field can be read, checkPlan establishes what the executor
// relies on: buffers fit their regions and match dtype x shape, operand
// indices are valid, each kernel has the operands, outputs and attributes
// its layout in plan.fbs prescribes, and bindings and parameters point at
// real buffers. Errors name the plan file and the offending entry.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SRC_PLANCHECK_H
#define FSDP_RUNTIME_SRC_PLANCHECK_H

#include "fsdp/runtime/Status.h"

#include <string>

namespace fsdp::plan {
struct Plan;
} // namespace fsdp::plan

namespace fsdp::rt {

Status checkPlan(const plan::Plan &plan, const std::string &path);

/// The kernel's name as plan.fbs spells it, for messages and dumps.
const char *kernelName(uint16_t kernel);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SRC_PLANCHECK_H
