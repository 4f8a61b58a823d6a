//===- BufferViews.h - values that share another value's memory -----------===//
//
// Some values need no buffer or copy of their own: a reshape is the same
// bytes under a new shape, and a transpose of the last two dimensions that
// only matmuls read is read in place by BLAS with a transpose flag (torch's
// `x @ W.t()`, attention's `k.transpose(-2, -1)`, and most of the backward
// pass's transposed operands). This analysis finds those views, maps each to
// the value that owns the memory (its root), and computes every root's
// last use over all of its views, so the arena keeps a buffer alive exactly
// as long as any view of it is still read. A parameter sliced out of its
// unit's gathered flat buffer (fsdp.flat_view) is a view too: that is how
// a gathered unit stays alive exactly while any of its parameters is read.
// So is a slice that is one aligned run of its input (a row range of a
// weight, such as attention's packed q/k/v projection split).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_BUFFERVIEWS_H
#define FSDP_COMPILER_TARGET_BUFFERVIEWS_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace fsdp {

struct BufferViews {
  /// Reshapes emitted as a second buffer description over the same bytes.
  llvm::DenseSet<mlir::Operation *> aliasedReshapes;
  /// Last-two-dims transposes that their matmuls read in place.
  llvm::DenseSet<mlir::Operation *> foldedTransposes;
  /// Parameters read in place from a unit's flat buffer (fsdp.flat_view).
  llvm::DenseSet<mlir::Operation *> flatViews;
  /// Slices whose result is one aligned run of their input's elements, and
  /// the element offset of that run.
  llvm::DenseMap<mlir::Operation *, int64_t> contiguousSlices;
  /// View result -> the value whose memory it reads (never itself a view).
  llvm::DenseMap<mlir::Value, mlir::Value> root;
  /// Root value -> the last op (other than views) that reads it or a view
  /// of it. Absent: nothing reads it.
  llvm::DenseMap<mlir::Value, mlir::Operation *> lastUse;

  mlir::Value rootOf(mlir::Value v) const {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  }
  bool isView(mlir::Operation *op) const {
    return aliasedReshapes.count(op) || foldedTransposes.count(op) || flatViews.count(op) ||
           contiguousSlices.count(op);
  }
};

/// Analyzes `body`; values in `ownBuffer` (the function's outputs) always
/// get their own buffer.
BufferViews findBufferViews(mlir::Block &body, const llvm::DenseSet<mlir::Value> &ownBuffer);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_BUFFERVIEWS_H
