//===- MatMulShape.h - a matmul's matrix shape and batch iteration --------===//
//
// nn.matmul's numpy semantics as both backends read them: the matrix shape
// (1-D operands promoted to a row or a column; a transposed operand stores
// each matrix with its last two dims swapped), the refusals, and the batch
// iteration space whose strides count whole matrices (0 where an operand
// broadcasts). The CPU kernel loops over it; the CUDA mapping
// (cuda/GemmMapping.h) turns it into strided-batched calls.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_MATMULSHAPE_H
#define FSDP_RUNTIME_BACKENDS_MATMULSHAPE_H

#include "runtime/math/StridedLayout.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>

namespace fsdp::rt {

/// One matrix product: op(a) is m x k, op(b) is k x n, out is m x n.
struct MatMulShape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  /// The result's dims before its matrix (or vector) dims.
  int batchRank = 0;
};

inline Status matmulShape(const TensorRef &a, const TensorRef &b, const TensorRef &out,
                          bool transA, bool transB, MatMulShape &s) {
  if (a.rank < 1 || b.rank < 1)
    return Status::error("matmul: operands must have rank >= 1");
  if ((transA && a.rank < 2) || (transB && b.rank < 2))
    return Status::error("matmul: a transposed operand must have rank >= 2");
  s.transA = transA;
  s.transB = transB;
  s.m = a.rank == 1 ? 1 : a.dims[a.rank - (transA ? 1 : 2)];
  s.k = a.dims[a.rank - (transA ? 2 : 1)];
  s.n = b.rank == 1 ? 1 : b.dims[b.rank - (transB ? 2 : 1)];
  const int64_t bK = b.rank == 1 ? b.dims[0] : b.dims[b.rank - (transB ? 1 : 2)];
  if (bK != s.k)
    return Status::error("matmul: contracting dimensions differ");
  s.batchRank = out.rank - (a.rank == 1 ? 0 : 1) - (b.rank == 1 ? 0 : 1);
  if (s.batchRank < std::max(a.rank - 2, b.rank - 2))
    return Status::error(cat("matmul: result rank ", out.rank, " is too small for the operands"));
  // The result's matrix dims and each operand's batch dims (1 or the
  // result's) are checked here, so that neither backend reads or writes
  // beyond a buffer on a malformed launch.
  const bool rows = a.rank > 1, cols = b.rank > 1;
  if ((rows && out.dims[s.batchRank] != s.m) || (cols && out.dims[out.rank - 1] != s.n))
    return Status::error(cat("matmul: result is not ", s.m, " x ", s.n));
  for (const TensorRef *t : {&a, &b}) {
    const int tBatchRank = t->rank == 1 ? 0 : t->rank - 2;
    for (int d = 0; d < tBatchRank; ++d) {
      const int64_t dim = t->dims[d], outDim = out.dims[s.batchRank - tBatchRank + d];
      if (dim != 1 && dim != outDim)
        return Status::error(cat("matmul: batch dim ", dim, " does not broadcast to ", outDim));
    }
  }
  return Status::ok();
}

/// nn.gemm's shape: 2-D a, b and result (op(a) m x k, op(b) k x n) and a
/// bias of rank <= 2 that broadcasts to the result, checked by both
/// backends before any memory is touched.
inline Status gemmShape(const TensorRef &a, const TensorRef &b, const TensorRef *c,
                        const TensorRef &out, bool transA, bool transB, MatMulShape &s) {
  if (a.rank != 2 || b.rank != 2 || out.rank != 2)
    return Status::error("gemm: operands and result must be 2-D");
  s.transA = transA;
  s.transB = transB;
  s.m = out.dims[0];
  s.n = out.dims[1];
  s.k = transA ? a.dims[0] : a.dims[1];
  s.batchRank = 0;
  if (a.dims[transA ? 1 : 0] != s.m || b.dims[transB ? 0 : 1] != s.n)
    return Status::error(cat("gemm: operands do not give the ", s.m, " x ", s.n, " result"));
  if (b.dims[transB ? 1 : 0] != s.k)
    return Status::error("gemm: contracting dimensions differ");
  if (c) {
    if (c->rank > 2)
      return Status::error("gemm: bias must have rank <= 2");
    for (int d = 0; d < c->rank; ++d) {
      const int64_t dim = c->dims[d], outDim = out.dims[2 - c->rank + d];
      if (dim != 1 && dim != outDim)
        return Status::error(cat("gemm: bias dim ", dim, " does not broadcast to ", outDim));
    }
  }
  return Status::ok();
}

/// The batch loop: operand 0 is out, 1 is a, 2 is b; strides in elements,
/// whole matrices per step, 0 where an operand broadcasts. Coalesced (one
/// dim of 1 when there is no batch).
inline StridedLayout<3> matmulBatchLayout(const TensorRef &a, const TensorRef &b,
                                          const TensorRef &out, const MatMulShape &s) {
  StridedLayout<3> layout;
  layout.rank = s.batchRank;
  const TensorRef *operands[3] = {&out, &a, &b};
  const int64_t matrixSize[3] = {s.m * s.n, s.m * s.k, s.k * s.n};
  for (int op = 0; op < 3; ++op) {
    const TensorRef &t = *operands[op];
    // A 1-D operand has no batch dims; otherwise its last two are the matrix.
    const int tBatchRank = op == 0 ? s.batchRank : (t.rank == 1 ? 0 : t.rank - 2);
    int64_t stride = matrixSize[op];
    for (int d = s.batchRank - 1; d >= 0; --d) {
      const int td = d - (s.batchRank - tBatchRank);
      const bool present = td >= 0 && t.dims[td] != 1;
      layout.strides[op][d] = present ? stride : 0;
      if (td >= 0)
        stride *= t.dims[td];
    }
  }
  for (int d = 0; d < s.batchRank; ++d)
    layout.dims[d] = out.dims[d];
  layout.coalesce();
  return layout;
}

/// Whether a batch folds into the rows of one product: [batch, m, k] @
/// [k, n] with the right operand shared by the whole batch and the left one
/// and the result contiguous and not transposed, so the batch's matrices
/// are the consecutive rows of a (batch * m) x k one.
inline bool foldsIntoRows(const StridedLayout<3> &batch, const MatMulShape &s) {
  return batch.rank == 1 && !s.transA && batch.strides[2][0] == 0 &&
         batch.strides[1][0] == s.m * s.k && batch.strides[0][0] == s.m * s.n;
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_MATMULSHAPE_H
