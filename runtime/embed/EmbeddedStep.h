/*===- EmbeddedStep.h - what a compiled step object carries (C ABI) ------===//
//
// `fsdp-opt --emit=object` (and `--emit=binary`, which links it) writes an
// object file defining one symbol, fsdp_embedded_step, of this layout: the
// plan's verified FlatBuffer bytes (the same bytes a plan file holds after
// its header), optionally the weights file's bytes (--embed-weights), the
// text `--help` prints about what the step was compiled from, and the code
// generated for the plan's Fused chains: native x86-64 functions (an AVX2
// baseline and an AVX-512 variant, chosen at start-up) and PTX for the CUDA
// backend. The runtime (libfsdp_runtime.a) reads it; nothing here depends
// on the compiler. Plain C so that a user embedding the step in a program
// of their own can include it (fsdp_step.h declares the entry points).
// Bump FSDP_EMBEDDED_STEP_ABI whenever this layout changes: the runtime
// refuses an object of another version.
//
//===----------------------------------------------------------------------===*/

#ifndef FSDP_RUNTIME_EMBED_EMBEDDEDSTEP_H
#define FSDP_RUNTIME_EMBED_EMBEDDEDSTEP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FSDP_EMBEDDED_STEP_ABI 1u

/* A generated Fused chain over elements [begin, end): inputs[i] is input
 * i's base (a broadcast input's one element is read at index 0 for every
 * element), outputs[j] result j's. The elements are of the program's
 * storage dtype (f32, or bf16/f16 read and written as 16-bit patterns
 * through these float-typed pointers). Elementwise and in place-safe: each
 * element's inputs are read before its results are written. */
typedef void (*FsdpFusedFn)(const float *const *inputs, float *const *outputs, int64_t begin,
                            int64_t end);

typedef struct FsdpGeneratedFused {
  /* fusedProgramKey (runtime/backends/FusedProgram.h) of the program. */
  uint64_t key;
  /* Native code: the x86-64-v3 (AVX2) baseline, and the AVX-512 variant
   * (null when not generated). */
  FsdpFusedFn avx2;
  FsdpFusedFn avx512;
  /* The kernel's entry name in the PTX modules (null when none). Its
   * parameters: inputs..., outputs... (global pointers to the program's
   * elements), then n (i64). */
  const char *ptxEntry;
} FsdpGeneratedFused;

typedef struct FsdpEmbeddedStep {
  uint32_t abiVersion; /* FSDP_EMBEDDED_STEP_ABI */
  /* The plan FlatBuffer (plan.fbs), 64-byte aligned, and its content hash. */
  const uint8_t *plan;
  uint64_t planSize;
  uint64_t planHash;
  /* The weights file's bytes (--embed-weights), or null: then the weights
   * are read from `weightsFile`, beside the executable. */
  const uint8_t *weights;
  uint64_t weightsSize;
  const char *weightsFile;
  /* What the step was compiled from, for --help (one paragraph). */
  const char *info;
  /* PTX modules (NUL-terminated) for sm_80 and sm_90, or null. */
  const char *ptxSm80;
  const char *ptxSm90;
  const FsdpGeneratedFused *fused;
  uint32_t numFused;
} FsdpEmbeddedStep;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif // FSDP_RUNTIME_EMBED_EMBEDDEDSTEP_H
