//===- FlatLayout.h - a shard unit's flat parameter and its shards --------===//
//
// FSDP's FlatParameter: a unit's parameters laid end to end in one flat
// buffer, padded at the end so it splits into `worldSize` equal shards;
// rank r holds elements [r * shard, (r + 1) * shard). World sizes that do
// not divide the unit's size (3, 5, ...) only add padding. The layout is
// what the plan records per unit and parameter (plan.fbs Unit, Parameter).
// Each parameter may start at a multiple of an alignment (in elements), so
// that a parameter viewed in place inside the gathered flat buffer is as
// aligned as a buffer of its own (the plan requires 64-byte offsets); the
// gaps count as part of the flat buffer and hold zeros.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_FLATLAYOUT_H
#define FSDP_COMPILER_ANALYSIS_FLATLAYOUT_H

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fsdp {

struct FlatLayout {
  std::vector<int64_t> offsets; // element offset of each parameter in the flat buffer
  int64_t flatNumel = 0;        // end of the last parameter (alignment gaps included)
  int64_t paddedNumel = 0;      // flatNumel rounded up to a multiple of worldSize
  int64_t shardNumel = 0;       // paddedNumel / worldSize

  /// The part of parameter `p` (numel `n`) that rank `r` holds, as
  /// [begin, end) offsets into the parameter; empty when it holds none.
  std::pair<int64_t, int64_t> localRange(size_t p, int64_t n, int64_t rank) const;
};

/// `numels` in unit order; worldSize >= 1; every offset is a multiple of
/// `alignElements` (>= 1), and so is the shard size with
/// `alignShards` (a shard that is a chunk of the gathered buffer in place
/// must start aligned on every rank).
FlatLayout computeFlatLayout(const std::vector<int64_t> &numels, int64_t worldSize,
                             int64_t alignElements = 1, bool alignShards = false);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_FLATLAYOUT_H
