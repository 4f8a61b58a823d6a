//===- FusedKernels.cpp - a chain of elementwise ops in one pass ----------===//
//
// The fused elementwise kernel interprets a small program (plan.fbs,
// Kernel Fused) over blocks of kBlock elements: each op runs as one tight
// loop over the block (vectorized, AVX2 where available), reading its
// operands from the inputs in place or from earlier ops' results held in
// stack buffers, and writing a program result straight into its output.
// Memory traffic is one read of each input and one write of each result,
// instead of a round trip through memory per op. Every op is the scalar code
// of its unfused kernel, from the table both backends share
// (runtime/math/FusedOps.h), so fusion changes no bit; in a bf16 or f16
// program each op's result is rounded where the unfused op would store it
// (roundToStorage), and inputs are widened per block. A program a compiled
// step generated native code for (GeneratedFused.h) runs that code instead,
// over the same element ranges: it computes the same bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cpu/GeneratedFused.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FusedOps.h"

#include <algorithm>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

/// Elements per block: 16 intermediates of 512 floats stay in L1/L2.
constexpr int64_t kBlock = 512;
/// Op results held in scratch at once (results written to outputs need none).
constexpr int kMaxScratch = 24;
/// Blocks per thread at the least: below 8K elements a wake-up costs more
/// than the loop.
constexpr int64_t kBlocksPerChunk = 16;

/// One op over `n` elements; a scalar operand has stride 0. Each result is
/// rounded as an op of storage type T stores it (the identity for f32).
template <typename T, int SA, int SB>
void applyOp(int64_t op, const float *a, const float *b, float *d, int64_t n) {
  auto each = [&](auto fn) {
    runWide([&] {
      for (int64_t i = 0; i < n; ++i)
        d[i] = roundToStorage<T>(fn(a[SA * i], b[SB * i]));
    });
  };
  withFusedOp(op, each);
}

/// Per-thread block buffers: the f32 interpreter's intermediates, and every
/// value of a bf16/f16 program in f32 by value id (one buffer for both
/// dtypes; a broadcast input's holds one element).
float (&wideScratch())[kMaxScratch][kBlock] {
  alignas(64) static thread_local float scratch[kMaxScratch][kBlock];
  return scratch;
}
float (&narrowScratch())[kMaxFusedValues][kBlock] {
  alignas(64) static thread_local float scratch[kMaxFusedValues][kBlock];
  return scratch;
}
template <bool Wide> auto &blockScratch() {
  if constexpr (Wide)
    return wideScratch();
  else
    return narrowScratch();
}

/// The program over blocks of storage type T. f32 inputs are read in place
/// and results written straight to their outputs; bf16/f16 inputs are
/// widened into scratch per block (exactly, as the unfused ops load them)
/// and results narrowed from scratch (exactly: they are rounded already).
template <typename T>
Status runProgram(const FusedProgram &program, const TensorRef *inputs, const TensorRef *outputs) {
  constexpr bool kWide = std::is_same_v<T, float>;
  const int numInputs = program.numInputs;
  const int64_t n = program.n, numSteps = program.numSteps;
  const bool *scalar = program.scalar;
  const FusedStep *steps = program.steps;
  const int *outputOf = program.outputOf;
  int slot[kMaxFusedValues];
  std::fill(slot, slot + numSteps, -1);
  int scratchSlots = 0;
  for (int64_t k = 0; k < numSteps; ++k)
    if (kWide && outputOf[k] < 0)
      slot[k] = scratchSlots++;
  if (scratchSlots > kMaxScratch)
    return Status::error("fused: too many intermediate values");

  // Blocks split across the rank's threads: each element's ops are the
  // same whichever thread runs its block, so the bits do not depend on them.
  const int64_t numBlocks = (n + kBlock - 1) / kBlock;
  return parallelFor(0, numBlocks, kBlocksPerChunk, [&](int64_t firstBlock, int64_t endBlock) {
    auto &scratch = blockScratch<kWide>();
    const float *value[kMaxFusedValues];
    for (int64_t start = firstBlock * kBlock; start < std::min(n, endBlock * kBlock);
         start += kBlock) {
      const int64_t len = std::min(kBlock, n - start);
      for (int i = 0; i < numInputs; ++i) {
        const T *in = inputs[i].as<const T>() + (scalar[i] ? 0 : start);
        if constexpr (kWide) {
          value[i] = in;
        } else {
          for (int64_t e = 0, m = scalar[i] ? 1 : len; e < m; ++e)
            scratch[i][e] = load(in + e);
          value[i] = scratch[i];
        }
      }
      for (int64_t k = 0; k < numSteps; ++k) {
        const FusedStep &s = steps[k];
        float *dst = !kWide          ? scratch[numInputs + k]
                     : slot[k] < 0 ? outputs[outputOf[k]].as<float>() + start
                                   : scratch[slot[k]];
        const float *a = value[s.a];
        const float *b = s.b >= 0 ? value[s.b] : a;
        const bool sa = scalar[s.a], sb = s.b >= 0 && scalar[s.b];
        if (!sa && !sb)
          applyOp<T, 1, 1>(s.op, a, b, dst, len);
        else if (!sa)
          applyOp<T, 1, 0>(s.op, a, b, dst, len);
        else if (!sb)
          applyOp<T, 0, 1>(s.op, a, b, dst, len);
        else
          applyOp<T, 0, 0>(s.op, a, b, dst, len);
        value[numInputs + k] = dst;
        if constexpr (!kWide)
          if (outputOf[k] >= 0) {
            T *out = outputs[outputOf[k]].as<T>() + start;
            for (int64_t e = 0; e < len; ++e)
              store(out + e, dst[e]);
          }
      }
    }
  });
}

} // namespace

Status fusedElementwise(const TensorRef *inputs, int numInputs, const int64_t *ints, int numInts,
                        const TensorRef *outputs, int numOutputs) {
  // Decode and check the program before touching memory (FusedProgram.h).
  FusedProgram program;
  FSDP_RETURN_IF_ERROR(
      decodeFusedProgram(inputs, numInputs, ints, numInts, outputs, numOutputs, program));

  // Generated code for this program (and these broadcasts and dtype), if a
  // compiled step registered some: element ranges split across the rank's
  // threads in whole blocks, as the interpreter's; each element's result is
  // independent of the split.
  FsdpFusedFn generated = nullptr;
  if (hasGeneratedFused() && numOutputs <= kMaxFusedValues)
    generated = lookupGeneratedFused(
        fusedProgramKey(ints, numInts, program.scalar, numInputs, program.dtype));
  if (generated) {
    // The C ABI types the pointers as float; a bf16/f16 program's code
    // reads and writes 16-bit elements through them (EmbeddedStep.h).
    const float *in[kMaxFusedValues];
    float *out[kMaxFusedValues];
    for (int i = 0; i < numInputs; ++i)
      in[i] = static_cast<const float *>(inputs[i].data);
    for (int i = 0; i < numOutputs; ++i)
      out[i] = static_cast<float *>(outputs[i].data);
    return parallelFor(0, program.n, kBlocksPerChunk * kBlock,
                       [&](int64_t begin, int64_t end) { generated(in, out, begin, end); });
  }
  return withFusedDType(program.dtype,
                        [&](auto tag) { return runProgram<decltype(tag)>(program, inputs, outputs); });
}

} // namespace fsdp::rt::cpu
