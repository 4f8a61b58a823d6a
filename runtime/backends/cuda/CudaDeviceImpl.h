//===- CudaDeviceImpl.h - the CUDA device's objects, for its files --------===//
//
// The CUDA backend's device (CudaDevice.h's createCudaDevice) is one class
// whose parts live in one file each, as IREE's HAL keeps one object per
// file: streams, events, launches and synchronization in CudaDevice.cpp,
// memory and blocking copies in CudaMemory.cpp, capture and replay in
// CudaGraph.cpp, progress marks and the fault record in CudaMarks.cpp.
// This header is what those files share (the classes; CudaStatus.h turns
// a failed CUDA call into a Status); nothing outside them includes it, so
// CUDA's headers stay out of everything else.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICEIMPL_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICEIMPL_H

#include "runtime/backends/cuda/CudaDevice.h"

#include "runtime/backends/cuda/CudaHostStream.h"
#include "runtime/backends/cuda/CudaLaunch.h"
#include "runtime/backends/cuda/CudaStatus.h"
#include "runtime/backends/cuda/GeneratedPtx.h"
#include "runtime/backends/cuda/KernelFault.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace fsdp::rt::cuda {

class CudaDevice;

struct CudaStream final : Stream {
  CudaDevice *device = nullptr;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void *workspace = nullptr;
  cuda::KernelContext context;
  /// The sticky failure (empty: none) and whether work was enqueued since
  /// the last synchronize (a value fault read meanwhile is this stream's too).
  std::string failure;
  bool pending = false;
  /// Channels whose collectives were enqueued since the last synchronize
  /// (cuda::watchStream): polled while it waits.
  std::vector<cuda::StreamWatcher *> watchers;
  /// A host stream's worker (createHostStream); none of the above is made.
  std::unique_ptr<cuda::HostStream> host;
  ~CudaStream() override;
};

struct CudaEvent final : Event {
  explicit CudaEvent(bool timing) : timing(timing), hostSide(timing) {}
  int ordinal = 0;
  cudaEvent_t event = nullptr;
  bool timing = false;
  /// The failure of the stream its latest record was enqueued on.
  std::string failure;
  /// Records on host streams (CudaHostStream.h).
  cuda::HostEventSide hostSide;
  ~CudaEvent() override {
    cudaSetDevice(ordinal);
    cudaEventDestroy(event);
  }
};

class CudaDevice final : public Device {
public:
  explicit CudaDevice(const DeviceOptions &options)
      : ordinal_(options.ordinal), tf32_(options.tf32) {}
  /// The context, the fault record, the step word and the transfer stream.
  Status init();
  ~CudaDevice() override;

  const char *name() const override { return "cuda"; }

  // --- Memory (CudaMemory.cpp).

  Status allocate(size_t bytes, DeviceMemory &out) override;
  void release(DeviceMemory &memory) override;
  Status allocateHost(size_t bytes, DeviceMemory &out) override;
  void releaseHost(DeviceMemory &memory) override;
  // Copies name no direction: with unified addressing CUDA tells device
  // memory, pinned and pageable host memory apart itself, and the Host
  // region (pinned) is reached through the same calls as device memory.
  Status copyToDevice(void *dst, const void *src, size_t bytes) override;
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status memoryInfo(DeviceMemoryInfo &out) override;

  // --- Streams, events, launches, the step word (CudaDevice.cpp).

  Status createStream(std::unique_ptr<Stream> &out) override;
  /// A host stream (CudaHostStream.h).
  Status createHostStream(std::unique_ptr<Stream> &out) override;
  /// Called by a stream's destructor.
  void forget(CudaStream *stream);
  int ordinal() const { return ordinal_; }
  Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) override;
  Status recordEvent(Stream &stream, Event &event) override;
  Status waitEvent(Stream &stream, Event &event) override;
  Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes, CopyKind) override;
  Status launch(Stream &stream, const Launch &l, uint64_t step) override;
  Status synchronize(Stream &stream) override;
  Status synchronize() override;
  Status elapsedSeconds(Event &start, Event &end, double &seconds) override;
  Status beginStep(Stream &stream, uint64_t step) override;
  /// Collectives (NCCL).
  Status createChannel(Communicator &group, std::unique_ptr<Channel> &out) override;

  // --- Progress marks (CudaMarks.cpp).

  Status createMarks(size_t count, std::unique_ptr<MarkSet> &out) override;
  Status setMark(Stream &stream, MarkSet &marks, size_t index) override;

  // --- Capture and replay (CudaGraph.cpp).

  bool canCapture() const override { return true; }
  Status beginCapture(Stream *const *streams, size_t count) override;
  Status endCapture(std::unique_ptr<Graph> &out) override;
  Status replay(Stream &stream, Graph &graph) override;

private:
  static CudaStream &cast(Stream &stream) { return static_cast<CudaStream &>(stream); }

  /// Waits for the stream's work while polling the channels that enqueued
  /// on it (their asynchronous errors would leave it waiting forever),
  /// then polls them once more; their first failure. A stream no channel
  /// used is left to cudaStreamSynchronize alone.
  Status waitWatched(CudaStream &s);
  Status makeCurrent();
  Status syncTransfer(const char *what);
  Status blockingCopy(void *dst, const void *src, size_t bytes, const char *what);

  /// The number the fault record names `l` by: its index among the
  /// launches seen, the same every step for the same Launch. A Launch at
  /// the address of a destroyed one with another name gets a new number
  /// (CudaMarks.cpp).
  uint32_t launchId(const Launch &l);
  /// Reads and clears the fault record: `message` is "<launch name>:
  /// <fault>" (empty: no fault). Every other stream with work outstanding
  /// gets the fault as its failure, since its work may depend on the
  /// faulted kernel's output.
  Status takeFault(std::string &message);

  struct LaunchName {
    std::string name;
    uint16_t kernel;
  };

  const int ordinal_;
  const bool tf32_;
  size_t workspaceBytes_ = 0;
  size_t allocated_ = 0; // device bytes allocate() holds
  cudaStream_t transfer_ = nullptr;
  cuda::KernelFault *fault_ = nullptr;
  uint64_t *stepWord_ = nullptr; // device
  uint64_t *stepHost_ = nullptr; // pinned: beginStep's copy source
  std::mutex mutex_;             // streams_ (streams are made and dropped by any thread)
  std::vector<CudaStream *> streams_;
  std::vector<LaunchName> launchNames_;
  std::unordered_map<const Launch *, uint32_t> launchIds_;
  bool capturing_ = false;
  std::vector<CudaStream *> captured_;
  cudaEvent_t fork_ = nullptr;
  std::vector<cudaEvent_t> joins_;
  std::unique_ptr<cuda::GeneratedPtx> generated_; // null: no generated PTX
};

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICEIMPL_H
