//===- CudaDevice.cpp - the CUDA backend's device -------------------------===//
//
// Device.h on the CUDA runtime API, one object per GPU. Streams are
// non-blocking cudaStream_t, each with its own cuBLAS handle (bound to it,
// with a workspace allocated up front so a captured GEMM allocates
// nothing) and the KernelContext its launches get; events are cudaEvent_t
// (without timing unless asked); memory is cudaMalloc'ed and zeroed, the
// Host region pinned (cudaMallocHost). Blocking copies and the fault
// record's reads go through a private transfer stream that the call
// synchronizes: cudaMemcpy on the legacy stream may return before a
// pageable copy has landed, and our streams do not wait for it.
//
// Failures come from three places and all end as a stream's sticky
// failure, reported (then cleared) by synchronize:
// - a kernel family refusing its operands at enqueue (a Status): the
//   stream's failure, prefixed with the launch's name as on the CPU; the
//   stream skips its later work, and an event recorded after it carries
//   the failure to the streams that wait on it (host-side, at enqueue);
// - a value fault inside a kernel (KernelFault.h): one record per device,
//   read when a stream is synchronized and cleared. The GPU keeps running
//   the kernels enqueued after it (they write nothing out of bounds; the
//   step fails anyway), so the fault is given to every stream that still
//   had work outstanding when it was read, each of which reports it once;
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
// Capture (CUDA graphs, Device.h): cudaStreamBeginCapture on the origin
// stream in thread-local mode (other ranks' threads, each on its own GPU,
// may allocate meanwhile), and every other stream joins through a fork
// event recorded on the origin; at the end each of them records a join
// event the origin waits for, as capture requires.
//
// Progress marks (Device::setMark) are 32-bit words of pinned host memory:
// setMark enqueues a 4-byte copy of a device word holding 1 into the
// mark's word, which runs in the stream's order, is captured as a memcpy
// node (so every replay sets the mark again; the executor clears the marks
// before each step) and lands in memory the host reads directly. Events
// would not do: a replayed graph's event record reads as complete from the
// previous replay until the new one reaches it.
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

#include "runtime/backends/cuda/CudaDevice.h"

#include "runtime/backends/cuda/CublasLibrary.h"
#include "runtime/backends/cuda/CudaHostStream.h"
#include "runtime/backends/cuda/CudaLaunch.h"
#include "runtime/backends/cuda/GeneratedPtx.h"
#if defined(FSDP_HAVE_NCCL)
#include "runtime/backends/cuda/NcclChannel.h"
#endif
#include "runtime/plan/KernelTable.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace fsdp::rt {
namespace {

/// "cuda: WHAT: CUDA's message" for a failed call. Clears the thread's last
/// error, which would otherwise surface at the next kernel launch's check.
Status cudaFailure(cudaError_t error, const std::string &what) {
  (void)cudaGetLastError();
  return Status::error(cat("cuda: ", what, ": ", cudaGetErrorString(error)));
}

/// Returns "cuda: <what...>: <CUDA's message>" when `call` fails.
#define FSDP_CUDA_RETURN_IF_ERROR(call, ...)                                                       \
  do {                                                                                             \
    if (cudaError_t fsdpCudaError_ = (call); fsdpCudaError_ != cudaSuccess)                        \
      return cudaFailure(fsdpCudaError_, cat(__VA_ARGS__));                                        \
  } while (false)

#define FSDP_CUBLAS_RETURN_IF_ERROR(call, what)                                                    \
  do {                                                                                             \
    if (cublasStatus_t fsdpBlasStatus_ = (call); fsdpBlasStatus_ != CUBLAS_STATUS_SUCCESS)         \
      return Status::error(cat("cuda: ", what, ": ", cuda::cublas().statusString(fsdpBlasStatus_)));     \
  } while (false)

/// cuBLAS's recommended workspace: 32 MiB on Hopper and later, 4 MiB
/// before. Set explicitly so captured GEMMs never allocate.
size_t blasWorkspaceBytes(int computeMajor) { return computeMajor >= 9 ? 32u << 20 : 4u << 20; }

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

struct CudaGraph final : Graph {
  int ordinal = 0;
  cudaGraphExec_t exec = nullptr;
  /// The channels the captured work enqueued on: watched again at the
  /// synchronize after each replay.
  std::vector<cuda::StreamWatcher *> watchers;
  ~CudaGraph() override {
    cudaSetDevice(ordinal);
    cudaGraphExecDestroy(exec);
  }
};

class CudaDevice final : public Device {
public:
  explicit CudaDevice(const DeviceOptions &options)
      : ordinal_(options.ordinal), tf32_(options.tf32) {}

  /// The context, the fault record, the step word and the transfer stream.
  Status init() {
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

  ~CudaDevice() override {
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

  const char *name() const override { return "cuda"; }

  // --- Memory.

  Status allocate(size_t bytes, DeviceMemory &out) override {
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

  void release(DeviceMemory &memory) override {
    if (memory.base) {
      cudaSetDevice(ordinal_);
      cudaFree(memory.base);
      allocated_ -= std::max<size_t>(memory.size, 256);
    }
    memory = {};
  }

  Status allocateHost(size_t bytes, DeviceMemory &out) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    void *p = nullptr;
    FSDP_CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, std::max<size_t>(bytes, 64)), "cudaMallocHost of ",
                              bytes, " bytes");
    std::memset(p, 0, bytes);
    out = {p, bytes};
    return Status::ok();
  }

  void releaseHost(DeviceMemory &memory) override {
    if (memory.base) {
      cudaSetDevice(ordinal_);
      cudaFreeHost(memory.base);
    }
    memory = {};
  }

  // Copies name no direction: with unified addressing CUDA tells device
  // memory, pinned and pageable host memory apart itself, and the Host
  // region (pinned) is reached through the same calls as device memory.
  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    return blockingCopy(dst, src, bytes, "copy to the device");
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    return blockingCopy(dst, src, bytes, "copy to the host");
  }

  // --- Streams and events.

  Status createStream(std::unique_ptr<Stream> &out) override {
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

  // --- Host streams (CudaHostStream.h).

  Status createHostStream(std::unique_ptr<Stream> &out) override {
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

  /// Called by a stream's destructor.
  void forget(CudaStream *stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    streams_.erase(std::remove(streams_.begin(), streams_.end(), stream), streams_.end());
  }

  int ordinal() const { return ordinal_; }

  Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    auto e = std::make_unique<CudaEvent>(flags == EventFlags::Timing);
    e->ordinal = ordinal_;
    FSDP_CUDA_RETURN_IF_ERROR(
        cudaEventCreateWithFlags(&e->event, e->timing ? cudaEventDefault : cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
    out = std::move(e);
    return Status::ok();
  }

  Status recordEvent(Stream &stream, Event &event) override {
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

  Status waitEvent(Stream &stream, Event &event) override {
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

  Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes, CopyKind) override {
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

  Status launch(Stream &stream, const Launch &l, uint64_t step) override {
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

  Status synchronize(Stream &stream) override {
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

  Status synchronize() override {
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

  Status elapsedSeconds(Event &start, Event &end, double &seconds) override {
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

  // --- Progress marks.

  Status createMarks(size_t count, std::unique_ptr<MarkSet> &out) override {
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

  Status setMark(Stream &stream, MarkSet &marks, size_t index) override {
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

  // --- The step word, memory, capture.

  Status beginStep(Stream &stream, uint64_t step) override {
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

  Status memoryInfo(DeviceMemoryInfo &out) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    FSDP_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&out.freeBytes, &out.totalBytes), "cudaMemGetInfo");
    const size_t used = out.totalBytes - out.freeBytes;
    out.overheadBytes = used > allocated_ ? used - allocated_ : 0;
    return Status::ok();
  }

  bool canCapture() const override { return true; }

  Status beginCapture(Stream *const *streams, size_t count) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    if (capturing_)
      return Status::error("cuda: beginCapture while a capture is under way");
    if (count == 0)
      return Status::error("cuda: beginCapture needs at least the origin stream");
    for (size_t i = 0; i < count; ++i)
      if (cast(*streams[i]).host)
        return Status::error("cuda: a host stream's work cannot be captured into a CUDA graph");
    captured_.clear();
    for (size_t i = 0; i < count; ++i)
      captured_.push_back(&cast(*streams[i]));
    while (joins_.size() + 1 < count) {
      cudaEvent_t join = nullptr;
      FSDP_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&join, cudaEventDisableTiming),
                                "cudaEventCreateWithFlags");
      joins_.push_back(join);
    }
    cudaStream_t origin = captured_[0]->stream;
    FSDP_CUDA_RETURN_IF_ERROR(cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal),
                              "cudaStreamBeginCapture");
    capturing_ = true;
    // The other streams join the capture by waiting for its start.
    cudaError_t e = cudaEventRecord(fork_, origin);
    for (size_t i = 1; e == cudaSuccess && i < count; ++i)
      e = cudaStreamWaitEvent(captured_[i]->stream, fork_, 0);
    if (e != cudaSuccess) {
      Status failed = cudaFailure(e, "joining the streams to the capture");
      std::unique_ptr<Graph> discarded;
      (void)endCapture(discarded);
      return failed;
    }
    return Status::ok();
  }

  Status endCapture(std::unique_ptr<Graph> &out) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    if (!capturing_)
      return Status::error("cuda: endCapture without beginCapture");
    capturing_ = false;
    cudaStream_t origin = captured_[0]->stream;
    // Every stream rejoins the origin (capture fails on unjoined work).
    cudaError_t joined = cudaSuccess;
    for (size_t i = 1; joined == cudaSuccess && i < captured_.size(); ++i) {
      joined = cudaEventRecord(joins_[i - 1], captured_[i]->stream);
      if (joined == cudaSuccess)
        joined = cudaStreamWaitEvent(origin, joins_[i - 1], 0);
    }
    cudaGraph_t graph = nullptr;
    cudaError_t ended = cudaStreamEndCapture(origin, &graph);
    std::string failure;
    std::vector<cuda::StreamWatcher *> watchers;
    for (CudaStream *s : captured_) {
      if (failure.empty())
        failure = s->failure;
      for (cuda::StreamWatcher *w : s->watchers)
        if (std::find(watchers.begin(), watchers.end(), w) == watchers.end())
          watchers.push_back(w);
    }
    captured_.clear();
    Status result;
    if (!failure.empty())
      result = Status::error(failure); // stays on its stream for synchronize too
    else if (joined != cudaSuccess)
      result = cudaFailure(joined, "joining the streams at the end of the capture");
    else if (ended != cudaSuccess)
      result = cudaFailure(ended, "cudaStreamEndCapture");
    if (result && graph) {
      auto g = std::make_unique<CudaGraph>();
      g->ordinal = ordinal_;
      g->watchers = std::move(watchers);
      if (cudaError_t e = cudaGraphInstantiate(&g->exec, graph, 0); e != cudaSuccess)
        result = cudaFailure(e, "cudaGraphInstantiate");
      else
        out = std::move(g);
    }
    if (graph)
      cudaGraphDestroy(graph);
    if (!failure.empty() || ended != cudaSuccess)
      (void)cudaGetLastError();
    return result;
  }

  Status replay(Stream &stream, Graph &graph) override {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    CudaStream &s = cast(stream);
    if (s.host)
      return Status::error("cuda: a graph replays on a GPU stream, not a host stream");
    if (!s.failure.empty())
      return Status::ok();
    s.pending = true;
    auto &g = static_cast<CudaGraph &>(graph);
    for (cuda::StreamWatcher *w : g.watchers)
      cuda::watchStream(s, *w);
    FSDP_CUDA_RETURN_IF_ERROR(cudaGraphLaunch(g.exec, s.stream), "cudaGraphLaunch");
    return Status::ok();
  }

  // --- Collectives (NCCL).

  Status createChannel(Communicator &group, std::unique_ptr<Channel> &out) override {
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

private:
  static CudaStream &cast(Stream &stream) { return static_cast<CudaStream &>(stream); }

  /// Waits for the stream's work while polling the channels that enqueued
  /// on it (their asynchronous errors would leave it waiting forever),
  /// then polls them once more; their first failure. A stream no channel
  /// used is left to cudaStreamSynchronize alone.
  Status waitWatched(CudaStream &s) {
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

  Status makeCurrent() {
    FSDP_CUDA_RETURN_IF_ERROR(cudaSetDevice(ordinal_), "cudaSetDevice(", ordinal_, ")");
    return Status::ok();
  }

  Status syncTransfer(const char *what) {
    FSDP_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(transfer_), what);
    return Status::ok();
  }

  Status blockingCopy(void *dst, const void *src, size_t bytes, const char *what) {
    FSDP_RETURN_IF_ERROR(makeCurrent());
    if (bytes == 0 || dst == src)
      return Status::ok();
    FSDP_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, transfer_), what,
                              " of ", bytes, " bytes");
    return syncTransfer(what);
  }

  /// The number the fault record names `l` by: its index among the
  /// launches seen, the same every step for the same Launch. A Launch at
  /// the address of a destroyed one with another name gets a new number.
  uint32_t launchId(const Launch &l) {
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

  /// Reads and clears the fault record: `message` is "<launch name>:
  /// <fault>" (empty: no fault). Every other stream with work outstanding
  /// gets the fault as its failure, since its work may depend on the
  /// faulted kernel's output.
  Status takeFault(std::string &message) {
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

CudaStream::~CudaStream() {
  device->forget(this);
  cudaSetDevice(device->ordinal());
  if (blas)
    cuda::cublas().destroy(blas);
  cudaFree(workspace);
  if (stream)
    cudaStreamDestroy(stream);
}

} // namespace

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
  auto device = std::make_unique<CudaDevice>(options);
  FSDP_RETURN_IF_ERROR(device->init());
  out = std::move(device);
  return Status::ok();
}

} // namespace fsdp::rt
