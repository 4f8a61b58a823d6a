//===- LinearAlgebraKernels.cu - matmul and gemm on the GPU ----------------===//
//
// Every product is first described by GemmMapping.h (the one row-major to
// column-major mapping), then executed:
// - f32, f64, f16 and bf16 on the GPU by cublasGemmStridedBatchedEx, once
//   per outer position (f32 with CUBLAS_COMPUTE_32F, or its TF32 mode when
//   ctx.tf32; f64 in 64F; f16/bf16 inputs with fp32 accumulation, as torch
//   does);
// - the same description in the SIMT build through cblas (CblasGemm.h), for
//   f32 and f64;
// - integers everywhere, and f16/bf16 in the SIMT build, by a naive kernel
//   that walks the same description: one thread per result element summing
//   its k terms in increasing order, in the CPU's accumulator (float for
//   16-bit floats, wrapping 64-bit for integers), so it gives the bits of
//   the CPU's naive route (FSDP_CPU_GEMM=naive; the CPU's default 16-bit
//   GEMMs are oneDNN's, which sums in its own order, so the SIMT parity
//   tests take that route for their reference). cuBLAS has no integer
//   GEMM, and the GPU's 16-bit GEMMs are
//   cuBLAS's (fp32 accumulation in cuBLAS's order: within the numerics
//   contract, not bitwise).
// gemm's bias is broadcast into the result first by a copy kernel, and the
// product then accumulates onto it with beta, as the CPU kernel does.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/GemmMapping.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/ProductScalar.h"

#if defined(FSDP_SIMT_EMULATION)
#include "runtime/backends/cuda/simt/CblasGemm.h"
#else
#include "runtime/backends/cuda/CublasLibrary.h"
#endif

#include <type_traits>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// One thread per element of C over every outer position and batch entry
/// of the description: C(i, j) = alpha * sum_l op(A)(i, l) op(B)(l, j) + beta
/// * C(i, j), column-major, l increasing.
template <typename T>
__global__ void naiveGemmKernel(GemmMapping mapping, const T *left, const T *right, T *c,
                                int64_t total) {
  const ColumnMajorGemm &g = mapping.call;
  const int64_t perCall = g.m * g.n;
  FSDP_GRID_STRIDE(e, total) {
    const int64_t call = e / perCall, within = e % perCall;
    const int64_t outer = call / g.batch, entry = call % g.batch;
    const int64_t i = within % g.m, j = within / g.m;
    const T *A = right + mapping.outer.offset(2, outer) + entry * g.strideA;
    const T *B = left + mapping.outer.offset(1, outer) + entry * g.strideB;
    T *C = c + mapping.outer.offset(0, outer) + entry * g.strideC;
    ProductAcc<T> acc = 0;
    for (int64_t l = 0; l < g.k; ++l) {
      // The CPU multiplies a's element by b's: BLAS's B (left) first.
      ProductAcc<T> lhs = toProductAcc(g.transB ? B[j + l * g.ldb] : B[l + j * g.ldb]);
      ProductAcc<T> rhs = toProductAcc(g.transA ? A[l + i * g.lda] : A[i + l * g.lda]);
      acc += lhs * rhs;
    }
    storeScaledProduct(C + i + j * g.ldc, acc, g.alpha, g.beta);
  }
}

/// Broadcasts the bias into the result (bits: only the element size matters).
template <typename U>
__global__ void broadcastKernel(U *out, const U *in, StridedLayout<2> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { out[layout.offset(0, i)] = in[layout.offset(1, i)]; }
}

template <typename T>
Status naiveProduct(const KernelContext &ctx, const char *op, const GemmMapping &mapping,
                    const T *left, const T *right, T *c) {
  const int64_t total = mapping.outer.numElements() * mapping.call.batch * mapping.call.m *
                        mapping.call.n;
  return launchElementwise(ctx, op, total, naiveGemmKernel<T>, mapping, left, right, c, total);
}

#if !defined(FSDP_SIMT_EMULATION)
/// cuBLAS's element type and compute type for T (16-bit floats accumulate
/// in f32; f32 may use TF32 tensor cores when asked).
template <typename T> cudaDataType_t blasType() {
  if constexpr (std::is_same_v<T, float>)
    return CUDA_R_32F;
  else if constexpr (std::is_same_v<T, double>)
    return CUDA_R_64F;
  else if constexpr (std::is_same_v<T, F16>)
    return CUDA_R_16F;
  else
    return CUDA_R_16BF;
}

template <typename T>
Status cublasProduct(const KernelContext &ctx, const char *op, const GemmMapping &mapping,
                     const T *left, const T *right, T *c) {
  const ColumnMajorGemm &g = mapping.call;
  auto handle = static_cast<cublasHandle_t>(ctx.blas);
  if (!handle)
    return Status::error(cat(op, ": no cuBLAS handle on this stream"));
  const bool isDouble = std::is_same_v<T, double>;
  const cublasComputeType_t compute =
      isDouble ? CUBLAS_COMPUTE_64F
               : (std::is_same_v<T, float> && ctx.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                       : CUBLAS_COMPUTE_32F);
  // Scalars in the compute type, from host memory (captured by value in a
  // CUDA graph).
  const float alpha32 = static_cast<float>(g.alpha), beta32 = static_cast<float>(g.beta);
  const double alpha64 = g.alpha, beta64 = g.beta;
  const void *alpha = isDouble ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = isDouble ? static_cast<const void *>(&beta64) : &beta32;
  const cudaDataType_t type = blasType<T>();
  for (int64_t o = 0, outer = mapping.outer.numElements(); o < outer; ++o) {
    int64_t offC, offLeft, offRight;
    mapping.offsets(o, offC, offLeft, offRight);
    cublasStatus_t status = cublas().gemmStridedBatchedEx(
        handle, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, g.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
        static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), alpha,
        right + offRight, type, static_cast<int>(g.lda), g.strideA, left + offLeft, type,
        static_cast<int>(g.ldb), g.strideB, beta, c + offC, type, static_cast<int>(g.ldc),
        g.strideC, static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS)
      return Status::error(cat(op, ": cublasGemmStridedBatchedEx: ", cublas().statusString(status)));
  }
  return Status::ok();
}
#endif

/// Runs a described product on the path its dtype takes (file comment).
template <typename T>
Status product(const KernelContext &ctx, const char *op, const GemmMapping &mapping,
               const T *left, const T *right, T *c) {
  if (mapping.call.m == 0 || mapping.call.n == 0 || mapping.call.batch == 0 ||
      mapping.outer.numElements() == 0)
    return Status::ok();
  if constexpr (kIsFloatStorage<T>) {
    // cuBLAS rejects dimensions beyond int; so does the description's use.
    const ColumnMajorGemm &g = mapping.call;
    if (g.m > INT32_MAX || g.n > INT32_MAX || g.k > INT32_MAX || g.batch > INT32_MAX)
      return Status::error(cat(op, ": a GEMM dimension exceeds 2^31 - 1"));
#if defined(FSDP_SIMT_EMULATION)
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (g.k > 0) {
        runColumnMajorGemm(mapping, left, right, c);
        return Status::ok();
      }
    }
#else
    if (g.k > 0)
      return cublasProduct(ctx, op, mapping, left, right, c);
#endif
  }
  return naiveProduct(ctx, op, mapping, left, right, c);
}

Status checkSameDType(const char *op, const TensorRef &a, const TensorRef &b,
                      const TensorRef &out) {
  if (a.dtype != out.dtype || b.dtype != out.dtype)
    return Status::error(cat(op, ": operands (", dtypeName(a.dtype), ", ", dtypeName(b.dtype),
                             ") must have the result's element type ", dtypeName(out.dtype)));
  return Status::ok();
}

} // namespace

Status matmul(const KernelContext &ctx, const TensorRef &a, const TensorRef &b,
              const TensorRef &out, bool transA, bool transB) {
  FSDP_RETURN_IF_ERROR(checkSameDType("matmul", a, b, out));
  GemmMapping mapping;
  FSDP_RETURN_IF_ERROR(mapMatMul(a, b, out, transA, transB, mapping));
  return dispatchNumeric(
      out.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return product(ctx, "matmul", mapping, a.as<const T>(), b.as<const T>(), out.as<T>());
      },
      "matmul");
}

Status gemm(const KernelContext &ctx, const TensorRef &a, const TensorRef &b, const TensorRef *c,
            float alpha, float beta, bool transA, bool transB, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(checkSameDType("gemm", a, b, out));
  if (c && c->dtype != out.dtype)
    return Status::error("gemm: bias must have the result's element type");
  // beta == 0 ignores c entirely (BLAS and torch.addmm semantics).
  const bool useBias = c && beta != 0.0f;
  GemmMapping mapping;
  FSDP_RETURN_IF_ERROR(
      mapGemm(a, b, c, out, alpha, useBias ? beta : 0.0f, transA, transB, mapping));
  if (useBias && c->data != out.data) {
    const TensorRef *ins[1] = {c};
    StridedLayout<2> layout = broadcastLayout<2>(out, ins);
    const int64_t n = out.numElements();
    FSDP_RETURN_IF_ERROR(dispatchBySize(
        out.dtype,
        [&](auto unit) {
          using U = decltype(unit);
          return launchElementwise(ctx, "gemm", n, broadcastKernel<U>, out.as<U>(),
                                   c->as<const U>(), layout, n);
        },
        "gemm"));
  }
  return dispatchNumeric(
      out.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return product(ctx, "gemm", mapping, a.as<const T>(), b.as<const T>(), out.as<T>());
      },
      "gemm");
}

FSDP_CUDA_NAMESPACE_END
