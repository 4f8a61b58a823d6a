//===- KernelFault.cpp - value faults as error text -----------------------===//
//
// The host side of KernelFault.h: the message for a recorded fault, worded
// as the CPU kernels word the same error.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/KernelFault.h"

#include "runtime/support/Status.h"

namespace fsdp::rt::cuda {

std::string describeFault(const KernelFault &f, const char *op) {
  switch (static_cast<FaultCode>(f.code)) {
  case FaultCode::None: return "";
  case FaultCode::IndexOutOfRange:
    return cat(op, ": index ", f.value, " (at position ", f.position,
               " of the indices) is out of range for a dimension of size ", f.limit);
  case FaultCode::LabelOutOfRange:
    return cat(op, ": label ", f.value, " at position ", f.position, " is outside [0, ", f.limit,
               ")");
  case FaultCode::DivisionByZero:
    return cat(op, ": integer division by zero at position ", f.position);
  case FaultCode::PositionOutOfRange:
    return cat(op, ": position ", f.value, " is outside a dimension of ", f.limit);
  case FaultCode::StepOutOfRange: return cat(op, ": step ", f.value, " (steps count from 1)");
  }
  return cat(op, ": fault code ", f.code);
}

} // namespace fsdp::rt::cuda
