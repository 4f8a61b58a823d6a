//===- fsdp-run.cpp - executes a compiled plan ----------------------------===//
//
// The deployable half of fsdp-opt: loads and verifies a plan, allocates
// exactly its memory on the CPU device, loads the weights written beside
// it, binds inputs from .npy files, runs, and writes every graph output to
// DIR/<name>.npy. It links only the runtime (no MLIR, no ONNX). Training
// flags of DESIGN.md's command line are parsed and refused with "not
// implemented yet" until their issues land. Every error is one line on
// stderr and exit code 1.
//
//===----------------------------------------------------------------------===//

#include "fsdp/runtime/Device.h"
#include "fsdp/runtime/Executor.h"
#include "fsdp/runtime/Npy.h"
#include "fsdp/runtime/PlanDump.h"
#include "fsdp/runtime/PlanFile.h"
#include "runtime/src/PlanCheck.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace fsdp::rt;

namespace {

struct RunOptions {
  std::string planPath, outputsDir, weightsPath;
  std::map<std::string, std::string> inputs; // name -> .npy path
  int64_t steps = 1;
  bool dump = false, timing = false, profile = false;
};

int fail(const std::string &message) {
  std::cerr << "fsdp-run: error: " << message << "\n";
  return 1;
}

const char *kUsage =
    "usage: fsdp-run PLAN [--input=NAME=FILE.npy ...] [--outputs=DIR] [--weights=FILE]\n"
    "                [--steps=K] [--time] [--profile] [--dump]\n"
    "  --input=NAME=FILE.npy  value of graph input NAME (dtype and shape must match)\n"
    "  --outputs=DIR          write each graph output to DIR/<name>.npy\n"
    "  --weights=FILE         parameters from this safetensors file instead of the\n"
    "                         plan's own\n"
    "  --steps=K              run the plan K times (forward plans: for timing)\n"
    "  --time                 print the mean time per run\n"
    "  --profile              print the time spent in each kernel\n"
    "  --dump                 print the plan as text and exit\n";

/// Flags of DESIGN.md's fsdp-run line whose features arrive later.
const std::map<std::string, std::string> kPendingFlags = {
    {"--world-size", "multi-rank runs arrive with the FSDP issue"},
    {"--data", "token files arrive with the training-step issue"},
    {"--metrics", "metrics arrive with the training-step issue"},
    {"--save-weights", "weight export arrives with the training-step issue"},
    {"--lr-schedule", "schedules arrive with the training-step issue"},
    {"--save", "checkpoints arrive with the checkpoint issue"},
    {"--save-every", "checkpoints arrive with the checkpoint issue"},
    {"--resume", "checkpoints arrive with the checkpoint issue"},
};

bool parseInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0')
    return false;
  value = v;
  return true;
}

/// Returns 0 to continue, or an exit code.
int parseArgs(int argc, char **argv, RunOptions &opts, bool &exitNow) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string flag = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      exitNow = true;
      return 0;
    }
    if (kPendingFlags.count(flag))
      return fail(flag + ": not implemented yet (" + kPendingFlags.at(flag) + ")");
    if (flag == "--input") {
      size_t split = value.find('=');
      if (split == std::string::npos || split == 0 || split + 1 == value.size())
        return fail("--input needs NAME=FILE.npy, got '" + value + "'");
      if (!opts.inputs.emplace(value.substr(0, split), value.substr(split + 1)).second)
        return fail("--input " + value.substr(0, split) + " given twice");
    } else if (flag == "--outputs" && !value.empty()) {
      opts.outputsDir = value;
    } else if (flag == "--weights" && !value.empty()) {
      opts.weightsPath = value;
    } else if (flag == "--steps") {
      if (!parseInt(value, opts.steps) || opts.steps < 1)
        return fail("--steps: invalid value '" + value + "'; must be an integer >= 1");
    } else if (arg == "--dump") {
      opts.dump = true;
    } else if (arg == "--time") {
      opts.timing = true;
    } else if (arg == "--profile") {
      opts.profile = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see --help)");
    } else if (opts.planPath.empty()) {
      opts.planPath = arg;
    } else {
      return fail("more than one plan given ('" + opts.planPath + "' and '" + arg + "')");
    }
  }
  if (opts.planPath.empty())
    return fail("no plan given (usage: fsdp-run PLAN ...; see --help)");
  return 0;
}

/// Per-kernel time, largest first, as milliseconds per run and a share.
void printProfile(const std::vector<double> &kernelSeconds, int64_t runs) {
  std::vector<std::pair<double, uint16_t>> rows;
  double total = 0;
  for (size_t k = 0; k < kernelSeconds.size(); ++k)
    if (kernelSeconds[k] > 0) {
      rows.emplace_back(kernelSeconds[k], static_cast<uint16_t>(k));
      total += kernelSeconds[k];
    }
  std::sort(rows.rbegin(), rows.rend());
  std::printf("%-22s %10s %7s\n", "kernel", "ms/run", "share");
  for (const auto &[secs, kernel] : rows)
    std::printf("%-22s %10.3f %6.1f%%\n", kernelName(kernel), secs * 1e3 / runs, 100 * secs / total);
}

int run(const RunOptions &opts) {
  LoadedPlan plan;
  if (Status s = loadPlan(opts.planPath, plan); !s)
    return fail(s.message());
  if (opts.dump) {
    std::cout << dumpPlan(plan);
    return 0;
  }
  std::unique_ptr<Device> device = createCpuDevice();
  std::unique_ptr<Executor> executor;
  if (Status s = Executor::create(plan, *device, executor); !s)
    return fail(s.message());
  if (Status s = executor->loadWeights(opts.weightsPath); !s)
    return fail(s.message());
  for (const std::string &name : executor->inputNames())
    if (!opts.inputs.count(name))
      return fail("missing --input=" + name + "=FILE.npy (the plan's inputs are bound by name)");
  for (const auto &[name, path] : opts.inputs) {
    HostTensor value;
    if (Status s = readNpy(path, value); !s)
      return fail(s.message());
    if (Status s = executor->setInput(name, value.ref()); !s)
      return fail(path + ": " + s.message());
  }
  std::vector<double> kernelSeconds;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < opts.steps; ++step)
    if (Status s = executor->run(opts.profile ? &kernelSeconds : nullptr); !s)
      return fail(s.message());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (opts.profile)
    printProfile(kernelSeconds, opts.steps);
  if (opts.timing)
    std::cout << "time per run: " << seconds / opts.steps * 1e3 << " ms (" << opts.steps
              << " runs, " << executor->allocatedBytes() << " bytes planned)\n";
  if (!opts.outputsDir.empty()) {
    mkdir(opts.outputsDir.c_str(), 0755);
    for (const std::string &name : executor->outputNames()) {
      HostTensor value;
      if (Status s = executor->getOutput(name, value); !s)
        return fail(s.message());
      if (Status s = writeNpy(opts.outputsDir + "/" + name + ".npy", value.ref()); !s)
        return fail(s.message());
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  RunOptions opts;
  bool exitNow = false;
  if (int code = parseArgs(argc, argv, opts, exitNow); code != 0 || exitNow)
    return code;
  return run(opts);
}
