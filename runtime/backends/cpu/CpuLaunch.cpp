//===- CpuLaunch.cpp - plan kernels to CPU kernel calls -------------------===//
//
// The CPU backend's decoding of a planned instruction: the kernel contract's
// one decoding (runtime/backends/LaunchDecoding.inc) calling the functions
// of CpuKernels.h. Kept apart from the device (CpuDevice.cpp), which owns
// memory, streams and events, so the device's execution order and the
// kernel contract change independently.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuLaunch.h"

#include "runtime/backends/LaunchDecoding.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/plan/plan_generated.h"

// Every kernel has a case (LaunchDecoding.inc).
#pragma GCC diagnostic error "-Wswitch"

namespace fsdp::rt {

Status launchCpuKernel(const Launch &l, uint64_t step) {
  using namespace decoding;
  using plan::Kernel;
  const TensorRef *in = l.inputs, *out = l.outputs;
#define FSDP_CALL(fn, ...) cpu::fn(__VA_ARGS__)
#define FSDP_DROPOUT_STEP step,
#include "runtime/backends/LaunchDecoding.inc"
#undef FSDP_CALL
#undef FSDP_DROPOUT_STEP
  return Status::error(cat("cpu: kernel ", l.kernel, " is not implemented"));
}

} // namespace fsdp::rt
