//===- NodeTestRunner.cpp - ONNX node tests through importer and runtime --===//
//
// Implements the node test runner shared by the onnx 1.12 and 1.23 node
// conformance suites: reading a test directory, choosing the single
// supported-operator tests, importing with the test inputs offered as bound
// values, and the compile / run / compare path on the CPU runtime.
//
//===----------------------------------------------------------------------===//

#include "NodeTestRunner.h"

#include "compiler/RegisterDialects.h"
#include "compiler/Target/PlanEmitter.h"
#include "frontends/onnx/HostTensorAdapter.h"
#include "frontends/onnx/Importer.h"
#include "runtime/device/Device.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/exec/Executor.h"
#include "runtime/support/Half.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <set>
#include <unistd.h>

namespace fsdp::onnx::nodetest {

std::vector<std::string> listDir(const std::string &path) {
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir))
      if (entry->d_name[0] != '.')
        names.push_back(entry->d_name);
    closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

/// The opset of the model's single supported operator, or 0 when the graph
/// is not one operator from the table within its opset range.
int64_t supportedOpset(const Model &model) {
  if (model.nodes.empty())
    return 0;
  std::set<std::string> types;
  for (const Node &node : model.nodes)
    types.insert(node.domain + "/" + node.opType);
  if (types.size() != 1)
    return 0;
  const Node &node = model.nodes.front();
  auto opset = model.opsets.find(node.domain);
  if (opset == model.opsets.end())
    return 0;
  for (const SupportedOp &op : supportedOps())
    if (node.domain == op.domain && node.opType == op.opType && opset->second >= op.minOpset &&
        opset->second <= op.maxOpset)
      return opset->second;
  return 0;
}

/// Imports a node test, offering its inputs as bound values; null with
/// `error` set on failure.
mlir::OwningOpRef<mlir::ModuleOp> importTest(const NodeTest &test, mlir::MLIRContext &context,
                                             std::string &error) {
  ImportOptions options;
  for (size_t i = 0; i < test.inputs.size(); ++i)
    options.inputValues[test.model.inputs[i].name] = test.inputs[i];
  return importModel(context, test.model, options, error);
}

mlir::DialectRegistry fsdpRegistry() {
  mlir::DialectRegistry registry;
  fsdp::registerFsdpDialects(registry);
  return registry;
}

double elementAsDouble(const fsdp::rt::HostTensor &t, int64_t i) {
  using fsdp::rt::DType;
  const char *p = t.data.data();
  auto load = [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return static_cast<double>(v);
  };
  switch (t.dtype) {
  case DType::F32: return load(float());
  case DType::F64: return load(double());
  case DType::F16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return fsdp::rt::f16ToFloat(b); }
  case DType::BF16: { uint16_t b; std::memcpy(&b, p + 2 * i, 2); return fsdp::rt::bf16ToFloat(b); }
  case DType::I8: return load(int8_t());
  case DType::I16: return load(int16_t());
  case DType::I32: return load(int32_t());
  case DType::I64: return load(int64_t());
  case DType::U8: case DType::Bool: return load(uint8_t());
  case DType::U16: return load(uint16_t());
  case DType::U32: return load(uint32_t());
  case DType::U64: return load(uint64_t());
  }
  return 0;
}

/// One unit in the last place of `value` in a 16-bit float dtype with
/// `mantissaBits` stored mantissa bits (normal range; subnormals get the
/// smallest normal's ulp, which only widens the tolerance near zero).
double ulp16(double value, int mantissaBits, int minExponent) {
  int exponent = std::max(std::ilogb(std::fabs(value)), minExponent);
  return std::ldexp(1.0, exponent - mantissaBits);
}

/// "" if `actual` matches `expected` within the conformance tolerances. A
/// bf16 or f16 output may also differ by one unit in its last place: the
/// reference rounds intermediates to the low-precision dtype in its own
/// order, a kernel that accumulates in f32 and rounds once (nn.attention)
/// can land on the neighbouring value, and neither is the wrong answer.
std::string compareTensors(const std::string &name, const fsdp::rt::HostTensor &actual,
                           const fsdp::rt::HostTensor &expected) {
  if (actual.dtype != expected.dtype || actual.shape != expected.shape)
    return "output '" + name + "' has another dtype or shape than expected";
  bool isFloat = fsdp::rt::isFloat(actual.dtype);
  auto lastPlace = [&](double e) {
    if (actual.dtype == fsdp::rt::DType::BF16)
      return ulp16(e, 7, -126);
    if (actual.dtype == fsdp::rt::DType::F16)
      return ulp16(e, 10, -14);
    return 0.0;
  };
  for (int64_t i = 0, n = expected.numElements(); i < n; ++i) {
    double a = elementAsDouble(actual, i), e = elementAsDouble(expected, i);
    bool ok = isFloat ? (std::isnan(e) ? std::isnan(a)
                                       : (a == e || std::fabs(a - e) <= 1e-6 + 1e-5 * std::fabs(e) ||
                                          std::fabs(a - e) <= lastPlace(e)))
                      : a == e;
    if (!ok) {
      char buffer[160];
      std::snprintf(buffer, sizeof(buffer), "output '%s' element %lld: got %.9g, expected %.9g",
                    name.c_str(), static_cast<long long>(i), a, e);
      return buffer;
    }
  }
  return "";
}

/// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns;
/// where the graph declares bfloat16, read them as such.
void adoptDeclaredBf16(fsdp::rt::HostTensor &tensor, const ValueInfo &declared) {
  if (declared.dtype == DType::BFloat16 && tensor.dtype == fsdp::rt::DType::U16)
    tensor.dtype = fsdp::rt::DType::BF16;
}

/// The test running now, for the crash handler: a test that crashes the
/// runner fails its whole suite, and the report must still name it.
char runningTest[256];

extern "C" void reportCrash(int signal) {
  static const char prefix[] = "node test crashed the runner: ";
  ssize_t written = write(STDERR_FILENO, prefix, sizeof(prefix) - 1);
  written = write(STDERR_FILENO, runningTest, strnlen(runningTest, sizeof(runningTest)));
  written = write(STDERR_FILENO, "\n", 1);
  (void)written;
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

/// Names `name` in a crash report while it is in scope.
class CrashReportNames {
public:
  explicit CrashReportNames(const std::string &name) {
    static const bool installed = [] {
      for (int signal : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
        std::signal(signal, reportCrash);
      return true;
    }();
    (void)installed;
    std::snprintf(runningTest, sizeof(runningTest), "%s", name.c_str());
  }
  ~CrashReportNames() { runningTest[0] = '\0'; }
};

} // namespace

std::vector<NodeTest> loadSupportedNodeTests(const std::string &dir, int64_t minOpset,
                                             std::vector<std::string> *unreadable) {
  std::vector<NodeTest> supported;
  for (const std::string &name : listDir(dir)) {
    if (name.find("_expanded") != std::string::npos)
      continue;
    std::string testDir = dir + "/" + name, error;
    std::optional<Model> model = readModel(testDir + "/model.onnx", ReadOptions(), error);
    if (!model) {
      if (unreadable && access((testDir + "/model.onnx").c_str(), F_OK) == 0)
        unreadable->push_back(name + ": " + error);
      continue;
    }
    int64_t opset = supportedOpset(*model);
    if (opset == 0 || opset < minOpset)
      continue;
    NodeTest test{name, testDir, std::move(*model), {}, "", opset};
    test.opType = test.model.nodes.front().opType;
    for (size_t i = 0; i < test.model.inputs.size(); ++i) {
      std::optional<Tensor> tensor = readTensorFile(
          testDir + "/test_data_set_0/input_" + std::to_string(i) + ".pb", error);
      if (!tensor) {
        test.inputs.clear();
        break;
      }
      test.inputs.push_back(std::move(*tensor));
    }
    supported.push_back(std::move(test));
  }
  return supported;
}

std::string importNodeTest(const NodeTest &test) {
  CrashReportNames crashReport(test.name);
  mlir::MLIRContext context(fsdpRegistry());
  std::string error;
  mlir::OwningOpRef<mlir::ModuleOp> module = importTest(test, context, error);
  if (!module)
    return error;
  // The printed IR must parse back and verify (unsigned and bool constants,
  // zero-size tensors): it is what lit tests and .mlir users see.
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  mlir::OwningOpRef<mlir::ModuleOp> reparsed =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  if (!reparsed || mlir::failed(mlir::verify(*reparsed)))
    return "printed IR does not parse back";
  return "";
}

std::string scratchPlanPath(const std::string &directory) {
  return directory + "fsdp-node-test-" + std::to_string(getpid()) + ".plan";
}

RunResult runNodeTest(const NodeTest &test, const std::string &planPath,
                      const std::string &deviceName) {
  CrashReportNames crashReport(test.name);
  const Model &model = test.model;
  mlir::MLIRContext context(fsdpRegistry());
  std::string diagnostics, error;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagnostics += d.str() + "; ";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = importTest(test, context, error);
  if (!module)
    return {true, error};
  // Import first: a test whose data the reader cannot hold (a float8 input,
  // a sequence) is usually one the importer refuses by name.
  if (test.inputs.size() != model.inputs.size())
    return {false, "its input data could not be read"};
  fsdp::PlanEmitOptions emitOptions;
  emitOptions.planPath = planPath;
  auto noWeights = [](const std::string &) { return std::optional<fsdp::rt::TensorRef>(); };
  if (mlir::failed(fsdp::emitPlan(*module, emitOptions, noWeights)))
    return {false, "plan emission failed: " + diagnostics};
  fsdp::rt::LoadedPlan plan;
  if (fsdp::rt::Status s = fsdp::rt::loadPlan(planPath, plan); !s)
    return {false, s.message()};
  std::unique_ptr<fsdp::rt::Device> device;
  if (fsdp::rt::Status s = fsdp::rt::createDevice(deviceName, {}, device); !s)
    return {false, s.message()};
  std::unique_ptr<fsdp::rt::Executor> executor;
  if (fsdp::rt::Status s = fsdp::rt::Executor::create(plan, *device, nullptr, executor); !s)
    return {false, s.message()};
  for (size_t i = 0; i < test.inputs.size(); ++i) {
    std::optional<fsdp::rt::HostTensor> value = toHostTensor(test.inputs[i]);
    if (value)
      adoptDeclaredBf16(*value, model.inputs[i]);
    if (!value)
      return {false, "input " + std::to_string(i) + " has no runtime dtype"};
    if (fsdp::rt::Status s = executor->setInput(model.inputs[i].name, value->ref()); !s)
      return {false, s.message()};
  }
  if (fsdp::rt::Status s = executor->run(); !s)
    return {false, s.message()};
  for (size_t i = 0; i < model.outputs.size(); ++i) {
    std::optional<Tensor> expected = readTensorFile(
        test.dir + "/test_data_set_0/output_" + std::to_string(i) + ".pb", error);
    if (!expected)
      return {false, error};
    std::optional<fsdp::rt::HostTensor> want = toHostTensor(*expected);
    if (want)
      adoptDeclaredBf16(*want, model.outputs[i]);
    fsdp::rt::HostTensor got;
    if (fsdp::rt::Status s = executor->getOutput(model.outputs[i].name, got); !s)
      return {false, s.message()};
    if (!want)
      return {false, "expected output has no runtime dtype"};
    if (std::string mismatch = compareTensors(model.outputs[i].name, got, *want);
        !mismatch.empty())
      return {false, mismatch};
  }
  return {false, ""};
}

} // namespace fsdp::onnx::nodetest
