//===- CpuGemmBench.cpp - the CPU kernels' GEMM libraries, timed ----------===//
//
// The C++ half of bench/cpu_gemm.py: times one row-major product per
// argument, `MxNxK` optionally followed by `:TT`, `:TN`, `:NT` (the
// transposes of a and b; default NN), through each library the CPU
// kernels can use: OpenBLAS's sgemm (the f32 kernel), oneDNN's f32 and
// bf16 matmul (OneDnnMatmul.h), and bf16 widened to f32 for sgemm (the
// fallback where oneDNN refuses bf16). Threads: the rank's kernel threads
// (OPENBLAS_NUM_THREADS, which bench/cpu_gemm.py sets): OpenBLAS's own,
// and a KernelThreads pool of as many, as a rank's streams have, which
// runs oneDNN's row pieces. Prints a JSON
// object with oneDNN's ISA, then one per product and library: the median
// milliseconds of the timed runs and oneDNN's implementation. Not a test; built on request:
// `ninja fsdp-bench-cpu-gemm`.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/OneDnnMatmul.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;
using kerneltest::TestTensor;

namespace {

/// Median milliseconds of `f` over runs after two warm-up runs (which
/// also create oneDNN's primitive): at least 5 runs and about 1 s.
double medianMs(const std::function<void()> &f) {
  f();
  f();
  std::vector<double> ms;
  double total = 0;
  while (ms.size() < 5 || (total < 1000 && ms.size() < 50)) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    total += ms.back();
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

bool parse(const char *arg, ProductShape &s) {
  long long m, n, k;
  char ta = 'N', tb = 'N';
  const int got = std::sscanf(arg, "%lldx%lldx%lld:%c%c", &m, &n, &k, &ta, &tb);
  if (got != 3 && got != 5)
    return false;
  s.m = m;
  s.n = n;
  s.k = k;
  s.transA = ta == 'T';
  s.transB = tb == 'T';
  return m > 0 && n > 0 && k > 0;
}

void report(const char *arg, const char *library, double ms, const ProductShape &s,
            const std::string &impl) {
  const double gflops = 2.0 * s.m * s.n * s.k / (ms * 1e6);
  std::printf("{\"shape\": \"%s\", \"library\": \"%s\", \"threads\": %d, \"ms\": %.4f, "
              "\"gflops\": %.2f, \"impl\": \"%s\"}\n",
              arg, library, rankKernelThreads(), ms, gflops, impl.c_str());
  std::fflush(stdout);
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: fsdp-bench-cpu-gemm MxNxK[:TT] ...\n");
    return 2;
  }
  std::printf("{\"isa\": \"%s\"}\n", oneDnnIsa());
  KernelThreads pool(rankKernelThreads());
  KernelThreads::Scope scope(&pool);
  for (int i = 1; i < argc; ++i) {
    ProductShape s;
    if (!parse(argv[i], s)) {
      std::fprintf(stderr, "fsdp-bench-cpu-gemm: '%s' is not MxNxK[:TT]\n", argv[i]);
      return 2;
    }
    using kerneltest::Dims;
    const Dims aDims = s.transA ? Dims{s.k, s.m} : Dims{s.m, s.k};
    const Dims bDims = s.transB ? Dims{s.n, s.k} : Dims{s.k, s.n};
    for (DType t : {DType::F32, DType::BF16}) {
      TestTensor a(t, aDims), b(t, bDims), out(t, {s.m, s.n});
      a.fillUniform(1, -1, 1);
      b.fillUniform(2, -1, 1);
      auto kernel = [&] {
        if (!matmul(a.ref(), b.ref(), out.ref(), s.transA, s.transB))
          std::abort();
      };
      auto oneDnn = [&] {
        if (!oneDnnProduct(s, t, a.ref().data, b.ref().data, out.ref().data, 1.0f, 0.0f))
          std::abort();
      };
      const std::string impl = oneDnnImplementation(s, t);
      if (t == DType::F32) {
        report(argv[i], "openblas-f32", medianMs(kernel), s, "");
        if (!impl.empty())
          report(argv[i], "onednn-f32", medianMs(oneDnn), s, impl);
        continue;
      }
      if (!impl.empty())
        report(argv[i], "onednn-bf16", medianMs(oneDnn), s, impl);
      setenv("FSDP_CPU_GEMM", "widen", 1);
      report(argv[i], "widened-bf16", medianMs(kernel), s, "");
      unsetenv("FSDP_CPU_GEMM");
    }
  }
  return 0;
}
