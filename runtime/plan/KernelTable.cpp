//===- KernelTable.cpp - the plan's kernel contract as data ---------------===//
//
// Expands Kernels.def into the table and ties it to plan.fbs's enum at
// compile time: every row must name an enum value at the row's own
// position, and the rows must cover the enum to its last value. A kernel
// appended to plan.fbs without a row, a row without an enum value or rows
// out of enum order fail to build here.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/KernelTable.h"

#include "runtime/plan/plan_generated.h"

namespace fsdp::rt {
namespace {

/// Each row's position in Kernels.def.
enum class Row : uint16_t {
#define FSDP_KERNEL(Name, ...) Name,
#include "runtime/plan/Kernels.def"
};

#define FSDP_KERNEL(Name, ...)                                                                     \
  static_assert(static_cast<uint16_t>(Row::Name) == static_cast<uint16_t>(plan::Kernel::Name),     \
                "Kernels.def: row " #Name " is not at the position of its plan.fbs enum value");
#include "runtime/plan/Kernels.def"

static_assert(kNumKernels == static_cast<size_t>(plan::Kernel::MAX) + 1,
              "Kernels.def: plan.fbs's enum Kernel has values without a row");

constexpr KernelInfo kTable[] = {
#define FSDP_KERNEL(Name, MinInputs, MaxInputs, Outputs, Ints, Floats, Optional, Class, Operands,  \
                    IntsDoc, FloatsDoc)                                                            \
  {#Name,    MinInputs,          MaxInputs, Outputs, Ints,     Floats,                             \
   Optional, KernelClass::Class, Operands,  IntsDoc, FloatsDoc},
#include "runtime/plan/Kernels.def"
};
static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumKernels);

} // namespace

const KernelInfo *kernelInfo(uint16_t kernel) {
  return kernel < kNumKernels ? &kTable[kernel] : nullptr;
}

const KernelInfo *kernelInfo(plan::Kernel kernel) {
  return kernelInfo(static_cast<uint16_t>(kernel));
}

const char *kernelName(uint16_t kernel) {
  const KernelInfo *info = kernelInfo(kernel);
  return info ? info->name : "unknown";
}

const char *kernelName(plan::Kernel kernel) { return kernelName(static_cast<uint16_t>(kernel)); }

bool isCollective(uint16_t kernel) {
  const KernelInfo *info = kernelInfo(kernel);
  return info && info->kernelClass == KernelClass::Collective;
}

bool readCollectiveGroups(uint16_t kernel, const int64_t *ints, size_t numInts,
                          CollectiveGroups &out) {
  size_t head = static_cast<plan::Kernel>(kernel) == plan::Kernel::AllGather ? 1 : 2;
  if (numInts < head)
    return false;
  out.reduction = head == 2 ? ints[0] : 0;
  out.groupSize = ints[head - 1];
  out.ranks = ints + head;
  out.numRanks = numInts - head;
  return true;
}

} // namespace fsdp::rt
