//===- KernelEncoding.cpp - fsdp ops as plan kernels ----------------------===//
//
// KernelOpInterface (dialects/nn/NNInterfaces.td) for the fsdp dialect's
// ops that run as plan kernels: the collectives with their group layout,
// flatten with its offsets, and the host/device copies, in the layout of
// their rows in runtime/plan/Kernels.def. flat_view has no kernel: the
// plan emitter makes it a view of its flat buffer.
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"

#include "runtime/plan/plan_generated.h"

using namespace mlir;

namespace fsdp::dist {
namespace {

using nn::KernelEncoding;
using plan::Kernel;

/// A collective's [reduction (0 sum, 1 avg, 2 max; reductions only), group_size,
/// ranks...].
template <typename Op> KernelEncoding collective(Op op, std::optional<StringRef> reduction) {
  KernelEncoding encoding;
  encoding.kernel = Op::getKernel();
  encoding.operands = {op.getInput()};
  if (reduction)
    encoding.ints.push_back(*reduction == "avg" ? 1 : *reduction == "max" ? 2 : 0);
  encoding.ints.push_back(op.getGroupSize());
  encoding.ints.insert(encoding.ints.end(), op.getGroups().begin(), op.getGroups().end());
  return encoding;
}

} // namespace

Kernel AllGatherOp::getKernel() { return Kernel::AllGather; }
KernelEncoding AllGatherOp::encodeKernel() { return collective(*this, std::nullopt); }
Kernel ReduceScatterOp::getKernel() { return Kernel::ReduceScatter; }
KernelEncoding ReduceScatterOp::encodeKernel() { return collective(*this, getReduction()); }
Kernel AllReduceOp::getKernel() { return Kernel::AllReduce; }
KernelEncoding AllReduceOp::encodeKernel() { return collective(*this, getReduction()); }

Kernel FlattenOp::getKernel() { return Kernel::Flatten; }
KernelEncoding FlattenOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands.assign(getInputs().begin(), getInputs().end());
  encoding.ints.assign(getOffsets().begin(), getOffsets().end());
  return encoding;
}

// Copies between device and host memory: the plan's regions say which.
Kernel ToDeviceOp::getKernel() { return Kernel::Copy; }
Kernel ToHostOp::getKernel() { return Kernel::Copy; }

} // namespace fsdp::dist
