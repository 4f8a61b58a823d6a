//===- LinearAlgebraKernels.cpp - matmul and gemm on the CPU ---------------------===//
//
// Matrix products for nn.matmul (numpy semantics: batch dimensions
// broadcast, 1-D operands promoted) and nn.gemm (alpha, beta, transposes and
// a broadcast bias). Everything funnels into one routine computing
// `out = alpha * op(a) @ op(b) + beta * out` on one matrix, BLAS-style: f32
// and f64 call OpenBLAS, other dtypes run a naive loop whose accumulator is
// float for f16/bf16 and a wrapping 64-bit integer for integers. A batched
// matmul is a loop of such calls over the broadcast batch index, pointing
// into the operands without copying; when the right operand is shared by
// the whole batch and the left one is contiguous, the batch folds into the
// rows of a single call.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/MatMulShape.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

/// One matrix product: op(a) is m x k, op(b) is k x n, out is m x n; all
/// three row-major and contiguous, a stored k x m when transA (likewise b).
struct ProductShape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
};

/// Accumulator of the naive loop: float for 16-bit floats; for integers
/// uint64_t, whose wrap-around gives the low bits of the exact product sum
/// without signed-overflow undefined behaviour.
template <typename T>
using NaiveAcc = std::conditional_t<kIsIntStorage<T>, uint64_t, ComputeType<T>>;

template <typename T> NaiveAcc<T> toAcc(T v) {
  if constexpr (kIsIntStorage<T>)
    return static_cast<uint64_t>(v); // modular: sign-extends negative values
  else
    return toCompute(v);
}

/// Writes alpha * acc + beta * old (old is read only when beta != 0, as in
/// BLAS). Integers stay exact when alpha is 1 and beta is 0 or 1; other
/// scalings go through double, like the ONNX reference's float scalars.
template <typename T> void storeScaled(T *dst, NaiveAcc<T> acc, double alpha, double beta) {
  if constexpr (kIsIntStorage<T>) {
    if (alpha == 1.0 && (beta == 0.0 || beta == 1.0)) {
      uint64_t sum = acc + (beta == 0.0 ? 0 : static_cast<uint64_t>(*dst));
      *dst = static_cast<T>(sum);
      return;
    }
    double product = std::is_signed_v<T> ? static_cast<double>(static_cast<int64_t>(acc))
                                         : static_cast<double>(acc);
    double value = alpha * product + (beta == 0.0 ? 0.0 : beta * static_cast<double>(*dst));
    *dst = static_cast<T>(value);
  } else {
    using C = ComputeType<T>;
    C value = static_cast<C>(alpha) * acc;
    if (beta != 0.0)
      value += static_cast<C>(beta) * load(dst);
    store(dst, value);
  }
}

/// Columns of out accumulated at once by the naive loop (a stack buffer:
/// kernels do not allocate).
constexpr int64_t kNaiveColumns = 256;

/// The naive product: for each row i, rows k of op(b) are scaled by
/// op(a)[i][k] and added, in increasing k, so every output element sums its
/// k terms in order (the loop over j is contiguous when b is not transposed).
template <typename T>
void naiveProduct(const ProductShape &s, const T *a, const T *b, T *out, double alpha,
                  double beta) {
  const int64_t aRow = s.transA ? 1 : s.k, aCol = s.transA ? s.m : 1;
  const int64_t bRow = s.transB ? 1 : s.n, bCol = s.transB ? s.k : 1;
  NaiveAcc<T> acc[kNaiveColumns];
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j0 = 0; j0 < s.n; j0 += kNaiveColumns) {
      const int64_t width = std::min(kNaiveColumns, s.n - j0);
      std::fill(acc, acc + width, NaiveAcc<T>(0));
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const NaiveAcc<T> lhs = toAcc(a[i * aRow + kk * aCol]);
        const T *bRowPtr = b + kk * bRow + j0 * bCol;
        for (int64_t j = 0; j < width; ++j)
          acc[j] += lhs * toAcc(bRowPtr[j * bCol]);
      }
      for (int64_t j = 0; j < width; ++j)
        storeScaled(out + i * s.n + j0 + j, acc[j], alpha, beta);
    }
  }
}

bool fitsBlasInt(const ProductShape &s) {
  return s.m <= INT_MAX && s.n <= INT_MAX && s.k <= INT_MAX;
}

/// out = alpha * op(a) @ op(b) + beta * out. OpenBLAS for f32/f64 (a zero
/// k or a dimension beyond its int range takes the naive loop, which needs
/// no leading-dimension special cases).
template <typename T>
void product(const ProductShape &s, const T *a, const T *b, T *out, double alpha, double beta) {
  if (s.m == 0 || s.n == 0)
    return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (s.k > 0 && fitsBlasInt(s)) {
      const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
      const CBLAS_TRANSPOSE ta = s.transA ? CblasTrans : CblasNoTrans;
      const CBLAS_TRANSPOSE tb = s.transB ? CblasTrans : CblasNoTrans;
      const int lda = s.transA ? m : k, ldb = s.transB ? k : n;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
                    static_cast<float>(beta), out, n);
      else
        cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, out, n);
      return;
    }
  }
  naiveProduct(s, a, b, out, alpha, beta);
}

Status checkSameDType(const char *op, const TensorRef &a, const TensorRef &b,
                      const TensorRef &out) {
  if (a.dtype != out.dtype || b.dtype != out.dtype)
    return Status::error(cat(op, ": operands (", dtypeName(a.dtype), ", ", dtypeName(b.dtype),
                             ") must have the result's element type ", dtypeName(out.dtype)));
  return Status::ok();
}

template <typename T>
void batchedMatmul(const TensorRef &a, const TensorRef &b, const TensorRef &out,
                   const MatMulShape &shape) {
  const StridedLayout<3> layout = matmulBatchLayout(a, b, out, shape);
  ProductShape s;
  s.m = shape.m;
  s.n = shape.n;
  s.k = shape.k;
  s.transA = shape.transA;
  s.transB = shape.transB;
  const T *aData = a.as<T>();
  const T *bData = b.as<T>();
  T *outData = out.as<T>();
  // [batch, m, k] @ [k, n] (b shared by every batch, a contiguous and not
  // transposed): one product with batch * m rows instead of `batch` small ones.
  if (layout.rank == 1 && !s.transA && layout.strides[2][0] == 0 &&
      layout.strides[1][0] == s.m * s.k &&
      layout.strides[0][0] == s.m * s.n) {
    ProductShape folded = s;
    folded.m = s.m * layout.dims[0];
    product(folded, aData, bData, outData, 1.0, 0.0);
    return;
  }
  forEachRow(layout, [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
    for (int64_t i = 0; i < count; ++i)
      product(s, aData + offsets[1] + i * steps[1], bData + offsets[2] + i * steps[2],
              outData + offsets[0] + i * steps[0], 1.0, 0.0);
  });
}

} // namespace

Status matmul(const TensorRef &a, const TensorRef &b, const TensorRef &out, bool transA,
              bool transB) {
  FSDP_RETURN_IF_ERROR(checkSameDType("matmul", a, b, out));
  MatMulShape shape;
  FSDP_RETURN_IF_ERROR(matmulShape(a, b, out, transA, transB, shape));
  return dispatchNumeric(
      out.dtype, [&](auto tag) { batchedMatmul<decltype(tag)>(a, b, out, shape); }, "matmul");
}

Status gemm(const TensorRef &a, const TensorRef &b, const TensorRef *c, float alpha, float beta,
            bool transA, bool transB, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(checkSameDType("gemm", a, b, out));
  if (c && c->dtype != out.dtype)
    return Status::error("gemm: bias must have the result's element type");
  if (a.rank != 2 || b.rank != 2 || out.rank != 2)
    return Status::error("gemm: operands and result must be 2-D");
  ProductShape s;
  s.transA = transA;
  s.transB = transB;
  s.m = out.dims[0];
  s.n = out.dims[1];
  s.k = transA ? a.dims[0] : a.dims[1];
  // beta == 0 ignores c entirely (BLAS and torch.addmm semantics), so a NaN
  // in an unused bias does not leak into the result.
  const bool useBias = c && beta != 0.0f;
  return dispatchNumeric(
      out.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        T *outData = out.as<T>();
        if (useBias && c->data != out.data) {
          // Broadcast c into out; the product then adds onto it with beta.
          const TensorRef *ins[1] = {c};
          StridedLayout<2> layout = broadcastLayout<2>(out, ins);
          const T *cData = c->as<T>();
          forEachRow(layout, [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
            for (int64_t i = 0; i < count; ++i)
              outData[offsets[0] + i * steps[0]] = cData[offsets[1] + i * steps[1]];
          });
        }
        product(s, a.as<T>(), b.as<T>(), outData, alpha, useBias ? beta : 0.0);
      },
      "gemm");
}

} // namespace fsdp::rt::cpu
