//===- LlvmObject.h - LLVM-dialect modules to machine code ----------------===//
//
// The last step of code generation for compiled steps (--emit=object,
// --emit=binary): an MLIR module in the LLVM dialect is translated to LLVM
// IR, optimized by LLVM's standard pipeline at -O3 for its target, and
// emitted as an object file (x86-64) or as assembly (PTX for
// nvptx64-nvidia-cuda). Numerics are the runtime's: no fast-math flags are
// added and FP contraction is off (AllowFPOpFusion = Strict), so a multiply
// and an add never become one fused multiply-add the runtime's own kernels
// would not do. Per-function CPUs and features (an AVX-512 variant beside
// the AVX2 baseline) come from the functions' target_cpu/target_features
// attributes; the module-wide target is the baseline.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_LLVMOBJECT_H
#define FSDP_COMPILER_TARGET_LLVMOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace mlir {
class DialectRegistry;
}

namespace fsdp {

/// What machine code is generated for.
struct CodegenTarget {
  std::string triple;   // "x86_64-unknown-linux-gnu", "nvptx64-nvidia-cuda"
  std::string cpu;      // "x86-64-v3", "sm_80", ...
  std::string features; // "+ptx80", ...; empty for the CPU's own
  /// The host x86-64 baseline of compiled steps (AVX2, no AVX-512).
  static CodegenTarget hostBaseline();
  /// NVPTX for the given SM architecture (80, 90), PTX ISA 8.0 or newer.
  static CodegenTarget nvptx(int sm);
};

enum class MachineCodeKind { Object, Assembly };

/// Registers the dialect translations the LLVM-dialect modules use (LLVM,
/// NVVM, builtin) in `registry`.
void registerLlvmTranslations(mlir::DialectRegistry &registry);

/// Translates `module` (LLVM dialect only) to LLVM IR in `context`, with
/// `target`'s triple and data layout. Errors are emitted on the module.
std::unique_ptr<llvm::Module> translateToLlvmIr(mlir::ModuleOp module, llvm::LLVMContext &context,
                                                const CodegenTarget &target);

/// Optimizes `module` at -O3 for `target` and appends its object code or
/// assembly to `out`. On failure returns failure with the reason in `error`.
mlir::LogicalResult emitMachineCode(llvm::Module &module, const CodegenTarget &target,
                                    MachineCodeKind kind, std::string &out, std::string &error);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_LLVMOBJECT_H
