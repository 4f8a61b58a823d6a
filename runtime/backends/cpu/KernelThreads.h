//===- KernelThreads.h - a rank's intra-op threads for the CPU kernels ----===//
//
// Each CPU device (one per rank) owns a small pool sized like the rank's
// BLAS threads, and its streams make it the current pool of the thread
// that runs a kernel (KernelThreads::Scope). Kernels split their index
// ranges with parallelFor: contiguous chunks, one per thread, the caller
// taking part; small ranges, a thread without a pool, or a pool already
// busy (another stream of the device, a nested call) run inline. A GEMM is
// one kernel, so the pool sleeps while OpenBLAS's own threads run it and
// the two never compete for the rank's cores. Kernels split only where
// every output element is computed by the same operations whatever the
// chunks, so results are bitwise independent of the thread count; no
// state is shared between the pools of in-process ranks.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELTHREADS_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELTHREADS_H

#include "runtime/support/Status.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

namespace fsdp::rt::cpu {

/// The threads a rank's kernels use: OPENBLAS_NUM_THREADS or
/// OMP_NUM_THREADS when set, else OpenBLAS's current count (which fsdp-run
/// sets to this machine's cores / its ranks). At least 1.
int rankKernelThreads();

class KernelThreads {
public:
  /// A pool of `threads` threads in all: the caller and threads - 1 workers.
  explicit KernelThreads(int threads);
  ~KernelThreads();
  KernelThreads(const KernelThreads &) = delete;
  KernelThreads &operator=(const KernelThreads &) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }
  /// Jobs split across the pool so far (tests check that kernels split).
  uint64_t jobsRun() const { return jobsRun_.load(std::memory_order_relaxed); }

  /// Makes `pool` (may be null: inline) the calling thread's pool while alive.
  class Scope {
  public:
    explicit Scope(KernelThreads *pool);
    ~Scope();
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    KernelThreads *previous_;
  };

  /// The calling thread's pool, or null.
  static KernelThreads *current();

  using ChunkFn = Status (*)(const void *context, int64_t begin, int64_t end);
  /// Runs fn over `chunks` contiguous pieces of [begin, end) on the pool's
  /// threads and returns the lowest failing chunk's status. False (nothing
  /// run) when the pool is busy.
  bool tryRun(int64_t begin, int64_t end, int64_t chunks, ChunkFn fn, const void *context,
              Status &result);

private:
  void workerLoop();
  void runChunks();

  std::vector<std::thread> workers_;
  /// Set by the one caller running a job; a flag, not a mutex, since a
  /// nested call from that caller must see it taken too.
  std::atomic<bool> busy_{false};
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  /// Atomics, so a worker or caller spinning briefly before it sleeps
  /// (KernelThreads.cpp) sees a new job or the last check-out without the
  /// mutex; they still change under mutex_, so a sleeper never misses one.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> active_{0}; // workers not yet done with the current job
  bool shutdown_ = false;
  // The current job, written under mutex_ before the workers wake.
  ChunkFn fn_ = nullptr;
  const void *context_ = nullptr;
  int64_t begin_ = 0, end_ = 0, chunks_ = 0;
  std::atomic<int64_t> next_{0};
  std::atomic<uint64_t> jobsRun_{0};
  Status error_;
  int64_t errorChunk_ = -1;
};

/// fn(b, e) -> Status (or void) over contiguous pieces [b, e) of [begin,
/// end), on the current pool's threads, each piece at least `grain` long;
/// inline when the range is shorter than two grains. Returns the lowest
/// failing piece's status.
template <typename Fn> Status parallelFor(int64_t begin, int64_t end, int64_t grain, const Fn &fn) {
  auto call = [&](int64_t b, int64_t e) -> Status {
    if constexpr (std::is_void_v<decltype(fn(b, e))>) {
      fn(b, e);
      return Status::ok();
    } else {
      return fn(b, e);
    }
  };
  const int64_t n = end - begin;
  KernelThreads *pool = KernelThreads::current();
  if (pool && pool->size() > 1 && n >= 2 * grain) {
    const int64_t chunks = std::min<int64_t>(pool->size(), n / std::max<int64_t>(grain, 1));
    auto thunk = [](const void *context, int64_t b, int64_t e) -> Status {
      return (*static_cast<const decltype(call) *>(context))(b, e);
    };
    Status result;
    if (pool->tryRun(begin, end, chunks, thunk, &call, result))
      return result;
  }
  return n > 0 ? call(begin, end) : Status::ok();
}

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELTHREADS_H
