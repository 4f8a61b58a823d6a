//===- LossShape.h - the [N, C, D] view of a classification loss ----------===//
//
// Shared by both backends' loss kernels and their gradients: all read scores (or
// their gradient) as [N, C, d...], labels as [N, d...], class weights as
// [C], and a loss (or its gradient) with one element for "sum"/"mean" and
// N*D for "none". One check, so forward and backward agree on what a valid
// problem is.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_LOSSSHAPE_H
#define FSDP_RUNTIME_BACKENDS_LOSSSHAPE_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

namespace fsdp::rt {

struct LossShape {
  int64_t n = 0, c = 0, d = 1;
};

/// Checks dtypes and element counts for kernel `op` and derives [N, C, D];
/// `loss` is the loss or its gradient.
inline Status lossShape(const char *op, const TensorRef &scores, const TensorRef &labels,
                        const TensorRef *weights, const TensorRef &loss, Reduction reduction,
                        LossShape &s) {
  if (scores.rank < 2)
    return Status::error(cat(op, ": scores must be [N, C, d...]"));
  if (loss.dtype != scores.dtype || (weights && weights->dtype != scores.dtype))
    return Status::error(cat(op, ": loss and weights must have the scores' element type"));
  s.n = scores.dims[0];
  s.c = scores.dims[1];
  s.d = 1;
  for (int i = 2; i < scores.rank; ++i)
    s.d *= scores.dims[i];
  if (labels.numElements() != s.n * s.d)
    return Status::error(cat(op, ": labels must be [N, d...]"));
  if (weights && weights->numElements() != s.c)
    return Status::error(cat(op, ": weights must be [C]"));
  if (loss.numElements() != (reduction == Reduction::None ? s.n * s.d : 1))
    return Status::error(cat(op, ": the loss has the wrong number of elements"));
  return Status::ok();
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_LOSSSHAPE_H
