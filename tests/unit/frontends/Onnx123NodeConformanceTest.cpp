//===- Onnx123NodeConformanceTest.cpp - onnx 1.23 node tests, opset >= 18 -===//
//
// Runs the node tests of onnx 1.23 (generated at ctest time from the PyPI
// wheel's own case definitions by tests/onnx-node/generate_node_tests.py)
// whose graph is one operator from the importer's supported table at opset
// 18 or later, through the same runner as the onnx 1.12 suite. Every such
// test must either match numerically or be refused at import with an error
// naming the node; refusals are listed below by test with their reason, and
// a listed test that stops being refused fails, so the list cannot hide a
// test that would pass; a listed test whose operator is not in the table
// (yet) is not run. A test that imports and then computes a wrong answer
// is a failure; so is one listed as unreproducible that starts to match. A
// second test holds the floor: at least 95% match numerically among
// the tests whose values are tensors of dtypes the runtime computes (float8,
// float4, int2/int4, strings and sequences are refused by name instead, as
// the issue asks) and whose outputs are reproducible; every other refusal
// counts against it. Both print a table by operator.
// The suite measures whatever the supported table holds, so it grows with
// the importer.
//
//===----------------------------------------------------------------------===//

#include "NodeTestRunner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace fsdp::onnx::nodetest;

/// The generated data's directory, a parameter of the run (ctest sets it).
std::string nodeTestDir() {
  const char *dir = std::getenv("FSDP_ONNX123_NODE_TEST_DIR");
  return dir ? dir : "";
}

/// Shared reason of the casts to and from ONNX's narrow types.
const char *const kNarrowTypes =
    "float8, float4 and 2- or 4-bit integer element types have no runtime dtype";

/// Shared reasons of the other value types outside the runtime's tensors.
const char *const kStrings = "string tensors are not a training dtype";
const char *const kSequenceInput = "sequence-typed graph inputs are not tensors";
const char *const kSequenceOutput =
    "a sequence as graph output (sequences are read only by SequenceAt)";
const char *const kPadModes = "Pad modes edge, reflect and wrap are not implemented yet";

/// Shared reason of Attention's 16-bit cases that differ from the reference
/// by more than a unit in the last place.
const char *const kRoundedOnce =
    "16-bit attention rounded once from f32, the reference rounds each step";
/// Reasons that put a test outside the floor's population: its values are
/// not tensors of a dtype the runtime computes (the issue asks for narrow
/// types to be refused), so it can only be refused, which the first test
/// checks by name.
const std::set<std::string> kNotTensorDTypes = {kNarrowTypes, kStrings, kSequenceInput,
                                                kSequenceOutput};

/// Tests refused at import, with the reason. Each must still be refused.
const std::map<std::string, std::string> kRefusals = {
    {"test_edge_pad", kPadModes},
    {"test_reflect_pad", kPadModes},
    {"test_wrap_pad", kPadModes},
    {"test_equal_string", kStrings},
    {"test_equal_string_broadcast", kStrings},
    {"test_cast_FLOAT16_to_FLOAT4E2M1", kNarrowTypes},
    {"test_cast_FLOAT16_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_cast_FLOAT16_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_cast_FLOAT16_to_FLOAT8E5M2", kNarrowTypes},
    {"test_cast_FLOAT16_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_cast_FLOAT16_to_INT2", kNarrowTypes},
    {"test_cast_FLOAT16_to_INT4", kNarrowTypes},
    {"test_cast_FLOAT16_to_UINT2", kNarrowTypes},
    {"test_cast_FLOAT16_to_UINT4", kNarrowTypes},
    {"test_cast_FLOAT4E2M1_to_FLOAT", kNarrowTypes},
    {"test_cast_FLOAT4E2M1_to_FLOAT16", kNarrowTypes},
    {"test_cast_FLOAT8E4M3FNUZ_to_FLOAT", kNarrowTypes},
    {"test_cast_FLOAT8E4M3FNUZ_to_FLOAT16", kNarrowTypes},
    {"test_cast_FLOAT8E4M3FN_to_FLOAT", kNarrowTypes},
    {"test_cast_FLOAT8E4M3FN_to_FLOAT16", kNarrowTypes},
    {"test_cast_FLOAT8E5M2FNUZ_to_FLOAT", kNarrowTypes},
    {"test_cast_FLOAT8E5M2FNUZ_to_FLOAT16", kNarrowTypes},
    {"test_cast_FLOAT8E5M2_to_FLOAT", kNarrowTypes},
    {"test_cast_FLOAT8E5M2_to_FLOAT16", kNarrowTypes},
    {"test_cast_FLOAT_to_FLOAT4E2M1", kNarrowTypes},
    {"test_cast_FLOAT_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_cast_FLOAT_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_cast_FLOAT_to_FLOAT8E5M2", kNarrowTypes},
    {"test_cast_FLOAT_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_cast_FLOAT_to_INT2", kNarrowTypes},
    {"test_cast_FLOAT_to_INT4", kNarrowTypes},
    {"test_cast_FLOAT_to_UINT2", kNarrowTypes},
    {"test_cast_FLOAT_to_UINT4", kNarrowTypes},
    {"test_cast_INT2_to_FLOAT", kNarrowTypes},
    {"test_cast_INT2_to_FLOAT16", kNarrowTypes},
    {"test_cast_INT2_to_INT8", kNarrowTypes},
    {"test_cast_INT4_to_FLOAT", kNarrowTypes},
    {"test_cast_INT4_to_FLOAT16", kNarrowTypes},
    {"test_cast_INT4_to_INT8", kNarrowTypes},
    {"test_cast_UINT2_to_FLOAT", kNarrowTypes},
    {"test_cast_UINT2_to_FLOAT16", kNarrowTypes},
    {"test_cast_UINT2_to_UINT8", kNarrowTypes},
    {"test_cast_UINT4_to_FLOAT", kNarrowTypes},
    {"test_cast_UINT4_to_FLOAT16", kNarrowTypes},
    {"test_cast_UINT4_to_UINT8", kNarrowTypes},
    {"test_cast_e8m0_FLOAT16_to_FLOAT8E8M0", kNarrowTypes},
    {"test_cast_e8m0_FLOAT8E8M0_to_FLOAT", kNarrowTypes},
    {"test_cast_e8m0_FLOAT8E8M0_to_FLOAT16", kNarrowTypes},
    {"test_cast_e8m0_FLOAT_to_FLOAT8E8M0", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT_to_FLOAT8E5M2", kNarrowTypes},
    {"test_cast_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_castlike_FLOAT16_to_FLOAT4E2M1", kNarrowTypes},
    {"test_castlike_FLOAT16_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_castlike_FLOAT16_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_castlike_FLOAT16_to_FLOAT8E5M2", kNarrowTypes},
    {"test_castlike_FLOAT16_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_castlike_FLOAT16_to_INT2", kNarrowTypes},
    {"test_castlike_FLOAT16_to_INT4", kNarrowTypes},
    {"test_castlike_FLOAT16_to_UINT2", kNarrowTypes},
    {"test_castlike_FLOAT16_to_UINT4", kNarrowTypes},
    {"test_castlike_FLOAT4E2M1_to_FLOAT", kNarrowTypes},
    {"test_castlike_FLOAT4E2M1_to_FLOAT16", kNarrowTypes},
    {"test_castlike_FLOAT8E4M3FNUZ_to_FLOAT", kNarrowTypes},
    {"test_castlike_FLOAT8E4M3FNUZ_to_FLOAT16", kNarrowTypes},
    {"test_castlike_FLOAT8E4M3FN_to_FLOAT", kNarrowTypes},
    {"test_castlike_FLOAT8E4M3FN_to_FLOAT16", kNarrowTypes},
    {"test_castlike_FLOAT8E5M2FNUZ_to_FLOAT", kNarrowTypes},
    {"test_castlike_FLOAT8E5M2FNUZ_to_FLOAT16", kNarrowTypes},
    {"test_castlike_FLOAT8E5M2_to_FLOAT", kNarrowTypes},
    {"test_castlike_FLOAT8E5M2_to_FLOAT16", kNarrowTypes},
    {"test_castlike_FLOAT_to_FLOAT4E2M1", kNarrowTypes},
    {"test_castlike_FLOAT_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_castlike_FLOAT_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_castlike_FLOAT_to_FLOAT8E5M2", kNarrowTypes},
    {"test_castlike_FLOAT_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_castlike_FLOAT_to_INT2", kNarrowTypes},
    {"test_castlike_FLOAT_to_INT4", kNarrowTypes},
    {"test_castlike_FLOAT_to_UINT2", kNarrowTypes},
    {"test_castlike_FLOAT_to_UINT4", kNarrowTypes},
    {"test_castlike_INT2_to_FLOAT", kNarrowTypes},
    {"test_castlike_INT2_to_FLOAT16", kNarrowTypes},
    {"test_castlike_INT2_to_INT8", kNarrowTypes},
    {"test_castlike_INT4_to_FLOAT", kNarrowTypes},
    {"test_castlike_INT4_to_FLOAT16", kNarrowTypes},
    {"test_castlike_INT4_to_INT8", kNarrowTypes},
    {"test_castlike_UINT2_to_FLOAT", kNarrowTypes},
    {"test_castlike_UINT2_to_FLOAT16", kNarrowTypes},
    {"test_castlike_UINT2_to_UINT8", kNarrowTypes},
    {"test_castlike_UINT4_to_FLOAT", kNarrowTypes},
    {"test_castlike_UINT4_to_FLOAT16", kNarrowTypes},
    {"test_castlike_UINT4_to_UINT8", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT16_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT16_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FN", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT_to_FLOAT8E4M3FNUZ", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2", kNarrowTypes},
    {"test_castlike_no_saturate_FLOAT_to_FLOAT8E5M2FNUZ", kNarrowTypes},
    {"test_identity_sequence", kSequenceInput},
    {"test_range_bfloat16_type_positive_delta",
     "Range computes in int16, int32, int64, float and double only"},
    {"test_range_float16_type_positive_delta",
     "Range computes in int16, int32, int64, float and double only"},
    {"test_split_to_sequence_1", kSequenceOutput},
    {"test_split_to_sequence_2", kSequenceOutput},
    {"test_split_to_sequence_nokeepdims", kSequenceOutput},
};

/// Tests whose expected outputs no implementation can reproduce, with the
/// reason: they import and run, and each must still mismatch. They are
/// outside the floor's population (no implementation can pass them).
const std::map<std::string, std::string> kUnreproducible = {
    // The reference rounds q·√s, k·√s, the scores and the probabilities to
    // the 16-bit type in turn; nn.attention accumulates in f32 and rounds
    // once, landing nearer float64 SDPA (4d_causal_bf16's element 118:
    // ours 0.48047, float64 0.48116, the reference 0.48438).
    {"test_attention_4d_causal_bf16", kRoundedOnce},
    {"test_attention_4d_causal_fp16", kRoundedOnce},
    {"test_attention_4d_causal_padded_kv_bf16", kRoundedOnce},
    {"test_attention_4d_gqa_with_past_and_present_fp16", kRoundedOnce},
    {"test_training_dropout", "random mask drawn by numpy's generator"},
    {"test_training_dropout_default", "random mask drawn by numpy's generator"},
    {"test_training_dropout_default_mask", "random mask drawn by numpy's generator"},
    {"test_training_dropout_mask", "random mask drawn by numpy's generator"},
};

/// One row of the table by operator.
struct OpRow {
  int tests = 0, passed = 0, refused = 0;
  std::set<std::string> reasons;
};

/// The whole suite's outcome, computed once for both tests below.
struct SuiteOutcome {
  std::string stamp;
  std::map<std::string, OpRow> table;
  int total = 0, passed = 0, refused = 0;
  /// Tests outside the floor's population: refused for a kNotTensorDTypes
  /// reason, or unreproducible.
  int outsideFloor = 0;
  std::vector<std::string> failures;
};

/// Whether an import error names the node: its description (node '...' and
/// its op type) or, for a graph-level refusal, one of the node's values.
bool namesTheNode(const std::string &error, const NodeTest &test) {
  if (error.find("node '") != std::string::npos && error.find(test.opType) != std::string::npos)
    return true;
  const fsdp::onnx::Node &node = test.model.nodes.front();
  for (const auto *names : {&node.inputs, &node.outputs})
    for (const std::string &name : *names)
      if (!name.empty() && error.find("'" + name + "'") != std::string::npos)
        return true;
  return false;
}

/// Runs one test and files it in `outcome` against the expectation lists.
void classify(const NodeTest &test, const std::string &planPath, SuiteOutcome &outcome) {
  OpRow &row = outcome.table[test.opType];
  ++outcome.total, ++row.tests;
  RunResult result = runNodeTest(test, planPath);
  std::vector<std::string> &failures = outcome.failures;
  if (auto listed = kRefusals.find(test.name); listed != kRefusals.end()) {
    if (!result.refusedAtImport)
      failures.push_back(test.name + " is listed as refused (" + listed->second + ") but " +
                         (result.error.empty() ? "passes: remove it from the list"
                                               : "imports, then: " + result.error));
    else if (!namesTheNode(result.error, test))
      failures.push_back(test.name + ": the refusal does not name the node: " + result.error);
    else {
      ++outcome.refused, ++row.refused;
      outcome.outsideFloor += kNotTensorDTypes.count(listed->second) ? 1 : 0;
      row.reasons.insert(listed->second);
    }
    return;
  }
  if (auto listed = kUnreproducible.find(test.name); listed != kUnreproducible.end()) {
    if (result.refusedAtImport || result.error.empty())
      failures.push_back(test.name + " is listed as unreproducible (" + listed->second +
                         ") but " + (result.error.empty() ? "matches" : result.error));
    else {
      ++outcome.outsideFloor;
      row.reasons.insert("not counted: " + listed->second);
    }
    return;
  }
  if (result.error.empty())
    result.error = importNodeTest(test); // the printed IR must round-trip too
  if (result.error.empty()) {
    ++outcome.passed, ++row.passed;
    return;
  }
  failures.push_back(test.name + (result.refusedAtImport ? " is refused at import (not listed): "
                                                         : " imports, then: ") +
                     result.error);
}

const SuiteOutcome &suiteOutcome() {
  static const SuiteOutcome outcome = [] {
    SuiteOutcome outcome;
    std::ifstream stamp(nodeTestDir() + "/STAMP");
    if (!std::getline(stamp, outcome.stamp))
      return outcome;
    std::string planPath = scratchPlanPath(::testing::TempDir());
    std::set<std::string> seen;
    std::vector<std::string> unreadable;
    for (const NodeTest &test : loadSupportedNodeTests(nodeTestDir(), 18, &unreadable)) {
      seen.insert(test.name);
      classify(test, planPath, outcome);
    }
    // A model the reader refuses cannot be placed by operator, so it could
    // hide a supported-op test: each one fails the suite.
    for (const std::string &entry : unreadable)
      outcome.failures.push_back("model.onnx of " + entry);
    std::remove(planPath.c_str());
    // A listed test of an operator the table does not hold yet stays
    // listed (branches adding operators merge in any order); a name that is
    // no onnx 1.23 test at all is a mistake.
    for (const auto *list : {&kRefusals, &kUnreproducible})
      for (const auto &[name, reason] : *list)
        if (!seen.count(name) && listDir(nodeTestDir() + "/" + name).empty())
          outcome.failures.push_back(name + " is listed (" + reason +
                                     ") but is no onnx 1.23 node test at opset >= 18");
    return outcome;
  }();
  return outcome;
}

void printTable(const SuiteOutcome &outcome) {
  std::printf("%s\n%-26s %6s %7s %8s  %s\n", outcome.stamp.c_str(), "op", "tests", "passed",
              "refused", "reasons");
  for (const auto &[op, row] : outcome.table) {
    std::string reasons;
    for (const std::string &reason : row.reasons)
      reasons += (reasons.empty() ? "" : "; ") + reason;
    std::printf("%-26s %6d %7d %8d  %s\n", op.c_str(), row.tests, row.passed, row.refused,
                reasons.c_str());
  }
  std::printf("onnx 1.23 node tests at opset >= 18 with supported single ops: %d; %d match "
              "numerically (%.1f%%), %d refused at import by name, %zu fail\n",
              outcome.total, outcome.passed, 100.0 * outcome.passed / std::max(outcome.total, 1),
              outcome.refused, outcome.failures.size());
  int population = outcome.total - outcome.outsideFloor;
  std::printf("floor population (tensor dtypes the runtime computes, deterministic outputs): "
              "%d; %d match (%.1f%%)\n",
              population, outcome.passed, 100.0 * outcome.passed / std::max(population, 1));
}

TEST(Onnx123NodeConformance, EveryTestMatchesOrIsRefusedByName) {
  const SuiteOutcome &outcome = suiteOutcome();
  ASSERT_FALSE(outcome.stamp.empty())
      << "'" << nodeTestDir() << "' (FSDP_ONNX123_NODE_TEST_DIR) has no STAMP: the generation "
      << "fixture (ctest onnx123-node-tests-generate) did not run";
  printTable(outcome);
  for (const std::string &failure : outcome.failures)
    ADD_FAILURE() << failure;
  EXPECT_GT(outcome.total, 200) << "too few supported-op tests: is the generated data complete?";
}

// The floor: at least 95% of the supported-op tests whose values
// are tensors of dtypes the runtime computes, and whose outputs are
// reproducible, match numerically; every other refusal (an op mode or a
// dtype not implemented yet) counts against it. The tests outside that
// population are all refused by name, which the test above checks.
TEST(Onnx123NodeConformance, AtLeast95PercentMatch) {
  const SuiteOutcome &outcome = suiteOutcome();
  ASSERT_FALSE(outcome.stamp.empty()) << "'" << nodeTestDir() << "' has no STAMP";
  printTable(outcome);
  int population = outcome.total - outcome.outsideFloor;
  EXPECT_GT(population, 150) << "too few tests in the floor's population";
  EXPECT_GE(outcome.passed * 100, population * 95);
}

} // namespace
