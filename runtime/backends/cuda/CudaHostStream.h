//===- CudaHostStream.h - the CUDA device's host stream -------------------===//
//
// A plan's host stream (runtime/plan/PlanCheck.h: --offload=cpu's optimizer
// updates, whose buffers all lie in the pinned Host region) on the CUDA
// device: a CPU stream (backends/cpu/CpuStream.h, one worker thread per
// rank) that runs the CPU backend's kernels (CpuLaunch.h) on host memory,
// so the update reads the gradient the copy stream brought over PCIe in
// host memory, beside the GPU, instead of a GPU kernel reading it back
// across the link on the compute stream.
//
// Ordering with the GPU's streams, one way only:
// - the host stream waits for a CUDA event by polling it from its worker
//   (cudaEventQuery, with short sleeps rather than cudaEventSynchronize's
//   spin, which would hold a core per rank). It waits for the event's
//   latest record when the worker gets there, which is the one enqueued
//   before the wait in a plan's step (each event is recorded once per
//   step, and the step ends with every stream synchronized); a later
//   record would only make it wait longer. A failure the recording stream
//   had when the record was enqueued fails the host stream at the wait;
// - records on the host stream order other host streams, but a GPU stream
//   cannot wait for one (the GPU does not wait for a host thread): the
//   device refuses such a wait, and plans never ask for one (PlanCheck
//   refuses a device stream waiting on the host stream; the executor's
//   end-of-step synchronize orders the next step after it).
// Host streams cannot be captured into CUDA graphs: plans with one run
// eagerly (Executor::useGraphs).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDAHOSTSTREAM_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDAHOSTSTREAM_H

#include "runtime/backends/cpu/CpuStream.h"
#include "runtime/device/Device.h"

#include <cuda_runtime_api.h>

#include <string>

namespace fsdp::rt::cuda {

/// The host side of a CUDA event: its records on host streams.
struct HostEventSide {
  explicit HostEventSide(bool timing) : event(timing) {}
  cpu::CpuEvent event;
  /// Whether the event's latest record was enqueued on a host stream.
  bool lastOnHost = false;
};

class HostStream {
public:
  /// A worker for GPU `ordinal` (made current on the worker for the CUDA
  /// calls it makes).
  explicit HostStream(int ordinal) : ordinal_(ordinal) {}

  /// Enqueues a record of `event`'s host side.
  void record(HostEventSide &event);
  /// Enqueues a wait for `event`'s latest record on a host stream.
  void waitHost(HostEventSide &event);
  /// Enqueues a wait for CUDA event `event`, last recorded on a GPU stream
  /// whose failure (empty: none) was `failure` at the time.
  void waitDevice(cudaEvent_t event, const std::string &failure);
  /// Enqueues a copy between host buffers; device memory is refused.
  Status copy(void *dst, const void *src, size_t bytes);
  /// Enqueues `launch` on the CPU backend's kernels; an operand in device
  /// memory is refused (a CPU kernel cannot read it).
  Status launch(const Launch &launch, uint64_t step);
  /// CpuStream::synchronize: waits, returns the first failure and clears it.
  Status synchronize() { return queue_.synchronize(); }

private:
  const int ordinal_;
  cpu::CpuStream queue_;
};

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDAHOSTSTREAM_H
