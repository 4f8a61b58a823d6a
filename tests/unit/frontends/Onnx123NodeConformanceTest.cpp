//===- Onnx123NodeConformanceTest.cpp - onnx 1.23 node tests, opset >= 18 -===//
//
// Runs the node tests of onnx 1.23 (generated at ctest time from the PyPI
// wheel's own case definitions by tests/onnx-node/generate_node_tests.py)
// whose graph is one operator from the importer's supported table at opset
// 18 or later, through the same runner as the onnx 1.12 suite. Every such
// test must either match numerically or be refused at import with an error
// naming the node; refusals are listed below by test with their reason, and
// a listed test that stops being refused fails, so the list cannot hide a
// test that would pass. A test that imports and then computes a wrong answer
// is a failure. At least 95% must match; a table by operator is printed.
// The suite measures whatever the supported table holds, so it grows with
// the importer.
//
//===----------------------------------------------------------------------===//

#include "NodeTestRunner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace fsdp::onnx::nodetest;

const char *kNodeTestDir = FSDP_ONNX123_NODE_TEST_DIR;

/// Tests refused at import, with the reason. Each must still be refused.
const std::map<std::string, std::string> kRefusals = {
};

/// One row of the table by operator.
struct OpRow {
  int tests = 0, passed = 0, refused = 0;
  std::set<std::string> reasons;
};

TEST(Onnx123NodeConformance, SupportedOpsAtOpset18MatchOrAreRefusedByName) {
  std::ifstream stamp(std::string(kNodeTestDir) + "/STAMP");
  std::string stampLine;
  ASSERT_TRUE(std::getline(stamp, stampLine))
      << kNodeTestDir << " has no STAMP: the generation fixture (onnx123-node-tests-generate) "
      << "did not run";
  std::printf("%s\n", stampLine.c_str());

  std::string planPath = ::testing::TempDir() + "fsdp-node-test-123.plan";
  std::map<std::string, OpRow> table;
  std::set<std::string> seen;
  int total = 0, passed = 0, refused = 0;
  std::vector<std::string> failures;
  for (const NodeTest &test : loadSupportedNodeTests(kNodeTestDir, 18)) {
    ++total;
    seen.insert(test.name);
    OpRow &row = table[test.opType];
    ++row.tests;
    RunResult result = runNodeTest(test, planPath);
    auto listed = kRefusals.find(test.name);
    if (listed != kRefusals.end()) {
      if (!result.refusedAtImport)
        failures.push_back(test.name + " is listed as refused (" + listed->second + ") but " +
                           (result.error.empty() ? "passes: remove it from the list"
                                                 : "imports, then: " + result.error));
      else if (result.error.find("node '") == std::string::npos ||
               result.error.find(test.opType) == std::string::npos)
        failures.push_back(test.name + ": refusal does not name the node: " + result.error);
      else {
        ++refused, ++row.refused;
        row.reasons.insert(listed->second);
      }
      continue;
    }
    if (result.error.empty())
      result.error = importNodeTest(test); // the printed IR must round-trip too
    if (result.error.empty()) {
      ++passed, ++row.passed;
      continue;
    }
    failures.push_back(test.name + (result.refusedAtImport ? " is refused at import (not listed): "
                                                           : " imports, then: ") +
                       result.error);
  }
  std::remove(planPath.c_str());
  for (const auto &[name, reason] : kRefusals)
    if (!seen.count(name))
      failures.push_back(name + " is listed as refused but is not a supported-op test at "
                                "opset >= 18: remove it from the list");
  for (const std::string &failure : failures)
    ADD_FAILURE() << failure;

  std::printf("%-28s %6s %7s %8s  %s\n", "op", "tests", "passed", "refused", "reason");
  for (const auto &[op, row] : table) {
    std::string reasons;
    for (const std::string &reason : row.reasons)
      reasons += (reasons.empty() ? "" : "; ") + reason;
    std::printf("%-28s %6d %7d %8d  %s\n", op.c_str(), row.tests, row.passed, row.refused,
                reasons.c_str());
  }
  std::printf("onnx 1.23 node tests at opset >= 18 with supported single ops: %d; %d match "
              "numerically (%.1f%%), %d refused by name, %zu fail\n",
              total, passed, 100.0 * passed / std::max(total, 1), refused, failures.size());
  EXPECT_GT(total, 200) << "too few supported-op tests: is the generated data complete?";
  EXPECT_GE(passed * 100, total * 95);
}

} // namespace
