//===- EmbeddedStepLoader.cpp - the runtime side of a compiled step -------===//
//
// Everything here reads the FsdpEmbeddedStep a compiler wrote; nothing in it
// is trusted beyond what the plan verifier and the weights hash check, so a
// damaged binary is refused with a message like a damaged plan file.
//
//===----------------------------------------------------------------------===//

#include "runtime/embed/EmbeddedStepLoader.h"

#include "runtime/backends/cpu/GeneratedFused.h"
#include "runtime/backends/cuda/GeneratedPtxRegistry.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <unistd.h>

#include <atomic>
#include <climits>
#include <sstream>

namespace fsdp::rt {

namespace {
std::atomic<const FsdpEmbeddedStep *> currentStep{nullptr};
} // namespace

const FsdpEmbeddedStep *embeddedStep() { return currentStep.load(); }

void setEmbeddedStep(const FsdpEmbeddedStep *step) { currentStep.store(step); }

std::string executablePath(const std::string &fallback) {
  char buffer[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    return fallback;
  return std::string(buffer, static_cast<size_t>(n));
}

Status loadEmbeddedPlan(const FsdpEmbeddedStep &step, const std::string &name, LoadedPlan &out) {
  if (step.abiVersion != FSDP_EMBEDDED_STEP_ABI)
    return Status::error(cat(name, ": compiled step of ABI version ", step.abiVersion,
                             "; this runtime reads version ", FSDP_EMBEDDED_STEP_ABI,
                             " (rebuild it with this fsdp-opt)"));
  return loadPlanFromMemory(step.plan, step.planSize, step.planHash, name, out);
}

Status loadEmbeddedWeights(const FsdpEmbeddedStep &step, Executor &executor) {
  const LoadedPlan &plan = executor.plan();
  ModelState state(executor);
  if (step.weights) {
    SafetensorsFile weights;
    const std::string name = plan.path() + " (embedded weights)";
    FSDP_RETURN_IF_ERROR(SafetensorsFile::openMemory(step.weights, step.weightsSize, name, weights));
    return state.loadOwnWeights(weights, name);
  }
  // No name of its own: the plan's weights_file, beside the executable
  // (the plan's directory() is the executable's).
  if (!step.weightsFile || !*step.weightsFile)
    return state.loadWeights();
  const std::string file = plan.directory() + "/" + step.weightsFile;
  SafetensorsFile weights;
  FSDP_RETURN_IF_ERROR(SafetensorsFile::open(file, weights));
  return state.loadOwnWeights(weights, file);
}

Status registerEmbeddedKernels(const FsdpEmbeddedStep &step) {
  if (step.numFused == 0)
    return Status::ok();
  if (!step.fused)
    return Status::error(cat("the compiled step lists ", step.numFused,
                             " generated Fused kernels but carries no table"));
  // The CPU backend's Fused kernel runs them from now on.
  registerGeneratedFused(step.fused, step.numFused);
  // The PTX of the same chains, for CUDA devices created after this.
  return cuda::registerGeneratedPtx(step);
}

std::string describeEmbeddedStep(const FsdpEmbeddedStep &step) {
  std::ostringstream os;
  os << "This binary is a compiled step (embedded plan, hash " << std::hex << step.planHash
     << std::dec << ", " << step.planSize << " bytes).\n";
  if (step.info && *step.info) {
    os << step.info;
    if (os.str().back() != '\n')
      os << '\n';
  }
  uint32_t avx512 = 0, ptx = 0;
  for (uint32_t i = 0; step.fused && i < step.numFused; ++i) {
    avx512 += step.fused[i].avx512 != nullptr;
    ptx += step.fused[i].ptxEntry != nullptr;
  }
  os << "generated Fused kernels: " << step.numFused;
  if (step.numFused) {
    os << " (x86-64 AVX2";
    if (avx512)
      os << ", AVX-512 for " << avx512;
    os << "; PTX entries for " << ptx << "); this CPU runs " << generatedFusedVariant();
  }
  os << "\nPTX modules: " << (step.ptxSm80 ? "sm_80" : "") << (step.ptxSm80 && step.ptxSm90 ? ", " : "")
     << (step.ptxSm90 ? "sm_90" : "") << (!step.ptxSm80 && !step.ptxSm90 ? "none" : "") << "\n";
  if (step.weights)
    os << "weights: embedded (" << step.weightsSize << " bytes)\n";
  else if (step.weightsFile && *step.weightsFile)
    os << "weights: " << step.weightsFile << ", beside the executable\n";
  else
    os << "weights: the plan's weights file, beside the executable\n";
  return os.str();
}

} // namespace fsdp::rt
