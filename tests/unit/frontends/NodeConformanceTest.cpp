//===- NodeConformanceTest.cpp - ONNX node tests through the importer -----===//
//
// Runs every libonnx-testdata node test (not the `_expanded` variants) whose
// graph is a single operator from the supported table through the reader and
// importer, and counts how many import, verify and round-trip as text. Node tests pass shape
// operands (Reshape's shape, Slice's bounds ...) as graph inputs, so the
// test data's input_N.pb values are offered as bound inputs; the importer
// only uses them where it needs a compile-time constant. Exclusions are
// listed with their reason, and each excluded test must still fail, so the
// list cannot hide a test that would pass. Numerical checks against
// output_N.pb arrive with the runtime.
//
//===----------------------------------------------------------------------===//

#include "compiler/RegisterDialects.h"
#include "frontends/onnx/Importer.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <dirent.h>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace fsdp::onnx;

const char *kNodeTestDir = "/usr/share/libonnx-testdata/data/node";

/// Tests that cannot import, with the reason. Each must fail to import.
const std::map<std::string, std::string> kExclusions = {
    {"test_cast_FLOAT_to_STRING", "string tensors are not a training dtype"},
    {"test_cast_STRING_to_FLOAT", "string tensors are not a training dtype"},
    {"test_identity_opt", "optional-typed values are not tensors"},
    {"test_identity_sequence", "sequence-typed values are not tensors"},
};

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

bool isSupported(const Model &model) {
  if (model.nodes.empty())
    return false;
  std::set<std::string> types;
  for (const Node &node : model.nodes)
    types.insert(node.domain + "/" + node.opType);
  if (types.size() != 1)
    return false;
  const Node &node = model.nodes.front();
  auto opset = model.opsets.find(node.domain);
  for (const SupportedOp &op : supportedOps())
    if (node.domain == op.domain && node.opType == op.opType && opset != model.opsets.end() &&
        opset->second >= op.minOpset && opset->second <= op.maxOpset)
      return true;
  return false;
}

/// Reads and imports one node test; returns "" on success, else the error.
std::string importNodeTest(const std::string &dir) {
  std::string error;
  std::optional<Model> model = readModel(dir + "/model.onnx", ReadOptions(), error);
  if (!model)
    return error;
  ImportOptions options;
  for (size_t i = 0; i < model->inputs.size(); ++i) {
    std::string path = dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    std::string tensorError;
    if (std::optional<Tensor> tensor = readTensorFile(path, tensorError))
      options.inputValues[model->inputs[i].name] = *tensor;
  }
  mlir::DialectRegistry registry;
  fsdp::registerFsdpDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module = importModel(context, *model, options, error);
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

TEST(NodeConformance, SupportedSingleOpTestsImport) {
  std::vector<std::string> tests = listDir(kNodeTestDir);
  ASSERT_GT(tests.size(), 900u) << "libonnx-testdata is missing (scripts/setup.sh installs it)";
  int candidates = 0, passed = 0, excluded = 0;
  std::vector<std::string> failures;
  for (const std::string &name : tests) {
    if (name.find("_expanded") != std::string::npos)
      continue;
    std::string dir = std::string(kNodeTestDir) + "/" + name;
    std::string error;
    std::optional<Model> model = readModel(dir + "/model.onnx", ReadOptions(), error);
    if (!model || !isSupported(*model))
      continue;
    ++candidates;
    std::string result = importNodeTest(dir);
    if (kExclusions.count(name)) {
      ++excluded;
      EXPECT_NE(result, "") << name << " is excluded but imports: remove the exclusion";
      continue;
    }
    if (result.empty())
      ++passed;
    else
      failures.push_back(name + ": " + result);
  }
  for (const std::string &failure : failures)
    ADD_FAILURE() << failure;
  int counted = candidates - excluded;
  std::printf("node tests: %d with supported single ops, %d excluded, %d/%d import "
              "(%.1f%%)\n",
              candidates, excluded, passed, counted, 100.0 * passed / std::max(counted, 1));
  // The floor is 90%; any failure above is still reported as a bug.
  EXPECT_GE(passed * 10, counted * 9);
  EXPECT_GT(candidates, 250);
}

} // namespace
