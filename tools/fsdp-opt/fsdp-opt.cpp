//===- fsdp-opt.cpp - the fsdp-opt compiler driver ------------------------===//
//
// Entry point of the compiler. ONNX input is read, imported into the nn
// dialect, and run through the pipeline stages the options ask for (the
// passes of compiler/Transforms/Passes.td in an mlir::PassManager that
// takes the --mlir-print-ir-*, --mlir-timing and reproducer options); the
// result is emitted as a plan, MLIR, a memory report of the plan, a trace
// of its predicted step or a model summary. MLIR
// input with no --emit behaves like mlir-opt (--pass-pipeline,
// --verify-diagnostics, --split-input-file ...), so every pass and verifier
// can be tested alone with lit. Every error ends in exit code 1 with a
// message naming the file and, for model errors, the node.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/AccumulationCost.h"
#include "compiler/Analysis/CostModel.h"
#include "compiler/Analysis/MemoryReport.h"
#include "compiler/Analysis/ModelSummary.h"
#include "compiler/Analysis/StepTrace.h"
#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Pipelines/MemoryBudget.h"
#include "compiler/Pipelines/Pipeline.h"
#include "compiler/RegisterDialects.h"
#include "compiler/Target/PlanEmitter.h"
#include "compiler/Transforms/Passes.h"
#include "EmitStep.h"
#include "MlirInputGuard.h"
#include "frontends/onnx/HostTensorAdapter.h"
#include "frontends/onnx/Importer.h"
#include "frontends/onnx/ParameterManifest.h"
#include "frontends/onnx/ParameterProvenance.h"
#include "runtime/io/FaultInjection.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir;

namespace {

int fail(const llvm::Twine &message) {
  llvm::errs() << "fsdp-opt: error: " << message << "\n";
  return 1;
}

/// The supported-operator table as Markdown (docs/ops.md is this output).
void printSupportedOps(llvm::raw_ostream &os) {
  os << "| Operator | Opsets | Notes |\n|---|---|---|\n";
  for (const fsdp::onnx::SupportedOp &op : fsdp::onnx::supportedOps())
    os << "| " << (op.domain[0] ? std::string(op.domain) + "." : "") << op.opType << " | "
       << op.minOpset << "-" << op.maxOpset << " | " << op.notes << " |\n";
}

bool endsWith(llvm::StringRef s, llvm::StringRef suffix) { return s.ends_with(suffix); }

/// Opens `path` for writing ("-" is stdout).
std::unique_ptr<llvm::ToolOutputFile> openOutput(const std::string &path) {
  std::string error;
  auto output = openOutputFile(path, &error);
  if (!output)
    fail(path + ": " + error);
  return output;
}

/// What the import recorded about each parameter: the initializer holding
/// its initial value where that is not its own name (`nn.initializer`), and
/// which are frozen (`nn.frozen`, from a parameter manifest).
struct ParameterSources {
  std::map<std::string, std::string> initializerOf;
  std::vector<std::string> frozen;
};

ParameterSources parameterSources(ModuleOp module) {
  ParameterSources sources;
  auto forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward)
    return sources;
  for (unsigned i = 0; i < forward.getNumArguments(); ++i) {
    auto name = forward.getArgAttrOfType<StringAttr>(i, fsdp::nn::kParamAttr);
    if (!name)
      continue;
    if (auto init = forward.getArgAttrOfType<StringAttr>(i, fsdp::onnx::kInitializerAttr))
      sources.initializerOf[name.str()] = init.str();
    if (forward.getArgAttr(i, fsdp::onnx::kFrozenAttr))
      sources.frozen.push_back(name.str());
  }
  return sources;
}

/// `opts` with the manifest's frozen parameters added to --freeze: both
/// mean "a parameter that is not trained".
fsdp::CompileOptions withFrozen(const fsdp::CompileOptions &opts,
                                const std::vector<std::string> &frozen) {
  fsdp::CompileOptions result = opts;
  if (frozen.empty())
    return result;
  std::string names;
  for (const std::string &name : frozen)
    names += (names.empty() ? "" : "|") + llvm::Regex::escape(name);
  result.freezeRegex = (opts.freezeRegex.empty() ? "" : "(" + opts.freezeRegex + ")|") +
                       "^(" + names + ")$";
  return result;
}

/// Initial parameter values from a model's initializers, found under the
/// parameter's name or the initializer `initializerOf` maps it to.
fsdp::WeightLookup weightsFrom(std::shared_ptr<const fsdp::onnx::Model> model,
                               std::map<std::string, std::string> initializerOf = {}) {
  auto initializers = std::make_shared<std::map<std::string, const fsdp::onnx::Tensor *>>();
  if (model)
    for (const fsdp::onnx::Tensor &init : model->initializers)
      (*initializers)[init.name] = &init;
  return [model, initializers,
          initializerOf = std::move(initializerOf)](const std::string &name)
             -> std::optional<fsdp::rt::TensorRef> {
    auto source = initializerOf.find(name);
    auto it = initializers->find(source == initializerOf.end() ? name : source->second);
    return it == initializers->end() ? std::nullopt : fsdp::onnx::toTensorRef(*it->second);
  };
}

/// Decides which initializers of `model` are parameters: from --params, or
/// the manifest beside the model when there is one, else from the model;
/// prints what the decision warns about. Returns nullopt after printing
/// the error.
std::optional<fsdp::onnx::ParameterProvenance>
decideParameters(const fsdp::CompileOptions &opts, const fsdp::onnx::Model &model) {
  std::string error;
  std::optional<fsdp::onnx::ParameterManifest> manifest;
  std::string manifestPath = opts.paramsPath.empty()
                                 ? fsdp::onnx::defaultManifestPath(opts.inputPath)
                                 : opts.paramsPath;
  if (!opts.paramsPath.empty() || llvm::sys::fs::exists(manifestPath)) {
    manifest = fsdp::onnx::readManifest(manifestPath, error);
    if (!manifest) {
      fail(error);
      return std::nullopt;
    }
  }
  fsdp::onnx::ProvenanceOptions options;
  options.manifest = manifest ? &*manifest : nullptr;
  if (!opts.freezeRegex.empty()) {
    auto freeze = std::make_shared<llvm::Regex>(opts.freezeRegex);
    options.isFrozen = [freeze](const std::string &name) { return freeze->match(name); };
  }
  std::optional<fsdp::onnx::ParameterProvenance> provenance =
      fsdp::onnx::decideParameters(model, options, error);
  if (!provenance) {
    fail(error);
    return std::nullopt;
  }
  // Warnings, not errors: the model may still be what the user wants.
  for (const std::string &warning : provenance->warnings)
    llvm::errs() << "fsdp-opt: warning: " << warning << "\n";
  return provenance;
}

/// 0 when no --mem-budget is given or the plan's per-rank peak fits it;
/// otherwise reports what is live at the peak and planned alternatives
/// (compiled from `imported`, the module before any stage) and returns 1.
/// `report` is the plan's own when the caller has it; otherwise the plan is
/// analyzed again for the message.
int checkBudget(const fsdp::CompileOptions &opts, ModuleOp imported, uint64_t peakBytes,
                const fsdp::MemoryReport *report = nullptr) {
  if (!opts.memBudget || peakBytes <= static_cast<uint64_t>(*opts.memBudget))
    return 0;
  FailureOr<fsdp::MemoryReport> analyzed;
  if (!report) {
    analyzed = fsdp::planMemory(imported, opts);
    if (failed(analyzed))
      return 1;
    report = &*analyzed;
  }
  return fail(fsdp::overBudgetMessage(*report, *opts.memBudget,
                                      fsdp::suggestSmallerPlans(imported, opts)));
}

/// checkBudget for a compiled step's plan.
fsdp::BudgetCheck budgetCheck(const fsdp::CompileOptions &opts, ModuleOp imported) {
  return [&opts, imported](uint64_t peakBytes) { return checkBudget(opts, imported, peakBytes); };
}

/// Whether the output plans other configurations from the module as
/// imported: --mem-budget's suggestions, the report's comparison.
bool needsImported(const fsdp::CompileOptions &opts) {
  return opts.memBudget || opts.emit == fsdp::EmitKind::Report;
}

/// Writes the plan and, beside it, the parameters' initial values.
int emitPlanFile(const fsdp::CompileOptions &opts, ModuleOp module, ModuleOp imported,
                 const fsdp::WeightLookup &weights) {
  if (opts.outputPath == "-")
    return fail("--emit=plan writes a plan file and its weights: give -o FILE.plan");
  fsdp::PlanEmitOptions options = fsdp::planEmitOptionsFor(opts);
  FailureOr<fsdp::EmittedPlan> plan = fsdp::emitPlan(module, options, weights);
  if (failed(plan))
    return 1;
  if (int rc = checkBudget(opts, imported, plan->persistentBytes + plan->arenaBytes)) {
    std::remove(opts.outputPath.c_str()); // an over-budget plan is no result
    std::remove(plan->weightsPath.c_str());
    return rc;
  }
  // The memory the plan will take, known before launch.
  llvm::outs() << "wrote " << opts.outputPath << ": " << plan->instructions << " instructions, "
               << plan->buffers << " buffers; persistent " << plan->persistentBytes
               << " B, arena " << plan->arenaBytes << " B (live peak " << plan->arenaLowerBound
               << " B), constants " << plan->constantBytes << " B"
               << (plan->weightsPath.empty() ? "" : "; weights " + plan->weightsPath) << "\n";
  return 0;
}

/// Emits the plan in memory (no plan or weights file) and writes its memory
/// report to the output file (stdout by default, or `-o -`). The numbers
/// come from the plan fsdp-run would allocate, not from the IR; in train
/// mode the report adds its predicted step time on --device and the same
/// model planned under the other strategies (compiled from `imported`,
/// the module before any stage).
int emitReport(const fsdp::CompileOptions &opts, ModuleOp module, ModuleOp imported) {
  FailureOr<std::vector<uint8_t>> bytes = fsdp::emitPlanInMemory(module, opts);
  if (failed(bytes))
    return 1;
  const fsdp::plan::Plan &plan = *fsdp::plan::GetPlan(bytes->data());
  const fsdp::DeviceProfile &device = fsdp::deviceProfile(opts.device);
  fsdp::PlannedStep step{fsdp::analyzeMemory(plan), fsdp::predictStep(plan, device)};
  if (int rc = checkBudget(opts, imported, step.memory.peakBytes, &step.memory))
    return rc;
  fsdp::MemoryReport report = step.memory;
  report.predicted = fsdp::predictedTimeOf(step.prediction, device);
  if (report.gradAccum > 1) {
    std::map<std::string, std::string> chosen;
    if (auto choices = module->getAttrOfType<DictionaryAttr>(fsdp::dist::kAccumulationAttr))
      for (NamedAttribute c : choices)
        chosen[c.getName().str()] = cast<StringAttr>(c.getValue()).str();
    report.accumulation = fsdp::accumulationCosts(report, report.gradAccum, chosen, device);
  }
  if (opts.mode == fsdp::Mode::Train)
    report.configurations = fsdp::compareConfigurations(imported, opts, step);
  auto output = openOutput(opts.outputPath);
  if (!output)
    return 1;
  output->os() << fsdp::renderMemoryReport(report,
                                           opts.reportFormat == fsdp::ReportFormat::Json);
  output->keep();
  return 0;
}

/// Emits the plan in memory and writes its predicted step as a Chrome /
/// Perfetto trace (-o FILE.json) or an HTML page with an inline SVG
/// timeline (-o FILE.html).
int emitTrace(const fsdp::CompileOptions &opts, ModuleOp module) {
  llvm::StringRef path = opts.outputPath;
  bool html = path.ends_with(".html") || path.ends_with(".htm");
  if (path == "-" || !(html || path.ends_with(".json")))
    return fail("--emit=trace writes a file: give -o FILE.json (Chrome/Perfetto trace) or -o "
                "FILE.html (timeline picture)");
  FailureOr<std::vector<uint8_t>> bytes = fsdp::emitPlanInMemory(module, opts);
  if (failed(bytes))
    return 1;
  const fsdp::plan::Plan &plan = *fsdp::plan::GetPlan(bytes->data());
  fsdp::StepPrediction step = fsdp::predictStep(plan, fsdp::deviceProfile(opts.device));
  std::vector<uint64_t> live = fsdp::arenaLiveBytes(plan);
  auto output = openOutput(opts.outputPath);
  if (!output)
    return 1;
  output->os() << (html ? fsdp::renderTimelineHtml(plan, step, live)
                        : fsdp::renderChromeTrace(plan, step, live));
  output->keep();
  llvm::outs() << "wrote " << opts.outputPath << ": " << step.costs.size()
               << " instructions, predicted step " << fsdp::formatSeconds(step.stepSeconds)
               << " on " << step.device << " (a cost-model prediction, not a measurement)\n";
  return 0;
}

/// Prints the summary of `module` to the output file.
int emitSummary(const fsdp::CompileOptions &opts, ModuleOp module) {
  // The summary shows the ops a plan would run: attentions fused as the
  // pipeline fuses them.
  if (opts.fuseAttention == fsdp::OnOff::On) {
    mlir::PassManager pm(module.getContext());
    pm.addPass(fsdp::createFuseAttentionPass());
    if (failed(pm.run(module)))
      return 1;
  }
  FailureOr<fsdp::ModelSummary> summary = fsdp::summarizeModel(module);
  if (failed(summary))
    return 1;
  auto output = openOutput(opts.outputPath);
  if (!output)
    return 1;
  fsdp::printModelSummary(*summary, output->os());
  output->keep();
  return 0;
}

/// Prints a diagnostic from the stages after an ONNX import the way the
/// importer reports errors: "fsdp-opt: error: m.onnx: node 'NAME': ...".
/// Ops keep their ONNX node's name as location (gradient ops their forward
/// node's); notes (IR dumps of the failing op) are left out.
LogicalResult printModelDiagnostic(Diagnostic &diag) {
  if (diag.getSeverity() == DiagnosticSeverity::Note || diag.getSeverity() == DiagnosticSeverity::Remark)
    return success();
  std::string where;
  Location loc = diag.getLocation();
  if (auto name = dyn_cast<NameLoc>(loc)) {
    if (auto file = dyn_cast<FileLineColLoc>(name.getChildLoc()))
      where = file.getFilename().str() + ": ";
    where += "node '" + name.getName().str() + "': ";
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    where = file.getFilename().str() + ": ";
  }
  llvm::errs() << "fsdp-opt: "
               << (diag.getSeverity() == DiagnosticSeverity::Error ? "error" : "warning") << ": "
               << where << diag.str() << "\n";
  return success();
}

/// Choices the stages made for the user (--ckpt=auto), as notes on stderr
/// so they never mix with a report or IR on stdout.
void printStageNotes(ModuleOp module) {
  if (auto choice = module->getAttrOfType<StringAttr>(fsdp::dist::kCheckpointChoiceAttr))
    llvm::errs() << "fsdp-opt: note: " << choice.getValue() << "\n";
  if (auto choice = module->getAttrOfType<StringAttr>(fsdp::dist::kAccumulationChoiceAttr))
    llvm::errs() << "fsdp-opt: note: " << choice.getValue() << "\n";
}

/// MLIR's command-line instrumentation on the pass manager that runs the
/// pipeline: --mlir-print-ir-before/after-*, --mlir-timing,
/// --mlir-pass-pipeline-crash-reproducer and the other --mlir-* pass
/// manager options work on ONNX input as on --pass-pipeline.
LogicalResult applyMlirInstrumentation(PassManager &pm) {
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  applyDefaultTimingPassManagerCLOptions(pm);
  return success();
}

/// Imports an ONNX file, runs the implemented stages and emits the result.
int compileOnnx(const fsdp::CompileOptions &options, DialectRegistry &registry,
                const char *argv0) {
  std::string error;
  fsdp::onnx::ReadOptions readOptions;
  // A summary or IR dump needs shapes only; weights absent from disk (a
  // 70B model planned on a laptop) are fine until values are needed. A
  // plan writes the weights, so there a missing file is the reader's error
  // naming it.
  // A compiled step from shapes only is compiled all the same (it runs with
  // --weights or --resume): see EmitStep.h.
  readOptions.allowMissingExternalData = options.emit != fsdp::EmitKind::Plan;
  std::optional<fsdp::onnx::Model> model =
      fsdp::onnx::readModel(options.inputPath, readOptions, error);
  if (!model)
    return fail(error);
  std::optional<fsdp::onnx::ParameterProvenance> provenance = decideParameters(options, *model);
  if (!provenance)
    return 1;
  MLIRContext context(registry);
  ScopedDiagnosticHandler diagnostics(&context, printModelDiagnostic);
  fsdp::onnx::ImportOptions importOptions;
  importOptions.provenance = &*provenance;
  OwningOpRef<ModuleOp> module = fsdp::onnx::importModel(context, *model, importOptions, error);
  if (!module)
    return fail(error);
  ParameterSources sources = parameterSources(*module);
  const fsdp::CompileOptions opts = withFrozen(options, sources.frozen);
  // --mem-budget and the report plan alternatives from the module as
  // imported.
  OwningOpRef<ModuleOp> imported(needsImported(opts) ? module->clone() : nullptr);
  if (opts.emit != fsdp::EmitKind::Summary &&
      failed(fsdp::runStages(*module, opts, applyMlirInstrumentation)))
    return 1;
  printStageNotes(*module);
  if (fsdp::emitsCompiledStep(opts.emit)) {
    bool shapesOnly = false;
    for (const fsdp::onnx::Tensor &init : model->initializers)
      shapesOnly |= !init.hasData;
    fsdp::WeightLookup weights;
    if (!shapesOnly)
      weights = weightsFrom(std::make_shared<fsdp::onnx::Model>(std::move(*model)),
                            std::move(sources.initializerOf));
    return fsdp::emitCompiledStep(opts, *module, weights, budgetCheck(opts, imported.get()),
                                  argv0);
  }
  if (opts.emit == fsdp::EmitKind::Plan)
    return emitPlanFile(opts, *module, imported.get(),
                        weightsFrom(std::make_shared<fsdp::onnx::Model>(std::move(*model)),
                                    std::move(sources.initializerOf)));
  if (opts.emit == fsdp::EmitKind::Summary)
    return emitSummary(opts, *module);
  if (opts.emit == fsdp::EmitKind::Report)
    return emitReport(opts, *module, imported.get());
  if (opts.emit == fsdp::EmitKind::Trace)
    return emitTrace(opts, *module);
  auto output = openOutput(opts.outputPath);
  if (!output)
    return 1;
  module->print(output->os());
  output->os() << "\n";
  output->keep();
  return 0;
}

/// `buffer`, or null with `error` set where its text is one MLIR 19's
/// parser crashes on (MlirInputGuard.h).
std::unique_ptr<llvm::MemoryBuffer> refuseParserCrashes(std::unique_ptr<llvm::MemoryBuffer> buffer,
                                                        std::string &error) {
  if (buffer)
    if (std::optional<size_t> line = fsdp::findIntegerBoolArray(buffer->getBuffer())) {
      error = "line " + std::to_string(*line) +
              ": a bool array written with integer literals (array<i1: 0, ...>) is not "
              "accepted: MLIR 19's parser mishandles it; write true/false";
      return nullptr;
    }
  return buffer;
}

/// The .mlir input ("-": stdin), opened once and checked on the descriptor:
/// a regular file only (O_NONBLOCK, so a FIFO is refused rather than waited
/// on, and /dev/zero is refused rather than read until memory runs out).
std::unique_ptr<llvm::MemoryBuffer> openMlirInput(const std::string &path, std::string &error) {
  if (path == "-")
    return refuseParserCrashes(openInputFile(path, &error), error);
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) {
    error = std::string("cannot open: ") + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    return nullptr;
  }
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  if (!S_ISREG(st.st_mode)) {
    error = "not a regular file";
  } else if (auto read = llvm::MemoryBuffer::getOpenFile(fd, path, st.st_size)) {
    buffer = std::move(*read);
  } else {
    error = "cannot read: " + read.getError().message();
  }
  ::close(fd);
  return refuseParserCrashes(std::move(buffer), error);
}

/// .mlir input compiled like ONNX input (summary, plan, report, trace). A plan's initial
/// weights come from the module's `nn.source` model when it names one.
int compileMlir(const fsdp::CompileOptions &options, DialectRegistry &registry,
                const char *argv0) {
  std::string error;
  auto input = openMlirInput(options.inputPath, error);
  if (!input)
    return fail(options.inputPath + ": " + error);
  MLIRContext context(registry);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;
  if (options.emit == fsdp::EmitKind::Summary)
    return emitSummary(options, *module);
  ParameterSources sources = parameterSources(*module);
  const fsdp::CompileOptions opts = withFrozen(options, sources.frozen);
  OwningOpRef<ModuleOp> imported(needsImported(opts) ? module->clone() : nullptr);
  if (failed(fsdp::runStages(*module, opts, applyMlirInstrumentation)))
    return 1;
  printStageNotes(*module);
  if (opts.emit == fsdp::EmitKind::Report)
    return emitReport(opts, *module, imported.get()); // needs no weights
  if (opts.emit == fsdp::EmitKind::Trace)
    return emitTrace(opts, *module);
  std::shared_ptr<const fsdp::onnx::Model> source;
  if (auto path = (*module)->getAttrOfType<StringAttr>(fsdp::nn::kSourceAttr)) {
    std::optional<fsdp::onnx::Model> model =
        fsdp::onnx::readModel(path.str(), fsdp::onnx::ReadOptions(), error);
    if (!model)
      return fail(error);
    source = std::make_shared<fsdp::onnx::Model>(std::move(*model));
  }
  fsdp::WeightLookup weights = weightsFrom(source, std::move(sources.initializerOf));
  if (fsdp::emitsCompiledStep(opts.emit))
    return fsdp::emitCompiledStep(opts, *module, weights, budgetCheck(opts, imported.get()),
                                  argv0);
  return emitPlanFile(opts, *module, imported.get(), weights);
}

/// mlir-opt behaviour for .mlir input.
int runMlirOpt(const fsdp::CompileOptions &opts, DialectRegistry &registry) {
  std::string error;
  auto input = openMlirInput(opts.inputPath, error);
  if (!input)
    return fail(opts.inputPath + ": " + error);
  auto output = openOutput(opts.outputPath);
  if (!output)
    return 1;
  // The config carries --pass-pipeline and the other mlir-opt options
  // registered (once) by MlirOptMainConfig::registerCLOptions.
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  if (failed(MlirOptMain(output->os(), std::move(input), registry, config)))
    return 1;
  output->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  if (fsdp::rt::Status s = fsdp::rt::checkFaultInjectionEnv(); !s) // not to test nothing
    return fail(s.message());
  DialectRegistry registry;
  fsdp::registerFsdpDialects(registry);
  fsdp::registerFsdpPasses();
  fsdp::registerTrainPipeline();

  // Our flags are parsed here; everything else goes to MLIR's options
  // (printing, pass pipeline, diagnostics verification).
  fsdp::CompileOptions opts;
  std::vector<const char *> mlirArgs{argv[0]};
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      llvm::outs() << fsdp::usage()
                   << "\n.mlir input without --emit behaves like mlir-opt; "
                      "--help-mlir lists those options.\n"
                      "--list-ops prints the supported ONNX operators.\n";
      return 0;
    }
    // Hidden: docs/flags.md, generated from the same declaration as --help
    // (tests/lit/tools/flags-doc.test checks the committed file).
    if (arg == "--help-markdown") {
      llvm::outs() << fsdp::usageMarkdown();
      return 0;
    }
    if (arg == "--help-mlir") {
      mlirArgs.push_back("--help");
      continue;
    }
    if (arg == "--list-ops") {
      printSupportedOps(llvm::outs());
      return 0;
    }
    if (arg == "-o") {
      if (i + 1 >= argc)
        return fail("-o needs a file name");
      opts.outputPath = argv[++i];
      continue;
    }
    if (llvm::StringRef(arg).starts_with("-o=")) {
      opts.outputPath = arg.substr(3);
      continue;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") {
      positional.push_back(arg);
      continue;
    }
    std::string error;
    switch (fsdp::parseCompileFlag(arg, opts, error)) {
    case fsdp::FlagParse::Ok:
      continue;
    case fsdp::FlagParse::Error:
      return fail(error);
    case fsdp::FlagParse::NotOurs:
      mlirArgs.push_back(argv[i]);
      continue;
    }
  }

  MlirOptMainConfig::registerCLOptions(registry);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  if (!llvm::cl::ParseCommandLineOptions(static_cast<int>(mlirArgs.size()), mlirArgs.data(),
                                         "fsdp-opt: ahead-of-time FSDP compiler\n",
                                         &llvm::errs()))
    return 1;

  if (positional.size() != 1)
    return fail(positional.empty() ? "no input file (usage: fsdp-opt MODEL.onnx|MODEL.mlir -o OUT; --help)"
                                   : "more than one input file given");
  opts.inputPath = positional[0];

  bool mlirInput = endsWith(opts.inputPath, ".mlir") || opts.inputPath == "-";
  // A manifest describes an ONNX file; imported IR carries what it decided.
  if (mlirInput && !opts.paramsPath.empty())
    return fail("--params applies to ONNX input only");
  // ONNX input runs our pipeline, not a user pass pipeline: mlir-opt options
  // other than IR printing (--mlir-*) would be silently ignored, so refuse.
  if (!mlirInput)
    for (size_t i = 1; i < mlirArgs.size(); ++i)
      if (!llvm::StringRef(mlirArgs[i]).starts_with("--mlir-") &&
          llvm::StringRef(mlirArgs[i]) != "--help")
        return fail(llvm::Twine(mlirArgs[i]) + ": applies to .mlir input only");
  // .mlir input without an explicit --emit is mlir-opt style: it prints IR
  // after what --pass-pipeline names, so our own pipeline stops at parsing.
  if (mlirInput && !opts.explicitlySet.count("emit")) {
    opts.emit = fsdp::EmitKind::Mlir;
    if (!opts.stopAfter)
      opts.stopAfter = fsdp::Stage::Import;
  }
  std::string error;
  if (!fsdp::validateCompileOptions(opts, error))
    return fail(error);
  if (std::optional<std::string> pending = fsdp::findUnimplemented(opts))
    return fail(*pending);
  if (mlirInput && (opts.emit == fsdp::EmitKind::Summary || opts.emit == fsdp::EmitKind::Plan ||
                    opts.emit == fsdp::EmitKind::Report || opts.emit == fsdp::EmitKind::Trace ||
                    fsdp::emitsCompiledStep(opts.emit)))
    return compileMlir(opts, registry, argv[0]);
  if (mlirInput)
    return runMlirOpt(opts, registry);
  return compileOnnx(opts, registry, argv[0]);
}
