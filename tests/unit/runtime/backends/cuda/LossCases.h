//===- LossCases.h - operands shared by the CUDA loss tests ----------------===//
//
// The label tensors, [N, C, d...] layouts and ignore settings that the
// forward (LossKernelsTest.cpp) and backward (LossGradKernelsTest.cpp)
// CUDA loss tests both sweep, so the two cover the same cases: [N, C] and
// [N, C, d...] with odd sizes, thousands of positions (several blocks),
// an empty batch, and ignore_index absent, a valid class (1) or -100.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_LOSSCASES_H
#define FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_LOSSCASES_H

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

#include <string>

namespace fsdp::rt::cuda::simttest {

/// Labels in [0, c) for `dims`, with `ignored` at every fifth position.
inline TestTensor labelsFor(DType t, Dims dims, int64_t c, int64_t ignored) {
  TestTensor labels(t, std::move(dims));
  for (int64_t i = 0; i < labels.size(); ++i)
    labels.set(i, i % 5 == 3 ? ignored : (i * 7 + 3) % c);
  return labels;
}

struct LossLayout {
  Dims scores, labels;
};
inline const LossLayout kLossLayouts[] = {
    {{6, 5}, {6}},
    {{1, 1}, {1}},
    {{3, 4, 7}, {3, 7}},
    {{2, 11, 3, 5}, {2, 3, 5}},
    {{16, 10, 7}, {16, 7}},
    {{1000, 37}, {1000}},     // 37k gradient elements: 145 blocks
    {{8, 50, 130}, {8, 130}}, // 1040 positions of 50 classes, d = 130
    {{0, 5}, {0}}};           // an empty batch

/// ints[1..2] of a loss instruction: no ignore_index, a valid class, -100.
struct IgnoreSetting {
  bool ignores;
  int64_t value;
};
inline const IgnoreSetting kIgnoreSettings[] = {{false, 0}, {true, 1}, {true, -100}};

/// The loss's dims: per position for "none" (0), a scalar otherwise.
inline Dims lossDims(int64_t reduction, const Dims &labels) {
  return reduction == 0 ? labels : Dims{};
}

inline std::string lossTrace(DType t, DType labels, const LossLayout &l, int64_t reduction,
                             bool weighted, const IgnoreSetting &ignore) {
  std::string dims;
  for (int64_t d : l.scores)
    dims += std::to_string(d) + "x";
  return std::string(dtypeName(t)) + "/" + dtypeName(labels) + " " + dims + " reduction " +
         std::to_string(reduction) + (weighted ? " weighted" : "") +
         (ignore.ignores ? " ignore " + std::to_string(ignore.value) : "");
}

} // namespace fsdp::rt::cuda::simttest

#endif // FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_LOSSCASES_H
