//===- KernelFault.h - data errors found inside CUDA kernels --------------===//
//
// The CPU kernels return a Status for what depends on run-time values (a
// gather index or a label out of range, an integer division by zero). A
// CUDA kernel cannot return one and must not trap (a trap poisons the
// context), so it records the first such fault of a step in a KernelFault
// in device memory and writes nothing it cannot compute. The device reads
// the record when the host synchronizes at the end of the step (the SIMT
// build after each launch) and turns it into the same kind of error the
// CPU backend gives, naming the instruction that faulted.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_KERNELFAULT_H
#define FSDP_RUNTIME_BACKENDS_CUDA_KERNELFAULT_H

#include "runtime/math/HostDevice.h"

#include <cstdint>
#include <string>

namespace fsdp::rt::cuda {

enum class FaultCode : int32_t {
  None = 0,
  IndexOutOfRange,  // gather and its gradient: value, position, limit = the axis size
  LabelOutOfRange,  // losses: value, position, limit = the class count
  DivisionByZero,   // integer division: position
  PositionOutOfRange, // slice gradient: value = the position, limit = the dim size
  StepOutOfRange,     // adamw: value = the step read from device memory (steps count from 1)
};

/// The first fault of a step. `launch` identifies the instruction (the
/// device's own numbering of its launches).
struct KernelFault {
  int32_t code;
  uint32_t launch;
  int64_t value, position, limit;
};

/// "gather: index 7 (at position 3) is outside [-5, 5)"-style text, with
/// `op` naming the kernel family.
std::string describeFault(const KernelFault &fault, const char *op);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_KERNELFAULT_H
