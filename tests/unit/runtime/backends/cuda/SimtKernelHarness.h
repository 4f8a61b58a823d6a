//===- SimtKernelHarness.h - a CUDA kernel against the CPU kernel ---------===//
//
// The CUDA kernel tests' one comparison: a plan instruction (kernel, operand
// tensors, attributes) is run through the CPU backend's launch
// (launchCpuKernel) and through the CUDA kernels' SIMT build
// (launchSimtKernel, the `cuda-simt` device's launch), each on its own copy
// of the operands, so both go through the shared decoding of the kernel
// contract exactly as a plan's instruction would. Every result is then
// compared: bit for bit (Match::Bits: data movement, integer and bool
// results, dropout masks, optimizer updates, and float kernels that share
// the CPU's scalar code and order) or within a relative tolerance
// (Match::Close: reductions whose order differs from the CPU's). A case
// the CPU refuses must be refused by the CUDA build too.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_SIMTKERNELHARNESS_H
#define FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_SIMTKERNELHARNESS_H

#include "runtime/backends/cpu/CpuLaunch.h"
#include "runtime/backends/cuda/simt/SimtDevice.h"
#include "runtime/plan/KernelTable.h"
#include "runtime/plan/plan_generated.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::rt::cuda::simttest {

using cpu::kerneltest::Dims;
using cpu::kerneltest::TestTensor;

enum class Match { Bits, Close };

/// One instruction. An input left std::nullopt is an absent optional
/// operand; an output with `aliasInput` >= 0 is that input's buffer (an
/// in-place update, as the optimizers' plans have).
struct KernelCase {
  plan::Kernel kernel;
  std::vector<std::optional<TestTensor>> inputs;
  struct Output {
    TestTensor tensor;
    int aliasInput = -1;
    bool unplanned = false; // passed with null data (an unused result)
  };
  std::vector<Output> outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  uint64_t step = 1;

  KernelCase(plan::Kernel k) : kernel(k) {}
  KernelCase &in(TestTensor t) {
    inputs.emplace_back(std::move(t));
    return *this;
  }
  KernelCase &absent() {
    inputs.emplace_back(std::nullopt);
    return *this;
  }
  KernelCase &out(DType dtype, Dims dims) {
    outputs.push_back({TestTensor(dtype, std::move(dims)), -1});
    return *this;
  }
  /// A result the plan leaves without a buffer (its data null, as the
  /// executor passes an unused dropout mask): written by neither side.
  KernelCase &unplanned(DType dtype, Dims dims) {
    outputs.push_back({TestTensor(dtype, std::move(dims)), -1, true});
    return *this;
  }
  KernelCase &inPlace(int input) {
    outputs.push_back({*inputs.at(input), input});
    return *this;
  }
};

/// The operands of one run, owned, with the Launch over them.
struct LaunchedCase {
  std::vector<std::optional<TestTensor>> inputs;
  std::vector<TestTensor> outputs;
  std::vector<TensorRef> inRefs, outRefs;
  Launch launch;
  Status status;

  LaunchedCase(const KernelCase &c, Status (*run)(const Launch &, uint64_t)) : inputs(c.inputs) {
    for (auto &t : inputs)
      inRefs.push_back(t ? t->ref() : TensorRef{});
    for (const auto &o : c.outputs)
      outputs.push_back(o.tensor);
    for (size_t i = 0; i < outputs.size(); ++i) {
      int alias = c.outputs[i].aliasInput;
      outRefs.push_back(alias >= 0 ? inRefs.at(alias) : outputs[i].ref());
      if (c.outputs[i].unplanned)
        outRefs.back().data = nullptr;
    }
    launch.kernel = static_cast<uint16_t>(c.kernel);
    launch.inputs = inRefs.data();
    launch.numInputs = static_cast<int>(inRefs.size());
    launch.outputs = outRefs.data();
    launch.numOutputs = static_cast<int>(outRefs.size());
    launch.ints = c.ints.data();
    launch.numInts = static_cast<int>(c.ints.size());
    launch.floats = c.floats.data();
    launch.numFloats = static_cast<int>(c.floats.size());
    launch.name = kernelName(c.kernel);
    status = run(launch, c.step);
    // Results written in place live in the input copies.
    for (size_t i = 0; i < outputs.size(); ++i)
      if (c.outputs[i].aliasInput >= 0)
        outputs[i] = *inputs[c.outputs[i].aliasInput];
  }
};

/// Runs `c` on both backends and compares every result (see the file
/// comment). `tolerance` is relative to max(1, |cpu value|) for Close.
inline void expectSameAsCpu(const KernelCase &c, Match match, double tolerance = 0) {
  LaunchedCase cpuRun(c, launchCpuKernel), simtRun(c, launchSimtKernel);
  const std::string what = kernelName(c.kernel);
  ASSERT_EQ(cpuRun.status.isOk(), simtRun.status.isOk())
      << what << ": cpu says '" << cpuRun.status.message() << "', cuda-simt says '"
      << simtRun.status.message() << "'";
  if (!cpuRun.status)
    return;
  for (size_t o = 0; o < cpuRun.outputs.size(); ++o) {
    const TestTensor &want = cpuRun.outputs[o], &got = simtRun.outputs[o];
    int reported = 0;
    for (int64_t i = 0; i < want.size() && reported < 5; ++i) {
      if (match == Match::Bits) {
        if (want.getBits(i) != got.getBits(i)) {
          ADD_FAILURE() << what << " result " << o << " element " << i << ": cpu " << want.get(i)
                        << " (bits " << std::hex << want.getBits(i) << "), cuda-simt "
                        << got.get(i) << " (bits " << got.getBits(i) << std::dec << ")";
          ++reported;
        }
        continue;
      }
      double w = want.get(i), g = got.get(i);
      bool same = (std::isnan(w) && std::isnan(g)) || w == g ||
                  std::fabs(w - g) <= tolerance * std::max(1.0, std::fabs(w));
      if (!same) {
        ADD_FAILURE() << what << " result " << o << " element " << i << ": cpu " << w
                      << ", cuda-simt " << g << " (tolerance " << tolerance << ")";
        ++reported;
      }
    }
  }
}

/// A tensor of `dtype` and `dims` with uniform values in [lo, hi).
inline TestTensor uniform(DType dtype, Dims dims, uint32_t seed, double lo = -2, double hi = 2) {
  TestTensor t(dtype, std::move(dims));
  t.fillUniform(seed, lo, hi);
  return t;
}

/// A tensor of `dtype` and `dims` holding `values` in order.
inline TestTensor values(DType dtype, Dims dims, const std::vector<double> &v) {
  TestTensor t(dtype, std::move(dims));
  for (int64_t i = 0; i < t.size(); ++i)
    t.set(i, v.at(static_cast<size_t>(i)));
  return t;
}

/// Distinct nonzero bit patterns per element (bool: alternating 0/1), the
/// CPU test's fill: float patterns include NaNs and denormals, which only a
/// bitwise move preserves.
inline TestTensor pattern(DType dtype, Dims dims, uint64_t seed) {
  TestTensor t(dtype, std::move(dims));
  for (int64_t i = 0; i < t.size(); ++i) {
    uint64_t v = (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    t.setBits(i, dtype == DType::Bool ? (static_cast<uint64_t>(i) + seed) % 2 : v | 1);
  }
  return t;
}

} // namespace fsdp::rt::cuda::simttest

#endif // FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CUDA_SIMTKERNELHARNESS_H
