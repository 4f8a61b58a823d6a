//===- FusedJit.h - generated Fused code, loaded into this process --------===//
//
// What the Fused codegen test and benchmark run: the CPU functions of a
// set of programs (buildCpuFusedKernels), emitted as one x86-64 object file
// exactly as a compiled step ships them, then loaded with LLVM's ORC JIT
// (libc's logf resolved from this process) and looked up by name.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDJIT_H
#define FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDJIT_H

#include "compiler/Target/FusedCodegen.h"
#include "compiler/Target/LlvmObject.h"
#include "runtime/embed/EmbeddedStep.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsdp::fusedjit {

struct LoadedFused {
  std::unique_ptr<llvm::orc::LLJIT> jit; // owns the code
  std::map<uint64_t, FsdpGeneratedFused> byKey; // avx2, avx512 per spec key
  std::string error;                            // why nothing loaded
};

/// The object file of `specs`' CPU functions ("" and `error` on failure).
inline std::string emitCpuFusedObject(const std::vector<FusedKernelSpec> &specs,
                                      std::string &error) {
  mlir::MLIRContext context;
  mlir::DialectRegistry registry;
  registerLlvmTranslations(registry);
  context.appendDialectRegistry(registry);
  context.loadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OpBuilder b(&context);
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(b.getUnknownLoc());
  std::vector<std::pair<std::string, std::string>> symbols;
  if (failed(buildCpuFusedKernels(*module, specs, symbols)) || symbols.size() != specs.size()) {
    error = "buildCpuFusedKernels failed";
    return "";
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> ir =
      translateToLlvmIr(*module, llvmContext, CodegenTarget::hostBaseline());
  if (!ir) {
    error = "translation to LLVM IR failed";
    return "";
  }
  std::string object;
  if (failed(emitMachineCode(*ir, CodegenTarget::hostBaseline(), MachineCodeKind::Object, object,
                             error)))
    return "";
  return object;
}

inline LoadedFused loadCpuFusedKernels(const std::vector<FusedKernelSpec> &specs) {
  LoadedFused loaded;
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string object = emitCpuFusedObject(specs, loaded.error);
  if (object.empty())
    return loaded;
  auto jit = llvm::orc::LLJITBuilder().create();
  if (!jit) {
    loaded.error = "cannot create the JIT: " + llvm::toString(jit.takeError());
    return loaded;
  }
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) {
    loaded.error = llvm::toString(process.takeError());
    return loaded;
  }
  (*jit)->getMainJITDylib().addGenerator(std::move(*process));
  if (llvm::Error e = (*jit)->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object))) {
    loaded.error = "cannot load the object: " + llvm::toString(std::move(e));
    return loaded;
  }
  for (const FusedKernelSpec &spec : specs) {
    const std::string name = fusedKernelName(spec.key);
    FsdpFusedFn fn[2] = {};
    const char *suffix[2] = {"_avx2", "_avx512"};
    for (int v = 0; v < 2; ++v) {
      auto address = (*jit)->lookup(name + suffix[v]);
      if (!address) {
        loaded.error = "no symbol " + name + suffix[v] + ": " + llvm::toString(address.takeError());
        return loaded;
      }
      fn[v] = address->toPtr<FsdpFusedFn>();
    }
    loaded.byKey[spec.key] = {spec.key, fn[0], fn[1], nullptr};
  }
  loaded.jit = std::move(*jit);
  return loaded;
}

} // namespace fsdp::fusedjit

#endif // FSDP_TESTS_UNIT_COMPILER_TARGET_FUSEDJIT_H
