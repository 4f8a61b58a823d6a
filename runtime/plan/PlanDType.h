//===- PlanDType.h - the plan schema's element types as the runtime's -----===//
//
// plan.fbs numbers its DType as runtime/support/DType.h does, so that the
// runtime's io and kernels (which do not link the schema) and the plan
// convert by value. This header is the one place that relies on it: the
// static_asserts below fail the build if either list changes alone, and
// the two functions are the only conversions, instead of a static_cast at
// every use.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_PLANDTYPE_H
#define FSDP_RUNTIME_PLAN_PLANDTYPE_H

#include "runtime/plan/plan_generated.h"
#include "runtime/support/DType.h"

#include <cstdint>

namespace fsdp::rt {

#define FSDP_SAME_DTYPE(NAME)                                                                      \
  static_assert(static_cast<uint8_t>(plan::DType::NAME) == static_cast<uint8_t>(DType::NAME),   \
                "plan.fbs and runtime/support/DType.h number " #NAME " differently")
FSDP_SAME_DTYPE(F32);
FSDP_SAME_DTYPE(F64);
FSDP_SAME_DTYPE(F16);
FSDP_SAME_DTYPE(BF16);
FSDP_SAME_DTYPE(I8);
FSDP_SAME_DTYPE(I16);
FSDP_SAME_DTYPE(I32);
FSDP_SAME_DTYPE(I64);
FSDP_SAME_DTYPE(U8);
FSDP_SAME_DTYPE(U16);
FSDP_SAME_DTYPE(U32);
FSDP_SAME_DTYPE(U64);
FSDP_SAME_DTYPE(Bool);
#undef FSDP_SAME_DTYPE
static_assert(static_cast<int>(plan::DType::MAX) + 1 == kNumDTypes,
              "plan.fbs and runtime/support/DType.h list different element types");

/// A plan buffer's element type as the runtime's.
inline DType toDType(plan::DType t) { return static_cast<DType>(static_cast<uint8_t>(t)); }
/// The runtime's element type as the plan writes it.
inline plan::DType toPlanDType(DType t) {
  return static_cast<plan::DType>(static_cast<uint8_t>(t));
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_PLANDTYPE_H
