//===- ReductionSpace.h - a reduction's kept and reduced iteration spaces -===//
//
// ReduceSum/Max/Mean and ReduceMax's gradient split their input's dims by a
// sorted axis list into the kept space (the result's row-major order) and
// the reduced space, each in input strides and coalesced, and both
// backends walk these spaces in the same order (which fixes the summation
// order). Built once here, with the axis checks, so the backends and the
// forward and backward kernels agree on them.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_REDUCTIONSPACE_H
#define FSDP_RUNTIME_BACKENDS_REDUCTIONSPACE_H

#include "runtime/math/StridedLayout.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>

namespace fsdp::rt {

struct ReductionSpace {
  StridedLayout<1> kept, reduced;
  /// Elements each result reduces (before coalescing, so 0 stays 0).
  int64_t reducedCount = 1;
  /// Whether the input's innermost non-trivial dim is reduced (or there is
  /// none): each result then reduces contiguous runs.
  bool runsInnermost = true;
};

/// Splits `in` by `axes` (count entries, which must be sorted, unique and
/// in range) for kernel `op`, and checks that `resultElements` is the kept
/// space's size.
inline Status reductionSpace(const char *op, const TensorRef &in, const int64_t *axes, int count,
                             int64_t resultElements, ReductionSpace &s) {
  bool reduced[kMaxRank] = {};
  for (int i = 0; i < count; ++i) {
    if (axes[i] < 0 || axes[i] >= in.rank || (i > 0 && axes[i] <= axes[i - 1]))
      return Status::error(cat(op, ": axes must be sorted, unique and in [0, ", in.rank, ")"));
    reduced[axes[i]] = true;
  }
  int64_t strides[kMaxRank];
  contiguousStrides(in, strides);
  s = ReductionSpace();
  int innermost = -1; // the innermost dim that is not size 1
  for (int d = 0; d < in.rank; ++d) {
    StridedLayout<1> &space = reduced[d] ? s.reduced : s.kept;
    space.dims[space.rank] = in.dims[d];
    space.strides[0][space.rank++] = strides[d];
    if (reduced[d])
      s.reducedCount *= in.dims[d];
    if (in.dims[d] != 1)
      innermost = d;
  }
  if (s.kept.numElements() != resultElements)
    return Status::error(cat(op, ": result has ", resultElements, " elements, expected ",
                             s.kept.numElements()));
  s.runsInnermost = innermost < 0 || reduced[innermost];
  s.kept.coalesce();
  s.reduced.coalesce();
  return Status::ok();
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_REDUCTIONSPACE_H
