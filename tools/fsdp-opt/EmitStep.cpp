//===- EmitStep.cpp - fsdp-opt's compiled-step outputs --------------------===//
//
// The plan is emitted exactly as --emit=plan emits it (prediction included,
// weights file written beside the output) but its FlatBuffer is kept in
// memory and embedded; its content hash is the one a plan file's header
// would carry, so a checkpoint saved by the step binary resumes in fsdp-run
// and the reverse. Printing to stdout (--emit=llvm, --emit=llvm-ir without
// -o) writes no weights: there the plan is the in-memory one --emit=report
// analyzes. The executable is linked by the system C++ compiler (with lld
// when installed) against libfsdp_runtime.a and the flags recorded beside
// it in libfsdp_runtime.link. Each phase (plan, code generation, link) is
// timed under --mlir-timing.
//
//===----------------------------------------------------------------------===//

#include "EmitStep.h"

#include "compiler/Pipelines/MemoryBudget.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/Target/FusedCodegen.h"
#include "compiler/Target/LlvmObject.h"
#include "compiler/Target/PlanEmitter.h"
#include "compiler/Target/StepObject.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "runtime/io/ContentHash.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>

#ifndef FSDP_RUNTIME_LIB_DEFAULT
#define FSDP_RUNTIME_LIB_DEFAULT ""
#endif
// The C++ compiler that links steps: `c++` on PATH, except in a sanitized
// build, whose archive needs the compiler that built it.
#ifndef FSDP_STEP_LINKER
#define FSDP_STEP_LINKER "c++"
#endif

namespace fsdp {
namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "fsdp-opt: error: " << message << "\n";
  return 1;
}

const char *emitFlag(EmitKind emit) {
  switch (emit) {
  case EmitKind::Binary:
    return "--emit=binary";
  case EmitKind::Object:
    return "--emit=object";
  case EmitKind::Llvm:
    return "--emit=llvm";
  default:
    return "--emit=llvm-ir";
  }
}

bool writeFile(const std::string &path, llvm::StringRef bytes, std::string &error) {
  auto file = mlir::openOutputFile(path, &error);
  if (!file)
    return false;
  file->os() << bytes;
  file->os().flush();
  if (file->os().has_error()) {
    error = "cannot write " + path;
    return false;
  }
  file->keep();
  return true;
}

/// The paragraph --help prints.
std::string describeStep(const CompileOptions &opts, mlir::ModuleOp module,
                         const PlanEmitOptions &planOptions, const EmittedPlan &plan) {
  StepInfo info;
  info.modelPath = opts.inputPath;
  if (auto model = llvm::MemoryBuffer::getFile(opts.inputPath))
    info.modelHash = rt::contentHash((*model)->getBufferStart(), (*model)->getBufferSize());
  info.mode = planOptions.mode;
  info.worldSize = planOptions.worldSize;
  info.strategy = planOptions.strategy;
  info.ckpt = ckptValueText(opts.ckpt);
  if (auto choice = module->getAttrOfType<mlir::StringAttr>(dist::kCheckpointChoiceAttr))
    info.ckpt += " (" + choice.str() + ")";
  info.plannedPeakBytes = plan.persistentBytes + plan.arenaBytes;
  info.compiler = "fsdp-opt";
  return formatStepInfo(info);
}

/// The C header of --emit=object: the step's symbol and, through
/// fsdp_step.h (runtime/embed), the runtime's entry points.
std::string stepHeader(const std::string &base, const std::string &info) {
  std::string guard = "FSDP_STEP_" + llvm::sys::path::filename(base).upper() + "_H";
  for (char &c : guard)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  std::string comment = info;
  for (size_t at; (at = comment.find("*/")) != std::string::npos;)
    comment.replace(at, 2, "* /");
  return "/* " + llvm::sys::path::filename(base).str() +
         ".h - a compiled FSDP training step (fsdp-opt --emit=object).\n *\n * " + comment +
         "\n *\n * Link " + llvm::sys::path::filename(base).str() +
         ".o with libfsdp_runtime.a and the flags in libfsdp_runtime.link;\n"
         " * fsdp_step.h (runtime/embed) declares the entry points. */\n"
         "#ifndef " + guard + "\n#define " + guard + "\n\n#include \"fsdp_step.h\"\n\n"
         "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
         "/* The step: plan, weights (or their file's name), generated code. */\n"
         "extern const FsdpEmbeddedStep fsdp_embedded_step;\n\n"
         "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* " + guard + " */\n";
}

//===----------------------------------------------------------------------===//
// Linking
//===----------------------------------------------------------------------===//

/// libfsdp_runtime.a: $FSDP_RUNTIME_LIB, else lib/ beside fsdp-opt's bin/,
/// else the build tree this fsdp-opt was built in. Empty (and `looked` the
/// places tried) when none exists.
std::string findRuntimeLibrary(const char *argv0, std::string &looked) {
  if (const char *env = std::getenv("FSDP_RUNTIME_LIB")) {
    looked = std::string("$FSDP_RUNTIME_LIB=") + env;
    return llvm::sys::fs::exists(env) ? env : "";
  }
  std::vector<std::string> candidates;
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&findRuntimeLibrary);
  if (!self.empty()) {
    llvm::SmallString<256> path(llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
    llvm::sys::path::append(path, "lib", "libfsdp_runtime.a");
    candidates.push_back(path.str().str());
  }
  if (*FSDP_RUNTIME_LIB_DEFAULT)
    candidates.push_back(FSDP_RUNTIME_LIB_DEFAULT);
  for (const std::string &candidate : candidates) {
    looked += (looked.empty() ? "" : ", ") + candidate;
    if (llvm::sys::fs::exists(candidate))
      return candidate;
  }
  return "";
}

/// The extra link flags recorded beside the archive (libfsdp_runtime.link:
/// whitespace-separated, e.g. -lpthread -ldl); none when the file is absent.
std::vector<std::string> runtimeLinkFlags(const std::string &archive) {
  std::string path = archive.substr(0, archive.size() - llvm::StringRef(".a").size()) + ".link";
  std::vector<std::string> flags;
  if (!llvm::StringRef(archive).ends_with(".a"))
    return flags;
  auto file = llvm::MemoryBuffer::getFile(path);
  if (!file)
    return flags;
  std::istringstream words((*file)->getBuffer().str());
  for (std::string word; words >> word;)
    flags.push_back(word);
  return flags;
}

/// Links `object` with the runtime into the executable `output`.
int linkStep(const std::string &object, const std::string &output, const char *argv0) {
  std::string looked;
  std::string archive = findRuntimeLibrary(argv0, looked);
  if (archive.empty())
    return fail("--emit=binary: no runtime library libfsdp_runtime.a (looked at " + looked +
                "); build it (ninja fsdp_runtime) or set FSDP_RUNTIME_LIB, or use "
                "--emit=object and link yourself");
  llvm::ErrorOr<std::string> cxx = llvm::sys::findProgramByName(FSDP_STEP_LINKER);
  if (!cxx)
    return fail(std::string("--emit=binary: no C++ compiler '") + FSDP_STEP_LINKER +
                "' on PATH to link " + output);
  std::vector<std::string> args = {*cxx, object, archive};
  for (std::string &flag : runtimeLinkFlags(archive))
    args.push_back(std::move(flag));
  if (llvm::sys::findProgramByName("ld.lld"))
    args.push_back("-fuse-ld=lld");
  args.push_back("-o");
  args.push_back(output);
  std::vector<llvm::StringRef> argv(args.begin(), args.end());
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*cxx, argv, std::nullopt, {}, 0, 0, &message);
  if (rc != 0) {
    std::string command;
    for (const std::string &arg : args)
      command += (command.empty() ? "" : " ") + arg;
    return fail("--emit=binary: linking " + output + " failed (" +
                (message.empty() ? "exit code " + std::to_string(rc) : message) + "): " +
                command);
  }
  return 0;
}

/// Native code (into `step`) and PTX (into `contents`) for every distinct
/// Fused chain of the plan, and the table that names them.
mlir::LogicalResult generateFusedCode(const plan::Plan &plan, mlir::ModuleOp step,
                                      StepObjectContents &contents) {
  std::vector<FusedKernelSpec> specs = collectFusedKernels(plan);
  if (specs.empty())
    return mlir::success();
  std::vector<std::pair<std::string, std::string>> cpuSymbols;
  if (mlir::failed(buildCpuFusedKernels(step, specs, cpuSymbols)))
    return mlir::failure();
  // PTX whatever this build's backends: the step may run where a GPU is.
  FusedPtx ptx;
  std::string error;
  if (mlir::failed(generateFusedPtx(step.getContext(), specs, ptx, error)))
    return step.emitError() << error;
  contents.ptxSm80 = std::move(ptx.sm80);
  contents.ptxSm90 = std::move(ptx.sm90);
  for (size_t i = 0; i < specs.size(); ++i)
    contents.fused.push_back(
        {specs[i].key, cpuSymbols[i].first, cpuSymbols[i].second, ptx.entries[i]});
  return mlir::success();
}

} // namespace

std::string compiledStepBase(const std::string &outputPath, EmitKind emit) {
  if (emit == EmitKind::Binary)
    return outputPath;
  for (llvm::StringRef suffix : {".o", ".ll", ".mlir"})
    if (llvm::StringRef(outputPath).ends_with(suffix) && outputPath.size() > suffix.size())
      return outputPath.substr(0, outputPath.size() - suffix.size());
  return outputPath;
}

int emitCompiledStep(const CompileOptions &opts, mlir::ModuleOp module,
                     const WeightLookup &weights, const BudgetCheck &checkBudget,
                     const char *argv0) {
  const bool toStdout = opts.outputPath == "-";
  const bool writesStep = opts.emit == EmitKind::Binary || opts.emit == EmitKind::Object;
  if (writesStep && toStdout)
    return fail(std::string(emitFlag(opts.emit)) + " writes files: give -o " +
                (opts.emit == EmitKind::Binary ? "STEP (the executable)" : "STEP.o"));
  if (opts.embedWeights && !weights)
    return fail("--embed-weights: " + opts.inputPath +
                "'s weights are not on disk (compiled from shapes only): nothing to embed");
  mlir::DefaultTimingManager timing;
  mlir::applyDefaultTimingManagerCLOptions(timing);
  mlir::TimingScope root = timing.getRootScope();

  // The plan, as --emit=plan writes it.
  mlir::TimingScope planTimer = root.nest("plan (as --emit=plan)");
  const std::string base = compiledStepBase(opts.outputPath, opts.emit);
  PlanEmitOptions planOptions = planEmitOptionsFor(opts);
  planOptions.planPath = toStdout ? "step" : base;
  std::vector<uint8_t> planBytes;
  (toStdout ? planOptions.planBytes : planOptions.fileBytes) = &planBytes;
  mlir::FailureOr<EmittedPlan> plan = emitPlan(module, planOptions, weights);
  if (mlir::failed(plan))
    return 1;
  auto removeWeights = [&] {
    if (!plan->weightsPath.empty())
      std::remove(plan->weightsPath.c_str());
  };
  if (int rc = checkBudget(plan->persistentBytes + plan->arenaBytes)) {
    removeWeights(); // an over-budget step is no result
    return rc;
  }
  // The name the plan records (none when it has no parameters).
  std::string weightsFile;
  if (const flatbuffers::String *name = plan::GetPlan(planBytes.data())->weights_file())
    weightsFile = name->str();
  if (!weights && !weightsFile.empty())
    llvm::errs() << "fsdp-opt: warning: " << opts.inputPath
                 << "'s weights are not on disk (compiled from shapes only): no " << weightsFile
                 << " written; run the step with --weights=FILE or --resume=CHECKPOINT\n";
  std::unique_ptr<llvm::MemoryBuffer> embedded;
  if (opts.embedWeights && !plan->weightsPath.empty()) {
    auto read = llvm::MemoryBuffer::getFile(plan->weightsPath, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!read)
      return fail(plan->weightsPath + ": " + read.getError().message());
    embedded = std::move(*read);
  }
  planTimer.stop();

  // The step's module.
  mlir::TimingScope codegenTimer = root.nest("code generation");
  mlir::MLIRContext *context = module.getContext();
  {
    mlir::DialectRegistry registry;
    registerLlvmTranslations(registry);
    context->appendDialectRegistry(registry);
  }
  context->getOrLoadDialect<mlir::LLVM::LLVMDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> step =
      mlir::ModuleOp::create(mlir::FileLineColLoc::get(context, opts.inputPath, 0, 0));
  StepObjectContents contents;
  contents.plan = planBytes;
  contents.planHash = rt::contentHash(planBytes.data(), planBytes.size());
  contents.weightsFile = weightsFile;
  const std::string weightsName = plan->weightsPath;
  if (embedded) {
    contents.embedWeights = true;
    contents.embeddedWeightsSize = embedded->getBufferSize();
  }
  contents.info = describeStep(opts, module, planOptions, *plan);
  contents.defineMain = opts.emit == EmitKind::Binary;
  if (mlir::failed(generateFusedCode(*plan::GetPlan(planBytes.data()), *step, contents)))
    return 1;
  if (mlir::failed(buildStepObject(*step, contents)))
    return 1;
  if (opts.emit == EmitKind::Llvm) {
    auto output = mlir::openOutputFile(opts.outputPath);
    if (!output)
      return fail(opts.outputPath + ": cannot open");
    step->print(output->os());
    output->os() << "\n";
    output->keep();
    return 0;
  }
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> ir =
      translateToLlvmIr(*step, llvmContext, CodegenTarget::hostBaseline());
  if (!ir)
    return 1;
  std::string error;
  if (!verifyStepLayout(*ir, error))
    return fail(error);
  if (embedded) {
    if (!attachEmbeddedWeights(*ir, {embedded->getBufferStart(), embedded->getBufferSize()},
                               error))
      return fail(error);
    embedded.reset(); // the module holds its own copy now
  }
  if (opts.emit == EmitKind::LlvmIr) {
    auto output = mlir::openOutputFile(opts.outputPath);
    if (!output)
      return fail(opts.outputPath + ": cannot open");
    ir->print(output->os(), nullptr);
    output->keep();
    return 0;
  }
  std::string object;
  if (mlir::failed(emitMachineCode(*ir, CodegenTarget::hostBaseline(), MachineCodeKind::Object,
                                   object, error)))
    return fail(opts.outputPath + ": code generation failed: " + error);
  ir.reset();
  // Embedded, the weights live in the step only.
  if (contents.embedWeights)
    removeWeights();
  codegenTimer.stop();

  const std::string weightsNote = contents.embedWeights ? ", weights embedded"
                                  : weightsName.empty()  ? ""
                                                         : "; weights " + weightsName;
  if (opts.emit == EmitKind::Object) {
    if (!writeFile(opts.outputPath, object, error) ||
        !writeFile(base + ".h", stepHeader(base, contents.info), error))
      return fail(error);
    llvm::outs() << "wrote " << opts.outputPath << " and " << base << ".h: plan "
                 << planBytes.size() << " B" << weightsNote << "\n";
    return 0;
  }
  mlir::TimingScope linkTimer = root.nest("link");
  llvm::SmallString<128> objectPath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("fsdp-step", "o", objectPath))
    return fail("cannot create a temporary object file: " + ec.message());
  int rc = writeFile(objectPath.str().str(), object, error)
               ? linkStep(objectPath.str().str(), opts.outputPath, argv0)
               : fail(error);
  llvm::sys::fs::remove(objectPath);
  if (rc != 0)
    return rc;
  linkTimer.stop();
  uint64_t size = 0;
  llvm::sys::fs::file_size(opts.outputPath, size);
  llvm::outs() << "wrote " << opts.outputPath << ": " << size << " B executable, plan "
               << planBytes.size() << " B" << weightsNote << "\n";
  return 0;
}

} // namespace fsdp
