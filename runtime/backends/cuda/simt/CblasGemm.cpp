//===- CblasGemm.cpp - a column-major GEMM description run through cblas --===//
//
// Dimensions beyond cblas's int are refused by the CPU kernel's contract
// long before they reach here (the plans' GEMMs are far smaller); an empty
// product issues nothing, as cuBLAS would compute nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/simt/CblasGemm.h"

#include <cblas.h>

#include <type_traits>

namespace fsdp::rt::cuda {

template <typename T>
void runColumnMajorGemm(const GemmMapping &mapping, const T *left, const T *right, T *c) {
  const ColumnMajorGemm &g = mapping.call;
  if (g.m == 0 || g.n == 0)
    return;
  const CBLAS_TRANSPOSE ta = g.transA ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = g.transB ? CblasTrans : CblasNoTrans;
  const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb),
            ldc = static_cast<int>(g.ldc);
  for (int64_t o = 0, outer = mapping.outer.numElements(); o < outer; ++o) {
    int64_t offC, offLeft, offRight;
    mapping.offsets(o, offC, offLeft, offRight);
    for (int64_t i = 0; i < g.batch; ++i) {
      const T *A = right + offRight + i * g.strideA;
      const T *B = left + offLeft + i * g.strideB;
      T *C = c + offC + i * g.strideC;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasColMajor, ta, tb, m, n, k, static_cast<float>(g.alpha), A, lda, B, ldb,
                    static_cast<float>(g.beta), C, ldc);
      else
        cblas_dgemm(CblasColMajor, ta, tb, m, n, k, g.alpha, A, lda, B, ldb, g.beta, C, ldc);
    }
  }
}

template void runColumnMajorGemm<float>(const GemmMapping &, const float *, const float *,
                                        float *);
template void runColumnMajorGemm<double>(const GemmMapping &, const double *, const double *,
                                         double *);

} // namespace fsdp::rt::cuda
