//===- GeneratedPtxRegistry.h - the step's PTX, before any GPU is touched -===//
//
// A compiled step (runtime/embed/EmbeddedStep.h) carries PTX for its Fused
// chains: an sm_80 and an sm_90 module text and, per Fused program, the
// kernel's entry name under the program's key (fusedProgramKey). The
// step's start-up code hands them to registerGeneratedPtx once, before the
// first CUDA device is created; each CUDA device then loads the module that
// fits its GPU (GeneratedPtx.h) and runs the generated kernel for every
// Fused launch whose key is registered, its own kernel otherwise.
//
// This part is pure host code with no CUDA dependency, built into every
// runtime (also without FSDP_ENABLE_CUDA, where nothing loads it), so the
// start-up code needs no build switch and the choices below are tested on
// machines without a GPU: which module a compute capability gets, and the
// error text a failed load reports.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTXREGISTRY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTXREGISTRY_H

#include "runtime/embed/EmbeddedStep.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace fsdp::rt::cuda {

/// The registered PTX: module texts (empty when the step has none for
/// that target) and each generated kernel's entry name by program key.
struct GeneratedPtxSource {
  std::string sm80, sm90;
  std::unordered_map<uint64_t, std::string> entries;
};

/// Registers the compiled step's PTX for the CUDA devices created after
/// this call (one step per process: a later call replaces it). A step with
/// no PTX entry registers nothing. Refused: another ABI version, an entry
/// without any module text, one key named by two different entries.
Status registerGeneratedPtx(const FsdpEmbeddedStep &step);
/// The same from the step's PTX fields (tests, and steps not read from an
/// FsdpEmbeddedStep).
Status registerGeneratedPtx(const char *ptxSm80, const char *ptxSm90,
                            const FsdpGeneratedFused *fused, uint32_t numFused);
/// Forgets the registered PTX (devices already created keep theirs).
void clearGeneratedPtx();

/// What is registered, or null when nothing is.
std::shared_ptr<const GeneratedPtxSource> registeredGeneratedPtx();

/// The module a GPU of compute capability major.minor loads: the sm_90
/// text on 9.x (the sm_80 one when the step has no sm_90 text: the driver
/// compiles PTX for its own GPU), the sm_80 text on 8.x and on anything
/// newer than 9.x; none below 8.0 (the backend's own kernels are built for
/// sm_80 and later) or when the fitting text is absent, with `why`.
struct PtxModuleChoice {
  const std::string *text = nullptr; // null: no generated code on this GPU
  const char *target = "";           // "sm_80" or "sm_90"
  std::string why;                   // when text is null
};
PtxModuleChoice choosePtxModule(const GeneratedPtxSource &source, int major, int minor);

/// "cuda: loading the generated PTX (TARGET) on GPU ORDINAL: DRIVER_ERROR"
/// followed by the JIT compiler's log when it wrote one.
std::string ptxLoadFailure(const char *target, int ordinal, const std::string &driverError,
                           const std::string &jitLog);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_GENERATEDPTXREGISTRY_H
