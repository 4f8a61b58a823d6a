//===- ArenaAllocator.h - offsets for transient buffers -------------------===//
//
// Places every transient buffer of a plan in one arena so that buffers
// whose lifetimes overlap never share bytes and the arena is as small as
// we can make it. Planning is offline: the emitter walks the scheduled step
// once, announcing each buffer when it is created (allocate) and when its
// last reader has run (release); finalize() then places all of them at
// once, knowing every lifetime. Two placements are computed and the smaller
// arena wins:
//   - greedy by size: buffers in decreasing size, each at the lowest
//     64-byte-aligned offset free for its whole lifetime (the strategy of
//     TFLite's and XLA's offline planners, usually within a few percent of
//     the lower bound, the largest sum of simultaneously live bytes);
//   - best fit in program order: each buffer, when created, takes the
//     smallest free gap (what an online caching allocator can do).
// Until finalize(), allocate() hands out virtual offsets: a buffer's
// ticket in the high bits, so a view at a byte offset inside it is
// "virtual offset + byte offset" and resolve() maps either to the final
// placement. Offsets and sizes are 64-byte aligned.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_ARENAALLOCATOR_H
#define FSDP_COMPILER_TARGET_ARENAALLOCATOR_H

#include <cstdint>
#include <vector>

namespace fsdp {

class ArenaAllocator {
public:
  /// Announces a new live buffer of `bytes`; returns its virtual offset.
  uint64_t allocate(uint64_t bytes);
  /// The buffer at `virtualOffset` (from allocate) is dead from now on.
  void release(uint64_t virtualOffset);
  /// Places every buffer. allocate/release may not be called afterwards.
  void finalize();
  /// The final offset of a virtual offset (a buffer's, or one inside it).
  uint64_t resolve(uint64_t virtualOffset) const;
  /// The arena size: valid after finalize().
  uint64_t peak() const { return peak_; }
  /// Largest sum of simultaneously live bytes (the lower bound on peak).
  uint64_t peakLive() const { return peakLive_; }
  /// The arena each strategy needed (after finalize), for reports.
  uint64_t greedyBySizePeak() const { return greedyPeak_; }
  uint64_t bestFitPeak() const { return bestFitPeak_; }

  static uint64_t align(uint64_t bytes) { return (bytes + 63) & ~uint64_t(63); }
  /// Virtual offsets keep the byte offset inside a buffer below this bit.
  static constexpr int kTicketShift = 44;

private:
  struct Block {
    uint64_t size, start, end; // lifetime [start, end) in announcement events
  };
  std::vector<uint64_t> placeGreedyBySize(uint64_t &peak) const;
  std::vector<uint64_t> placeBestFit(uint64_t &peak) const;

  std::vector<Block> blocks_;
  std::vector<uint64_t> offsets_;
  uint64_t clock_ = 0, liveBytes_ = 0, peakLive_ = 0;
  uint64_t peak_ = 0, greedyPeak_ = 0, bestFitPeak_ = 0;
  bool finalized_ = false;
};

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_ARENAALLOCATOR_H
