//===- FormatTestUtil.h - shared helpers of the file format tests ---------===//
//
// Shared by the .npy and safetensors tests: `makeTensor` builds a host
// tensor with a deterministic byte pattern, `readBytes` / `writeBytes` move
// whole files (replacing, not truncating, so thousands of rewrites stay
// fast), and the `FormatTest` fixture gives each test a fresh temporary
// directory `dir` holding the file under test at `path`, removed afterwards,
// plus a way to cross-check with Debian's python3 and numpy when present.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_FORMATTESTUTIL_H
#define FSDP_TESTS_UNIT_RUNTIME_FORMATTESTUTIL_H

#include "runtime/support/HostTensor.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fsdp::rt::formattest {

/// A tensor of `dtype` and `shape` whose bytes follow a pattern set by
/// `seed` (0/1 for bool).
inline HostTensor makeTensor(DType dtype, std::vector<int64_t> shape, int seed) {
  HostTensor t{dtype, std::move(shape), {}};
  t.data.resize(static_cast<size_t>(t.numElements()) * dtypeSize(dtype));
  for (size_t i = 0; i < t.data.size(); ++i)
    t.data[i] = static_cast<char>(dtype == DType::Bool ? (i + seed) % 2 : i * 131 + seed * 17u + 7);
  return t;
}

inline std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Replaces rather than truncates: ext4 flushes a truncated-and-rewritten
/// file on close, which made the thousands of rewrites here crawl.
inline void writeBytes(const std::string &path, const std::string &bytes) {
  std::remove(path.c_str());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// How often `what` occurs in `text` (overlapping occurrences count).
inline int countOf(const std::string &text, const std::string &what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

/// A fixture whose tests each get a fresh directory `dir` (named from
/// `prefix`, the process and the test) and a file name `path` in it.
class FormatTest : public ::testing::Test {
protected:
  FormatTest(std::string prefix, std::string fileName)
      : prefix_(std::move(prefix)), fileName_(std::move(fileName)) {}

  void SetUp() override {
    dir = ::testing::TempDir() + prefix_ + std::to_string(::getpid()) + "-" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir);
    path = dir + "/" + fileName_;
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  bool havePython() { return std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0; }
  /// Runs a python script with `args`; prints its output when it fails.
  bool runPython(const std::string &script, const std::string &args) {
    writeBytes(dir + "/check.py", script);
    std::string log = dir + "/python.log";
    int rc = std::system(("/usr/bin/python3 " + dir + "/check.py " + args + " >" + log + " 2>&1").c_str());
    if (rc != 0)
      ADD_FAILURE() << "python failed:\n" << readBytes(log);
    return rc == 0;
  }

  std::string dir, path;

private:
  std::string prefix_, fileName_;
};

} // namespace fsdp::rt::formattest

#endif // FSDP_TESTS_UNIT_RUNTIME_FORMATTESTUTIL_H
