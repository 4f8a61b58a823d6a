//===- fsdp-plot.cpp - a training run's metrics as a page of charts -------===//
//
// `fsdp-plot METRICS.jsonl [MORE.jsonl ...] -o RUN.html [--title=TEXT]`
// draws the --metrics files of one run (a run and its resumptions, merged
// by step: MetricsReader.h) as the self-contained page fsdp-run --plot
// writes (RunPlot.h), for runs that did not ask for one, or for a run
// still going. Bad input is a message naming the file and line, exit 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/FaultInjection.h"
#include "runtime/train/MetricsReader.h"
#include "runtime/train/RunPlot.h"

#include <cstdio>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: fsdp-plot METRICS.jsonl [MORE.jsonl ...] -o RUN.html [--title=TEXT]\n"
    "  Draws fsdp-run --metrics files as one self-contained HTML page (inline SVG,\n"
    "  no script): loss and val_loss, learning rate, gradient norm, tokens/s (or\n"
    "  samples/s), memory per rank and loss scale over steps, each where the\n"
    "  metrics hold it. Several files are one run (a run and its resumptions):\n"
    "  their lines are merged by step, a later file's line replacing an earlier\n"
    "  one's for the same step.\n"
    "  -o FILE, --output=FILE  the page to write\n"
    "  --title=TEXT            the run's name on the page (default: the file names)\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "fsdp-plot: error: %s\n", message.c_str());
  return 1;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

} // namespace

int main(int argc, char **argv) {
  if (fsdp::rt::Status s = fsdp::rt::checkFaultInjectionEnv(); !s) // not to test nothing
    return fail(s.message());
  std::vector<std::string> inputs;
  std::string output, title;
  bool titleGiven = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "-o") {
      if (i + 1 >= argc || argv[i + 1][0] == '\0')
        return fail("-o needs a file name (-o RUN.html)");
      output = argv[++i];
    } else if (arg.rfind("--output=", 0) == 0 || arg.rfind("-o=", 0) == 0) {
      output = arg.substr(arg.find('=') + 1);
      if (output.empty())
        return fail("--output needs a file name (--output=RUN.html)");
    } else if (arg.rfind("--title=", 0) == 0) {
      title = arg.substr(8);
      titleGiven = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see --help)");
    } else {
      inputs.push_back(arg);
    }
  }
  if (inputs.empty())
    return fail("no metrics file given (usage: fsdp-plot METRICS.jsonl -o RUN.html)");
  if (output.empty())
    return fail("no output given (-o RUN.html)");
  std::vector<std::vector<fsdp::rt::MetricRecord>> files(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (fsdp::rt::Status s = fsdp::rt::readMetricsFile(inputs[i], files[i]); !s)
      return fail(s.message());
  if (!titleGiven)
    for (const std::string &input : inputs)
      title += (title.empty() ? "" : " + ") + baseName(input);
  std::vector<fsdp::rt::MetricRecord> records = fsdp::rt::mergeByStep(files);
  if (fsdp::rt::Status s = fsdp::rt::writeRunPlot(output, records, title); !s)
    return fail(s.message());
  std::printf("wrote %s (steps %lld-%lld, %zu logged, from %zu file%s)\n", output.c_str(),
              static_cast<long long>(records.front().step),
              static_cast<long long>(records.back().step), records.size(), inputs.size(),
              inputs.size() == 1 ? "" : "s");
  return 0;
}
