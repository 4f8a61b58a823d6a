//===- CudaMarks.cpp - the words a CUDA device's host reads: marks, faults -===//
//
// Progress marks (Device::setMark) are 32-bit words of pinned host memory:
// setMark enqueues a 4-byte copy of a device word holding 1 into the
// mark's word, which runs in the stream's order, is captured as a memcpy
// node (so every replay sets the mark again; the executor clears the marks
// before each step) and lands in memory the host reads directly. Events
// would not do: a replayed graph's event record reads as complete from the
// previous replay until the new one reaches it.
//
// The fault record (KernelFault.h) is the one device word kernels write a
// value fault into, naming the launch by a number (launchId) the device
// maps back to the launch's name when a synchronize reads the record
// (takeFault), clears it, and hands the fault to every stream with work
// outstanding.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDeviceImpl.h"

#include "runtime/plan/KernelTable.h"

#include <algorithm>

namespace fsdp::rt::cuda {
namespace {

struct CudaMarkSet final : MarkSet {
  int ordinal = 0;
  size_t count = 0;
  uint32_t *words = nullptr; // pinned host memory, one per mark
  uint32_t *one = nullptr;   // device memory holding 1, every setMark's source
  size_t size() const override { return count; }
  bool isSet(size_t index) const override {
    return __atomic_load_n(&words[index], __ATOMIC_ACQUIRE) != 0;
  }
  void clear() override {
    for (size_t i = 0; i < count; ++i)
      __atomic_store_n(&words[i], 0u, __ATOMIC_RELAXED);
  }
  ~CudaMarkSet() override {
    cudaSetDevice(ordinal);
    cudaFreeHost(words);
    cudaFree(one);
  }
};

} // namespace

Status CudaDevice::createMarks(size_t count, std::unique_ptr<MarkSet> &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  auto m = std::make_unique<CudaMarkSet>();
  m->ordinal = ordinal_;
  m->count = count;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMallocHost(reinterpret_cast<void **>(&m->words),
                                           std::max<size_t>(count, 1) * sizeof(uint32_t)),
                            "cudaMallocHost of ", count, " progress marks");
  m->clear();
  FSDP_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void **>(&m->one), sizeof(uint32_t)),
                            "cudaMalloc of the progress marks' source");
  const uint32_t one = 1;
  FSDP_RETURN_IF_ERROR(blockingCopy(m->one, &one, sizeof(one), "writing the marks' source"));
  out = std::move(m);
  return Status::ok();
}

Status CudaDevice::setMark(Stream &stream, MarkSet &marks, size_t index) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  auto &m = static_cast<CudaMarkSet &>(marks);
  if (index >= m.count)
    return Status::error(cat("cuda: setMark: mark ", index, " of ", m.count));
  // Enqueued on a failed stream too: the mark says how far the stream
  // got, and the copy cannot fail the way the stream did.
  s.pending = true;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(&m.words[index], m.one, sizeof(uint32_t),
                                            cudaMemcpyDeviceToHost, s.stream),
                            "setting progress mark ", index);
  return Status::ok();
}

uint32_t CudaDevice::launchId(const Launch &l) {
  auto it = launchIds_.find(&l);
  if (it != launchIds_.end()) {
    const LaunchName &known = launchNames_[it->second];
    if (known.kernel == l.kernel && known.name == l.name)
      return it->second;
  }
  const auto id = static_cast<uint32_t>(launchNames_.size());
  launchNames_.push_back({l.name, l.kernel});
  launchIds_[&l] = id;
  return id;
}

Status CudaDevice::takeFault(std::string &message) {
  cuda::KernelFault fault{};
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&fault, fault_, sizeof(fault), cudaMemcpyDeviceToHost, transfer_),
      "reading the fault record");
  FSDP_RETURN_IF_ERROR(syncTransfer("reading the fault record"));
  if (fault.code == 0)
    return Status::ok();
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(fault_, 0, sizeof(fault), transfer_),
                            "clearing the fault record");
  FSDP_RETURN_IF_ERROR(syncTransfer("clearing the fault record"));
  if (fault.launch < launchNames_.size()) {
    const LaunchName &l = launchNames_[fault.launch];
    message = l.name + ": " + cuda::describeFault(fault, kernelName(l.kernel));
  } else {
    message = cuda::describeFault(fault, cat("launch ", fault.launch).c_str());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (CudaStream *s : streams_)
    if (s->pending && s->failure.empty())
      s->failure = message;
  return Status::ok();
}

} // namespace fsdp::rt::cuda
