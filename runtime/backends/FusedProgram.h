//===- FusedProgram.h - the Fused kernel's program, decoded and checked ---===//
//
// The Fused kernel (Kernels.def) interprets a program of elementwise ops
// over one storage dtype: f32, or bf16/f16, which compute each op in f32
// and round its result to the storage dtype as the unfused op stores it
// (FusedOps.h, roundToStorage). The dtype is the buffers' own (every input
// and result has it), so the plan's encoding needs no field for it. Both
// backends decode and validate the program here, before touching memory,
// so a malformed program is refused by each with the same message: op
// codes and operand ids in range, results naming op values, every input of
// the results' element count or a single (broadcast) element. The op codes
// are the ones Kernels.def lists (runtime/math/FusedOps.h, with each op's
// scalar code, the one table both backends apply).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_FUSEDPROGRAM_H
#define FSDP_RUNTIME_BACKENDS_FUSEDPROGRAM_H

#include "runtime/io/ContentHash.h"
#include "runtime/math/FusedOps.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>

namespace fsdp::rt {

/// Values (inputs + op results) a program may have.
inline constexpr int kMaxFusedValues = 48;

struct FusedStep {
  int64_t op, a, b; // b is -1 for unary ops
};

/// A checked program: value ids 0..numInputs-1 are the inputs,
/// numInputs + k the k-th step's result; outputOf[k] is the output step k
/// writes, or -1.
struct FusedProgram {
  DType dtype = DType::F32; // storage of every input and result
  int numInputs = 0, numSteps = 0, numOutputs = 0;
  int64_t n = 0; // elements of every result
  bool scalar[kMaxFusedValues] = {}; // a one-element input broadcast over n
  FusedStep steps[kMaxFusedValues] = {};
  int outputOf[kMaxFusedValues] = {};
};

inline Status decodeFusedProgram(const TensorRef *inputs, int numInputs, const int64_t *ints,
                                 int numInts, const TensorRef *outputs, int numOutputs,
                                 FusedProgram &p) {
  if (numInputs < 1 || numOutputs < 1 || numInts < 1)
    return Status::error("fused: needs inputs, results and a program");
  const int64_t numSteps = ints[0];
  if (numSteps < 1 || numInts != 1 + 3 * numSteps + numOutputs ||
      numInputs + numSteps > kMaxFusedValues)
    return Status::error(cat("fused: program of ", numInts, " ints does not describe ", numSteps,
                             " ops and ", numOutputs, " results over ", numInputs, " inputs"));
  p.numInputs = numInputs;
  p.numSteps = static_cast<int>(numSteps);
  p.numOutputs = numOutputs;
  p.n = outputs[0].numElements();
  p.dtype = outputs[0].dtype;
  if (!isFusedDType(p.dtype))
    return Status::error(cat("fused: results must be f32, bf16 or f16, not ", dtypeName(p.dtype)));
  for (int i = 0; i < numOutputs; ++i)
    if (outputs[i].dtype != p.dtype || outputs[i].numElements() != p.n)
      return Status::error("fused: results must be of one dtype and element count");
  for (int i = 0; i < numInputs; ++i) {
    if (inputs[i].dtype != p.dtype ||
        (inputs[i].numElements() != p.n && inputs[i].numElements() != 1))
      return Status::error(cat("fused: input ", i, " must be ", dtypeName(p.dtype), " with ", p.n,
                               " elements or one"));
    p.scalar[i] = inputs[i].numElements() == 1 && p.n != 1;
  }
  for (int64_t k = 0; k < numSteps; ++k) {
    FusedStep s{ints[1 + 3 * k], ints[2 + 3 * k], ints[3 + 3 * k]};
    const int64_t self = numInputs + k;
    if (s.op < 0 || s.op >= NumFusedOps || s.a < 0 || s.a >= self ||
        (isUnaryFusedOp(s.op) ? s.b != -1 : (s.b < 0 || s.b >= self)))
      return Status::error(cat("fused: op ", k, " (code ", s.op, ") has invalid operands"));
    p.steps[k] = s;
    p.outputOf[k] = -1;
  }
  for (int i = 0; i < numOutputs; ++i) {
    const int64_t value = ints[1 + 3 * numSteps + i] - numInputs;
    if (value < 0 || value >= numSteps)
      return Status::error(cat("fused: result ", i, " is not an op's value"));
    p.outputOf[value] = i;
  }
  return Status::ok();
}

/// The identity of a Fused program as code is generated for it: its
/// attribute ints, which inputs broadcast (one element over many) and its
/// storage dtype. The
/// compiler names each generated kernel by it (runtime/embed/EmbeddedStep.h)
/// and the backends look generated code up by it, so a launch whose program
/// or broadcasts differ never runs another program's code.
/// Both backends compute it per Fused launch, so it hashes in place: the
/// hash of the ints followed by one int64 flag per input, with no copy,
/// then (bf16 and f16 only, so f32 programs keep the keys they had before
/// other dtypes fused) one int64 naming the dtype.
inline uint64_t fusedProgramKey(const int64_t *ints, int numInts, const bool *scalar,
                                int numInputs, DType dtype = DType::F32) {
  ContentHasher hasher;
  hasher.update(ints, static_cast<size_t>(numInts) * sizeof(int64_t));
  for (int i = 0; i < numInputs; ++i) {
    const int64_t flag = scalar[i] ? 1 : 0;
    hasher.update(&flag, sizeof(flag));
  }
  if (dtype != DType::F32) {
    const int64_t tag = 0x100 + static_cast<int64_t>(dtype);
    hasher.update(&tag, sizeof(tag));
  }
  return hasher.finish();
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_FUSEDPROGRAM_H
