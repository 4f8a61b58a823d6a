//===- CudaDevice.cpp - the CUDA backend's device -------------------------===//
//
// Device.h on the CUDA runtime API, one object per GPU (CudaDeviceImpl.h;
// its memory, graphs and marks are in files of their own). Streams are
// non-blocking cudaStream_t, each with its own cuBLAS handle (bound to it,
// with a workspace allocated up front so a captured GEMM allocates
// nothing) and the KernelContext its launches get; events are cudaEvent_t
// (without timing unless asked).
//
// Failures come from three places and all end as a stream's sticky
// failure, reported (then cleared) by synchronize:
// - a kernel family refusing its operands at enqueue (a Status): the
//   stream's failure, prefixed with the launch's name as on the CPU; the
//   stream skips its later work, and an event recorded after it carries
//   the failure to the streams that wait on it (host-side, at enqueue);
// - a value fault inside a kernel (KernelFault.h): one record per device,
//   read when a stream is synchronized and cleared (CudaMarks.cpp). The
//   GPU keeps running the kernels enqueued after it (they write nothing
//   out of bounds; the step fails anyway), so the fault is given to every
//   stream that still had work outstanding when it was read, each of which
//   reports it once;
// - a CUDA error: "cuda: <operation>: <cudaGetErrorString>", never an
//   abort. The thread's last error is cleared with it, so a later launch's
//   check does not pick it up.
//
// The step word: kernels that depend on the step (dropout) read it through
// ctx.step from device memory, so a captured step replays with the current
// value. beginStep writes it with an asynchronous copy on the stream it is
// given, from pinned host memory the device keeps (the copy reads it when
// it runs, which is before the next beginStep: the executor synchronizes
// its streams at the end of every step).
//
// Every entry point first makes the device's GPU current (cudaSetDevice):
// in-process ranks are threads, each driving its own GPU.
//
// Host streams (createHostStream, a plan's stream 3): a CudaStream holding
// a worker thread instead of a cudaStream_t (CudaHostStream.h); each entry
// point hands them over first, in a block of its own. An event remembers
// whether its latest record was on a host stream: host streams wait for
// either kind, GPU streams only for their own kind (the other is refused).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDeviceImpl.h"

#include "runtime/backends/cuda/CublasLibrary.h"
#if defined(FSDP_HAVE_NCCL)
#include "runtime/backends/cuda/NcclChannel.h"
#endif

#include <algorithm>
#include <chrono>
#include <thread>

namespace fsdp::rt {
namespace cuda {

namespace {

#define FSDP_CUBLAS_RETURN_IF_ERROR(call, what)                                                    \
  do {                                                                                             \
    if (cublasStatus_t fsdpBlasStatus_ = (call); fsdpBlasStatus_ != CUBLAS_STATUS_SUCCESS)         \
      return Status::error(cat("cuda: ", what, ": ", cuda::cublas().statusString(fsdpBlasStatus_)));     \
  } while (false)

/// cuBLAS's recommended workspace: 32 MiB on Hopper and later, 4 MiB
/// before. Set explicitly so captured GEMMs never allocate.
size_t blasWorkspaceBytes(int computeMajor) { return computeMajor >= 9 ? 32u << 20 : 4u << 20; }

} // namespace

Status CudaDevice::init() {
  FSDP_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal_), "cudaSetDevice(", ordinal_, ")");
  int major = 0;
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal_),
      "compute capability of GPU ", ordinal_);
  workspaceBytes_ = blasWorkspaceBytes(major);
  FSDP_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&transfer_, cudaStreamNonBlocking),
                            "cudaStreamCreateWithFlags");
  FSDP_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&fork_, cudaEventDisableTiming),
                            "cudaEventCreateWithFlags");
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaMalloc(reinterpret_cast<void **>(&fault_), sizeof(cuda::KernelFault)),
      "cudaMalloc of the fault record");
  FSDP_CUDA_RETURN_IF_ERROR(cudaMalloc(reinterpret_cast<void **>(&stepWord_), sizeof(uint64_t)),
                            "cudaMalloc of the step word");
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaMallocHost(reinterpret_cast<void **>(&stepHost_), sizeof(uint64_t)),
      "cudaMallocHost of the step word");
  *stepHost_ = 0;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(fault_, 0, sizeof(cuda::KernelFault), transfer_),
                            "zeroing the fault record");
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(stepWord_, 0, sizeof(uint64_t), transfer_),
                            "zeroing the step word");
  // The compiled step's kernels for its Fused chains (none registered:
  // none loaded; a GPU below sm_80 runs none of the backend's kernels).
  FSDP_RETURN_IF_ERROR(cuda::GeneratedPtx::load(ordinal_, generated_));
  return syncTransfer("setting up the device");
}

CudaDevice::~CudaDevice() {
  cudaSetDevice(ordinal_);
  for (cudaEvent_t join : joins_)
    cudaEventDestroy(join);
  if (fork_)
    cudaEventDestroy(fork_);
  if (transfer_)
    cudaStreamDestroy(transfer_);
  cudaFree(fault_);
  cudaFree(stepWord_);
  cudaFreeHost(stepHost_);
}

Status CudaDevice::createStream(std::unique_ptr<Stream> &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  auto s = std::make_unique<CudaStream>();
  s->device = this;
  FSDP_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking),
                            "cudaStreamCreateWithFlags");
  FSDP_CUBLAS_RETURN_IF_ERROR(cuda::cublas().create(&s->blas), "cublasCreate");
  FSDP_CUBLAS_RETURN_IF_ERROR(cuda::cublas().setStream(s->blas, s->stream), "cublasSetStream");
  FSDP_CUDA_RETURN_IF_ERROR(cudaMalloc(&s->workspace, workspaceBytes_), "cudaMalloc of the ",
                            workspaceBytes_, "-byte cuBLAS workspace");
  FSDP_CUBLAS_RETURN_IF_ERROR(cuda::cublas().setWorkspace(s->blas, s->workspace, workspaceBytes_),
                              "cublasSetWorkspace");
  s->context.stream = s->stream;
  s->context.blas = s->blas;
  s->context.tf32 = tf32_;
  s->context.step = stepWord_;
  s->context.fault = fault_;
  s->context.generated = generated_.get();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(s.get());
  }
  out = std::move(s);
  return Status::ok();
}

Status CudaDevice::createHostStream(std::unique_ptr<Stream> &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  auto s = std::make_unique<CudaStream>();
  s->device = this;
  s->host = std::make_unique<cuda::HostStream>(ordinal_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.push_back(s.get());
  }
  out = std::move(s);
  return Status::ok();
}

void CudaDevice::forget(CudaStream *stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
}

Status CudaDevice::createEvent(EventFlags flags, std::unique_ptr<Event> &out) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  auto e = std::make_unique<CudaEvent>(flags == EventFlags::Timing);
  e->ordinal = ordinal_;
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaEventCreateWithFlags(&e->event, e->timing ? cudaEventDefault : cudaEventDisableTiming),
      "cudaEventCreateWithFlags");
  out = std::move(e);
  return Status::ok();
}

Status CudaDevice::recordEvent(Stream &stream, Event &event) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  auto &e = static_cast<CudaEvent &>(event);
  if (s.host) {
    s.host->record(e.hostSide);
    return Status::ok();
  }
  e.hostSide.lastOnHost = false;
  // Recorded even on a failed stream, so a waiter never waits for
  // nothing; the failure travels with the record.
  e.failure = s.failure;
  s.pending = true;
  FSDP_CUDA_RETURN_IF_ERROR(cudaEventRecord(e.event, s.stream), "cudaEventRecord");
  return Status::ok();
}

Status CudaDevice::waitEvent(Stream &stream, Event &event) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  auto &e = static_cast<CudaEvent &>(event);
  if (s.host) {
    if (e.hostSide.lastOnHost)
      s.host->waitHost(e.hostSide);
    else
      s.host->waitDevice(e.event, e.failure);
    return Status::ok();
  }
  if (e.hostSide.lastOnHost)
    return Status::error("cuda: a GPU stream cannot wait for an event recorded on a host "
                         "stream (a plan's device streams never wait for its host stream)");
  if (s.failure.empty())
    s.failure = e.failure;
  s.pending = true;
  FSDP_CUDA_RETURN_IF_ERROR(cudaStreamWaitEvent(s.stream, e.event, 0), "cudaStreamWaitEvent");
  return Status::ok();
}

Status CudaDevice::copyAsync(Stream &stream, void *dst, const void *src, size_t bytes, CopyKind) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  if (s.host)
    return s.host->copy(dst, src, bytes);
  if (dst == src || bytes == 0 || !s.failure.empty())
    return Status::ok();
  s.pending = true;
  FSDP_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, s.stream),
                            "cudaMemcpyAsync of ", bytes, " bytes");
  return Status::ok();
}

Status CudaDevice::launch(Stream &stream, const Launch &l, uint64_t step) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  if (s.host) // the CPU's kernels take the step from here
    return s.host->launch(l, step);
  // The kernels read the step from the device word, not from here.
  if (step != *stepHost_)
    return Status::error(cat("cuda: ", l.name, ": launched for step ", step,
                             " but the device's step word holds ", *stepHost_,
                             " (Device::beginStep writes it)"));
  if (!s.failure.empty())
    return Status::ok(); // skipped, as the stream's later work is
  s.pending = true;
  cuda::KernelContext ctx = s.context;
  ctx.launch = launchId(l);
  if (Status k = cuda::launchKernel(l, ctx); !k)
    s.failure = std::string(l.name) + ": " + k.message();
  return Status::ok();
}

Status CudaDevice::synchronize(Stream &stream) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  CudaStream &s = cast(stream);
  if (s.host)
    return s.host->synchronize();
  std::string failure = std::move(s.failure);
  s.failure.clear();
  s.pending = false;
  if (Status watched = waitWatched(s); !watched && failure.empty())
    failure = watched.message();
  if (cudaError_t e = cudaStreamSynchronize(s.stream); e != cudaSuccess) {
    Status error = cudaFailure(e, "cudaStreamSynchronize");
    return failure.empty() ? error : Status::error(failure);
  }
  std::string fault;
  if (Status read = takeFault(fault); !read)
    return failure.empty() ? read : Status::error(failure);
  if (failure.empty())
    failure = fault;
  return failure.empty() ? Status::ok() : Status::error(failure);
}

Status CudaDevice::synchronize() {
  std::vector<CudaStream *> streams;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    streams = streams_;
  }
  Status first;
  for (CudaStream *s : streams)
    if (Status synced = synchronize(*s); first && !synced)
      first = synced;
  return first;
}

Status CudaDevice::elapsedSeconds(Event &start, Event &end, double &seconds) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  auto &from = static_cast<CudaEvent &>(start), &to = static_cast<CudaEvent &>(end);
  if (!from.timing || !to.timing)
    return Status::error("cuda: elapsedSeconds needs two timing events (EventFlags::Timing)");
  if (from.hostSide.lastOnHost || to.hostSide.lastOnHost) {
    if (!from.hostSide.lastOnHost || !to.hostSide.lastOnHost)
      return Status::error("cuda: elapsedSeconds between a host stream's event and a GPU "
                           "stream's: their clocks differ");
    std::chrono::steady_clock::time_point a, b;
    FSDP_RETURN_IF_ERROR(from.hostSide.event.completedAt(a));
    FSDP_RETURN_IF_ERROR(to.hostSide.event.completedAt(b));
    seconds = std::chrono::duration<double>(b - a).count();
    return Status::ok();
  }
  float ms = 0;
  FSDP_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, from.event, to.event),
                            "cudaEventElapsedTime");
  seconds = static_cast<double>(ms) * 1e-3;
  return Status::ok();
}

Status CudaDevice::beginStep(Stream &stream, uint64_t step) {
  FSDP_RETURN_IF_ERROR(makeCurrent());
  if (capturing_)
    return Status::error("cuda: beginStep while a step is being captured");
  CudaStream &s = cast(stream);
  if (s.host)
    return Status::error("cuda: beginStep on a host stream (the step word is the GPU's)");
  *stepHost_ = step;
  s.pending = true;
  FSDP_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(stepWord_, stepHost_, sizeof(uint64_t), cudaMemcpyHostToDevice, s.stream),
      "writing the step word");
  return Status::ok();
}

Status CudaDevice::createChannel(Communicator &group, std::unique_ptr<Channel> &out) {
#if defined(FSDP_HAVE_NCCL)
  FSDP_RETURN_IF_ERROR(makeCurrent());
  return cuda::createNcclChannel(ordinal_, group, out);
#else
  (void)group;
  (void)out;
  return Status::error("cuda: this build has no NCCL (nccl.h was not found when it was "
                       "configured), so --device=cuda runs one rank only");
#endif
}

Status CudaDevice::waitWatched(CudaStream &s) {
  std::vector<cuda::StreamWatcher *> watchers = std::move(s.watchers);
  s.watchers.clear();
  if (watchers.empty())
    return Status::ok();
  Status first;
  auto pollAll = [&] {
    for (cuda::StreamWatcher *w : watchers)
      if (Status p = w->poll(); first && !p)
        first = p;
  };
  while (first && cudaStreamQuery(s.stream) == cudaErrorNotReady) {
    pollAll();
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  pollAll();
  return first;
}

Status CudaDevice::makeCurrent() {
  FSDP_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal_), "cudaSetDevice(", ordinal_, ")");
  return Status::ok();
}

CudaStream::~CudaStream() {
  device->forget(this);
  cudaSetDevice(device->ordinal());
  if (blas)
    cuda::cublas().destroy(blas);
  cudaFree(workspace);
  if (stream)
    cudaStreamDestroy(stream);
}

} // namespace cuda

int countCudaDevices(std::string *why) {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    (void)cudaGetLastError();
    if (why)
      *why = cudaGetErrorString(e);
    return 0;
  }
  return count;
}

namespace cuda {

CUstream_st *nativeStream(Stream &stream) { return static_cast<CudaStream &>(stream).stream; }

std::string streamFailure(Stream &stream) { return static_cast<CudaStream &>(stream).failure; }

void failStream(Stream &stream, const std::string &failure) {
  auto &s = static_cast<CudaStream &>(stream);
  if (s.failure.empty())
    s.failure = failure;
}

void watchStream(Stream &stream, StreamWatcher &watcher) {
  auto &s = static_cast<CudaStream &>(stream);
  s.pending = true;
  if (std::find(s.watchers.begin(), s.watchers.end(), &watcher) == s.watchers.end())
    s.watchers.push_back(&watcher);
}

} // namespace cuda

Status createCudaDevice(const DeviceOptions &options, std::unique_ptr<Device> &out) {
  std::string why;
  const int count = countCudaDevices(&why);
  if (count == 0)
    return Status::error("cuda: " +
                         (why.empty() ? std::string("no CUDA-capable device is detected") : why));
  if (options.ordinal < 0 || options.ordinal >= count)
    return Status::error(cat("cuda: there is no GPU ", options.ordinal, ": this machine has ",
                             count, " (GPUs 0..", count - 1, ")"));
  // Streams create their cuBLAS handles: open the library first.
  const cuda::CublasLibrary *blas = nullptr;
  FSDP_RETURN_IF_ERROR(cuda::loadCublas(blas));
  auto device = std::make_unique<cuda::CudaDevice>(options);
  FSDP_RETURN_IF_ERROR(device->init());
  out = std::move(device);
  return Status::ok();
}

} // namespace fsdp::rt
