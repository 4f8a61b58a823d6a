//===- RunFlagsFuzzer.cpp - libFuzzer target: fsdp-run's command line ------===//
//
// fsdp-run's argv goes through parseRunArgs (RunFlags.h), the parser the
// tool and every compiled step binary use: numbers, paths, NAME=FILE
// pairs, learning-rate schedules and the checks between flags. The input
// is the argv, one argument per line (or NUL-separated), parsed both as
// fsdp-run's and as a compiled step's (which takes no plan argument).
// Nothing is run: the target stops where the driver would load the plan.
//
//===----------------------------------------------------------------------===//

#include "tests/fuzz/FuzzSupport.h"
#include "runtime/run/RunFlags.h"

#include <cstdio>
#include <unistd.h>

using namespace fsdp;

namespace {

void parse(std::vector<std::string> args, bool embedded) {
  args.insert(args.begin(), "fsdp-run");
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  run::RunOptions opts;
  // A non-null step marks a compiled step's parse; parseRunArgs reads
  // nothing of it but its presence.
  static const FsdpEmbeddedStep step{};
  if (embedded)
    opts.embedded = &step;
  bool exitNow = false;
  (void)run::parseRunArgs(static_cast<int>(args.size()), argv.data(), opts, exitNow);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // --help prints the usage on stdout; errors go to stderr. Neither is
  // the fuzzer's output.
  std::freopen("/dev/null", "w", stdout);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string> args = fuzz::splitArguments(data, size);
  if (args.size() > 64)
    return 0;
  parse(args, /*embedded=*/false);
  parse(args, /*embedded=*/true);
  return 0;
}
