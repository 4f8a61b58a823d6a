//===- RunFlags.cpp - fsdp-run's parser, --help and docs from one table ---===//
//
// RunFlags.def is expanded twice here: once into compile-time checks of
// each row (a name, a help text, a value exactly when the kind takes one),
// once into the table the parser, --help, --help-markdown and the
// training-only rule walk. What the table cannot say stays code: the
// positional plan, the checks between flags (--keep needs --save) and the
// notes after the flags in --help.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/RunFlags.h"

#include "runtime/backends/cpu/GemmLibrary.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/embed/EmbeddedStepLoader.h"
#include "runtime/run/Driver.h"
#include "runtime/support/ParseNumber.h"

#include <cctype>
#include <iostream>
#include <type_traits>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

std::string invalid(const RunFlag &flag, const std::string &value, const std::string &rule) {
  return std::string(flag.name) + ": invalid value '" + value + "'; " + rule;
}

// --- The kinds of RunFlags.def: parse<KIND><&RunOptions::FIELD> -----------

/// A file or directory name: required and non-empty.
template <auto Field> Status parsePath(const RunFlag &flag, const std::string &value,
                                       RunOptions &opts) {
  if (value.empty())
    return Status::error(std::string(flag.name) + " needs a file name (" + flag.name + "=FILE)");
  opts.*Field = value;
  return Status::ok();
}

/// NAME=FILE.npy, at most once per NAME.
template <auto Field> Status parseNamedFiles(const RunFlag &flag, const std::string &value,
                                             RunOptions &opts) {
  const std::string name = flag.name;
  size_t split = value.find('=');
  if (split == std::string::npos || split == 0 || split + 1 == value.size())
    return Status::error(name + " needs NAME=FILE.npy, got '" + value + "'");
  if (!(opts.*Field).emplace(value.substr(0, split), value.substr(split + 1)).second)
    return Status::error(name + " " + value.substr(0, split) + " given twice");
  return Status::ok();
}

template <auto Field> Status parseCount(const RunFlag &flag, const std::string &value,
                                        RunOptions &opts) {
  int64_t n;
  if (!parseWholeInt(value, n) || n < 1)
    return Status::error(invalid(flag, value, "must be an integer >= 1"));
  opts.*Field = n;
  return Status::ok();
}

template <auto Field> Status parseSeconds(const RunFlag &flag, const std::string &value,
                                          RunOptions &opts) {
  double seconds;
  if (!parseWholeDouble(value, seconds) || seconds <= 0)
    return Status::error(invalid(flag, value, "must be a number of seconds > 0"));
  opts.*Field = seconds;
  return Status::ok();
}

template <auto Field> Status parseRate(const RunFlag &flag, const std::string &value,
                                       RunOptions &opts) {
  double rate;
  if (!parseWholeDouble(value, rate) || rate < 0)
    return Status::error(invalid(flag, value, "must be a finite number >= 0"));
  opts.*Field = rate;
  return Status::ok();
}

template <auto Field> Status parseDevice(const RunFlag &flag, const std::string &value,
                                         RunOptions &opts) {
  if (Status s = checkDeviceName(value); !s)
    return Status::error(std::string(flag.name) + "=" + value + ": " + s.message());
  opts.*Field = value;
  return Status::ok();
}

template <auto Field> Status parseOnOff(const RunFlag &flag, const std::string &value,
                                        RunOptions &opts) {
  if (value != "on" && value != "off")
    return Status::error(invalid(flag, value, "valid: on, off"));
  opts.*Field = value == "on";
  return Status::ok();
}

template <auto Field> Status parseSaveFormat(const RunFlag &flag, const std::string &value,
                                             RunOptions &opts) {
  if (value != "sharded" && value != "full")
    return Status::error(invalid(flag, value, "valid: sharded, full"));
  opts.*Field = value == "full" ? CheckpointFormat::Full : CheckpointFormat::Sharded;
  return Status::ok();
}

/// The schedule itself goes to RunOptions::lrSchedule; FIELD keeps its
/// text (checked against the plan's base rate and length later).
template <auto Field> Status parseSchedule(const RunFlag &, const std::string &value,
                                           RunOptions &opts) {
  FSDP_RUN_RETURN_IF_FAILED(LrSchedule::parse(value, opts.lrSchedule));
  opts.*Field = value;
  return Status::ok();
}

template <auto Field> Status parseSwitch(const RunFlag &, const std::string &, RunOptions &opts) {
  opts.*Field = true;
  return Status::ok();
}

// --- Whether a training-only flag was given --------------------------------

bool holds(const std::string &value) { return !value.empty(); }
bool holds(const std::map<std::string, std::string> &value) { return !value.empty(); }
template <typename T> bool holds(const std::optional<T> &value) { return value.has_value(); }

template <auto Field> bool fieldGiven(const RunOptions &opts) { return holds(opts.*Field); }

using GivenFn = bool (*)(const RunOptions &);

/// Only training-only flags are asked: their fields must tell "not given"
/// (a plain number such as --steps' cannot, and does not compile here).
template <FlagPlans Plans, auto Field> constexpr GivenFn givenFn() {
  if constexpr (Plans == FlagPlans::Training)
    return &fieldGiven<Field>;
  else
    return nullptr;
}

enum class Kind { Path, NamedFiles, Count, Seconds, Rate, Device, OnOff, SaveFormat, Schedule, Switch };

// Each row: a flag name, some help, and a value exactly when it is no switch.
#define RUN_FLAG(NAME, VALUE, KIND, FIELD, PLANS, HELP)                                            \
  static_assert(sizeof(NAME) > 3 && NAME[0] == '-' && NAME[1] == '-',                              \
                "RunFlags.def: a flag's name starts with --");                                     \
  static_assert(sizeof(HELP) > 1, "RunFlags.def: " NAME " has no help text");                      \
  static_assert((sizeof(VALUE) == 1) == (Kind::KIND == Kind::Switch),                              \
                "RunFlags.def: " NAME ": a switch has no value, any other kind has one");
#include "runtime/run/RunFlags.def"

} // namespace

const std::vector<RunFlag> &runFlags() {
#define RUN_FLAG(NAME, VALUE, KIND, FIELD, PLANS, HELP)                                            \
  RunFlag{NAME,                                                                                    \
          VALUE,                                                                                   \
          FlagPlans::PLANS,                                                                        \
          HELP,                                                                                    \
          Kind::KIND != Kind::Switch,                                                              \
          Kind::KIND == Kind::NamedFiles,                                                          \
          &parse##KIND<&RunOptions::FIELD>,                                                        \
          givenFn<FlagPlans::PLANS, &RunOptions::FIELD>()},
  static const std::vector<RunFlag> flags = {
#include "runtime/run/RunFlags.def"
  };
  return flags;
}

namespace {

const RunFlag *findFlag(const std::string &name) {
  for (const RunFlag &flag : runFlags())
    if (name == flag.name)
      return &flag;
  return nullptr;
}

/// "--steps=K", or "--tf32".
std::string spelled(const RunFlag &flag) {
  return flag.takesValue ? std::string(flag.name) + "=" + flag.value : flag.name;
}

/// The help text's lines.
std::vector<std::string> helpLines(const RunFlag &flag) {
  std::vector<std::string> lines;
  std::string text = flag.help;
  for (size_t start = 0;;) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos)
      return lines;
    start = end + 1;
  }
}

/// What --help says after the flags, each a titled paragraph (wrapped for
/// --help, joined into one paragraph in the Markdown).
struct UsageNote {
  const char *title, *text;
};
const UsageNote kNotes[] = {
    {"Preemption",
     "SIGTERM or SIGINT during training finishes the current step, every\n"
     "rank stops after the same step, --save writes a checkpoint of it, and the run\n"
     "exits 0 with 'stopped by SIGTERM after step N of K; checkpoint DIR/step-N ...'\n"
     "(--save-weights and --outputs are not written); a second signal exits at once\n"
     "with 130, leaving only committed checkpoints. Slurm: #SBATCH --signal=TERM@60\n"
     "signals the ranks 60 s before the time limit. Under mpirun signal the ranks:\n"
     "mpirun's own SIGTERM ends the job."},
    {"Several processes",
     "mpirun -np N fsdp-run PLAN ... (srun --mpi=pmix likewise), or\n"
     "torchrun --no-python --nproc-per-node=N fsdp-run PLAN ...: torchrun's ranks meet\n"
     "over TCP at MASTER_ADDR, port MASTER_PORT + 1 under torchrun's agent (which holds\n"
     "MASTER_PORT; the first free of + 1 .. + 8), else MASTER_PORT, or\n"
     "FSDP_RENDEZVOUS_PORT; they wait for each other FSDP_RENDEZVOUS_TIMEOUT seconds\n"
     "(default 120). LOCAL_RANK selects the GPU."},
};

/// The synopsis: every flag in the table's order, wrapped at 80 columns.
std::string synopsis() {
  const std::string head = "usage: fsdp-run PLAN", indent(16, ' ');
  std::string text = head, line = head;
  for (const RunFlag &flag : runFlags()) {
    std::string item = "[" + spelled(flag) + (flag.repeatable ? " ...]" : "]");
    if (line.size() + 1 + item.size() > 80) {
      text += "\n" + indent;
      line = indent;
    } else {
      text += " ";
      line += " ";
    }
    text += item;
    line += item;
  }
  return text + "\n";
}

/// The help text of every flag: the flag in 25 columns (or, when longer,
/// followed by two spaces), then its lines.
std::string flagHelp() {
  const std::string indent(25, ' ');
  std::string text;
  for (const RunFlag &flag : runFlags()) {
    std::string left = "  " + spelled(flag);
    left += left.size() < indent.size() - 1 ? std::string(indent.size() - left.size(), ' ')
                                            : std::string("  ");
    std::vector<std::string> lines = helpLines(flag);
    text += left + lines[0] + "\n";
    for (size_t i = 1; i < lines.size(); ++i)
      text += indent + lines[i] + "\n";
  }
  return text;
}

/// `text` as Markdown's inline text in a table cell: lines joined, and
/// what Markdown would read as markup escaped (an '_' only where it can
/// start or end emphasis, so samples_per_s stays readable).
std::string markdownText(const std::string &text) {
  auto word = [&](size_t i) { return i < text.size() && std::isalnum(uint8_t(text[i])); };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      out += ' ';
      continue;
    }
    if (std::string("\\`*<|").find(c) != std::string::npos ||
        (c == '_' && !(i > 0 && word(i - 1) && word(i + 1))))
      out += '\\';
    out += c;
  }
  return out;
}

/// `text` in a code span of a table cell, where only '|' needs escaping.
std::string markdownCode(const std::string &text) {
  std::string out = "`";
  for (char c : text)
    out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out + "`";
}

} // namespace

std::string runUsage(const FsdpEmbeddedStep *step) {
  std::string text = synopsis() + flagHelp();
  for (const UsageNote &note : kNotes)
    text += std::string(note.title) + ": " + note.text + "\n";
  text += rt::cpu::gemmLibraries() + "\n"; // this machine's, so not in --help-markdown
  if (!step)
    return text;
  const std::string from = "fsdp-run PLAN";
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
    text.replace(at, from.size(), programName());
  return text + "\n" + describeEmbeddedStep(*step);
}

std::string runFlagsMarkdown(std::string &error) {
  std::string text =
      "<!-- Generated by `fsdp-run --help-markdown` from runtime/run/RunFlags.def: edit the\n"
      "     table there and regenerate; tests/lit/tools/fsdp-run-flags-doc.test compares. -->\n"
      "# fsdp-run's flags\n\n"
      "`fsdp-run PLAN [flags]` runs a plan that `fsdp-opt` compiled; a compiled step binary\n"
      "(`fsdp-opt --emit=binary`) takes the same flags and no plan. Flags for training plans\n"
      "only are refused on a forward plan. `fsdp-run --help` (or `-h`) prints them too.\n\n"
      "| Flag | Plans | What it does |\n"
      "|---|---|---|\n";
  for (const RunFlag &flag : runFlags()) {
    if (std::string(flag.name).size() < 3 || std::string(flag.help).empty()) {
      error = "flag '" + std::string(flag.name) + "' of RunFlags.def has no help text";
      return "";
    }
    text += "| " + markdownCode(spelled(flag)) + (flag.repeatable ? " (repeatable)" : "") +
            " | " + (flag.plans == FlagPlans::Training ? "training" : "any") + " | " +
            markdownText(flag.help) + " |\n";
  }
  for (const UsageNote &note : kNotes)
    text += std::string("\n## ") + note.title + "\n\n" + markdownText(note.text) + "\n";
  return text;
}

std::string trainingFlagGiven(const RunOptions &opts) {
  for (const RunFlag &flag : runFlags())
    if (flag.given && flag.given(opts))
      return flag.name;
  return "";
}

int parseRunArgs(int argc, char **argv, RunOptions &opts, bool &exitNow) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    size_t eq = arg.find('=');
    std::string name = arg.substr(0, eq), value = eq == std::string::npos ? "" : arg.substr(eq + 1);
    if (arg == "-h" || arg == "--help" || arg == "--help-markdown") {
      std::string error;
      std::string text = arg == "--help-markdown" ? runFlagsMarkdown(error) : runUsage(opts.embedded);
      if (!error.empty())
        return fail(error);
      std::cout << text;
      exitNow = true;
      return 0;
    }
    // A switch is given alone ("--tf32=on" is no flag of ours).
    if (const RunFlag *flag = findFlag(name); flag && (flag->takesValue || arg == flag->name)) {
      if (Status s = flag->parse(*flag, value, opts); !s)
        return fail(s.message());
    } else if (!arg.empty() && arg[0] == '-') {
      return fail("unknown option '" + arg + "' (see --help)");
    } else if (opts.embedded) {
      return fail("'" + arg + "': this binary runs the plan compiled into it and takes no "
                  "plan argument (see --help)");
    } else if (opts.planPath.empty()) {
      opts.planPath = arg;
    } else {
      return fail("more than one plan given ('" + opts.planPath + "' and '" + arg + "')");
    }
  }
  if (opts.planPath.empty() && !opts.embedded)
    return fail("no plan given (usage: fsdp-run PLAN ...; see --help)");
  // The default device needs a look for a GPU (cheap: no context).
  const bool deviceGiven = !opts.device.empty();
  if (!deviceGiven)
    opts.device = defaultDeviceName();
  // Flags of the CUDA device are refused elsewhere rather than ignored.
  const std::string onDevice =
      "the device is '" + opts.device + "'" +
      (deviceGiven ? "" : ", as no GPU was found; --device=cuda asks for one");
  if (opts.tf32 && opts.device != "cuda")
    return fail("--tf32: only the cuda device has TF32 math (" + onDevice + ")");
  if (opts.cudaGraphs && opts.device != "cuda")
    return fail("--cuda-graphs: only the cuda device replays steps as CUDA graphs (" + onDevice +
                ")");
  if ((opts.saveEvery || opts.keep || opts.saveFormat) && opts.saveDir.empty())
    return fail(std::string(opts.saveEvery ? "--save-every" : opts.keep ? "--keep" : "--save-format") +
                " needs --save=DIR (where checkpoints go)");
  if ((opts.evalEvery || opts.evalBatches) && opts.evalDataPath.empty() && opts.evalInputs.empty())
    return fail(std::string(opts.evalEvery ? "--eval-every" : "--eval-batches") +
                " needs evaluation data (--eval-data=FILE or --eval-input=NAME=FILE.npy)");
  if (!opts.evalDataPath.empty() && !opts.evalInputs.empty())
    return fail("--eval-input=" + opts.evalInputs.begin()->first + ": the evaluation inputs "
                "come from --eval-data=" + opts.evalDataPath + " (give one of the two)");
  if (!opts.weightsPath.empty() && !opts.resumePath.empty())
    return fail("--weights and --resume both give the parameters (a checkpoint holds them); "
                "give one");
  if (opts.maxSteps && opts.steps > *opts.maxSteps)
    return fail(cat("--steps=", opts.steps, " is past --max-steps=", *opts.maxSteps,
                    " (--steps is the step this run stops at, --max-steps the whole run's "
                    "length, which the schedule spans)"));
  return 0;
}

} // namespace fsdp::run
