//===- CudaMemory.cpp - the CUDA device's memory and blocking copies ------===//
//
// Device memory is one cudaMalloc per plan region, zeroed before it is
// handed out; the Host region (--offload=cpu) is pinned host memory
// (cudaMallocHost), which the GPU's copies reach directly. Blocking copies
// (and the fault record's reads, CudaMarks.cpp) go through a private
// transfer stream that the call synchronizes: cudaMemcpy on the legacy
// stream may return before a pageable copy has landed, and the device's
// streams do not wait for it. memoryInfo reports what CUDA holds beyond
// the plan's regions (the context, cuBLAS workspaces, NCCL's buffers).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDeviceImpl.h"

#include <algorithm>
#include <cstring>

namespace fsdp::rt::cuda {

Status CudaDevice::allocate(size_t bytes, DeviceMemory &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  // Never a null base, even for an empty region: a null operand means
  // "absent" to the kernels (cudaMalloc aligns to 256 bytes).
  const size_t reserved = std::max<size_t>(bytes, 256);
  void *p = nullptr;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMalloc(&p, reserved), "cudaMalloc of ", bytes, " bytes");
  if (cudaError_t e = cudaMemsetAsync(p, 0, reserved, transfer_); e != cudaSuccess) {
    cudaFree(p);
    return cudaFailure(e, cat("zeroing ", bytes, " bytes"));
  }
  if (Status s = syncTransfer("zeroing new memory"); !s) {
    cudaFree(p);
    return s;
  }
  allocated_ += reserved;
  out = {p, bytes};
  return Status::ok();
}

void CudaDevice::release(DeviceMemory &memory) {
  if (memory.base) {
    cudaSetDevice(ordinal_);
    cudaFree(memory.base);
    allocated_ -= std::max<size_t>(memory.size, 256);
  }
  memory = {};
}

Status CudaDevice::allocateHost(size_t bytes, DeviceMemory &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  void *p = nullptr;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, std::max<size_t>(bytes, 64)), "cudaMallocHost of ",
                            bytes, " bytes");
  std::memset(p, 0, bytes);
  out = {p, bytes};
  return Status::ok();
}

void CudaDevice::releaseHost(DeviceMemory &memory) {
  if (memory.base) {
    cudaSetDevice(ordinal_);
    cudaFreeHost(memory.base);
  }
  memory = {};
}

Status CudaDevice::copyToDevice(void *dst, const void *src, size_t bytes) {
  return blockingCopy(dst, src, bytes, "copy to the device");
}

Status CudaDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  return blockingCopy(dst, src, bytes, "copy to the host");
}

Status CudaDevice::memoryInfo(DeviceMemoryInfo &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&out.freeBytes, &out.totalBytes), "cudaMemGetInfo");
  const size_t used = out.totalBytes - out.freeBytes;
  out.overheadBytes = used > allocated_ ? used - allocated_ : 0;
  return Status::ok();
}

Status CudaDevice::syncTransfer(const char *what) {
  FSDP_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(transfer_), what);
  return Status::ok();
}

Status CudaDevice::blockingCopy(void *dst, const void *src, size_t bytes, const char *what) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  if (bytes == 0 || dst == src)
    return Status::ok();
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, transfer_), what,
                            " of ", bytes, " bytes");
  return syncTransfer(what);
}

} // namespace fsdp::rt::cuda
