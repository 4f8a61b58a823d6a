//===- ModelReaderFuzzTest.cpp - hostile ONNX files never crash -----------===//
//
// Model files are untrusted input. Starting from the real example model,
// this feeds the reader and importer every kind of damage a file can take:
// empty, random bytes, truncation at many points, and seeded single-byte
// corruption anywhere. Each must either import or fail with a message that
// names the file; a crash, hang or assertion fails the test by killing the
// process. (lit's hostile-files tests check the exact messages.)
//
//===----------------------------------------------------------------------===//

#include "compiler/RegisterDialects.h"
#include "frontends/onnx/Importer.h"

#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <unistd.h>

namespace {

using namespace fsdp::onnx;

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class ModelReaderFuzz : public ::testing::Test {
protected:
  void SetUp() override {
    original = readFile(std::string(FSDP_SOURCE_DIR) + "/examples/gpt-tiny.onnx");
    ASSERT_GT(original.size(), 1000u);
    // Per process: suites of several checkouts may run at once.
    path = ::testing::TempDir() + "fsdp-fuzz-model-" + std::to_string(getpid()) + ".onnx";
    fsdp::registerFsdpDialects(registry);
  }
  void TearDown() override { std::remove(path.c_str()); }

  /// Writes `bytes` as a model file; returns true if it imported, and
  /// checks that a failure names the file.
  bool tryImport(const std::string &bytes) {
    std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
    std::string error;
    std::optional<Model> model = readModel(path, ReadOptions(), error);
    if (model) {
      mlir::MLIRContext context(registry);
      if (importModel(context, *model, ImportOptions(), error))
        return true;
    }
    EXPECT_EQ(error.rfind(path, 0), 0u) << "error does not name the file: " << error;
    return false;
  }

  std::string original, path;
  mlir::DialectRegistry registry;
};

TEST_F(ModelReaderFuzz, OriginalImports) { EXPECT_TRUE(tryImport(original)); }

TEST_F(ModelReaderFuzz, EmptyAndRandomBytesAreRefused) {
  EXPECT_FALSE(tryImport(""));
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char &c : bytes)
      c = static_cast<char>(rng());
    EXPECT_FALSE(tryImport(bytes));
  }
}

TEST_F(ModelReaderFuzz, TruncationsAreRefused) {
  // Every prefix is either a parse error or a model missing pieces; none
  // may import (the graph's outputs come last in the file).
  for (size_t cut = 0; cut < original.size(); cut += original.size() / 300 + 1)
    EXPECT_FALSE(tryImport(original.substr(0, cut))) << "cut at " << cut;
}

TEST_F(ModelReaderFuzz, CorruptedBytesNeverCrash) {
  std::mt19937 rng(42);
  int imported = 0;
  const int trials = 600;
  for (int trial = 0; trial < trials; ++trial) {
    std::string bytes = original;
    // Bias toward the graph structure rather than weight bytes, where a
    // flipped byte only changes a value: protobuf writes the nodes first
    // and the graph inputs/outputs last, with the initializers between.
    size_t head = std::min<size_t>(bytes.size(), 20000);
    size_t tail = std::min<size_t>(bytes.size(), 2000);
    size_t position = trial % 3 == 0   ? rng() % head
                      : trial % 3 == 1 ? bytes.size() - 1 - rng() % tail
                                       : rng() % bytes.size();
    bytes[position] = static_cast<char>(rng());
    imported += tryImport(bytes);
  }
  std::printf("corrupted models: %d of %d still import\n", imported, trials);
}

} // namespace
