//===- PlanDump.h - a plan as text ----------------------------------------===//
//
// `fsdp-run PLAN --dump` prints a verified plan in a stable, line-oriented
// text form (header, buffers with region and offset, instructions with
// operands and attributes, parameters, bindings), which is what the lit
// tests FileCheck to see what the compiler emitted.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_PLANDUMP_H
#define FSDP_RUNTIME_PLAN_PLANDUMP_H

#include "runtime/plan/PlanFile.h"

#include <string>

namespace fsdp::rt {

std::string dumpPlan(const LoadedPlan &plan);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_PLANDUMP_H
