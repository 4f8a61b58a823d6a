//===- FusedCodegenBench.cpp - generated Fused code vs the interpreter ----===//
//
// Times a Fused chain over 1M floats on one thread: the CPU interpreter
// (cpu::fusedElementwise) against the generated AVX2 and AVX-512 functions
// (called directly, and through fusedElementwise once registered, which is
// how a compiled step runs them). Two chains: GELU forward (erf) and the
// GELU backward gradient chain. Not a test: it prints the best of several
// runs per variant. Built on request: `ninja fsdp-bench-fused-codegen`.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/GeneratedFused.h"
#include "tests/unit/compiler/Target/FusedJit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

using namespace fsdp;
using namespace fsdp::rt;

namespace {

struct Chain {
  const char *name;
  std::vector<bool> scalar;
  std::vector<int64_t> ints;
};

FusedKernelSpec specOf(const Chain &c) {
  FusedKernelSpec s;
  s.ints = c.ints;
  s.scalar = c.scalar;
  s.numInputs = static_cast<int>(c.scalar.size());
  const int64_t steps = c.ints[0];
  s.numOutputs = static_cast<int>(c.ints.size() - 1 - 3 * steps);
  bool flags[kMaxFusedValues] = {};
  for (int i = 0; i < s.numInputs; ++i)
    flags[i] = c.scalar[i];
  s.key = fusedProgramKey(s.ints.data(), static_cast<int>(s.ints.size()), flags, s.numInputs);
  return s;
}

template <typename F> double bestMs(const F &f) {
  double best = 1e30;
  for (int rep = 0; rep < 15; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  return best;
}

} // namespace

int main() {
  const int64_t n = 1 << 20;
  const std::vector<Chain> chains = {
      // x * 0.5 * (1 + erf(x * sqrt(1/2)))
      {"gelu forward (erf)", {false, true, true, true},
       {5, FusedMul, 0, 1, FusedErf, 4, -1, FusedAdd, 5, 2, FusedMul, 0, 3, FusedMul, 7, 6, 8}},
      // g * (cdf + x * pdf) and the erf gradient: 13 ops, two results
      {"gelu backward (grad chain)", {false, true, false, true, true},
       {13, FusedMul, 0, 1, FusedErf, 5, -1, FusedAdd, 6, 3, FusedMul, 7, 4, FusedMul, 0, 0,
        FusedMul, 9, 4, FusedNeg, 10, -1, FusedExp, 11, -1, FusedMul, 12, 1, FusedMul, 0, 13,
        FusedAdd, 8, 14, FusedMul, 2, 15, FusedErfGrad, 5, 2, 16, 17}},
  };
  std::vector<FusedKernelSpec> specs;
  for (const Chain &c : chains)
    specs.push_back(specOf(c));
  fusedjit::LoadedFused loaded = fusedjit::loadCpuFusedKernels(specs);
  if (!loaded.error.empty()) {
    std::fprintf(stderr, "fsdp-bench-fused-codegen: %s\n", loaded.error.c_str());
    return 1;
  }
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::printf("n = %lld floats, 1 thread, best of 15 (ms)\n", static_cast<long long>(n));
  for (size_t c = 0; c < chains.size(); ++c) {
    const FusedKernelSpec &spec = specs[c];
    std::vector<std::vector<float>> in(spec.numInputs), out(spec.numOutputs);
    std::vector<TensorRef> inRefs(spec.numInputs), outRefs(spec.numOutputs);
    std::vector<const float *> inPtrs;
    std::vector<float *> outPtrs;
    for (int i = 0; i < spec.numInputs; ++i) {
      in[i].resize(spec.scalar[i] ? 1 : n);
      for (float &v : in[i])
        v = spec.scalar[i] ? 0.5f : uniform(rng);
      inRefs[i].rank = 1;
      inRefs[i].dims[0] = static_cast<int64_t>(in[i].size());
      inRefs[i].data = in[i].data();
      inPtrs.push_back(in[i].data());
    }
    for (int j = 0; j < spec.numOutputs; ++j) {
      out[j].assign(n, 0.0f);
      outRefs[j].rank = 1;
      outRefs[j].dims[0] = n;
      outRefs[j].data = out[j].data();
      outPtrs.push_back(out[j].data());
    }
    auto kernel = [&] {
      Status s = cpu::fusedElementwise(inRefs.data(), spec.numInputs, spec.ints.data(),
                                       static_cast<int>(spec.ints.size()), outRefs.data(),
                                       spec.numOutputs);
      if (!s.isOk())
        std::abort();
    };
    const FsdpGeneratedFused &fns = loaded.byKey.at(spec.key);
    const double interpreted = bestMs(kernel);
    const double avx2 = bestMs([&] { fns.avx2(inPtrs.data(), outPtrs.data(), 0, n); });
    const double wide =
        avx512 ? bestMs([&] { fns.avx512(inPtrs.data(), outPtrs.data(), 0, n); }) : 0.0;
    cpu::registerGeneratedFused(&fns, 1);
    const double dispatched = bestMs(kernel);
    cpu::unregisterGeneratedFused(&fns, 1);
    std::printf("%-28s interpreter %7.3f  avx2 %7.3f (x%.1f)  avx512 %7.3f (x%.1f)  "
                "fusedElementwise->generated %7.3f\n",
                chains[c].name, interpreted, avx2, interpreted / avx2, wide,
                wide > 0 ? interpreted / wide : 0.0, dispatched);
  }
  return 0;
}
