//===- CudaGraph.cpp - the CUDA device's step capture and replay ----------===//
//
// Capture (CUDA graphs, Device.h): cudaStreamBeginCapture on the origin
// stream in thread-local mode (other ranks' threads, each on its own GPU,
// may allocate meanwhile), and every other stream joins through a fork
// event recorded on the origin; at the end each of them records a join
// event the origin waits for, as capture requires. A graph remembers the
// channels its captured work enqueued on, so the synchronize after each
// replay polls them as it would after eager work. A host stream's work
// (a worker thread's) cannot be captured, and a graph replays on a GPU
// stream only.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDeviceImpl.h"

#include <algorithm>

namespace fsdp::rt::cuda {
namespace {

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

} // namespace

Status CudaDevice::beginCapture(Stream *const *streams, size_t count) {
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

Status CudaDevice::endCapture(std::unique_ptr<Graph> &out) {
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

Status CudaDevice::replay(Stream &stream, Graph &graph) {
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

} // namespace fsdp::rt::cuda
