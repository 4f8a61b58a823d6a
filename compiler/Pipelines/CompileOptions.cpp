//===- CompileOptions.cpp - fsdp-opt command-line options model -----------===//
//
// Every fsdp-opt flag is a row of compiler/Pipelines/CompileFlags.def. The
// rows expand here into one table of FlagSpecs (name, value syntax, help,
// stage, mode, how to parse a value into CompileOptions and render it
// back), which the parser, --help, docs/flags.md and the stage and mode
// rules of validateCompileOptions all read, so a flag's spelling, values and
// default live in exactly one place. Enumerated values come from one name
// table per enum; the "valid: a, b" part of every error message is
// formatted from the same table.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iterator>
#include <limits>
#include <tuple>
#include <vector>

using namespace fsdp;

namespace {

// The spellings of each enum, indexed by enumerator. A spelling containing
// ':' ("hybrid:G") is parametric: a value starting with the text up to and
// including ':' selects it and the rest is the parameter; the placeholder
// after ':' is what help and errors show.
constexpr const char *stageNames[] = {"import", "train",    "checkpoint",
                                      "shard",  "schedule", "memory"};
constexpr const char *modeNames[] = {"train", "forward"};
constexpr const char *emitNames[] = {"plan",    "mlir", "binary",  "report", "trace",
                                     "summary", "llvm", "llvm-ir", "object"};
constexpr const char *shardNames[] = {"full", "grad-op", "none", "hybrid:G"};
constexpr const char *wrapNames[] = {"blocks", "size:N", "regex:RE"};
constexpr const char *ckptNames[] = {"none", "blocks", "selective", "auto"};
constexpr const char *optimizerNames[] = {"adamw", "sgd"};
constexpr const char *lossNames[] = {"auto", "xent:OUTPUT[,LABELS]"};
constexpr const char *dtypeNames[] = {"f32", "bf16", "f16"};
constexpr const char *offloadNames[] = {"none", "cpu"};
constexpr const char *deviceNames[] = {"h100", "a100", "cpu"};
constexpr const char *reportFormatNames[] = {"text", "json"};
constexpr const char *fusionNames[] = {"elementwise", "none"};
constexpr const char *clipNormNames[] = {"2", "inf"};
constexpr const char *accumReduceNames[] = {"each", "last", "auto"};
constexpr const char *onOffNames[] = {"on", "off"};
static_assert(std::size(stageNames) == size_t(Stage::Memory) + 1 &&
                  std::size(modeNames) == size_t(Mode::Forward) + 1 &&
                  std::size(emitNames) == size_t(EmitKind::Object) + 1 &&
                  std::size(shardNames) == size_t(ShardKind::Hybrid) + 1 &&
                  std::size(wrapNames) == size_t(WrapKind::Regex) + 1 &&
                  std::size(ckptNames) == size_t(CkptKind::Auto) + 1 &&
                  std::size(optimizerNames) == size_t(OptimizerKind::Sgd) + 1 &&
                  std::size(lossNames) == size_t(LossKind::CrossEntropy) + 1 &&
                  std::size(dtypeNames) == size_t(DType::F16) + 1 &&
                  std::size(offloadNames) == size_t(OffloadKind::Cpu) + 1 &&
                  std::size(deviceNames) == size_t(DeviceKind::Cpu) + 1 &&
                  std::size(reportFormatNames) ==
                      size_t(ReportFormat::Json) + 1 &&
                  std::size(fusionNames) == size_t(FusionKind::None) + 1 &&
                  std::size(clipNormNames) == size_t(ClipNormType::Inf) + 1 &&
                  std::size(accumReduceNames) == size_t(AccumReduceKind::Auto) + 1 &&
                  std::size(onOffNames) == size_t(OnOff::Off) + 1,
              "every enumerator needs a spelling");

/// The index of the name `text` spells, or -1; `param` receives the text
/// after ':' of a parametric name.
template <size_t N>
int matchName(const char *const (&names)[N], const std::string &text,
              std::string &param) {
  for (size_t i = 0; i < N; ++i) {
    std::string name = names[i];
    size_t colon = name.find(':');
    bool parametric = colon != std::string::npos;
    if (parametric ? text.compare(0, colon + 1, name, 0, colon + 1) == 0
                   : text == name) {
      param = parametric ? text.substr(colon + 1) : "";
      return int(i);
    }
  }
  return -1;
}

template <size_t N>
std::string joinNames(const char *const (&names)[N], const char *separator) {
  std::string joined;
  for (const char *name : names)
    joined += (joined.empty() ? "" : separator) + std::string(name);
  return joined;
}

template <size_t N> std::string validList(const char *const (&names)[N]) {
  return "valid: " + joinNames(names, ", ");
}

// Overloads that let one enumFlag serve plain and optional (--stop-after)
// fields; an unset optional renders as "".
template <typename E> void setIndex(E &field, int index) { field = E(index); }
template <typename E> void setIndex(std::optional<E> &field, int index) {
  field = E(index);
}
template <typename E, size_t N>
std::string nameOf(const char *const (&names)[N], E value) {
  return names[size_t(value)];
}
template <typename E, size_t N>
std::string nameOf(const char *const (&names)[N],
                   const std::optional<E> &value) {
  return value ? names[size_t(*value)] : "";
}

// strtoll and strtod alone accept leading blanks, '+' and trailing junk;
// these insist the whole text is the number. Failure fills `why`, in which
// `subject` names a parameter ("G" of hybrid:G).
void parseIntAtLeast(const std::string &text, int64_t min,
                     const std::string &subject, int64_t &out,
                     std::string &why) {
  std::string prefix = subject.empty() ? "" : subject + " ";
  size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  char *end = nullptr;
  errno = 0;
  if (first < text.size() && std::isdigit((unsigned char)text[first]))
    out = std::strtoll(text.c_str(), &end, 10);
  if (!end || *end != '\0' || errno == ERANGE)
    why = prefix + "must be an integer";
  else if (out < min)
    why = prefix + "must be >= " + std::to_string(min);
}

bool parseReal(const std::string &text, double &out) {
  if (text.empty() || std::isspace((unsigned char)text[0]))
    return false;
  errno = 0;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return errno != ERANGE && *end == '\0' && std::isfinite(out);
}

/// The shortest "%g" rendering that reads back as the same double, so help
/// shows "0.001" rather than "0.0010000000000000000208".
std::string formatReal(double value) {
  char buffer[32];
  for (int precision : {6, 15, 17}) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

/// Parses `value` into `opts`. `why` arrives empty; a parser reports failure
/// by filling it, and may have written `opts` by then (the caller works on a
/// copy).
using ParseFn = std::function<void(const std::string &value,
                                   CompileOptions &opts, std::string &why)>;
/// Renders a field for "(default: ...)"; "" when unset.
using ShowFn = std::function<std::string(const CompileOptions &opts)>;
/// Stores the parameter of a parametric value; the kind is already stored.
using ParamFn = void (*)(const std::string &param, CompileOptions &opts,
                         std::string &why);

// CompileFlags.def's STAGE and SCOPE columns.
enum class FlagStage { NoStage, Train, Checkpoint, Shard, AfterShard, Schedule };
enum class FlagScope { AnyMode, TrainOnly };

struct FlagSpec {
  std::string name;
  std::string syntax; // What follows '='; empty for a switch (--nesterov).
  std::string help;
  ParseFn parse;
  ShowFn show;
  FlagStage stage = FlagStage::NoStage;
  FlagScope scope = FlagScope::AnyMode;
  std::vector<std::string> choices; // an enumerated flag's names, by enumerator
};

// CompileFlags.def's VALUE column: what a flag's value looks like. Each
// `bind` below turns one, with the field it fills, into parse and show.
template <size_t N> struct EnumValue {
  const char *const (&names)[N];
  ParamFn parseParam;
};
template <size_t N>
EnumValue<N> Enum(const char *const (&names)[N], ParamFn parseParam = nullptr) {
  return {names, parseParam};
}
struct IntValue {
  const char *metavar;
  int64_t min;
};
IntValue Int(const char *metavar, int64_t min) { return {metavar, min}; }
/// A real in [min, max), or (min, max) with kAbove; max may be kInf.
enum RealBound { kAbove, kAtLeast };
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr bool kHideDefault = true; // help says the default in words
struct RealValue {
  double min;
  RealBound bound;
  double max;
  bool hideDefault;
};
RealValue Real(double min, RealBound bound, double max, bool hideDefault = false) {
  return {min, bound, max, hideDefault};
}
struct RegexValue {};   // a POSIX extended regex over parameter names
struct SwitchValue {};  // no value: --nesterov
struct FileValue {};    // a non-empty path; the help says the default
struct ByteSizeValue {}; // parseByteSize, > 0; unset: no limit
RegexValue Regex() { return {}; }
SwitchValue Switch() { return {}; }
FileValue File() { return {}; }
ByteSizeValue ByteSize() { return {}; }

template <typename Field, size_t N>
void bind(FlagSpec &spec, EnumValue<N> value, Field CompileOptions::*field) {
  const char *const(&names)[N] = value.names;
  ParamFn parseParam = value.parseParam;
  spec.syntax = joinNames(names, "|");
  spec.choices.assign(std::begin(names), std::end(names));
  spec.parse = [&names, field, parseParam](const std::string &text, CompileOptions &opts,
                                           std::string &why) {
    std::string param;
    int index = matchName(names, text, param);
    if (index < 0)
      why = validList(names);
    else
      setIndex(opts.*field, index);
    if (index >= 0 && parseParam)
      parseParam(param, opts, why);
  };
  spec.show = [&names, field](const CompileOptions &opts) { return nameOf(names, opts.*field); };
}

void bind(FlagSpec &spec, IntValue value, int64_t CompileOptions::*field) {
  spec.syntax = value.metavar;
  spec.parse = [field, min = value.min](const std::string &text, CompileOptions &opts,
                                        std::string &why) {
    parseIntAtLeast(text, min, "", opts.*field, why);
  };
  spec.show = [field](const CompileOptions &opts) { return std::to_string(opts.*field); };
}

void bind(FlagSpec &spec, RealValue value, double CompileOptions::*field) {
  bool minExclusive = value.bound == kAbove;
  double min = value.min, max = value.max;
  std::string rule =
      std::isinf(max)
          ? (minExclusive ? "must be > " : "must be >= ") + formatReal(min)
          : "must be in [" + formatReal(min) + ", " + formatReal(max) + ")";
  spec.syntax = "X";
  spec.parse = [=](const std::string &text, CompileOptions &opts, std::string &why) {
    double &out = opts.*field;
    if (!parseReal(text, out))
      why = "must be a finite number";
    else if (out < min || (minExclusive && out == min) || out >= max)
      why = rule;
  };
  spec.show = [field, hide = value.hideDefault](const CompileOptions &opts) {
    return hide ? std::string() : formatReal(opts.*field);
  };
}

void bind(FlagSpec &spec, RegexValue, std::string CompileOptions::*field) {
  spec.syntax = "RE";
  spec.parse = [field](const std::string &text, CompileOptions &opts, std::string &why) {
    if (isValidRegex(text, why))
      opts.*field = text;
    else
      why = "RE is not a valid regex: " + why;
  };
  spec.show = [field](const CompileOptions &opts) { return opts.*field; };
}

void bind(FlagSpec &spec, SwitchValue, bool CompileOptions::*field) {
  spec.parse = [field](const std::string &, CompileOptions &opts, std::string &) {
    opts.*field = true;
  };
  spec.show = [](const CompileOptions &) { return std::string(); };
}

void bind(FlagSpec &spec, FileValue, std::string CompileOptions::*field) {
  spec.syntax = "FILE";
  spec.parse = [field](const std::string &text, CompileOptions &opts, std::string &why) {
    if (text.empty())
      why = "FILE must not be empty";
    opts.*field = text;
  };
  spec.show = [](const CompileOptions &) { return std::string(); };
}

void bind(FlagSpec &spec, ByteSizeValue, std::optional<int64_t> CompileOptions::*field) {
  spec.syntax = "SIZE";
  spec.parse = [field](const std::string &text, CompileOptions &opts, std::string &why) {
    int64_t bytes = 0;
    if (parseByteSize(text, bytes, why) && bytes == 0)
      why = "must be > 0";
    opts.*field = bytes;
  };
  spec.show = [field](const CompileOptions &opts) {
    return opts.*field ? std::to_string(*(opts.*field)) : "";
  };
}

void parseShardParam(const std::string &param, CompileOptions &opts,
                     std::string &why) {
  opts.hybridGroupSize = 0;
  if (opts.shard == ShardKind::Hybrid)
    parseIntAtLeast(param, 1, "G", opts.hybridGroupSize, why);
}

void parseWrapParam(const std::string &param, CompileOptions &opts,
                    std::string &why) {
  opts.wrapMinParams = 0;
  opts.wrapRegex = opts.wrap == WrapKind::Regex ? param : "";
  if (opts.wrap == WrapKind::Size)
    parseIntAtLeast(param, 1, "N", opts.wrapMinParams, why);
  else if (opts.wrap == WrapKind::Regex && !isValidRegex(param, why))
    why = "RE is not a valid regex: " + why;
}

void parseLossParam(const std::string &param, CompileOptions &opts,
                    std::string &why) {
  size_t comma = param.find(',');
  opts.lossOutput = param.substr(0, comma);
  opts.lossLabels = comma == std::string::npos ? "" : param.substr(comma + 1);
  if (opts.loss == LossKind::CrossEntropy &&
      (opts.lossOutput.empty() ||
       (comma != std::string::npos && opts.lossLabels.empty())))
    why = "OUTPUT and LABELS must not be empty";
}

/// A FlagSpec from one row of CompileFlags.def.
template <typename Value, typename Field>
FlagSpec makeFlag(const char *name, Value value, Field CompileOptions::*field, FlagStage stage,
                  FlagScope scope, const char *help) {
  FlagSpec spec;
  spec.name = name;
  spec.help = help;
  spec.stage = stage;
  spec.scope = scope;
  bind(spec, value, field);
  return spec;
}

const std::vector<FlagSpec> &flagTable() {
  static const std::vector<FlagSpec> table = {
#define FSDP_FLAG(NAME, FIELD, TYPE, DEFAULT, VALUE, STAGE, SCOPE, PIPELINE, HELP)            \
  makeFlag(NAME, VALUE, &CompileOptions::FIELD, FlagStage::STAGE, FlagScope::SCOPE, HELP),
#include "compiler/Pipelines/CompileFlags.def"
  };
  return table;
}

/// The names of the flags `stage` acts in, in --help order.
std::vector<std::string> flagsOfStage(FlagStage stage) {
  std::vector<std::string> names;
  for (const FlagSpec &spec : flagTable())
    if (spec.stage == stage)
      names.push_back(spec.name);
  return names;
}

/// Parses `value` as `spec`'s value into `opts`; on failure `error` says
/// why ("invalid value 'x'; valid: ...") and `opts` is unchanged.
bool parseValueWith(const FlagSpec &spec, const std::string &value, CompileOptions &opts,
                    std::string &error) {
  // Parsers may write before they fail; a copy keeps `opts` unchanged then.
  std::string why;
  CompileOptions parsed = opts;
  spec.parse(value, parsed, why);
  if (!why.empty()) {
    error = "invalid value '" + value + "'; " + why;
    return false;
  }
  opts = std::move(parsed);
  return true;
}

/// "hybrid:" of the parametric spelling "hybrid:G".
std::string parametricPrefix(const std::string &name) {
  return name.substr(0, name.find(':') + 1);
}

} // namespace

const char *fsdp::stageName(Stage stage) { return stageNames[size_t(stage)]; }

std::optional<Stage> fsdp::parseStage(const std::string &name) {
  std::string param;
  int index = matchName(stageNames, name, param);
  return index < 0 ? std::nullopt : std::optional<Stage>(Stage(index));
}

FlagParse fsdp::parseCompileFlag(const std::string &arg, CompileOptions &opts,
                                 std::string &error) {
  // LLVM's cl accepts one dash or two; so do we, to read like the MLIR
  // options fsdp-opt also takes.
  size_t dashes =
      arg.compare(0, 2, "--") == 0 ? 2 : arg.compare(0, 1, "-") == 0;
  size_t equals = arg.find('=');
  std::string name = arg.substr(dashes, equals - dashes);
  const FlagSpec *spec = nullptr;
  for (const FlagSpec &candidate : flagTable())
    if (dashes && candidate.name == name)
      spec = &candidate;
  if (!spec)
    return FlagParse::NotOurs;

  bool isSwitch = spec->syntax.empty();
  bool hasValue = equals != std::string::npos;
  if (isSwitch == hasValue) {
    error = "--" + name +
            (isSwitch ? ": takes no value"
                      : ": missing value; use --" + name + "=" + spec->syntax);
    return FlagParse::Error;
  }
  std::string value = hasValue ? arg.substr(equals + 1) : "";
  if (!parseValueWith(*spec, value, opts, error)) {
    error = "--" + name + ": " + error;
    return FlagParse::Error;
  }
  opts.explicitlySet.insert(name);
  return FlagParse::Ok;
}

bool fsdp::parseFlagValue(const std::string &name, const std::string &value,
                          CompileOptions &opts, std::string &error) {
  for (const FlagSpec &spec : flagTable())
    if (spec.name == name)
      return parseValueWith(spec, value, opts, error);
  error = "no flag --" + name;
  return false;
}

std::string fsdp::shardValueText(ShardKind kind, int64_t hybridGroupSize) {
  return kind == ShardKind::Hybrid
             ? parametricPrefix(shardNames[size_t(kind)]) + std::to_string(hybridGroupSize)
             : shardNames[size_t(kind)];
}

std::string fsdp::ckptValueText(CkptKind kind) { return ckptNames[size_t(kind)]; }

std::string fsdp::dtypeText(DType dtype) { return dtypeNames[size_t(dtype)]; }

bool fsdp::emitsCompiledStep(EmitKind emit) {
  return emit == EmitKind::Binary || emit == EmitKind::Object || emit == EmitKind::Llvm ||
         emit == EmitKind::LlvmIr;
}

std::string fsdp::wrapValueText(WrapKind kind, int64_t minParams, const std::string &regex) {
  switch (kind) {
  case WrapKind::Blocks:
    return wrapNames[size_t(kind)];
  case WrapKind::Size:
    return parametricPrefix(wrapNames[size_t(kind)]) + std::to_string(minParams);
  case WrapKind::Regex:
    return parametricPrefix(wrapNames[size_t(kind)]) + regex;
  }
  return "";
}

std::string fsdp::checkHybridGroup(int64_t group, int64_t world) {
  // G == world size is allowed: one group, the same as --shard=full.
  std::string worldFlag = "--world-size=" + std::to_string(world);
  std::string why = group < 1       ? "G must be >= 1"
                    : group > world ? "group size exceeds " + worldFlag
                    : world % group ? "group size does not divide " + worldFlag
                                    : "";
  return why.empty() ? why : "--shard=hybrid:" + std::to_string(group) + ": " + why;
}

bool fsdp::validateCompileOptions(const CompileOptions &opts,
                                  std::string &error) {
  auto given = [&](const std::string &flag) {
    return opts.explicitlySet.count(flag) != 0;
  };
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  // A forward plan has no backward pass, optimizer or second rank. Checked
  // first: there the flag itself is the mistake, not its partner flag.
  if (opts.mode == Mode::Forward) {
    if (opts.worldSize > 1)
      return fail("--world-size=" + std::to_string(opts.worldSize) +
                  " requires --mode=train: forward plans run on one rank");
    for (const FlagSpec &spec : flagTable())
      if (spec.scope == FlagScope::TrainOnly && given(spec.name))
        return fail("--" + spec.name + " requires --mode=train");
  }
  // Flags that mean nothing unless another flag has a given value.
  bool sgd = opts.optimizer == OptimizerKind::Sgd;
  // A compiled step embeds the plan --emit=plan writes: the plan's flags
  // apply to it alike.
  bool plan = opts.emit == EmitKind::Plan || emitsCompiledStep(opts.emit);
  const std::tuple<const char *, bool, const char *> partners[] = {
      {"stop-after", opts.emit == EmitKind::Mlir, "--emit=mlir"},
      {"report-format", opts.emit == EmitKind::Report, "--emit=report"},
      {"mem-budget", plan || opts.emit == EmitKind::Report,
       "--emit=plan or --emit=report (or a compiled step: binary, object, llvm, llvm-ir)"},
      {"fusion", plan || opts.emit == EmitKind::Report || opts.emit == EmitKind::Trace,
       "--emit=plan, --emit=report or --emit=trace (or a compiled step: binary, object, llvm, "
       "llvm-ir)"},
      {"device", plan || opts.emit == EmitKind::Report || opts.emit == EmitKind::Trace,
       "--emit=plan, --emit=report or --emit=trace (only they predict times) or a compiled "
       "step (its plan carries the prediction)"},
      {"embed-weights", opts.emit == EmitKind::Binary || opts.emit == EmitKind::Object,
       "--emit=binary or --emit=object (the other outputs write no step)"},
      {"clip-norm-type", given("clip-grad-norm"), "--clip-grad-norm=MAX"},
      {"accum-reduce", opts.gradAccum > 1, "--grad-accum=K with K > 1"},
      {"momentum", sgd, "--optimizer=sgd"},
      {"nesterov", sgd, "--optimizer=sgd"},
      {"beta1", !sgd, "--optimizer=adamw"},
      {"beta2", !sgd, "--optimizer=adamw"},
      {"eps", !sgd, "--optimizer=adamw"}};
  for (const auto &[flag, holds, requirement] : partners)
    if (given(flag) && !holds)
      return fail("--" + std::string(flag) + " requires " + requirement);

  if (opts.shard == ShardKind::Hybrid) {
    std::string why = checkHybridGroup(opts.hybridGroupSize, opts.worldSize);
    if (!why.empty())
      return fail(why);
  }
  // The training step's flags act in the train stage; output that stops
  // before it (a summary, IR after import) would silently ignore them.
  bool trainStageRuns = opts.emit != EmitKind::Summary &&
                        !(opts.emit == EmitKind::Mlir && opts.stopAfter == Stage::Import);
  // Likewise --ckpt acts in the checkpoint stage, the distribution flags in
  // the shard stage; the gradient norm is computed where the shard stage
  // leaves the gradients (issue 19's gradient passes run there), and
  // gradient accumulation unrolls the step after it.
  bool checkpointStageRuns =
      trainStageRuns &&
      !(opts.emit == EmitKind::Mlir && opts.stopAfter && *opts.stopAfter < Stage::Checkpoint);
  bool shardStageRuns = trainStageRuns && !(opts.emit == EmitKind::Mlir && opts.stopAfter &&
                                            *opts.stopAfter < Stage::Shard);
  // Each stage's flags, in pipeline order, are refused when the output
  // stops before the stage: what they would ask for would silently not
  // happen.
  struct StageRule {
    FlagStage stage;
    bool runs;
    const char *acts;  // where the flag acts
    const char *needs; // the outputs that run it
  };
  const char *fromCheckpoint =
      "--emit=plan or --emit=report, or --emit=mlir with --stop-after=checkpoint or later";
  const char *fromShard =
      "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later";
  const StageRule stageRules[] = {
      {FlagStage::Train, trainStageRuns, "in the train stage",
       "--emit=plan, or --emit=mlir with --stop-after=train or later"},
      {FlagStage::Checkpoint, checkpointStageRuns, "in the checkpoint stage", fromCheckpoint},
      {FlagStage::Shard, shardStageRuns, "in the shard stage", fromShard},
      {FlagStage::AfterShard, shardStageRuns, "after the shard stage", fromShard},
  };
  if (opts.mode == Mode::Train)
    for (const StageRule &rule : stageRules)
      if (!rule.runs)
        for (const std::string &flag : flagsOfStage(rule.stage))
          if (given(flag))
            return fail("--" + flag + " acts " + rule.acts +
                        ", which this output does not run (it needs " + rule.needs + ")");
  // The schedule stage moves all-gathers: a step without any would
  // silently ignore its flags.
  if (opts.mode == Mode::Train && shardStageRuns)
    for (const std::string &flag : flagsOfStage(FlagStage::Schedule))
      if (given(flag) && (!shardingRequested(opts) || opts.shard == ShardKind::None))
        return fail("--" + flag + " schedules the all-gathers of a sharded step, " +
                    (opts.shard == ShardKind::None
                         ? "and --shard=none has none"
                         : "and this plan is not sharded (give --world-size=N or --shard)"));
  // parseCompileFlag rejects K < 1; this catches options built in code.
  if (opts.gradAccum < 1)
    return fail("--grad-accum=" + std::to_string(opts.gradAccum) + ": K must be >= 1");
  // fp16 mixed precision: gradients in half only under loss scaling, which
  // f16 parameters bring (unscaled half gradients underflow); a bf16 reduce
  // of loss-scaled gradients would round away the scale's precision
  // gain, so f16 pairs with an f32 or f16 reduce only.
  if (opts.paramDtype == DType::F16 && opts.reduceDtype == DType::BF16)
    return fail("--param-dtype=f16 needs --reduce-dtype=f32 or f16, not bf16 (loss-scaled "
                "gradients are reduced in the precision they were scaled for)");
  if (opts.reduceDtype == DType::F16 && opts.paramDtype != DType::F16)
    return fail("--reduce-dtype=f16 needs --param-dtype=f16 (only loss-scaled gradients keep "
                "their small values in half precision)");
  if (given("loss-scale-growth-interval") && opts.paramDtype != DType::F16)
    return fail("--loss-scale-growth-interval requires --param-dtype=f16 (only f16 scales "
                "the loss)");
  // The rest of FSDP2's MixedPrecisionPolicy shapes a low-precision compute
  // dtype; without one there is nothing for it to cast.
  for (const char *flag : {"output-dtype", "cast-forward-inputs", "keep-f32"})
    if (given(flag) && opts.paramDtype == DType::F32)
      return fail(std::string("--") + flag + " needs --param-dtype=bf16 or f16 (it shapes the "
                  "low-precision compute; with f32 parameters there is nothing to cast)");
  if (opts.paramDtype == DType::F16 && opts.offload == OffloadKind::Cpu)
    return fail("--param-dtype=f16 with --offload=cpu is not supported yet (the skipped-step "
                "flag lives in device memory, the offloaded optimizer on the host)");
  // --ckpt=auto chooses what to recompute against the budget.
  if (opts.ckpt == CkptKind::Auto && !opts.memBudget)
    return fail("--ckpt=auto needs --mem-budget=SIZE (it recomputes the cheapest set of blocks that fits)");
  // torch.optim.SGD refuses the same: Nesterov without momentum is plain SGD.
  if (opts.nesterov && opts.momentum <= 0)
    return fail("--nesterov requires --momentum > 0");
  // parseCompileFlag rejects "xent:"; this catches options built in code.
  if (opts.loss == LossKind::CrossEntropy && opts.lossOutput.empty())
    return fail("--loss=xent:OUTPUT needs a non-empty OUTPUT");
  return true;
}

bool fsdp::gradNormRequested(const CompileOptions &opts) {
  return opts.mode == Mode::Train && (opts.clipGradNorm > 0 || opts.logGradNorm);
}

bool fsdp::shardingRequested(const CompileOptions &opts) {
  if (opts.mode != Mode::Train || opts.worldSize > 1)
    return opts.mode == Mode::Train;
  // --offload=none asks for what an unsharded plan already is.
  const bool noOffload = opts.offload == OffloadKind::None;
  for (const std::string &flag : flagsOfStage(FlagStage::Shard))
    if (opts.explicitlySet.count(flag) && !(noOffload && flag == "offload"))
      return true;
  return false;
}

double fsdp::effectiveWeightDecay(const CompileOptions &opts) {
  if (opts.explicitlySet.count("weight-decay"))
    return opts.weightDecay;
  return opts.optimizer == OptimizerKind::Sgd ? 0.0 : opts.weightDecay;
}

namespace {

/// A flag's left column: "--name" or "--name=SYNTAX".
std::string flagText(const FlagSpec &spec) {
  return "--" + spec.name + (spec.syntax.empty() ? "" : "=" + spec.syntax);
}

/// A flag's help line with "(default: ...)" appended when it has one.
std::string helpWithDefault(const FlagSpec &spec, const CompileOptions &defaults) {
  std::string shown = spec.show(defaults);
  std::string help = spec.help;
  if (!shown.empty())
    help += (help.empty() ? "" : " ") + ("(default: " + shown + ")");
  return help;
}

} // namespace

std::string fsdp::usage() {
  const CompileOptions defaults;
  const size_t column = 34, width = 80 - column;
  std::string text =
      "usage: fsdp-opt MODEL.onnx|MODEL.mlir [-o OUT] [options]\n"
      "  -o OUT                          output file; '-' (default) is "
      "stdout\n";
  for (const FlagSpec &spec : flagTable()) {
    std::string left = "  " + flagText(spec);
    // Long value lists push the description onto its own line.
    left += left.size() + 2 > column ? "\n" + std::string(column, ' ')
                                     : std::string(column - left.size(), ' ');
    std::string help = helpWithDefault(spec, defaults);
    // Word-wrap the description at 80 columns, continuing under itself.
    for (size_t lineStart = 0; help.size() - lineStart > width;) {
      size_t space = help.rfind(' ', lineStart + width);
      if (space == std::string::npos || space <= lineStart)
        break;
      help.replace(space, 1, "\n" + std::string(column, ' '));
      lineStart = space + 1 + column;
    }
    text += left + help + "\n";
  }
  return text + "On .mlir input, mlir-opt options (--pass-pipeline, "
                "--mlir-print-ir-after-all,\n--verify-diagnostics, "
                "--split-input-file) also apply.\n";
}

std::string fsdp::usageMarkdown() {
  // GitHub's tables end a cell at '|', even inside `code`.
  auto cell = [](std::string text) {
    for (size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
      text.insert(at, "\\");
    return text;
  };
  constexpr const char *stageTitles[] = {"", "train", "checkpoint", "shard", "after shard",
                                         "schedule"};
  const CompileOptions defaults;
  std::string text =
      "# fsdp-opt flags\n\n"
      "<!-- Generated by `fsdp-opt --help-markdown` from compiler/Pipelines/CompileFlags.def;\n"
      "     do not edit: tests/lit/tools/flags-doc.test fails when they disagree. -->\n\n"
      "Every flag of `fsdp-opt --help`, in its order, with the line `--help` prints for it.\n"
      "*Stage* is the pipeline stage the flag acts in: an output that stops before it\n"
      "(`--emit=summary`, `--emit=mlir --stop-after=...`) refuses the flag. *Train only*\n"
      "flags are refused with `--mode=forward`. `-o OUT` is the output file (`-`, the\n"
      "default, is stdout); on .mlir input, mlir-opt's options (`--pass-pipeline`,\n"
      "`--mlir-print-ir-after-all`, `--verify-diagnostics`, `--split-input-file`) also\n"
      "apply (`fsdp-opt --help-mlir` lists them).\n\n"
      "| Flag | Stage | Train only | Description |\n"
      "|---|---|---|---|\n";
  for (const FlagSpec &spec : flagTable())
    text += "| `" + cell(flagText(spec)) + "` | " + stageTitles[size_t(spec.stage)] + " | " +
            (spec.scope == FlagScope::TrainOnly ? "yes" : "") + " | " +
            cell(helpWithDefault(spec, defaults)) + " |\n";
  return text;
}

const std::vector<std::string> &fsdp::flagValueNames(const std::string &name) {
  static const std::vector<std::string> none;
  for (const FlagSpec &spec : flagTable())
    if (spec.name == name)
      return spec.choices;
  return none;
}
