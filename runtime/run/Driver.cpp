//===- Driver.cpp - fsdp-run's driver: executes a compiled plan -----------===//
//
// fsdp-run's whole program as a library (runDriver), so that a compiled
// step binary (fsdp-opt --emit=binary, linked with libfsdp_runtime.a) is
// fsdp-run with its plan built in: the same flags, checks and messages,
// with the binary's own name in front of them and no plan argument.
//
// The deployable half of fsdp-opt: loads and verifies a plan, allocates
// exactly its memory on the device --device names (unless told, a GPU
// when the build has CUDA and the machine a GPU, else the CPU;
// runtime/device/DeviceRegistry.h) once it has checked that the plan
// fits, and loads the weights written beside it. A forward plan binds its
// inputs from .npy files, runs, and writes every graph output to
// DIR/<name>.npy (Forward.cpp); a training plan runs K optimizer steps on
// data from the data contract (Train.cpp). It links only the runtime (no
// MLIR, no ONNX). Every error is one line on stderr and exit code 1.
//
// This file is the entry: the program's name, the error exit, then the
// flags (RunFlags.cpp) and the run (Launch.cpp: in-process ranks, or one
// rank of an mpirun or torchrun job; RankRun.cpp: each rank's set-up, the
// agreement on the plan, and the abort of the group when a rank fails). A
// collective that does not finish within --collective-timeout seconds
// stops the run on every rank (the collective watchdog, Watchdog.h), which
// prints the late collective and each rank's last 64 collectives.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Driver.h"

#include "runtime/embed/EmbeddedStepLoader.h"
#include "runtime/io/FaultInjection.h"
#include "runtime/run/Launch.h"

#include <unistd.h>

#include <iostream>
#include <string>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

std::string &programNameStorage() {
  static std::string name = "fsdp-run";
  return name;
}

// Where fail() puts its message instead of stderr on this thread, while a
// FailureCapture lives.
thread_local std::string *failureSink = nullptr;

} // namespace

const std::string &programName() { return programNameStorage(); }

FailureCapture::FailureCapture(std::string &sink) : previous_(failureSink) { failureSink = &sink; }

FailureCapture::~FailureCapture() { failureSink = previous_; }

int fail(const std::string &message) {
  if (failureSink) {
    *failureSink = message;
    return 1;
  }
  // One write per line: ranks started by mpirun share stderr, and separate
  // writes of prefix and message would interleave between processes.
  std::cerr << (programName() + ": error: " + message + "\n");
  return 1;
}

void writeStderr(const std::string &text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0)
      return;
    done += static_cast<size_t>(n);
  }
}

int runDriver(int argc, char **argv, const FsdpEmbeddedStep *step) {
  RunOptions opts;
  prepareOptions(argc, argv, step, opts);
  if (Status s = checkFaultInjectionEnv(); !s) // a mistyped rule must not test nothing
    return fail(s.message());
  bool exitNow = false;
  if (int code = parseRunArgs(argc, argv, opts, exitNow); code != 0 || exitNow)
    return code;
  return runPlan(opts);
}

void prepareOptions(int argc, char **argv, const FsdpEmbeddedStep *step, RunOptions &opts) {
  if (!step)
    return;
  // A compiled step speaks under its own name, and is its own plan: the
  // executable's path names the plan in messages, and its directory is
  // where a weights file beside it is looked for.
  std::string invoked = argc > 0 && argv[0] ? argv[0] : "step";
  size_t slash = invoked.find_last_of('/');
  programNameStorage() = slash == std::string::npos ? invoked : invoked.substr(slash + 1);
  opts.embedded = step;
  opts.planPath = executablePath(invoked);
  setEmbeddedStep(step);
}

} // namespace fsdp::run
