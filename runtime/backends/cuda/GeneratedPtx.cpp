//===- GeneratedPtx.cpp - a GPU's kernels generated for Fused chains ------===//
//
// The module goes into the context current on the calling thread, which is
// the GPU's primary context (the runtime API's, made current by
// cudaSetDevice): the streams the runtime creates belong to it, so its
// functions launch on them. The driver compiles the PTX at load time; its
// error log is captured so a refused module says why.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/GeneratedPtx.h"

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cuda/LaunchGeometry.h"

#include <cuda_runtime_api.h>

#include <vector>

namespace fsdp::rt::cuda {
namespace {

/// The JIT log's text up to its NUL, without trailing white space.
std::string logText(const std::vector<char> &buffer) {
  std::string text(buffer.data());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r'))
    text.pop_back();
  return text;
}

} // namespace

Status GeneratedPtx::load(int ordinal, std::unique_ptr<GeneratedPtx> &out, std::string *note) {
  out.reset();
  std::shared_ptr<const GeneratedPtxSource> source = registeredGeneratedPtx();
  if (!source)
    return Status::ok();
  int major = 0, minor = 0;
  if (cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal);
      e != cudaSuccess)
    return Status::error(cat("cuda: compute capability of GPU ", ordinal, ": ",
                             cudaGetErrorString(e)));
  if (cudaError_t e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal);
      e != cudaSuccess)
    return Status::error(cat("cuda: compute capability of GPU ", ordinal, ": ",
                             cudaGetErrorString(e)));
  PtxModuleChoice choice = choosePtxModule(*source, major, minor);
  if (!choice.text) {
    if (note)
      *note = cat("cuda: GPU ", ordinal, " runs the backend's own Fused kernel: ", choice.why);
    return Status::ok();
  }

  const CudaDriverLibrary *driver = nullptr;
  FSDP_RETURN_IF_ERROR(loadCudaDriver(driver));
  // The runtime creates the primary context lazily: cudaFree(0) makes it
  // exist and current here, so the module joins the runtime's context.
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess)
    return Status::error(cat("cuda: creating GPU ", ordinal, "'s context: ", cudaGetErrorString(e)));
  if (CUresult r = driver->init(0); r != CUDA_SUCCESS)
    return Status::error(driverFailure(*driver, r, "cuInit"));
  CUdevice device = 0, current = 0;
  CUcontext context = nullptr;
  if (CUresult r = driver->deviceGet(&device, ordinal); r != CUDA_SUCCESS)
    return Status::error(driverFailure(*driver, r, cat("cuDeviceGet(", ordinal, ")")));
  if (CUresult r = driver->ctxGetCurrent(&context); r != CUDA_SUCCESS)
    return Status::error(driverFailure(*driver, r, "cuCtxGetCurrent"));
  if (!context)
    return Status::error(cat("cuda: GPU ", ordinal, " has no current context to load the "
                             "generated PTX into"));
  if (CUresult r = driver->ctxGetDevice(&current); r != CUDA_SUCCESS)
    return Status::error(driverFailure(*driver, r, "cuCtxGetDevice"));
  if (current != device)
    return Status::error(cat("cuda: the current context is not GPU ", ordinal,
                             "'s: generated PTX must be loaded after cudaSetDevice(", ordinal,
                             ")"));

  std::unique_ptr<GeneratedPtx> loaded(new GeneratedPtx());
  loaded->driver_ = driver;
  loaded->target_ = choice.target;
  std::vector<char> errorLog(16384, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {errorLog.data(),
                    reinterpret_cast<void *>(static_cast<uintptr_t>(errorLog.size() - 1))};
  if (CUresult r = driver->moduleLoadDataEx(&loaded->module_, choice.text->c_str(), 2, options,
                                            values);
      r != CUDA_SUCCESS) {
    loaded->module_ = nullptr;
    return Status::error(ptxLoadFailure(choice.target, ordinal,
                                        driverFailure(*driver, r, "cuModuleLoadDataEx"),
                                        logText(errorLog)));
  }
  for (const auto &[key, entry] : source->entries) {
    CUfunction function = nullptr;
    if (CUresult r = driver->moduleGetFunction(&function, loaded->module_, entry.c_str());
        r != CUDA_SUCCESS)
      return Status::error(cat("cuda: the generated PTX (", choice.target, ") has no kernel ",
                               entry, " for the Fused program of key ", key, ": ",
                               driverFailure(*driver, r, "cuModuleGetFunction")));
    loaded->functions_.emplace(key, function);
  }
  out = std::move(loaded);
  return Status::ok();
}

GeneratedPtx::~GeneratedPtx() {
  if (module_)
    driver_->moduleUnload(module_);
}

CUfunction GeneratedPtx::find(uint64_t key) const {
  auto it = functions_.find(key);
  return it == functions_.end() ? nullptr : it->second;
}

Status GeneratedPtx::launch(CUfunction kernel, CUstream stream, const float *const *inputs,
                            int numInputs, float *const *outputs, int numOutputs, int64_t n,
                            const char *op) const {
  if (numInputs + numOutputs > 2 * kMaxFusedValues)
    return Status::error(cat(op, ": ", numInputs, " inputs and ", numOutputs,
                             " results are more than a generated kernel takes"));
  // cuLaunchKernel copies the values each parameter pointer points at.
  const void *pointers[2 * kMaxFusedValues];
  void *params[2 * kMaxFusedValues + 1];
  int k = 0;
  for (int i = 0; i < numInputs; ++i, ++k) {
    pointers[k] = inputs[i];
    params[k] = &pointers[k];
  }
  for (int i = 0; i < numOutputs; ++i, ++k) {
    pointers[k] = outputs[i];
    params[k] = &pointers[k];
  }
  params[k] = &n;
  if (CUresult r = driver_->launchKernel(kernel, elementwiseBlocks(n), 1, 1, kBlockThreads, 1, 1,
                                         0, stream, params, nullptr);
      r != CUDA_SUCCESS)
    return Status::error(cat(op, ": ", driverFailure(*driver_, r, "cuLaunchKernel")));
  return Status::ok();
}

} // namespace fsdp::rt::cuda
