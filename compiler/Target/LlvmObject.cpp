//===- LlvmObject.cpp - LLVM-dialect modules to machine code --------------===//
//
// Translation through MLIR's LLVM IR export, then LLVM's new pass manager
// at -O3 and the target's code generator into memory. The targets are
// initialized once, lazily, so a compile that generates no code pays
// nothing. See LlvmObject.h for the numerics contract (no contraction).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/LlvmObject.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <mutex>

namespace fsdp {

CodegenTarget CodegenTarget::hostBaseline() {
  return {"x86_64-unknown-linux-gnu", "x86-64-v3", ""};
}

CodegenTarget CodegenTarget::nvptx(int sm) {
  return {"nvptx64-nvidia-cuda", "sm_" + std::to_string(sm), "+ptx80"};
}

void registerLlvmTranslations(mlir::DialectRegistry &registry) {
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
}

namespace {

void initializeTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeAllTargetInfos();
    llvm::InitializeAllTargets();
    llvm::InitializeAllTargetMCs();
    llvm::InitializeAllAsmPrinters();
  });
}

std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const CodegenTarget &target,
                                                       std::string &error) {
  initializeTargets();
  const llvm::Target *found = llvm::TargetRegistry::lookupTarget(target.triple, error);
  if (!found)
    return nullptr;
  llvm::TargetOptions options;
  // The runtime's kernels never contract a*b+c into one rounding; neither
  // may generated code, or its bits would differ from fsdp-run's.
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  std::unique_ptr<llvm::TargetMachine> machine(found->createTargetMachine(
      target.triple, target.cpu, target.features, options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    error = "cannot create a target machine for " + target.triple + " " + target.cpu;
  return machine;
}

} // namespace

std::unique_ptr<llvm::Module> translateToLlvmIr(mlir::ModuleOp module, llvm::LLVMContext &context,
                                                const CodegenTarget &target) {
  std::unique_ptr<llvm::Module> ir = mlir::translateModuleToLLVMIR(module, context, "fsdp_step");
  if (!ir)
    return nullptr;
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = makeTargetMachine(target, error);
  if (!machine) {
    module.emitError() << "code generation: " << error;
    return nullptr;
  }
  ir->setTargetTriple(target.triple);
  ir->setDataLayout(machine->createDataLayout());
  return ir;
}

mlir::LogicalResult emitMachineCode(llvm::Module &module, const CodegenTarget &target,
                                    MachineCodeKind kind, std::string &out, std::string &error) {
  std::unique_ptr<llvm::TargetMachine> machine = makeTargetMachine(target, error);
  if (!machine)
    return mlir::failure();
  module.setTargetTriple(target.triple);
  module.setDataLayout(machine->createDataLayout());
  {
    llvm::raw_string_ostream message(error);
    if (llvm::verifyModule(module, &message))
      return mlir::failure();
  }

  // -O3 through the new pass manager, tuned for the target machine.
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(machine.get());
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);
  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);

  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream stream(buffer);
  llvm::legacy::PassManager codegen;
  const auto fileType = kind == MachineCodeKind::Object ? llvm::CodeGenFileType::ObjectFile
                                                        : llvm::CodeGenFileType::AssemblyFile;
  if (machine->addPassesToEmitFile(codegen, stream, nullptr, fileType)) {
    error = "target " + target.triple + " cannot emit this kind of file";
    return mlir::failure();
  }
  codegen.run(module);
  out.append(buffer.begin(), buffer.end());
  return mlir::success();
}

} // namespace fsdp
