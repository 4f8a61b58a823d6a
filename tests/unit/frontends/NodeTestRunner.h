//===- NodeTestRunner.h - ONNX node tests through importer and runtime ----===//
//
// The one runner behind both node conformance suites (Debian's onnx 1.12
// data and the onnx 1.23 data generated from the wheel): it reads a node
// test directory, keeps the tests whose graph is a single operator from the
// importer's supported table within its opset range, imports them (binding
// each input_N.pb as a value the importer may use where it needs a
// compile-time constant), and compiles, runs and compares them on the CPU
// runtime. Each suite keeps its own expectations (which tests are refused,
// and why) next to its assertions.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_FRONTENDS_NODETESTRUNNER_H
#define FSDP_TESTS_UNIT_FRONTENDS_NODETESTRUNNER_H

#include "frontends/onnx/OnnxModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdp::onnx::nodetest {

/// One node test, read once: its model and the tensors of test_data_set_0.
struct NodeTest {
  std::string name, dir;
  Model model;
  std::vector<Tensor> inputs; // input_N.pb, by graph input position
  /// The single operator's type and the opset its domain is imported at.
  std::string opType;
  int64_t opset = 0;
};

/// The sorted entries of a directory, without dot files.
std::vector<std::string> listDir(const std::string &path);

/// The node tests in `dir` (not `_expanded`) whose graph is one operator from
/// the supported table at an opset within its range and >= `minOpset`. A
/// test whose input data cannot be read is kept with no inputs, so it fails
/// visibly. A model.onnx the reader refuses has no known operator; where
/// `unreadable` is given, each such test is added to it with the error.
std::vector<NodeTest> loadSupportedNodeTests(const std::string &dir, int64_t minOpset = 0,
                                             std::vector<std::string> *unreadable = nullptr);

/// Imports a test and checks that the printed IR parses back and verifies;
/// "" on success, else the error.
std::string importNodeTest(const NodeTest &test);

/// A plan file in `directory` that no other process writes: the two ctests
/// of one suite, and other build trees' suites, run at the same time.
std::string scratchPlanPath(const std::string &directory);

/// Outcome of compiling and running one test.
struct RunResult {
  bool refusedAtImport = false; // `error` is the importer's refusal
  std::string error;     // "" when every output matched
};

/// Imports, compiles to a forward plan at `planPath`, runs on the device
/// `deviceName` (the registry's: "cpu", or "cuda-simt" for the CUDA
/// kernels under emulation) and compares every output with output_N.pb:
/// floats within 1e-5 relative + 1e-6 absolute, integers and bools exactly.
RunResult runNodeTest(const NodeTest &test, const std::string &planPath,
                      const std::string &deviceName = "cpu");

} // namespace fsdp::onnx::nodetest

#endif // FSDP_TESTS_UNIT_FRONTENDS_NODETESTRUNNER_H
