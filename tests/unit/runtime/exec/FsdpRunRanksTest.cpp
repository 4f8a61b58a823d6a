//===- FsdpRunRanksTest.cpp - fsdp-run runs a sharded plan's ranks --------===//
//
// ExecutorShardedFixture.h's hand-built FSDP step, run by fsdp-run (found
// beside this test binary), which must run its ranks in process, report
// from rank 0 only (one summary, the losses the double-precision reference
// gives), save the gathered weights once, and report a failure of its
// ranks as one error line and exit code 1; under mpirun one process per
// rank gives the same bits, and a job with the wrong number of processes
// fails on every rank. A missing fsdp-run or mpirun fails: the build makes
// the one and setup.sh installs the other.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"

#include "tests/unit/runtime/FormatTestUtil.h"
#include "tests/unit/runtime/exec/ExecutorShardedFixture.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace fsdp::rt {
namespace {

using namespace shardedtest;


/// fsdp-run beside this test binary (both land in the build's bin/), or "".
std::string fsdpRunPath() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  std::filesystem::path tool = self.parent_path() / "fsdp-run";
  return !error && std::filesystem::exists(tool) ? tool.string() : "";
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

class FsdpRunRanksTest : public ExecutorShardedTest {
protected:
  /// Writes sample files with S = world rows (row r is rank r's input), so
  /// every step rank r reads row r: (s*B + r) mod S with B = S.
  void writeSamples() {
    std::vector<float> x, y;
    for (int r = 0; r < world_; ++r) {
      std::vector<float> xr = inputX(r), yr = inputY(r);
      x.insert(x.end(), xr.begin(), xr.end());
      y.insert(y.end(), yr.begin(), yr.end());
    }
    ASSERT_TRUE(writeNpy(dir + "/x.npy", floatTensor(x, {world_, 3}).ref()).isOk());
    ASSERT_TRUE(writeNpy(dir + "/y.npy", floatTensor(y, {world_, 2, 2}).ref()).isOk());
  }
  /// Runs fsdp-run with `args`; returns its exit code, output in out_/err_.
  int run(const std::string &args) {
    std::string command = tool_ + " " + path + " " + args + " >" + dir + "/out.txt 2>" + dir +
                          "/err.txt";
    int rc = std::system(command.c_str());
    out_ = formattest::readBytes(dir + "/out.txt");
    err_ = formattest::readBytes(dir + "/err.txt");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  void SetUp() override {
    ExecutorShardedTest::SetUp();
    tool_ = fsdpRunPath();
    // Every build makes fsdp-run beside this binary (the test target
    // depends on it): a missing one fails instead of skipping unseen.
    if (tool_.empty())
      FAIL() << "no fsdp-run beside the test binary (build the fsdp-run target)";
  }

  std::string tool_, out_, err_;
};

TEST_F(FsdpRunRanksTest, RunsThePlansRanksInProcess) {
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  Reference ref(padded_);
  std::vector<double> losses;
  for (int step = 0; step < 2; ++step) {
    ref.step(world_);
    losses.push_back(ref.loss);
  }
  std::string saved = dir + "/trained.safetensors", metrics = dir + "/m.jsonl";
  ASSERT_EQ(run("--steps=2 --world-size=3 --input=x=" + dir + "/x.npy --input=y=" + dir +
                "/y.npy --metrics=" + metrics + " --save-weights=" + saved),
            0)
      << err_;
  EXPECT_EQ(err_, "");
  // Rank 0 alone reports: one summary, one "wrote" line.
  auto count = [&](const std::string &text) {
    size_t n = 0;
    for (const std::string &line : lines(out_))
      n += line.find(text) != std::string::npos;
    return n;
  };
  EXPECT_EQ(count("done: 2 steps"), 1u) << out_;
  EXPECT_EQ(count("wrote " + saved), 1u) << out_;
  std::vector<std::string> records = lines(formattest::readBytes(metrics));
  ASSERT_EQ(records.size(), 2u);
  for (int step = 0; step < 2; ++step) {
    size_t at = records[step].find("\"loss\": ");
    ASSERT_NE(at, std::string::npos) << records[step];
    EXPECT_NEAR(std::stod(records[step].substr(at + 8)), losses[step], 1e-4) << records[step];
  }
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(saved, file).isOk());
  std::vector<float> a = floats(*file.find("a")), b = floats(*file.find("b"));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(a[i], ref.flat[i], 1e-5);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(b[i], ref.flat[3 + i], 1e-5);
  EXPECT_EQ(floats(*file.find("c")), kC);
}

TEST_F(FsdpRunRanksTest, AFailureIsOneErrorLineAndExitCodeOne) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  EXPECT_EQ(run("--input=x=" + dir + "/x.npy --input=y=" + dir + "/missing.npy"), 1);
  std::vector<std::string> errors = lines(err_);
  ASSERT_EQ(errors.size(), 1u) << err_;
  EXPECT_EQ(errors[0].rfind("fsdp-run: error: rank ", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("missing.npy"), std::string::npos) << errors[0];
  EXPECT_EQ(run("--world-size=3 --input=x=" + dir + "/x.npy --input=y=" + dir + "/y.npy"), 1);
  EXPECT_NE(err_.find("--world-size=3: " + path + " was compiled for world size 2"),
            std::string::npos)
      << err_;
}

TEST_F(FsdpRunRanksTest, MpirunGivesTheInProcessBits) {
  // setup.sh installs Open MPI: without mpirun the set-up is broken.
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    FAIL() << "no mpirun on PATH (setup.sh installs openmpi-bin)";
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  std::string inputs = " --input=x=" + dir + "/x.npy --input=y=" + dir + "/y.npy";
  ASSERT_EQ(run("--steps=2 --save-weights=" + dir + "/threads.safetensors" + inputs), 0) << err_;
  std::string plainTool = tool_;
  tool_ = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe "
          "--bind-to none " + plainTool;
  ASSERT_EQ(run("--steps=2 --save-weights=" + dir + "/mpi.safetensors" + inputs), 0) << err_;
  size_t summaries = 0; // rank 0 alone reports
  for (const std::string &line : lines(out_))
    summaries += line.rfind("done: 2 steps", 0) == 0;
  EXPECT_EQ(summaries, 1u) << out_;
  SafetensorsFile threads, mpi;
  ASSERT_TRUE(SafetensorsFile::open(dir + "/threads.safetensors", threads).isOk());
  ASSERT_TRUE(SafetensorsFile::open(dir + "/mpi.safetensors", mpi).isOk());
  for (const char *name : {"a", "b", "c"})
    EXPECT_EQ(mpi.find(name)->data, threads.find(name)->data) << name;
  // Three processes for a plan of two ranks: every rank says so.
  tool_ = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 3 --oversubscribe "
          "--bind-to none " + plainTool;
  EXPECT_NE(run(inputs), 0);
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(err_.find(cat("rank ", r, ": ", path, ": compiled for world size 2, but 3 ranks")),
              std::string::npos)
        << err_;
}

} // namespace
} // namespace fsdp::rt
