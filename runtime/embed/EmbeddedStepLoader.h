//===- EmbeddedStepLoader.h - the runtime side of a compiled step ---------===//
//
// What the runtime does with a compiled step binary's fsdp_embedded_step
// (EmbeddedStep.h): checks its ABI version, verifies the embedded plan as a
// plan file's (loadPlanFromMemory: same hash, so checkpoints move freely
// between the binary and fsdp-run), loads the weights (embedded bytes, or
// the named file beside the executable, checked by the plan's weights
// hash), hands the generated Fused kernels to the backends, and describes
// the step for --help. The step is also published process-wide
// (embeddedStep()), so a backend that needs its code (the CUDA device's
// PTX modules) reads it from one place instead of being handed it through
// every layer.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EMBED_EMBEDDEDSTEPLOADER_H
#define FSDP_RUNTIME_EMBED_EMBEDDEDSTEPLOADER_H

#include "runtime/embed/EmbeddedStep.h"
#include "runtime/support/Status.h"

#include <string>

namespace fsdp::rt {

class LoadedPlan;
class Executor;

/// The step this process runs, once a step binary (or fsdp_step_init) has
/// published it with setEmbeddedStep; null in fsdp-run and before. The
/// CUDA device reads its PTX modules (ptxSm80/ptxSm90) and the Fused
/// table's ptxEntry names here. The pointee is the binary's read-only
/// data: it lives as long as the process.
const FsdpEmbeddedStep *embeddedStep();
void setEmbeddedStep(const FsdpEmbeddedStep *step);

/// This executable's absolute path (/proc/self/exe), or `fallback` when
/// it cannot be read.
std::string executablePath(const std::string &fallback);

/// Checks the ABI version and loads the embedded plan as `name` (the
/// executable's path: its directory is where a separate weights file is).
Status loadEmbeddedPlan(const FsdpEmbeddedStep &step, const std::string &name, LoadedPlan &out);

/// Loads the plan's own weights into `executor`: the embedded bytes when the
/// step carries them, else its weightsFile (or, when it names none, the
/// plan's weights_file) beside the executable; either must match the
/// plan's weights hash, as fsdp-run requires of a plan's weights file.
Status loadEmbeddedWeights(const FsdpEmbeddedStep &step, Executor &executor);

/// Hands the generated Fused kernels (step.fused) to the CPU backend, which
/// then runs them instead of interpreting those Fused programs, and their
/// PTX to the CUDA backend (for devices created afterwards).
Status registerEmbeddedKernels(const FsdpEmbeddedStep &step);

/// The --help paragraph about the step: the compiler's info text, the
/// generated kernels (how many, which native variants, PTX) and where the
/// weights come from.
std::string describeEmbeddedStep(const FsdpEmbeddedStep &step);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EMBED_EMBEDDEDSTEPLOADER_H
