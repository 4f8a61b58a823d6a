//===- KernelTable.h - the plan's kernel contract as data -----------------===//
//
// Kernels.def, read as a table: for each plan kernel its name, how many
// operands, results and attributes an instruction of it carries, which
// operand may be absent, whether it is a collective, and its documented
// layout. The plan checker validates instructions by it, the compiler's op
// interface (dialects/nn/NNInterfaces.td) names kernels by the plan enum it
// is tied to, the cost model and the executor ask it whether a kernel is a
// collective, and docs are printed from it. The plan enum is only declared
// here, so including this header does not pull in FlatBuffers.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_KERNELTABLE_H
#define FSDP_RUNTIME_PLAN_KERNELTABLE_H

#include <cstddef>
#include <cstdint>

namespace fsdp::plan {
/// plan.fbs's `enum Kernel`, defined in plan_generated.h.
enum class Kernel : uint16_t;
} // namespace fsdp::plan

namespace fsdp::rt {

/// Special counts of Kernels.def rows (what each means is documented there).
enum KernelCount : int {
  kAny = -1,
  kRank = -2,
  kTwiceRank = -3,
  kOnePlusOptional = -4,
  kProgram = -5,
  kNoneOrTwo = -6,
  kOwnLayout = -7,
};

/// A row's Optional when no operand may be absent.
inline constexpr int kNoOptional = -1;

enum class KernelClass : uint8_t {
  Compute,    // a device kernel
  Collective, // runs through a communicator, on every rank of its groups
};

/// One row of Kernels.def.
struct KernelInfo {
  const char *name; // as plan.fbs spells it
  int minInputs, maxInputs, outputs, ints, floats;
  int optionalInput; // the operand that may be kNoBuffer, or kNoOptional
  KernelClass kernelClass;
  const char *operands;            // "(a, b) -> (c)", with `|none` on the optional one
  const char *intsDoc, *floatsDoc; // attribute layouts; "" when none
};

/// How many kernels the table (and the plan enum) has.
inline constexpr size_t kNumKernels = 0
#define FSDP_KERNEL(Name, ...) +1
#include "runtime/plan/Kernels.def"
    ;

/// The row of `kernel`; nullptr when the code is no kernel of this build.
const KernelInfo *kernelInfo(uint16_t kernel);
const KernelInfo *kernelInfo(plan::Kernel kernel);

/// The kernel's name as plan.fbs spells it ("unknown" for no kernel), for
/// messages and dumps.
const char *kernelName(uint16_t kernel);
const char *kernelName(plan::Kernel kernel);

/// Whether the kernel is a collective (AllGather, ReduceScatter, AllReduce).
bool isCollective(uint16_t kernel);

/// A collective's integer attributes read by their Kernels.def layout:
/// [reduction,] group_size, ranks... (AllGather has no reduction).
struct CollectiveGroups {
  int64_t reduction = 0; // 0 sum, 1 avg, 2 max; 0 for AllGather
  int64_t groupSize = 0;
  const int64_t *ranks = nullptr; // the world's ranks, group by group
  size_t numRanks = 0;
};

/// Splits a collective's ints; false when they are too few to hold the
/// reduction and the group size. The layout is only checked by checkPlan.
bool readCollectiveGroups(uint16_t kernel, const int64_t *ints, size_t numInts,
                          CollectiveGroups &out);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_KERNELTABLE_H
