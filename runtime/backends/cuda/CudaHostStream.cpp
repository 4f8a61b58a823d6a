//===- CudaHostStream.cpp - the CUDA device's host stream -----------------===//
//
// Every operation enqueues one item on the worker, as CpuDevice.cpp builds
// the CPU device's, so the host stream keeps Device.h's semantics (sticky
// failures, a record carries the stream's failure to its waiters). What
// differs is at the edges: operands are checked to be host memory when
// enqueued (cudaPointerGetAttributes), and a wait for a GPU stream polls
// its CUDA event from the worker.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaHostStream.h"

#include "runtime/backends/cpu/CpuLaunch.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace fsdp::rt::cuda {
namespace {

/// Whether `p` is memory only the GPU can read (cudaMalloc'ed); pinned,
/// managed and ordinary host memory are readable here.
bool onDeviceOnly(const void *p) {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    (void)cudaGetLastError(); // older runtimes fail on unregistered memory
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice;
}

/// Polls `event` until its latest record has completed. A sleep between
/// polls keeps a waiting rank's thread off the CPU the optimizer runs on.
Status pollEvent(cudaEvent_t event) {
  for (int polls = 0;; ++polls) {
    cudaError_t state = cudaEventQuery(event);
    if (state == cudaSuccess)
      return Status::ok();
    if (state != cudaErrorNotReady) {
      (void)cudaGetLastError();
      return Status::error(cat("cuda: host stream waiting for a GPU stream: cudaEventQuery: ",
                               cudaGetErrorString(state)));
    }
    if (polls < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

} // namespace

void HostStream::record(HostEventSide &event) {
  event.lastOnHost = true;
  const uint64_t sequence = event.event.addRecord();
  queue_.enqueue([&event, sequence](Status &status) { event.event.complete(sequence, status); });
}

void HostStream::waitHost(HostEventSide &event) {
  const uint64_t sequence = event.event.lastRecord();
  if (sequence == 0)
    return; // never recorded: complete
  queue_.enqueue([&event, sequence](Status &status) {
    if (!status)
      return;
    if (Status recorded = event.event.wait(sequence); !recorded)
      status = recorded;
  });
}

void HostStream::waitDevice(cudaEvent_t event, const std::string &failure) {
  queue_.enqueue([event, failure, ordinal = ordinal_](Status &status) {
    if (!status)
      return;
    if (!failure.empty()) {
      status = Status::error(failure);
      return;
    }
    if (cudaError_t e = cudaSetDevice(ordinal); e != cudaSuccess) {
      (void)cudaGetLastError();
      status = Status::error(cat("cuda: host stream: cudaSetDevice(", ordinal,
                                 "): ", cudaGetErrorString(e)));
      return;
    }
    if (Status polled = pollEvent(event); !polled)
      status = polled;
  });
}

Status HostStream::copy(void *dst, const void *src, size_t bytes) {
  if (dst == src || bytes == 0)
    return Status::ok();
  if (onDeviceOnly(dst) || onDeviceOnly(src))
    return Status::error(cat("cuda: a host stream copies host memory only, but the copy of ",
                             bytes, " bytes ", onDeviceOnly(src) ? "reads" : "writes",
                             " GPU memory"));
  queue_.enqueue([dst, src, bytes](Status &status) {
    if (status)
      std::memcpy(dst, src, bytes);
  });
  return Status::ok();
}

Status HostStream::launch(const Launch &l, uint64_t step) {
  for (int i = 0; i < l.numInputs; ++i)
    if (l.inputs[i].data && onDeviceOnly(l.inputs[i].data))
      return Status::error(cat("cuda: ", l.name, ": a host stream's kernels read host memory only, "
                                                 "but operand ",
                               i, " is in GPU memory"));
  for (int i = 0; i < l.numOutputs; ++i)
    if (onDeviceOnly(l.outputs[i].data))
      return Status::error(cat("cuda: ", l.name, ": a host stream's kernels write host memory "
                                                 "only, but result ",
                               i, " is in GPU memory"));
  queue_.enqueue([&l, step](Status &status) {
    if (!status)
      return;
    if (Status s = launchCpuKernel(l, step); !s)
      status = Status::error(std::string(l.name) + ": " + s.message());
  });
  return Status::ok();
}

} // namespace fsdp::rt::cuda
