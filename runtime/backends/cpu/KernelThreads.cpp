//===- KernelThreads.cpp - the rank's intra-op pool -----------------------===//
//
// Workers sleep on a condition variable between jobs, after spinning for
// at most kSpin (20 us) in case the next job comes at once, as it does
// between a step's small kernels: a futex wake-up and the caller's wait
// for the check-outs cost more than such a kernel on a virtual machine,
// while 20 us is too short to take a noticeable share of the cores from
// OpenBLAS's threads when a GEMM comes next. The caller spins the same way
// for the last check-out before it sleeps.
// A job is published under the mutex with a new generation; every worker
// takes part in every job, so the caller waits until each has checked out
// before the next job reuses the fields. Chunks are handed out by an atomic
// counter; which thread runs a chunk does not matter, since a chunk's
// results depend only on its range.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelThreads.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

extern "C" int openblas_get_num_threads(void);

namespace fsdp::rt::cpu {
namespace {

thread_local KernelThreads *currentPool = nullptr;

constexpr std::chrono::microseconds kSpin{20};

/// Spins until `ready()` or kSpin has passed; whether it became ready.
template <typename Ready> bool spinUntil(const Ready &ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready())
      return true;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > deadline)
      return ready();
  }
}

int positiveEnv(const char *name) {
  const char *value = std::getenv(name);
  return value ? std::atoi(value) : 0;
}

} // namespace

int rankKernelThreads() {
  for (const char *name : {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"})
    if (int n = positiveEnv(name); n > 0)
      return n;
  return std::max(1, openblas_get_num_threads());
}

KernelThreads::KernelThreads(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

KernelThreads::~KernelThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

KernelThreads::Scope::Scope(KernelThreads *pool) : previous_(currentPool) { currentPool = pool; }
KernelThreads::Scope::~Scope() { currentPool = previous_; }

KernelThreads *KernelThreads::current() { return currentPool; }

bool KernelThreads::tryRun(int64_t begin, int64_t end, int64_t chunks, ChunkFn fn,
                           const void *context, Status &result) {
  bool idle = false;
  if (!busy_.compare_exchange_strong(idle, true, std::memory_order_acquire))
    return false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = fn;
    context_ = context;
    begin_ = begin;
    end_ = end;
    chunks_ = chunks;
    next_.store(0, std::memory_order_relaxed);
    error_ = Status::ok();
    errorChunk_ = -1;
    active_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  runChunks();
  auto allDone = [&] { return active_.load(std::memory_order_acquire) == 0; };
  spinUntil(allDone);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, allDone);
  result = error_;
  lock.unlock();
  jobsRun_.fetch_add(1, std::memory_order_relaxed);
  busy_.store(false, std::memory_order_release);
  return true;
}

void KernelThreads::runChunks() {
  const int64_t n = end_ - begin_;
  for (int64_t c; (c = next_.fetch_add(1, std::memory_order_relaxed)) < chunks_;) {
    Status s = fn_(context_, begin_ + n * c / chunks_, begin_ + n * (c + 1) / chunks_);
    if (!s) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (errorChunk_ < 0 || c < errorChunk_) {
        // Copied by message: a Status shares its text between copies.
        error_ = Status::error(s.message());
        errorChunk_ = c;
      }
    }
  }
}

void KernelThreads::workerLoop() {
  uint64_t seen = 0;
  auto newJob = [&] { return generation_.load(std::memory_order_acquire) != seen; };
  for (;;) {
    if (!spinUntil(newJob)) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return shutdown_ || newJob(); });
      if (shutdown_)
        return;
    }
    seen = generation_.load(std::memory_order_acquire);
    runChunks();
    if (active_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the mutex, so the caller cannot check and sleep in between.
      std::lock_guard<std::mutex> lock(mutex_);
      done_.notify_one();
    }
  }
}

} // namespace fsdp::rt::cpu
