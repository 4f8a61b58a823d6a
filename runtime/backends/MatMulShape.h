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

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_MATMULSHAPE_H
