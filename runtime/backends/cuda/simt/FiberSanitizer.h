//===- FiberSanitizer.h - the SIMT scheduler's stack switches, told to ASan/TSan -===//
//
// The SIMT emulation (Simt.cpp) switches stacks behind the compiler's back:
// Boost.Context jumps between the launching thread's stack and one stack
// per CUDA thread. AddressSanitizer keeps per-stack state (the stack's
// bounds, its fake stack for use-after-return) and ThreadSanitizer a shadow
// call stack and a vector clock per thread; neither sees a jump it was not
// told about, and they then report frames on the wrong stack or crash. So
// every switch is announced: beforeSwitch on the stack being left,
// afterSwitch first thing on the stack reached (Boost 1.74's fcontext
// fibers, Debian's, carry no such annotations). TSan fibers switch with
// synchronisation: the CUDA threads of a block run one at a time on one OS
// thread, so what one wrote before a barrier happens before what another
// reads after it, as on the device. In a build without these sanitizers
// every function here is empty.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_SIMT_FIBERSANITIZER_H
#define FSDP_RUNTIME_BACKENDS_CUDA_SIMT_FIBERSANITIZER_H

#include <cstddef>
#include <vector>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FSDP_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define FSDP_FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FSDP_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define FSDP_FIBER_TSAN 1
#endif

#ifdef FSDP_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef FSDP_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace fsdp::simt {

/// A stack as ASan knows it: its lowest address and its size.
struct StackRange {
  const void *bottom = nullptr;
  size_t size = 0;
};

/// The context one fiber runs in, for the sanitizers: its stack and its
/// TSan fiber (nullptr where TSan is off).
struct FiberIdentity {
  StackRange stack;
  void *tsanFiber = nullptr;
};

/// What the sanitizers make per fiber - ASan's fake stacks (for
/// detect_stack_use_after_return), TSan's fibers - kept from fibers that
/// ended for the next ones. Making them anew per CUDA thread of every block
/// (an mmap and munmap of megabytes each) made the kernel tests ten times
/// slower under ASan, and timed steps overrun under TSan. A pool is per OS
/// thread and lives as long as it; without the sanitizers it stays empty.
class HandlePool {
public:
  /// Room for `n` more without allocating (give runs mid-switch).
  void reserve(size_t n) { free_.reserve(free_.size() + n); }
  /// A kept handle, or nullptr: the sanitizer makes a new one.
  void *take() {
    if (free_.empty())
      return nullptr;
    void *handle = free_.back();
    free_.pop_back();
    return handle;
  }
  void give(void *handle) {
    if (handle)
      free_.push_back(handle);
  }

private:
  std::vector<void *> free_;
};

/// The identity of the code running now on this OS thread's own stack.
/// Its stack range is filled in by the first afterSwitch of a fiber.
inline FiberIdentity currentThreadIdentity() {
  FiberIdentity id;
#ifdef FSDP_FIBER_TSAN
  id.tsanFiber = __tsan_get_current_fiber();
#endif
  return id;
}

/// The identity of a fiber whose stack is `stack`: a TSan fiber from
/// `tsanFibers`, or a new one. (A reused TSan fiber's shadow call stack is
/// empty again only because Simt.cpp, where Boost's never-returning entry
/// frame is instantiated, has no function entry/exit instrumentation.)
inline FiberIdentity createFiberIdentity(StackRange stack, HandlePool &tsanFibers) {
  FiberIdentity id;
  id.stack = stack;
  (void)tsanFibers;
#ifdef FSDP_FIBER_TSAN
  id.tsanFiber = tsanFibers.take();
  if (!id.tsanFiber)
    id.tsanFiber = __tsan_create_fiber(0);
#endif
  return id;
}

/// Gives back what createFiberIdentity took, once its fiber has ended.
inline void releaseFiberIdentity(FiberIdentity &id, HandlePool &tsanFibers) {
  tsanFibers.give(id.tsanFiber);
  id.tsanFiber = nullptr;
}

/// Just before jumping to `to`. `fakeStack` receives ASan's handle of the
/// stack being left, for its afterSwitch; nullptr says the fiber being left
/// has ended and will never run again.
inline void beforeSwitch(void **fakeStack, const FiberIdentity &to) {
#ifdef FSDP_FIBER_ASAN
  __sanitizer_start_switch_fiber(fakeStack, to.stack.bottom, to.stack.size);
#else
  (void)fakeStack;
#endif
#ifdef FSDP_FIBER_TSAN
  __tsan_switch_to_fiber(to.tsanFiber, 0);
#else
  (void)to;
#endif
}

/// Tells TSan alone of a jump there and back that runs none of our code
/// (Boost's creation of a fiber), which ASan need not hear of.
inline void switchTsanFiber(const FiberIdentity &to) {
#ifdef FSDP_FIBER_TSAN
  __tsan_switch_to_fiber(to.tsanFiber, 0);
#else
  (void)to;
#endif
}

/// First thing after a jump lands: `fakeStack` is what this stack's last
/// beforeSwitch received (nullptr on a fiber's first entry); `from`, when
/// not null, receives the stack that was left.
inline void afterSwitch(void *fakeStack, StackRange *from) {
#ifdef FSDP_FIBER_ASAN
  const void *bottom = nullptr;
  size_t size = 0;
  __sanitizer_finish_switch_fiber(fakeStack, &bottom, &size);
  if (from)
    *from = {bottom, size};
#else
  (void)fakeStack;
  (void)from;
#endif
}

/// A stack about to be reused by another fiber: frames of the fiber that
/// ended there never returned, so ASan's poison of their redzones is stale.
inline void forgetStack(StackRange stack) {
#ifdef FSDP_FIBER_ASAN
  __asan_unpoison_memory_region(stack.bottom, stack.size);
#else
  (void)stack;
#endif
}

} // namespace fsdp::simt

#endif // FSDP_RUNTIME_BACKENDS_CUDA_SIMT_FIBERSANITIZER_H
