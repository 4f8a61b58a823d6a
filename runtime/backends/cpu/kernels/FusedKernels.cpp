//===- FusedKernels.cpp - a chain of elementwise ops in one pass ----------===//
//
// The fused elementwise kernel interprets a small program (plan.fbs,
// Kernel Fused) over blocks of kBlock elements: each op runs as one tight
// loop over the block (vectorized, AVX2 where available), reading its
// operands from the inputs in place or from earlier ops' results held in
// stack buffers, and writing a program result straight into its output.
// Memory traffic is one read of each input and one write of each result,
// instead of a round trip through memory per op. Every op uses the same
// scalar math as its unfused kernel (plain IEEE arithmetic,
// Activations.h), so fusion changes no bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/math/Activations.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <algorithm>

namespace fsdp::rt::cpu {
namespace {

/// Elements per block: 16 intermediates of 512 floats stay in L1/L2.
constexpr int64_t kBlock = 512;
/// Values (inputs + op results) a program may have.
constexpr int kMaxValues = 48;
/// Op results held in scratch at once (results written to outputs need none).
constexpr int kMaxScratch = 24;

enum Op : int64_t {
  Add, Sub, Mul, Div, Neg, Relu, Exp, Log, Sqrt, Erf, Tanh, Sigmoid,
  ReluGrad, ErfGrad, TanhGrad, SigmoidGrad, NumOps
};

bool isUnary(int64_t op) { return op >= Neg && op <= Sigmoid; }

struct Step {
  int64_t op, a, b;
};

/// One op over `n` elements; a scalar operand has stride 0.
template <int SA, int SB>
void applyOp(int64_t op, const float *a, const float *b, float *d, int64_t n) {
  auto each = [&](auto fn) {
    runWide([&] {
      for (int64_t i = 0; i < n; ++i)
        d[i] = fn(a[SA * i], b[SB * i]);
    });
  };
  switch (op) {
  case Add: return each([](float x, float y) { return x + y; });
  case Sub: return each([](float x, float y) { return x - y; });
  case Mul: return each([](float x, float y) { return x * y; });
  case Div: return each([](float x, float y) { return x / y; });
  case Neg: return each([](float x, float) { return -x; });
  case Relu: return each([](float x, float) { return reluOf(x); });
  case Exp: return each([](float x, float) { return expOf(x); });
  case Log: return each([](float x, float) { return std::log(x); });
  case Sqrt: return each([](float x, float) { return std::sqrt(x); });
  case Erf: return each([](float x, float) { return erfOf(x); });
  case Tanh: return each([](float x, float) { return tanhOf(x); });
  case Sigmoid: return each([](float x, float) { return sigmoidOf(x); });
  case ReluGrad: return each([](float y, float g) { return reluGradOf(y, g); });
  case ErfGrad: return each([](float x, float g) { return erfGradOf(x, g); });
  case TanhGrad: return each([](float y, float g) { return tanhGradOf(y, g); });
  case SigmoidGrad: return each([](float y, float g) { return sigmoidGradOf(y, g); });
  }
}

} // namespace

Status fusedElementwise(const TensorRef *inputs, int numInputs, const int64_t *ints, int numInts,
                        const TensorRef *outputs, int numOutputs) {
  // Decode and check the program before touching memory.
  if (numInputs < 1 || numOutputs < 1 || numInts < 1)
    return Status::error("fused: needs inputs, results and a program");
  const int64_t numSteps = ints[0];
  if (numSteps < 1 || numInts != 1 + 3 * numSteps + numOutputs ||
      numInputs + numSteps > kMaxValues)
    return Status::error(cat("fused: program of ", numInts, " ints does not describe ", numSteps,
                             " ops and ", numOutputs, " results over ", numInputs, " inputs"));
  const int64_t n = outputs[0].numElements();
  for (int i = 0; i < numOutputs; ++i)
    if (outputs[i].dtype != DType::F32 || outputs[i].numElements() != n)
      return Status::error("fused: results must be f32 of one element count");
  // Fixed-size tables on the stack: this runs every step and allocates nothing.
  bool scalar[kMaxValues] = {};
  for (int i = 0; i < numInputs; ++i) {
    if (inputs[i].dtype != DType::F32 ||
        (inputs[i].numElements() != n && inputs[i].numElements() != 1))
      return Status::error(cat("fused: input ", i, " must be f32 with ", n, " elements or one"));
    scalar[i] = inputs[i].numElements() == 1 && n != 1;
  }
  Step steps[kMaxValues];
  for (int64_t k = 0; k < numSteps; ++k) {
    Step s{ints[1 + 3 * k], ints[2 + 3 * k], ints[3 + 3 * k]};
    const int64_t self = numInputs + k;
    if (s.op < 0 || s.op >= NumOps || s.a < 0 || s.a >= self ||
        (isUnary(s.op) ? s.b != -1 : (s.b < 0 || s.b >= self)))
      return Status::error(cat("fused: op ", k, " (code ", s.op, ") has invalid operands"));
    steps[k] = s;
  }
  // Where each op writes: a result's output buffer, else a scratch slot.
  int outputOf[kMaxValues];
  std::fill(outputOf, outputOf + numSteps, -1);
  for (int i = 0; i < numOutputs; ++i) {
    const int64_t value = ints[1 + 3 * numSteps + i] - numInputs;
    if (value < 0 || value >= numSteps)
      return Status::error(cat("fused: result ", i, " is not an op's value"));
    outputOf[value] = i;
  }
  int slot[kMaxValues];
  std::fill(slot, slot + numSteps, -1);
  int scratchSlots = 0;
  for (int64_t k = 0; k < numSteps; ++k)
    if (outputOf[k] < 0)
      slot[k] = scratchSlots++;
  if (scratchSlots > kMaxScratch)
    return Status::error("fused: too many intermediate values");

  alignas(64) static thread_local float scratch[kMaxScratch][kBlock];
  const float *value[kMaxValues];
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t len = std::min(kBlock, n - start);
    for (int i = 0; i < numInputs; ++i)
      value[i] = inputs[i].as<const float>() + (scalar[i] ? 0 : start);
    for (int64_t k = 0; k < numSteps; ++k) {
      const Step &s = steps[k];
      float *dst = outputOf[k] >= 0 ? outputs[outputOf[k]].as<float>() + start : scratch[slot[k]];
      const float *a = value[s.a];
      const float *b = s.b >= 0 ? value[s.b] : a;
      const bool sa = scalar[s.a], sb = s.b >= 0 && scalar[s.b];
      if (!sa && !sb)
        applyOp<1, 1>(s.op, a, b, dst, len);
      else if (!sa)
        applyOp<1, 0>(s.op, a, b, dst, len);
      else if (!sb)
        applyOp<0, 1>(s.op, a, b, dst, len);
      else
        applyOp<0, 0>(s.op, a, b, dst, len);
      value[numInputs + k] = dst;
    }
  }
  return Status::ok();
}

} // namespace fsdp::rt::cpu
