//===- GeneratedPtxRegistry.cpp - the step's PTX, before any GPU is touched ===//
//
// The texts and names are copied: a step loaded from a file may free them,
// and a device created later still needs them. One process-wide source
// behind a mutex; devices take a shared reference when they are created.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/GeneratedPtxRegistry.h"

#include <mutex>

namespace fsdp::rt::cuda {
namespace {

std::mutex gMutex;
std::shared_ptr<const GeneratedPtxSource> gSource;

} // namespace

Status registerGeneratedPtx(const FsdpEmbeddedStep &step) {
  if (step.abiVersion != FSDP_EMBEDDED_STEP_ABI)
    return Status::error(cat("cuda: generated PTX of an embedded step of ABI version ",
                             step.abiVersion, ", this runtime reads version ",
                             FSDP_EMBEDDED_STEP_ABI));
  return registerGeneratedPtx(step.ptxSm80, step.ptxSm90, step.fused, step.numFused);
}

Status registerGeneratedPtx(const char *ptxSm80, const char *ptxSm90,
                            const FsdpGeneratedFused *fused, uint32_t numFused) {
  auto source = std::make_shared<GeneratedPtxSource>();
  source->sm80 = ptxSm80 ? ptxSm80 : "";
  source->sm90 = ptxSm90 ? ptxSm90 : "";
  for (uint32_t i = 0; i < numFused; ++i) {
    const FsdpGeneratedFused &f = fused[i];
    if (!f.ptxEntry || !*f.ptxEntry)
      continue;
    auto [it, added] = source->entries.emplace(f.key, f.ptxEntry);
    if (!added && it->second != f.ptxEntry)
      return Status::error(cat("cuda: generated PTX names two kernels, ", it->second, " and ",
                               f.ptxEntry, ", for the Fused program of key ", f.key));
  }
  if (!source->entries.empty() && source->sm80.empty() && source->sm90.empty())
    return Status::error(cat("cuda: the compiled step names ", source->entries.size(),
                             " generated PTX kernels but carries no PTX module"));
  std::lock_guard<std::mutex> lock(gMutex);
  gSource = source->entries.empty() ? nullptr : std::move(source);
  return Status::ok();
}

void clearGeneratedPtx() {
  std::lock_guard<std::mutex> lock(gMutex);
  gSource = nullptr;
}

std::shared_ptr<const GeneratedPtxSource> registeredGeneratedPtx() {
  std::lock_guard<std::mutex> lock(gMutex);
  return gSource;
}

PtxModuleChoice choosePtxModule(const GeneratedPtxSource &source, int major, int minor) {
  PtxModuleChoice choice;
  if (major < 8) {
    choice.why = cat("compute capability ", major, ".", minor,
                     " is below 8.0, the oldest the CUDA backend is built for");
    return choice;
  }
  // PTX of an older target runs on a newer GPU (the driver compiles it for
  // the GPU at load time), never the other way round.
  if (major == 9 && !source.sm90.empty()) {
    choice.text = &source.sm90;
    choice.target = "sm_90";
  } else if (!source.sm80.empty()) {
    choice.text = &source.sm80;
    choice.target = "sm_80";
  } else {
    choice.why = cat("the compiled step has no sm_80 PTX, which compute capability ", major, ".",
                     minor, " needs");
  }
  return choice;
}

std::string ptxLoadFailure(const char *target, int ordinal, const std::string &driverError,
                           const std::string &jitLog) {
  std::string message =
      cat("cuda: loading the generated PTX (", target, ") on GPU ", ordinal, ": ", driverError);
  if (!jitLog.empty())
    message += cat("; the PTX compiler says: ", jitLog);
  return message;
}

} // namespace fsdp::rt::cuda
