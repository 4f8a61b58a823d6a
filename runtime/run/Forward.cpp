//===- Forward.cpp - fsdp-run on a forward plan ---------------------------===//
//
// The inputs are checked by name before any is read, so a missing --input
// is one message rather than a failed run; the output names come from the
// plan, which is not trusted, so each must be a plain file name.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Forward.h"

#include "runtime/exec/StepProfile.h"
#include "runtime/io/Npy.h"
#include "runtime/run/ProfileReport.h"

#include <sys/stat.h>

#include <chrono>
#include <iostream>

namespace fsdp::run {

using namespace fsdp::rt;

/// A forward plan: inputs are the exact tensors (the same on every rank);
/// --steps repeats the run.
Status runForward(const RunOptions &opts, Executor &executor) {
  for (const std::string &name : executor.inputNames())
    if (!opts.inputs.count(name))
      return Status::error("missing --input=" + name +
                           "=FILE.npy (the plan's inputs are bound by name)");
  for (const auto &[name, path] : opts.inputs) {
    HostTensor value;
    if (Status s = readNpy(path, value); !s)
      return s;
    if (Status s = executor.setInput(name, value.ref()); !s)
      return Status::error(path + ": " + s.message());
  }
  StepProfile profile;
  auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < opts.steps; ++step)
    if (Status s = executor.run(opts.profile ? &profile : nullptr); !s)
      return s;
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // --profile: collective (every rank), rank 0 prints.
  if (opts.profile)
    if (Status s = reportProfile(executor, profile, opts.device); !s)
      return s;
  if (executor.rank() != 0)
    return Status::ok();
  if (opts.timing)
    std::cout << "time per run: " << seconds / opts.steps * 1e3 << " ms (" << opts.steps
              << " runs, " << executor.allocatedBytes() << " bytes planned)\n";
  if (!opts.outputsDir.empty())
    return writeOutputs(opts.outputsDir, executor);
  return Status::ok();
}

Status writeOutputs(const std::string &dir, const Executor &executor) {
  mkdir(dir.c_str(), 0755);
  for (const std::string &name : executor.outputNames()) {
    // The names come from the plan, which is not trusted: one with a '/'
    // ("../x", "/etc/x") would put its file outside DIR.
    if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
      return Status::error("--outputs=" + dir + ": output name '" + name +
                           "' is not a plain file name; refusing to write outside the directory");
    HostTensor value;
    if (Status s = executor.getOutput(name, value); !s)
      return s;
    if (Status s = writeNpy(dir + "/" + name + ".npy", value.ref()); !s)
      return s;
  }
  return Status::ok();
}

} // namespace fsdp::run
