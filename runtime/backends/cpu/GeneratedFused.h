//===- GeneratedFused.h - compiled code for Fused programs, by key --------===//
//
// A compiled step (runtime/embed/EmbeddedStep.h) carries native code for
// its Fused programs. It registers that table here once at start-up,
// before any step runs; the CPU's Fused kernel (FusedKernels.cpp) then
// looks each launch's program up by its key (fusedProgramKey) and calls
// the generated function instead of interpreting the program. The variant
// is chosen once per entry, by what this CPU supports: the AVX-512 one
// where the CPU has x86-64-v4's features, else the AVX2 one where it has
// x86-64-v3's, else none (the interpreter runs). Both variants compute the
// interpreter's bits, so the choice never changes a result.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_GENERATEDFUSED_H
#define FSDP_RUNTIME_BACKENDS_CPU_GENERATEDFUSED_H

#include "runtime/embed/EmbeddedStep.h"

#include <cstdint>

namespace fsdp::rt::cpu {

/// Adds `table`'s n entries (a later entry of an already registered key
/// replaces it). Thread-safe; lookups that run meanwhile see the table
/// before or after, never a partial one. The functions must stay valid
/// for the life of the process.
void registerGeneratedFused(const FsdpGeneratedFused *table, uint32_t n);

/// Removes the keys of `table`'s n entries: their programs are
/// interpreted again. The caller must know no launch still runs them.
void unregisterGeneratedFused(const FsdpGeneratedFused *table, uint32_t n);

/// Whether any function is registered (a launch then looks its key up).
bool hasGeneratedFused();

/// The function this CPU runs for the program of `key`, or null.
FsdpFusedFn lookupGeneratedFused(uint64_t key);

/// Which variant this CPU runs, in words (for a step's --help).
const char *generatedFusedVariant();

} // namespace fsdp::rt::cpu

namespace fsdp::rt {
// The embedded-step loader (runtime/embed/EmbeddedStepLoader.cpp) installs
// a compiled step's table from the backend-neutral namespace.
using cpu::generatedFusedVariant;
using cpu::registerGeneratedFused;
} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_CPU_GENERATEDFUSED_H
