//===- GemmMapping.h - row-major products as column-major BLAS calls ------===//
//
// cuBLAS is column-major; the plans' tensors are row-major. A row-major
// product C = op(A) op(B) (m x n) is, read column-major, C^T = op(B)^T
// op(A)^T: the same memory, with the operands swapped. This is the one
// place that works out such a call for the kernels' products: transpose
// flags, leading dimensions, batch strides (0 where an operand broadcasts),
// the fold of [B, M, K] x [K, N] with a shared right operand into one call
// with B*M rows, and the batch dims that no single strided-batched call can
// express (broadcast on both sides: [2, 1, M, K] x [1, 3, K, N]), which
// become an outer loop of such calls. A pure function of shapes: the GPU
// build issues cublasGemmStridedBatchedEx from it, the SIMT build and the
// tests run the very same description through cblas (CblasColMajor).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_GEMMMAPPING_H
#define FSDP_RUNTIME_BACKENDS_CUDA_GEMMMAPPING_H

#include "runtime/math/StridedLayout.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>

namespace fsdp::rt::cuda {

/// One column-major strided-batched GEMM, in BLAS's terms:
///   for i in [0, batch): C_i = alpha * op(A_i) op(B_i) + beta * C_i,
/// op(A_i) m x k, op(B_i) k x n, C_i m x n, X_i = X + offsetX + i * strideX
/// (elements). BLAS's A is the row-major product's right operand and its B
/// the left one (see the file comment).
struct ColumnMajorGemm {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 1, ldb = 1, ldc = 1;
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int64_t batch = 1;
  double alpha = 1, beta = 0;
};

/// A product as calls: `call` once per position of `outer`, an iteration
/// space over the batch dims the call's own batch does not cover, whose
/// operand 0 is C's, 1 the left (row-major a) and 2 the right (b) operand's
/// element offset. outer.numElements() is 1 when one call does it all.
struct GemmMapping {
  ColumnMajorGemm call;
  StridedLayout<3> outer;
  /// The element offsets of outer position `i`: C, the left and the right
  /// operand (BLAS's C, B and A).
  void offsets(int64_t i, int64_t &c, int64_t &left, int64_t &right) const {
    c = outer.offset(0, i);
    left = outer.offset(1, i);
    right = outer.offset(2, i);
  }
};

/// nn.matmul's product (numpy batch broadcasting, 1-D promotion, operands
/// stored transposed when transA/transB), as the CPU kernel defines it. The
/// same refusals as the CPU kernel (ranks, contracting dims), by Status.
Status mapMatMul(const TensorRef &a, const TensorRef &b, const TensorRef &out, bool transA,
                 bool transB, GemmMapping &mapping);

/// nn.gemm's product on 2-D operands: alpha * op(a) op(b) + beta * out,
/// where the caller has broadcast the bias `c` (null when absent; checked
/// here only, never read) into out first (beta 0 when there is none, so
/// out's old contents are never read). The CPU kernel's refusals.
Status mapGemm(const TensorRef &a, const TensorRef &b, const TensorRef *c, const TensorRef &out,
               float alpha, float beta, bool transA, bool transB, GemmMapping &mapping);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_GEMMMAPPING_H
