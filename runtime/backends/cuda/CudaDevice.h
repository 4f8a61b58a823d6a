//===- CudaDevice.h - the CUDA backend's device ---------------------------===//
//
// The GPU behind Device (runtime/device/Device.h): device memory from one
// cudaMalloc per plan region, pinned host memory for the Host region,
// streams and events as cudaStream_t and cudaEvent_t, kernels through
// CudaLaunch.h with cuBLAS for the GEMMs, and step capture as CUDA graphs
// (the executor records a step once and replays it, Executor.h). Built
// only with FSDP_ENABLE_CUDA; drivers create it by name ("cuda") through
// the device registry, which also asks countCudaDevices for the default
// device and the GPU count.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H

#include "runtime/device/Device.h"
#include "runtime/device/DeviceRegistry.h"

#include <memory>
#include <string>

namespace fsdp::rt {

/// The GPU `options.ordinal`; an error with CUDA's own message when there
/// is no such GPU or no driver.
Status createCudaDevice(const DeviceOptions &options, std::unique_ptr<Device> &out);

/// The GPUs CUDA sees (cudaGetDeviceCount, which creates no context); 0
/// when there is no GPU or no driver, with CUDA's reason in `why`.
int countCudaDevices(std::string *why = nullptr);

// --- What a channel enqueuing on a CUDA device's streams needs of them
// (NcclChannel.cpp); nothing else uses these.

} // namespace fsdp::rt

struct CUstream_st; // cudaStream_t's pointee, without CUDA's headers

namespace fsdp::rt::cuda {

/// Something a stream's synchronize polls while the stream's work is
/// outstanding, and once more when it is done: an NCCL communicator whose
/// asynchronous errors (a peer that failed) would otherwise leave the
/// stream's kernels waiting forever. A failure returned by poll() becomes
/// the stream's (the watcher aborts its group first, which ends its
/// kernels, so the synchronize returns).
class StreamWatcher {
public:
  virtual ~StreamWatcher() = default;
  virtual Status poll() = 0;
};

/// The cudaStream_t of `stream`, a stream of a CUDA device.
CUstream_st *nativeStream(Stream &stream);
/// The stream's sticky failure (empty: none).
std::string streamFailure(Stream &stream);
/// Makes `failure` the stream's unless it has one: a collective refused
/// when enqueued, reported by the stream's synchronize like a kernel's.
void failStream(Stream &stream, const std::string &failure);
/// Polls `watcher` at the stream's next synchronize (and, for work
/// captured into a graph, at the synchronize after each replay). The
/// watcher must outlive the stream's work.
void watchStream(Stream &stream, StreamWatcher &watcher);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
