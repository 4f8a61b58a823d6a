//===- ArenaAllocator.h - offsets for transient buffers -------------------===//
//
// Places buffers with known lifetimes in one arena: each allocation takes
// the smallest free gap that fits (best fit), so buffers whose lifetimes do
// not overlap share memory. The forward plan uses it over program order;
// the memory-planning issue replaces it with liveness over the scheduled
// step and reports how far from the lower bound (the peak of live bytes)
// the result lands. Offsets and sizes are 64-byte aligned.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_ARENAALLOCATOR_H
#define FSDP_COMPILER_TARGET_ARENAALLOCATOR_H

#include <cstdint>
#include <map>

namespace fsdp {

class ArenaAllocator {
public:
  /// Returns the offset of a new live block of `bytes`.
  uint64_t allocate(uint64_t bytes);
  /// Frees the block at `offset` (from allocate).
  void release(uint64_t offset);
  /// High-water mark: the arena size needed so far.
  uint64_t peak() const { return peak_; }
  /// Largest sum of simultaneously live bytes seen (the lower bound on peak).
  uint64_t peakLive() const { return peakLive_; }

  static uint64_t align(uint64_t bytes) { return (bytes + 63) & ~uint64_t(63); }

private:
  std::map<uint64_t, uint64_t> live_; // offset -> size
  uint64_t peak_ = 0, liveBytes_ = 0, peakLive_ = 0;
};

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_ARENAALLOCATOR_H
