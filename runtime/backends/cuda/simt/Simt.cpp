//===- Simt.cpp - blocks of fibers with barriers ----------------------------===//
//
// The emulation's scheduler (Simt.h). A block's threads are Boost.Context
// fibers resumed round-robin by the launching OS thread. A fiber yields
// only inside a barrier; a barrier of a scope (the block, or one warp)
// opens when every live thread of the scope has arrived, and a thread that
// returns leaves its scopes (which may open them). Warp exchanges are two
// warp barriers around a write and a read of per-lane slots, so a lane
// never reads a slot before its owner wrote it or after it moved on.
//
// Stacks come from a per-OS-thread pool (mmap'd with a guard page below
// each, so an overflow faults instead of corrupting a neighbour) and are
// reused by every later block: a launch allocates only when a block has
// more threads than any before it on this thread.
//
// Every stack switch is announced to ASan and TSan (FiberSanitizer.h), and
// ASan's fake stacks and TSan's fibers pass from fibers that ended to new
// ones. Boost's entry frame of a fiber never returns, so under ASan this
// file is compiled without fake stack frames (the frame would stay in a
// reused fake stack) and under TSan without function entry/exit hooks (it
// would stay on a reused fiber's shadow call stack).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/simt/Simt.h"
#include "runtime/backends/cuda/simt/FiberSanitizer.h"

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
thread_local dim3 blockDim;
thread_local dim3 gridDim;

namespace fsdp::simt {
namespace {

namespace ctx = boost::context;

constexpr size_t kStackBytes = 128 * 1024;
constexpr unsigned kMaxBlockThreads = 1024;

/// Stacks for this OS thread's fibers, never returned to the system.
class StackPool {
public:
  ~StackPool() {
    for (ctx::stack_context &sc : free_)
      munmap(static_cast<char *>(sc.sp) - sc.size - guard(), sc.size + guard());
  }
  ctx::stack_context take() {
    if (!free_.empty()) {
      ctx::stack_context sc = free_.back();
      free_.pop_back();
      forgetStack(stackRange(sc));
      return sc;
    }
    void *base = mmap(nullptr, kStackBytes + guard(), PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw std::bad_alloc();
    mprotect(base, guard(), PROT_NONE); // stacks grow down into the guard
    ctx::stack_context sc;
    sc.size = kStackBytes;
    sc.sp = static_cast<char *>(base) + guard() + kStackBytes;
    return sc;
  }
  void give(ctx::stack_context sc) { free_.push_back(sc); }
  static StackRange stackRange(const ctx::stack_context &sc) {
    return {static_cast<const char *>(sc.sp) - sc.size, sc.size};
  }

private:
  static size_t guard() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }
  std::vector<ctx::stack_context> free_;
};

thread_local StackPool stackPool;
thread_local HandlePool fakeStackPool, tsanFiberPool;

/// Boost.Context's StackAllocator over the pool.
struct PooledStack {
  ctx::stack_context allocate() { return stackPool.take(); }
  void deallocate(ctx::stack_context &sc) { stackPool.give(sc); }
};

/// A barrier scope: the block, or one warp.
struct Scope {
  unsigned live = 0, arrived = 0;
  uint64_t generation = 0;
};

/// One block being run on this OS thread.
class Block {
public:
  Block(unsigned threads, void (*body)(void *), void *context)
      : threads_(threads), warps_((threads + warpSize - 1) / warpSize), fibers_(threads),
        callers_(threads), ids_(threads), slots_(threads), done_(threads, 0) {
    block_.live = threads;
    fakeStackPool.reserve(threads);
    for (unsigned w = 0; w < warps_.size(); ++w)
      warps_[w].live = std::min<unsigned>(warpSize, threads - w * warpSize);
    for (unsigned t = 0; t < threads; ++t) {
      // The stack is taken here, not by Boost, so the sanitizers can be told
      // its bounds; Boost hands it back to the pool when the fiber ends.
      ctx::stack_context sc = stackPool.take();
      ids_[t] = createFiberIdentity(StackPool::stackRange(sc), tsanFiberPool);
      // Creating a fiber jumps onto its stack and back once (Boost's entry
      // frame): TSan must see that frame on the new fiber.
      switchTsanFiber(ids_[t]);
      fibers_[t] = ctx::fiber(std::allocator_arg, ctx::preallocated(sc.sp, sc.size, sc),
                              PooledStack(), [this, t, body, context](ctx::fiber &&caller) {
                                afterSwitch(fakeStackPool.take(), &scheduler_.stack);
                                callers_[t] = std::move(caller);
                                body(context);
                                void *fakeStack = nullptr; // for the next fiber
                                beforeSwitch(&fakeStack, scheduler_);
                                fakeStackPool.give(fakeStack);
                                return std::move(callers_[t]);
                              });
      switchTsanFiber(scheduler_);
    }
  }
  ~Block() {
    for (FiberIdentity &id : ids_)
      releaseFiberIdentity(id, tsanFiberPool);
  }

  void run() {
    unsigned remaining = threads_;
    while (remaining > 0) {
      const uint64_t before = progress_;
      for (unsigned t = 0; t < threads_; ++t) {
        if (done_[t])
          continue;
        current_ = t;
        threadIdx = {t % blockDim.x, (t / blockDim.x) % blockDim.y, t / (blockDim.x * blockDim.y)};
        void *fakeStack = nullptr;
        beforeSwitch(&fakeStack, ids_[t]);
        fibers_[t] = std::move(fibers_[t]).resume();
        afterSwitch(fakeStack, nullptr);
        if (!fibers_[t]) {
          releaseFiberIdentity(ids_[t], tsanFiberPool);
          done_[t] = 1;
          --remaining;
          leave(block_);
          leave(warps_[t / warpSize]);
        }
      }
      if (remaining > 0 && progress_ == before) {
        std::fprintf(stderr, "simt: the threads of block (%u, %u, %u) wait at barriers that "
                             "cannot open (a __syncthreads or warp operation not reached by "
                             "every live thread)\n",
                     blockIdx.x, blockIdx.y, blockIdx.z);
        std::abort();
      }
    }
  }

  void syncBlock() { wait(block_); }
  void syncWarp() { wait(warps_[current_ / warpSize]); }

  uint64_t shuffle(uint64_t bits, ShuffleMode mode, int operand, int width) {
    const unsigned lane = current_ % warpSize, warpBase = current_ - lane;
    slots_[current_] = bits;
    syncWarp();
    width = width <= 0 || width > warpSize ? warpSize : width;
    const int segment = static_cast<int>(lane) / width * width;
    int source = static_cast<int>(lane);
    switch (mode) {
    case ShuffleMode::Index: source = segment + ((operand % width) + width) % width; break;
    case ShuffleMode::Up: source = static_cast<int>(lane) - operand; break;
    case ShuffleMode::Down: source = static_cast<int>(lane) + operand; break;
    case ShuffleMode::Xor: source = static_cast<int>(lane) ^ operand; break;
    }
    uint64_t result = bits;
    if (source >= segment && source < segment + width) {
      const unsigned t = warpBase + static_cast<unsigned>(source);
      if (t < threads_ && !done_[t])
        result = slots_[t];
    }
    syncWarp(); // every lane has read before any lane writes again
    return result;
  }

  unsigned ballot(bool predicate) {
    const unsigned lane = current_ % warpSize, warpBase = current_ - lane;
    slots_[current_] = predicate;
    syncWarp();
    unsigned mask = 0;
    for (unsigned l = 0; l < warpSize; ++l)
      if (warpBase + l < threads_ && !done_[warpBase + l] && slots_[warpBase + l])
        mask |= 1u << l;
    syncWarp();
    return mask;
  }

private:
  void wait(Scope &scope) {
    ++progress_;
    const uint64_t generation = scope.generation;
    if (++scope.arrived == scope.live) {
      open(scope);
      return;
    }
    while (scope.generation == generation) { // yield until the last arrival opens it
      void *fakeStack = nullptr;
      beforeSwitch(&fakeStack, scheduler_);
      callers_[current_] = std::move(callers_[current_]).resume();
      afterSwitch(fakeStack, &scheduler_.stack);
    }
  }
  void leave(Scope &scope) {
    ++progress_;
    --scope.live;
    if (scope.arrived > 0 && scope.arrived == scope.live)
      open(scope);
  }
  void open(Scope &scope) {
    scope.arrived = 0;
    ++scope.generation;
  }

  unsigned threads_;
  Scope block_;
  std::vector<Scope> warps_;
  std::vector<ctx::fiber> fibers_, callers_;
  // The sanitizers' view: each CUDA thread's fiber, and the launching
  // thread's own stack (its bounds learnt from the first switch away).
  std::vector<FiberIdentity> ids_;
  FiberIdentity scheduler_ = currentThreadIdentity();
  std::vector<uint64_t> slots_;
  std::vector<uint8_t> done_;
  unsigned current_ = 0;
  uint64_t progress_ = 0;
};

thread_local Block *currentBlock = nullptr;

Block &block() {
  if (!currentBlock) {
    std::fprintf(stderr, "simt: a device function ran outside a kernel launch\n");
    std::abort();
  }
  return *currentBlock;
}

} // namespace

uint64_t shuffle(uint64_t bits, ShuffleMode mode, int operand, int width) {
  return block().shuffle(bits, mode, operand, width);
}

unsigned ballot(bool predicate) { return block().ballot(predicate); }

const char *runGrid(dim3 grid, dim3 blockShape, void (*body)(void *), void *context) {
  const uint64_t threads = uint64_t(blockShape.x) * blockShape.y * blockShape.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0)
    return "invalid configuration argument (an empty grid or block)";
  if (threads > kMaxBlockThreads || grid.y > 65535 || grid.z > 65535)
    return "invalid configuration argument (a block of more than 1024 threads, or a grid "
           "beyond its limits)";
  // A launch from inside a kernel is not supported (no dynamic parallelism).
  if (currentBlock)
    return "a kernel launched from device code";
  const dim3 savedGrid = gridDim, savedBlock = blockDim;
  gridDim = grid;
  blockDim = blockShape;
  for (unsigned z = 0; z < grid.z; ++z)
    for (unsigned y = 0; y < grid.y; ++y)
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        Block b(static_cast<unsigned>(threads), body, context);
        currentBlock = &b;
        b.run();
        currentBlock = nullptr;
      }
  gridDim = savedGrid;
  blockDim = savedBlock;
  return nullptr;
}

} // namespace fsdp::simt

void __syncthreads() { fsdp::simt::block().syncBlock(); }
void __syncwarp(unsigned) { fsdp::simt::block().syncWarp(); }
