//===- FusedTestPrograms.h - Fused programs that cover every op -----------===//
//
// The programs and inputs generated Fused code is checked on, shared by
// the CPU codegen test (FusedCodegenTest.cpp: the AVX2/AVX-512 functions)
// and the GPU test (tests/gpu/GeneratedPtxGpuTest.cpp: the PTX kernels),
// so both targets answer for the same cases: every op code (unary, binary,
// gradients), broadcast inputs in each position, several results and
// reused intermediates; inputs mixing random values with the special ones
// the formulas branch on; and the comparison with the interpreter.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDTESTPROGRAMS_H
#define FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDTESTPROGRAMS_H

#include "compiler/Target/FusedCodegen.h"
#include "runtime/backends/FusedProgram.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace fsdp::fusedtest {

using namespace fsdp::rt;

/// A program by ops ({op, a, b}; b = -1 for unary) and result value ids.
struct Program {
  const char *name;
  int numInputs;
  std::vector<bool> scalar;
  std::vector<std::array<int64_t, 3>> ops;
  std::vector<int64_t> results;

  FusedKernelSpec spec(DType dtype = DType::F32) const {
    FusedKernelSpec s;
    s.dtype = dtype;
    s.ints.push_back(static_cast<int64_t>(ops.size()));
    for (const auto &op : ops)
      s.ints.insert(s.ints.end(), op.begin(), op.end());
    s.ints.insert(s.ints.end(), results.begin(), results.end());
    s.numInputs = numInputs;
    s.numOutputs = static_cast<int>(results.size());
    s.scalar = scalar;
    bool flags[kMaxFusedValues] = {};
    for (int i = 0; i < numInputs; ++i)
      flags[i] = scalar[i];
    s.key = fusedProgramKey(s.ints.data(), static_cast<int>(s.ints.size()), flags, numInputs,
                            dtype);
    return s;
  }

  /// Per result, whether it depends on a log (through any chain of ops):
  /// log is the one op the math library computes (glibc's logf on the
  /// CPU, libdevice's __nv_logf on a GPU), every other op the runtime's
  /// own formulas on every target.
  std::vector<bool> logResults() const {
    std::vector<bool> fromLog(numInputs + ops.size(), false);
    for (size_t k = 0; k < ops.size(); ++k) {
      const auto &op = ops[k];
      fromLog[numInputs + k] =
          op[0] == FusedLog || fromLog[op[1]] || (op[2] >= 0 && fromLog[op[2]]);
    }
    std::vector<bool> out;
    for (int64_t r : results)
      out.push_back(fromLog[r]);
    return out;
  }

  /// "name [vbv]": which inputs are broadcast (b) or not (v).
  std::string label() const {
    std::string text = std::string(name) + " [";
    for (bool s : scalar)
      text += s ? "b" : "v";
    return text + "]";
  }
};

inline constexpr int64_t U = -1;

/// Covers every op code; value ids: inputs first, then op k at numInputs + k.
inline std::vector<Program> testPrograms() {
  std::vector<Program> programs;
  // Every unary op on the input, and chained (results reused).
  programs.push_back({"unary",
                      1,
                      {false},
                      {{FusedNeg, 0, U},
                       {FusedRelu, 0, U},
                       {FusedExp, 0, U},
                       {FusedLog, 0, U},
                       {FusedSqrt, 0, U},
                       {FusedErf, 0, U},
                       {FusedTanh, 0, U},
                       {FusedSigmoid, 0, U},
                       {FusedExp, 1, U},   // exp(-x)
                       {FusedRelu, 1, U},  // relu(-x)
                       {FusedSqrt, 3, U},  // sqrt(exp x)
                       {FusedLog, 11, U}}, // log(sqrt(exp x))
                      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}});
  // Every binary op, with each broadcast pattern.
  for (std::vector<bool> scalar :
       {std::vector<bool>{false, false}, {true, false}, {false, true}, {true, true}})
    programs.push_back({"binary",
                        2,
                        scalar,
                        {{FusedAdd, 0, 1},
                         {FusedSub, 0, 1},
                         {FusedMul, 0, 1},
                         {FusedDiv, 0, 1},
                         {FusedSub, 1, 0},
                         {FusedDiv, 1, 0},
                         {FusedMul, 2, 3}, // (x + y) * (x - y): intermediates reused
                         {FusedDiv, 8, 4}},
                        {2, 3, 4, 5, 6, 7, 9}});
  // Every gradient op, on raw values and on their forward ops' results.
  for (std::vector<bool> scalar : {std::vector<bool>{false, false}, {true, false}, {false, true}})
    programs.push_back({"grads",
                        2,
                        scalar,
                        {{FusedReluGrad, 0, 1},
                         {FusedErfGrad, 0, 1},
                         {FusedTanhGrad, 0, 1},
                         {FusedSigmoidGrad, 0, 1},
                         {FusedRelu, 0, U},
                         {FusedReluGrad, 6, 1},
                         {FusedTanh, 0, U},
                         {FusedTanhGrad, 8, 1},
                         {FusedSigmoid, 0, U},
                         {FusedSigmoidGrad, 10, 1}},
                        {2, 3, 4, 5, 7, 9, 11}});
  // GELU forward: x * 0.5 * (1 + erf(x * sqrt(1/2))), constants broadcast;
  // one result only, intermediates in registers.
  programs.push_back(
      {"gelu",
       4,
       {false, true, true, true},
       {{FusedMul, 0, 1}, {FusedErf, 4, U}, {FusedAdd, 5, 2}, {FusedMul, 0, 3}, {FusedMul, 7, 6}},
       {8}});
  // GELU backward: g * (cdf + x * pdf), pdf = alpha * exp(-x^2 / 2), and
  // the erf gradient: two results, a broadcast in the middle of the inputs.
  programs.push_back({"geluGrad",
                      5,
                      {false, true, false, true, true},
                      {{FusedMul, 0, 1},      // 5: x * beta
                       {FusedErf, 5, U},      // 6
                       {FusedAdd, 6, 3},      // 7: 1 + erf
                       {FusedMul, 7, 4},      // 8: cdf
                       {FusedMul, 0, 0},      // 9: x^2
                       {FusedMul, 9, 4},      // 10: x^2 / 2
                       {FusedNeg, 10, U},     // 11
                       {FusedExp, 11, U},     // 12
                       {FusedMul, 12, 1},     // 13: pdf (up to a constant)
                       {FusedMul, 0, 13},     // 14
                       {FusedAdd, 8, 14},     // 15
                       {FusedMul, 2, 15},     // 16: g * (cdf + x pdf)
                       {FusedErfGrad, 5, 2}}, // 17
                      {16, 17}});
  return programs;
}

/// The special values each op's formula branches on, then random ones.
inline std::vector<float> specials() {
  std::vector<float> v = {
      0.0f,         -0.0f,         INFINITY, -INFINITY, NAN,     -NAN,     1e-40f, -1e-40f,
      FLT_TRUE_MIN, -FLT_TRUE_MIN, FLT_MIN,  -FLT_MIN,  FLT_MAX, -FLT_MAX, 1e30f,  -1e30f,
      1e-30f,       1.0f,          -1.0f,    0.6f,      -0.6f,   0.5f,     2.0f,   -3.0f,
      100.0f,       -100.0f,       89.0f,    -87.0f,    10.0f,   -10.0f,   9.3f,   -9.3f};
  for (float edge : {-86.5f, 88.72283935546875f, 1.0f, 0.6f, 44.36f, -43.25f}) {
    for (float e : {edge, -edge}) {
      float down = e, up = e;
      for (int k = 0; k < 3; ++k) {
        down = std::nextafter(down, -INFINITY);
        up = std::nextafter(up, INFINITY);
        v.push_back(down);
        v.push_back(up);
      }
      v.push_back(e);
    }
  }
  return v;
}

inline std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> special = specials(), out(n);
  std::shuffle(special.begin(), special.end(), rng);
  std::uniform_real_distribution<float> uniform(-6.0f, 6.0f), exponent(-40.0f, 40.0f);
  for (int64_t i = 0; i < n; ++i) {
    const int pick = static_cast<int>(rng() % 4);
    if (pick == 0)
      out[i] = special[rng() % special.size()];
    else if (pick == 1)
      out[i] = (rng() % 2 ? 1.0f : -1.0f) * std::exp2(exponent(rng));
    else
      out[i] = uniform(rng);
  }
  return out;
}

/// The same bytes, or both NaN: IEEE 754 leaves the sign and payload of a
/// NaN result unspecified, and both LLVM's and GCC's optimizers use that
/// (LLVM folds -(x * x) into (-x) * x, whose NaN takes the other sign), so
/// only that NaN is a NaN is the interpreter's contract.
inline bool sameBits(float got, float want) {
  return std::memcmp(&got, &want, sizeof(float)) == 0 || (std::isnan(got) && std::isnan(want));
}

inline std::string bitsOf(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  char text[48];
  std::snprintf(text, sizeof text, "%.9g (0x%08x)", v, bits);
  return text;
}

} // namespace fsdp::fusedtest

#endif // FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDTESTPROGRAMS_H
