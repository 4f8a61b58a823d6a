//===- GemmLibrary.cpp - FSDP_CPU_GEMM and the libraries' description -----===//
//
// FSDP_CPU_GEMM is read at each matmul/gemm kernel call (one getenv beside
// a product), so a test can switch routes within one process. The
// description also names 16-bit attention's route and the wide loops'
// copy (kernels/Dispatch.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/GemmLibrary.h"

#include "runtime/backends/cpu/OneDnnMatmul.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cstdlib>
#include <cstring>

namespace fsdp::rt::cpu {

Status gemmRoute(GemmRoute &route) {
  const char *value = std::getenv("FSDP_CPU_GEMM");
  if (!value || !*value || std::strcmp(value, "onednn") == 0)
    route = GemmRoute::OneDnn;
  else if (std::strcmp(value, "widen") == 0)
    route = GemmRoute::Widen;
  else if (std::strcmp(value, "naive") == 0)
    route = GemmRoute::Naive;
  else
    return Status::error(cat("FSDP_CPU_GEMM='", value,
                             "' is not a CPU GEMM route (onednn, widen or naive)"));
  return Status::ok();
}

std::string gemmLibraries() {
  GemmRoute route;
  if (Status s = gemmRoute(route); !s)
    return s.message();
  auto oneDnn = [&](DType t) { return route == GemmRoute::OneDnn && oneDnnTakes(t); };
  auto half = [&](DType t) {
    return route == GemmRoute::Naive ? "naive loop" : oneDnn(t) ? "oneDNN" : "OpenBLAS (widened)";
  };
  // 16-bit attention takes oneDNN's products exactly where the GEMMs do
  // (kernels/AttentionGemms.h), else the exact kernels.
  auto attention = [&](DType t) { return oneDnn(t) ? "oneDNN" : "exact"; };
  const char *f32 = oneDnn(DType::F32) ? "oneDNN" : "OpenBLAS";
  return cat("CPU GEMMs: f32 ", f32, ", f64 OpenBLAS, bf16 ", half(DType::BF16), ", f16 ",
             half(DType::F16), ";\n16-bit attention: bf16 ", attention(DType::BF16), ", f16 ",
             attention(DType::F16), ";\noneDNN's ISA ", oneDnnIsa(),
             " (FSDP_CPU_GEMM=widen|naive: another route)",
             ";\nkernels' wide loops: ", wideTierName(cpuWideTier()), " (FSDP_CPU_WIDE=avx2|baseline: the same bits)");
}

} // namespace fsdp::rt::cpu
