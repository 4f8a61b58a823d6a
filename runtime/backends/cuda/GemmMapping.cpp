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

#include "runtime/backends/MatMulShape.h"

#include <algorithm>

namespace fsdp::rt::cuda {
namespace {

using Product = MatMulShape;

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
  MatMulShape shape;
  FSDP_RETURN_IF_ERROR(matmulShape(a, b, out, transA, transB, shape));
  const Product &p = shape;
  const StridedLayout<3> batch = matmulBatchLayout(a, b, out, shape);
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
