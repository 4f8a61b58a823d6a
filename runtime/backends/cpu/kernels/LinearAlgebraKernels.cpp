//===- LinearAlgebraKernels.cpp - matmul and gemm on the CPU ---------------------===//
//
// Matrix products for nn.matmul (numpy semantics: batch dimensions
// broadcast, 1-D operands promoted) and nn.gemm (alpha, beta, transposes and
// a broadcast bias). Everything funnels into one routine computing
// `out = alpha * op(a) @ op(b) + beta * out` on one matrix, BLAS-style, in
// the library GemmLibrary.h names: f32, bf16 and f16 call oneDNN
// (OneDnnMatmul.h), or where it refuses the type, OpenBLAS (16-bit operands
// widened to f32 for its sgemm), all with f32 accumulation and one
// rounding; f64 calls OpenBLAS; integers (and 16-bit floats under
// FSDP_CPU_GEMM=naive) run a naive loop whose accumulator is float for
// f16/bf16 and a wrapping 64-bit integer for integers. A batched matmul is a loop of such calls over the
// broadcast batch index, pointing into the operands without copying; when
// the right operand is shared by the whole batch and the left one is
// contiguous, the batch folds into the rows of a single call.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/MatMulShape.h"
#include "runtime/backends/cpu/GemmLibrary.h"
#include "runtime/backends/cpu/OneDnnMatmul.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/ProductScalar.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <type_traits>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

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
  ProductAcc<T> acc[kNaiveColumns];
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j0 = 0; j0 < s.n; j0 += kNaiveColumns) {
      const int64_t width = std::min(kNaiveColumns, s.n - j0);
      std::fill(acc, acc + width, ProductAcc<T>(0));
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const ProductAcc<T> lhs = toProductAcc(a[i * aRow + kk * aCol]);
        const T *bRowPtr = b + kk * bRow + j0 * bCol;
        for (int64_t j = 0; j < width; ++j)
          acc[j] += lhs * toProductAcc(bRowPtr[j * bCol]);
      }
      for (int64_t j = 0; j < width; ++j)
        storeScaledProduct(out + i * s.n + j0 + j, acc[j], alpha, beta);
    }
  }
}

bool fitsBlasInt(const ProductShape &s) {
  return s.m <= INT_MAX && s.n <= INT_MAX && s.k <= INT_MAX;
}

/// OpenBLAS's product of f32 or f64 operands (k > 0, dimensions in int).
template <typename T>
void blasProduct(const ProductShape &s, const T *a, const T *b, T *out, double alpha,
                 double beta) {
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  const CBLAS_TRANSPOSE ta = s.transA ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = s.transB ? CblasTrans : CblasNoTrans;
  const int lda = s.transA ? m : k, ldb = s.transB ? k : n;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(alpha), a, lda, b, ldb,
                static_cast<float>(beta), out, n);
  else
    cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, out, n);
}

/// A thread's f32 copies of a widened product's operands and result,
/// grown to the largest product it has run (allocated once per larger
/// shape, not per call).
struct WidenScratch {
  std::vector<float> a, b, out;
};

float *widened(std::vector<float> &buffer, int64_t size) {
  if (static_cast<int64_t>(buffer.size()) < size)
    buffer.resize(static_cast<size_t>(size));
  return buffer.data();
}

/// A 16-bit product through sgemm: the operands widen exactly to f32,
/// sgemm accumulates in f32 and applies alpha, and beta * out is added in
/// f32 before the one rounding to T (storeScaledProduct's formula).
template <typename T>
void widenedProduct(const ProductShape &s, const T *a, const T *b, T *out, double alpha,
                    double beta) {
  static thread_local WidenScratch scratch;
  const int64_t aSize = s.m * s.k, bSize = s.k * s.n, outSize = s.m * s.n;
  float *wa = widened(scratch.a, aSize), *wb = widened(scratch.b, bSize);
  float *wout = widened(scratch.out, outSize);
  // The conversions in wide loops: f16's are branchy software ones.
  runWide([&] {
    for (int64_t i = 0; i < aSize; ++i)
      wa[i] = toCompute(a[i]);
    for (int64_t i = 0; i < bSize; ++i)
      wb[i] = toCompute(b[i]);
  });
  blasProduct(s, wa, wb, wout, alpha, 0.0);
  runWide([&] {
    for (int64_t i = 0; i < outSize; ++i)
      storeScaledProduct(out + i, wout[i], 1.0, beta);
  });
}

/// out = alpha * op(a) @ op(b) + beta * out, in GemmLibrary.h's library
/// for T (a zero k or a dimension beyond int takes the naive loop, which
/// needs no leading-dimension special cases).
template <typename T>
void product(const ProductShape &s, const T *a, const T *b, T *out, double alpha, double beta,
             GemmRoute route) {
  if (s.m == 0 || s.n == 0)
    return;
  if (s.k > 0 && fitsBlasInt(s)) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (std::is_same_v<T, float> && route == GemmRoute::OneDnn &&
          oneDnnProduct(s, DType::F32, a, b, out, static_cast<float>(alpha),
                        static_cast<float>(beta)))
        return;
      blasProduct(s, a, b, out, alpha, beta);
      return;
    } else if constexpr (std::is_same_v<T, BF16> || std::is_same_v<T, F16>) {
      if (route == GemmRoute::OneDnn &&
          oneDnnProduct(s, dtypeOf<T>(), a, b, out, static_cast<float>(alpha),
                        static_cast<float>(beta)))
        return;
      if (route != GemmRoute::Naive) {
        widenedProduct(s, a, b, out, alpha, beta);
        return;
      }
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
                   const MatMulShape &shape, GemmRoute route) {
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
  if (foldsIntoRows(layout, shape)) {
    ProductShape folded = s;
    folded.m = s.m * layout.dims[0];
    product(folded, aData, bData, outData, 1.0, 0.0, route);
    return;
  }
  // oneDNN's products of a batch (attention's per-head ones, too small to
  // split by rows well) go across the rank's threads a batch entry each; a product's row pieces depend on the thread count alone
  // (OneDnnMatmul.h) and run inline on the entry's thread, so the bits are
  // those of the entries run one after another.
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, BF16> || std::is_same_v<T, F16>) {
    constexpr int64_t kMaxSpreadEntries = 1024; // offsets listed on the stack
    const int64_t entries = layout.numElements();
    if (entries > 1 && entries <= kMaxSpreadEntries && rankKernelThreads() > 1 &&
        route == GemmRoute::OneDnn && oneDnnTakes(dtypeOf<T>())) {
      int64_t offsetsOf[kMaxSpreadEntries][3];
      int64_t n = 0;
      forEachRow(layout, [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
        for (int64_t i = 0; i < count; ++i, ++n)
          for (int d = 0; d < 3; ++d)
            offsetsOf[n][d] = offsets[d] + i * steps[d];
      });
      (void)parallelFor(0, n, 1, [&](int64_t first, int64_t end) {
        for (int64_t e = first; e < end; ++e)
          product(s, aData + offsetsOf[e][1], bData + offsetsOf[e][2], outData + offsetsOf[e][0],
                  1.0, 0.0, route);
      });
      return;
    }
  }
  forEachRow(layout, [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
    for (int64_t i = 0; i < count; ++i)
      product(s, aData + offsets[1] + i * steps[1], bData + offsets[2] + i * steps[2],
              outData + offsets[0] + i * steps[0], 1.0, 0.0, route);
  });
}

} // namespace

Status matmul(const TensorRef &a, const TensorRef &b, const TensorRef &out, bool transA,
              bool transB) {
  FSDP_RETURN_IF_ERROR(checkSameDType("matmul", a, b, out));
  MatMulShape shape;
  FSDP_RETURN_IF_ERROR(matmulShape(a, b, out, transA, transB, shape));
  GemmRoute route;
  if (Status s = gemmRoute(route); !s)
    return Status::error("matmul: " + s.message());
  return dispatchNumeric(
      out.dtype, [&](auto tag) { batchedMatmul<decltype(tag)>(a, b, out, shape, route); },
      "matmul");
}

Status gemm(const TensorRef &a, const TensorRef &b, const TensorRef *c, float alpha, float beta,
            bool transA, bool transB, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(checkSameDType("gemm", a, b, out));
  if (c && c->dtype != out.dtype)
    return Status::error("gemm: bias must have the result's element type");
  MatMulShape shape;
  FSDP_RETURN_IF_ERROR(gemmShape(a, b, c, out, transA, transB, shape));
  GemmRoute route;
  if (Status status = gemmRoute(route); !status)
    return Status::error("gemm: " + status.message());
  ProductShape s;
  s.transA = transA;
  s.transB = transB;
  s.m = shape.m;
  s.n = shape.n;
  s.k = shape.k;
  // beta == 0 ignores c entirely (BLAS and torch.addmm semantics), so a NaN
  // in an unused bias does not leak into the result.
  const bool useBias = c && beta != 0.0f;
  return dispatchNumeric(
      out.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        T *outData = out.as<T>();
        if (useBias && c->data != out.data) {
          // Broadcast c into out, rows across the rank's threads (a copy:
          // no bit depends on the split); the product then adds onto it
          // with beta.
          const TensorRef *ins[1] = {c};
          StridedLayout<2> layout = broadcastLayout<2>(out, ins);
          const T *cData = c->as<T>();
          forEachRowParallel(layout, kElementwiseGrain,
                             [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
                               T *o = outData + offsets[0];
                               const T *in = cData + offsets[1];
                               if (steps[0] == 1 && steps[1] == 1)
                                 std::copy(in, in + count, o);
                               else
                                 for (int64_t i = 0; i < count; ++i)
                                   o[i * steps[0]] = in[i * steps[1]];
                             });
        }
        product(s, a.as<T>(), b.as<T>(), outData, alpha, useBias ? beta : 0.0, route);
      },
      "gemm");
}

} // namespace fsdp::rt::cpu
