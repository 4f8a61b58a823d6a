//===- GemmMapping.cpp - row-major products as column-major BLAS calls ----===//
//
// The batch dims are laid out as the CPU kernel lays them out (out, a, b
// strides in whole matrices, 0 where an operand broadcasts), coalesced; the
// innermost remaining dim becomes the call's batch and the rest the outer
// loop. The fold comes first: a shared right operand with a contiguous,
// untransposed left one makes the batch rows of a single product.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/GemmMapping.h"

#include <algorithm>

namespace fsdp::rt::cuda {
namespace {

struct Product {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
};

/// The column-major call of one row-major product (file comment).
ColumnMajorGemm columnMajor(const Product &p, double alpha, double beta) {
  ColumnMajorGemm g;
  g.transA = p.transB; // BLAS's A is the right operand
  g.transB = p.transA;
  g.m = p.n;
  g.n = p.m;
  g.k = p.k;
  g.lda = p.transB ? p.k : p.n;
  g.ldb = p.transA ? p.m : p.k;
  g.ldc = p.n;
  g.alpha = alpha;
  g.beta = beta;
  // BLAS requires leading dimensions of at least 1 (and of the rows they
  // skip); an empty product is never issued but stays well-formed.
  g.lda = std::max<int64_t>(g.lda, 1);
  g.ldb = std::max<int64_t>(g.ldb, 1);
  g.ldc = std::max<int64_t>(g.ldc, 1);
  return g;
}

/// Batch strides in elements, whole matrices per step, 0 for a broadcast
/// operand: operand 0 out, 1 a, 2 b.
StridedLayout<3> batchLayout(const TensorRef &a, const TensorRef &b, const TensorRef &out,
                             int batchRank, const Product &p) {
  StridedLayout<3> layout;
  layout.rank = batchRank;
  const TensorRef *operands[3] = {&out, &a, &b};
  const int64_t matrixSize[3] = {p.m * p.n, p.m * p.k, p.k * p.n};
  for (int op = 0; op < 3; ++op) {
    const TensorRef &t = *operands[op];
    const int tBatchRank = op == 0 ? batchRank : (t.rank == 1 ? 0 : t.rank - 2);
    int64_t stride = matrixSize[op];
    for (int d = batchRank - 1; d >= 0; --d) {
      const int td = d - (batchRank - tBatchRank);
      const bool present = td >= 0 && t.dims[td] != 1;
      layout.strides[op][d] = present ? stride : 0;
      if (td >= 0)
        stride *= t.dims[td];
    }
  }
  for (int d = 0; d < batchRank; ++d)
    layout.dims[d] = out.dims[d];
  layout.coalesce();
  return layout;
}

/// A one-position outer loop at offset 0.
StridedLayout<3> single() {
  StridedLayout<3> one;
  one.rank = 1;
  one.dims[0] = 1;
  return one;
}

} // namespace

Status mapMatMul(const TensorRef &a, const TensorRef &b, const TensorRef &out, bool transA,
                 bool transB, GemmMapping &mapping) {
  if (a.rank < 1 || b.rank < 1)
    return Status::error("matmul: operands must have rank >= 1");
  if ((transA && a.rank < 2) || (transB && b.rank < 2))
    return Status::error("matmul: a transposed operand must have rank >= 2");
  Product p;
  p.transA = transA;
  p.transB = transB;
  p.m = a.rank == 1 ? 1 : a.dims[a.rank - (transA ? 1 : 2)];
  p.k = a.dims[a.rank - (transA ? 2 : 1)];
  p.n = b.rank == 1 ? 1 : b.dims[b.rank - (transB ? 2 : 1)];
  const int64_t bK = b.rank == 1 ? b.dims[0] : b.dims[b.rank - (transB ? 1 : 2)];
  if (bK != p.k)
    return Status::error("matmul: contracting dimensions differ");
  const int batchRank = out.rank - (a.rank == 1 ? 0 : 1) - (b.rank == 1 ? 0 : 1);
  if (batchRank < std::max(a.rank - 2, b.rank - 2))
    return Status::error(cat("matmul: result rank ", out.rank, " is too small for the operands"));

  StridedLayout<3> batch = batchLayout(a, b, out, batchRank, p);
  // Coalescing leaves one dim of 1 for no batch at all.
  const int inner = batch.rank - 1;
  if (batch.rank == 1 && !p.transA && batch.strides[2][0] == 0 &&
      batch.strides[1][0] == p.m * p.k && batch.strides[0][0] == p.m * p.n) {
    Product folded = p;
    folded.m = p.m * batch.dims[0];
    mapping.call = columnMajor(folded, 1.0, 0.0);
    mapping.outer = single();
    return Status::ok();
  }
  mapping.call = columnMajor(p, 1.0, 0.0);
  mapping.call.batch = batch.dims[inner];
  mapping.call.strideC = batch.strides[0][inner];
  mapping.call.strideB = batch.strides[1][inner]; // BLAS's B is the left operand
  mapping.call.strideA = batch.strides[2][inner];
  if (batch.rank == 1) {
    mapping.outer = single();
    return Status::ok();
  }
  // The dims outside the call's batch, each a whole call apart.
  mapping.outer = batch;
  mapping.outer.rank = batch.rank - 1;
  return Status::ok();
}

Status mapGemm(const TensorRef &a, const TensorRef &b, const TensorRef &out, float alpha,
               float beta, bool transA, bool transB, GemmMapping &mapping) {
  if (a.rank != 2 || b.rank != 2 || out.rank != 2)
    return Status::error("gemm: operands and result must be 2-D");
  Product p;
  p.transA = transA;
  p.transB = transB;
  p.m = out.dims[0];
  p.n = out.dims[1];
  p.k = transA ? a.dims[0] : a.dims[1];
  mapping.call = columnMajor(p, alpha, beta);
  mapping.outer = single();
  return Status::ok();
}

} // namespace fsdp::rt::cuda
