//===- FusedCodegen.h - native code for a plan's Fused chains -------------===//
//
// The runtime interprets a Fused instruction's program op by op
// (runtime/backends/cpu/kernels/FusedKernels.cpp); a compiled step carries
// native code for each distinct program instead (runtime/embed/
// EmbeddedStep.h). This generates it as LLVM-dialect functions: for the
// CPU an AVX2 (x86-64-v3) and an AVX-512 (x86-64-v4) function per program,
// explicit 8- and 16-lane vectors with a scalar tail, and for NVPTX a
// grid-stride kernel per program. Every element runs exactly the IEEE
// float operations of the interpreter's scalar code (runtime/math/
// FusedOps.h, FastMath.h, Activations.h) in the same order, with the same
// constants and no fast-math flags (and, for bf16/f16 programs, the
// interpreter's rounding of every op's result, as integer operations), so
// generated code computes the interpreter's bits; log calls the math library the runtime's own
// kernels call (glibc's logf on the CPU, libdevice's __nv_logf on a GPU).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_FUSEDCODEGEN_H
#define FSDP_COMPILER_TARGET_FUSEDCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/ArrayRef.h"

#include "runtime/support/DType.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fsdp {
namespace plan {
struct Plan;
}

/// One distinct Fused program: its attribute ints, which inputs are
/// broadcast (one element over many), as decodeFusedProgram decides, and
/// its storage dtype (f32, bf16 or f16: every input and result has it).
struct FusedKernelSpec {
  uint64_t key = 0; // fusedProgramKey(ints, scalar, dtype)
  std::vector<int64_t> ints;
  std::vector<bool> scalar; // per input
  int numInputs = 0, numOutputs = 0;
  rt::DType dtype = rt::DType::F32;
};

/// Every distinct Fused instruction of `plan` (a verified plan FlatBuffer),
/// in first-use order. Instructions the runtime would refuse (a malformed
/// program, non-f32 operands) are left to the interpreter's error and get
/// no code.
std::vector<FusedKernelSpec> collectFusedKernels(const plan::Plan &plan);

/// "fsdp_fused_<key as 16 hex digits>": the PTX entry of a program; its CPU
/// functions add "_avx2" and "_avx512".
std::string fusedKernelName(uint64_t key);

/// Adds to `module` (LLVM dialect, x86-64) two functions per spec with the
/// FsdpFusedFn signature (runtime/embed/EmbeddedStep.h), for x86-64-v3 and
/// x86-64-v4, and appends their (avx2, avx512) symbol names to `symbols`
/// (one pair per spec, in order; a spec whose functions the module has
/// already gets no second copy). Fails (with an error on the module) on a
/// spec decodeFusedProgram would refuse.
mlir::LogicalResult buildCpuFusedKernels(mlir::ModuleOp module,
                                         llvm::ArrayRef<FusedKernelSpec> specs,
                                         std::vector<std::pair<std::string, std::string>> &symbols);

/// Adds to `module` (LLVM dialect, for nvptx64) one kernel per spec:
/// parameters inputs..., outputs... (global pointers to elements of the
/// program's dtype), then n (i64),
/// a grid-stride loop over the n elements. Appends the entry names to
/// `entries` (one per spec, in order; none built twice). log calls
/// libdevice's __nv_logf, declared here and linked by emitFusedPtx.
mlir::LogicalResult buildPtxFusedKernels(mlir::ModuleOp module,
                                         llvm::ArrayRef<FusedKernelSpec> specs,
                                         std::vector<std::string> &entries);

/// The PTX text of a module buildPtxFusedKernels filled, for sm_<sm> (80,
/// 90): translated, libdevice linked in where log is called (internalized,
/// so only the kernels stay visible), optimized at -O3 and emitted as
/// assembly. On failure returns failure with the reason in `error`.
mlir::LogicalResult emitFusedPtx(mlir::ModuleOp module, int sm, std::string &ptx,
                                 std::string &error);

/// What a compiled step carries for the CUDA backend: the PTX of one kernel
/// per spec for sm_80 and sm_90, and each spec's entry name, in order.
struct FusedPtx {
  std::string sm80, sm90;
  std::vector<std::string> entries;
};

/// buildPtxFusedKernels in a module of its own (created in `context`, with
/// the LLVM translations registered), then emitFusedPtx for sm_80 and sm_90.
/// On failure returns failure with the reason in `error`.
mlir::LogicalResult generateFusedPtx(mlir::MLIRContext *context,
                                     llvm::ArrayRef<FusedKernelSpec> specs, FusedPtx &out,
                                     std::string &error);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_FUSEDCODEGEN_H
