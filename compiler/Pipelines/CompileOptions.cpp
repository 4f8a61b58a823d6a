//===- CompileOptions.cpp - fsdp-opt command-line options model -----------===//
//
// One table describes every fsdp-opt flag: its name, the syntax of its value,
// its help line, how to parse a value into CompileOptions and how to render a
// value back. Parsing and the help text (whose defaults are rendered from a
// default-constructed CompileOptions) both read that table, so a flag's
// spelling, values and default live in exactly one place. Enumerated values
// come from one name table per enum; the "valid: a, b" part of every error
// message is formatted from the same table.
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
#include <regex.h>
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
                  std::size(accumReduceNames) == size_t(AccumReduceKind::Auto) + 1,
              "every enumerator needs a spelling");

constexpr const char *sizeUnitNames[] = {"B",   "KB",  "MB",  "GB", "TB",
                                         "KiB", "MiB", "GiB", "TiB"};
constexpr int64_t sizeUnitScales[] = {
    1,       1'000,   1'000'000, 1'000'000'000,   1'000'000'000'000,
    1 << 10, 1 << 20, 1 << 30,   int64_t(1) << 40};

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

struct FlagSpec {
  std::string name;
  std::string syntax; // What follows '='; empty for a switch (--nesterov).
  std::string help;
  ParseFn parse;
  ShowFn show;
};

template <typename Field, size_t N>
FlagSpec enumFlag(const char *name, const char *const (&names)[N],
                  Field CompileOptions::*field, const char *help,
                  ParamFn parseParam = nullptr) {
  return {name, joinNames(names, "|"), help,
          [&names, field, parseParam](const std::string &value,
                                      CompileOptions &opts, std::string &why) {
            std::string param;
            int index = matchName(names, value, param);
            if (index < 0)
              why = validList(names);
            else
              setIndex(opts.*field, index);
            if (index >= 0 && parseParam)
              parseParam(param, opts, why);
          },
          [&names, field](const CompileOptions &opts) {
            return nameOf(names, opts.*field);
          }};
}

FlagSpec intFlag(const char *name, const char *metavar,
                 int64_t CompileOptions::*field, int64_t min,
                 const char *help) {
  return {name, metavar, help,
          [field, min](const std::string &value, CompileOptions &opts,
                       std::string &why) {
            parseIntAtLeast(value, min, "", opts.*field, why);
          },
          [field](const CompileOptions &opts) {
            return std::to_string(opts.*field);
          }};
}

/// A real in [min, max), or (min, max) when `minExclusive`; max may be inf.
FlagSpec realFlag(const char *name, double CompileOptions::*field, double min,
                  bool minExclusive, double max, const char *help) {
  std::string rule =
      std::isinf(max)
          ? (minExclusive ? "must be > " : "must be >= ") + formatReal(min)
          : "must be in [" + formatReal(min) + ", " + formatReal(max) + ")";
  return {
      name, "X", help,
      [=](const std::string &value, CompileOptions &opts, std::string &why) {
        double &out = opts.*field;
        if (!parseReal(value, out))
          why = "must be a finite number";
        else if (out < min || (minExclusive && out == min) || out >= max)
          why = rule;
      },
      [field](const CompileOptions &opts) { return formatReal(opts.*field); }};
}

/// A POSIX extended regex over parameter names.
FlagSpec regexFlag(const char *name, std::string CompileOptions::*field,
                   const char *help) {
  return {name, "RE", help,
          [field](const std::string &value, CompileOptions &opts,
                  std::string &why) {
            if (isValidRegex(value, why))
              opts.*field = value;
            else
              why = "RE is not a valid regex: " + why;
          },
          [field](const CompileOptions &opts) { return opts.*field; }};
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

const std::vector<FlagSpec> &flagTable() {
  const double inf = std::numeric_limits<double>::infinity();
  static const std::vector<FlagSpec> table = {
      enumFlag("mode", modeNames, &CompileOptions::mode,
               "the whole training step, or the forward pass only"),
      enumFlag("emit", emitNames, &CompileOptions::emit,
               "plan is what fsdp-run runs; binary a standalone step "
               "executable (-o STEP), object its object file and header to "
               "link yourself (-o STEP.o), llvm and llvm-ir their module; "
               "summary describes the import"),
      enumFlag("stop-after", stageNames, &CompileOptions::stopAfter,
               "with --emit=mlir: print the IR after this stage (default: "
               "all)"),
      intFlag("world-size", "N", &CompileOptions::worldSize, 1,
              "ranks the plan is compiled for"),
      enumFlag("shard", shardNames, &CompileOptions::shard,
               "hybrid:G shards within groups of G ranks", parseShardParam),
      enumFlag("wrap", wrapNames, &CompileOptions::wrap,
               "units: model blocks, >= N parameter elements, or names "
               "matching RE",
               parseWrapParam),
      enumFlag("ckpt", ckptNames, &CompileOptions::ckpt,
               "activation checkpointing; auto fits --mem-budget"),
      intFlag("prefetch", "K", &CompileOptions::prefetch, 0,
              "units all-gathered ahead of use"),
      intFlag("limit-all-gathers", "K", &CompileOptions::limitAllGathers, 1,
              "all-gathers in flight at once"),
      intFlag("grad-accum", "K", &CompileOptions::gradAccum, 1,
              "micro-batches per optimizer step (global batch b x N x K)"),
      enumFlag("accum-reduce", accumReduceNames, &CompileOptions::accumReduce,
               "with --grad-accum: reduce each micro-batch's gradient, or sum "
               "unsharded and reduce after the last; auto: last while it fits "
               "--mem-budget"),
      enumFlag("optimizer", optimizerNames, &CompileOptions::optimizer, ""),
      realFlag("lr", &CompileOptions::lr, 0, true, inf, "learning rate"),
      realFlag("beta1", &CompileOptions::beta1, 0, false, 1,
               "AdamW first-moment decay"),
      realFlag("beta2", &CompileOptions::beta2, 0, false, 1,
               "AdamW second-moment decay"),
      realFlag("eps", &CompileOptions::eps, 0, true, inf,
               "AdamW denominator term"),
      realFlag("weight-decay", &CompileOptions::weightDecay, 0, false, inf, ""),
      realFlag("momentum", &CompileOptions::momentum, 0, false, inf,
               "SGD momentum"),
      {"nesterov", "", "SGD Nesterov momentum",
       [](const std::string &, CompileOptions &opts, std::string &) {
         opts.nesterov = true;
       },
       [](const CompileOptions &) { return std::string(); }},
      {"embed-weights", "",
       "with --emit=binary or --emit=object: the step carries its weights "
       "instead of reading STEP.safetensors beside it",
       [](const std::string &, CompileOptions &opts, std::string &) {
         opts.embedWeights = true;
       },
       [](const CompileOptions &) { return std::string(); }},
      regexFlag("freeze", &CompileOptions::freezeRegex,
                "float initializers matching RE are constants, not trained "
                "(torch buffers)"),
      regexFlag("no-decay", &CompileOptions::noDecayRegex,
                "parameters matching RE get no weight decay"),
      {"params", "FILE",
       "ONNX input: the parameter manifest fsdp_opt.export wrote, which decides what is "
       "trained and under which torch names (default: MODEL.onnx.params.json when present)",
       [](const std::string &value, CompileOptions &opts, std::string &why) {
         if (value.empty())
           why = "FILE must not be empty";
         opts.paramsPath = value;
       },
       [](const CompileOptions &) { return std::string(); }},
      enumFlag("loss", lossNames, &CompileOptions::loss,
               "keep the model's loss, or cross-entropy on OUTPUT",
               parseLossParam),
      enumFlag("param-dtype", dtypeNames, &CompileOptions::paramDtype,
               "dtype of gathered parameters (master shards stay f32); f16 "
               "scales the loss dynamically as torch.amp.GradScaler"),
      enumFlag("reduce-dtype", dtypeNames, &CompileOptions::reduceDtype,
               "dtype gradients are reduced in (f16 only with "
               "--param-dtype=f16)"),
      intFlag("loss-scale-growth-interval", "N", &CompileOptions::lossScaleGrowthInterval, 1,
              "with --param-dtype=f16: good steps after which the loss scale "
              "doubles (GradScaler's growth_interval)"),
      enumFlag("offload", offloadNames, &CompileOptions::offload,
               "keep parameter and optimizer shards in host memory"),
      {"mem-budget", "SIZE",
       "bytes per rank, e.g. 80GiB or 1.5GB (default: no limit)",
       [](const std::string &value, CompileOptions &opts, std::string &why) {
         int64_t bytes = 0;
         if (parseByteSize(value, bytes, why) && bytes == 0)
           why = "must be > 0";
         opts.memBudget = bytes;
       },
       [](const CompileOptions &opts) {
         return opts.memBudget ? std::to_string(*opts.memBudget) : "";
       }},
      enumFlag("device", deviceNames, &CompileOptions::device,
               "device profile of the cost model whose predicted step "
               "times --emit=report and --emit=trace show and a plan "
               "carries (fsdp-run --profile prints it)"),
      enumFlag("fusion", fusionNames, &CompileOptions::fusion,
               "fuse chains of elementwise ops in plans (results are the "
               "same bits either way)"),
      enumFlag("report-format", reportFormatNames,
               &CompileOptions::reportFormat, "with --emit=report"),
      [&] {
        FlagSpec clip = realFlag(
            "clip-grad-norm", &CompileOptions::clipGradNorm, 0, true, inf,
            "clip the total gradient norm to X before the optimizer "
            "(torch.nn.utils.clip_grad_norm_ over all trained parameters, "
            "across shards); the plan outputs grad_norm (default: no clipping)");
        clip.show = [](const CompileOptions &) { return std::string(); };
        return clip;
      }(),
      enumFlag("clip-norm-type", clipNormNames, &CompileOptions::clipNormType,
               "with --clip-grad-norm: the 2-norm or the largest |g|"),
      {"log-grad-norm", "",
       "compute the total gradient norm every step without clipping; the plan "
       "outputs grad_norm (fsdp-run logs it)",
       [](const std::string &, CompileOptions &opts, std::string &) {
         opts.logGradNorm = true;
       },
       [](const CompileOptions &) { return std::string(); }},
  };
  return table;
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
    for (const char *flag :
         {"shard", "wrap", "ckpt", "prefetch", "limit-all-gathers", "optimizer",
          "lr", "beta1", "beta2", "eps", "weight-decay", "momentum", "nesterov",
          "freeze", "no-decay", "loss", "param-dtype", "reduce-dtype", "offload",
          "clip-grad-norm", "clip-norm-type", "log-grad-norm",
          "grad-accum", "accum-reduce"})
      if (given(flag))
        return fail("--" + std::string(flag) + " requires --mode=train");
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
  if (opts.mode == Mode::Train && !trainStageRuns)
    for (const char *flag : {"optimizer", "lr", "beta1", "beta2", "eps", "weight-decay",
                             "momentum", "nesterov", "freeze", "no-decay", "loss"})
      if (given(flag))
        return fail("--" + std::string(flag) +
                    " acts in the train stage, which this output does not run (it needs "
                    "--emit=plan, or --emit=mlir with --stop-after=train or later)");
  // Likewise --ckpt acts in the checkpoint stage.
  bool checkpointStageRuns =
      trainStageRuns &&
      !(opts.emit == EmitKind::Mlir && opts.stopAfter && *opts.stopAfter < Stage::Checkpoint);
  if (opts.mode == Mode::Train && !checkpointStageRuns && given("ckpt"))
    return fail("--ckpt acts in the checkpoint stage, which this output does not run (it needs "
                "--emit=plan or --emit=report, or --emit=mlir with --stop-after=checkpoint or "
                "later)");
  // Likewise the distribution flags act in the shard stage.
  bool shardStageRuns = trainStageRuns && !(opts.emit == EmitKind::Mlir && opts.stopAfter &&
                                            *opts.stopAfter < Stage::Shard);
  if (opts.mode == Mode::Train && !shardStageRuns)
    for (const char *flag : kShardFlags)
      if (given(flag))
        return fail("--" + std::string(flag) +
                    " acts in the shard stage, which this output does not run (it needs "
                    "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard "
                    "or later)");
  // The gradient norm is computed where the shard stage leaves the
  // gradients (issue 19's gradient passes run there), and gradient
  // accumulation unrolls the step after the shard stage.
  if (opts.mode == Mode::Train && !shardStageRuns)
    for (const char *flag : {"clip-grad-norm", "log-grad-norm", "grad-accum"})
      if (given(flag))
        return fail("--" + std::string(flag) +
                    " acts after the shard stage, which this output does not run (it needs "
                    "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard "
                    "or later)");
  // The schedule stage moves all-gathers: a step without any would
  // silently ignore its flags.
  if (opts.mode == Mode::Train && shardStageRuns)
    for (const char *flag : {"prefetch", "limit-all-gathers"})
      if (given(flag) && (!shardingRequested(opts) || opts.shard == ShardKind::None))
        return fail("--" + std::string(flag) + " schedules the all-gathers of a sharded step, " +
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

bool fsdp::parseByteSize(const std::string &text, int64_t &bytes,
                         std::string &why) {
  size_t unitStart =
      std::min(text.find_first_not_of("0123456789."), text.size());
  std::string number = text.substr(0, unitStart);
  std::string unit = text.substr(unitStart), ignored;
  size_t dot = std::min(number.find('.'), number.size());
  std::string whole = number.substr(0, dot);
  std::string fraction = number.substr(std::min(dot + 1, number.size()));
  while (!fraction.empty() && fraction.back() == '0')
    fraction.pop_back();
  int unitIndex = unit.empty() ? 0 : matchName(sizeUnitNames, unit, ignored);
  std::string problem;
  if (text.empty() || text[0] == '-')
    problem = text.empty() ? "empty size" : "size must not be negative";
  else if (whole.empty() || dot + 1 == number.size() ||
           number.find('.', dot + 1) != std::string::npos)
    problem = "expected a number and a unit, such as 80GiB or 1.5GB";
  else if (unitIndex < 0)
    problem = "unknown unit '" + unit + "'; " + validList(sizeUnitNames);
  else if (fraction.size() > 18) // Keeps the numerator below 10^18.
    problem = "too many fractional digits";
  if (!problem.empty()) {
    why = problem;
    return false;
  }

  // 128-bit intermediates: whole * scale and the fraction's numerator * scale
  // both fit, so overflow is a comparison rather than a wrapped value.
  __extension__ using Wide = unsigned __int128;
  const Wide limit = std::numeric_limits<int64_t>::max();
  const Wide scale = sizeUnitScales[unitIndex];
  Wide value = 0, numerator = 0, denominator = 1;
  for (char digit : whole)
    if ((value = value * 10 + Wide(digit - '0')) > limit)
      break;
  for (char digit : fraction) {
    numerator = numerator * 10 + Wide(digit - '0');
    denominator *= 10;
  }
  value = value * scale + numerator * scale / denominator;
  if (numerator * scale % denominator != 0)
    why = "'" + text + "' is not a whole number of bytes";
  else if (value > limit)
    why = "too large (the limit is 2^63-1 bytes)";
  else
    bytes = int64_t(value);
  return numerator * scale % denominator == 0 && value <= limit;
}

bool fsdp::shardingRequested(const CompileOptions &opts) {
  if (opts.mode != Mode::Train || opts.worldSize > 1)
    return opts.mode == Mode::Train;
  // --offload=none asks for what an unsharded plan already is.
  const bool noOffload = opts.offload == OffloadKind::None;
  for (const char *flag : kShardFlags)
    if (opts.explicitlySet.count(flag) && !(noOffload && flag == std::string_view("offload")))
      return true;
  return false;
}

double fsdp::effectiveWeightDecay(const CompileOptions &opts) {
  if (opts.explicitlySet.count("weight-decay"))
    return opts.weightDecay;
  return opts.optimizer == OptimizerKind::Sgd ? 0.0 : opts.weightDecay;
}

namespace {

/// The first pair of adjacent repetition operators ("a++", "a*{2}") outside
/// a bracket expression, or npos. POSIX leaves their meaning undefined, and
/// regcomp's size explodes with each one: 30 '+' in a row took glibc 24 GiB
/// and 49 s (found by fuzz-compile-flags).
size_t adjacentRepetition(const std::string &pattern) {
  bool afterRepetition = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\') { // an escaped character is an atom
      ++i;
      afterRepetition = false;
    } else if (c == '[') { // skip the bracket expression ("[]a]" and "[^]a]" hold a ']')
      size_t j = i + 1;
      if (j < pattern.size() && pattern[j] == '^')
        ++j;
      if (j < pattern.size() && pattern[j] == ']')
        ++j;
      while (j < pattern.size() && pattern[j] != ']')
        ++j;
      i = j;
      afterRepetition = false;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (afterRepetition)
        return i;
      if (c == '{')
        while (i < pattern.size() && pattern[i] != '}')
          ++i;
      afterRepetition = true;
    } else {
      afterRepetition = false;
    }
  }
  return std::string::npos;
}

} // namespace

bool fsdp::isValidRegex(const std::string &pattern, std::string &why) {
  // llvm::Regex (BSD regcomp) rejects an empty pattern while glibc accepts
  // it; refuse it here so the wrap pass never sees one.
  if (pattern.empty()) {
    why = "empty pattern";
    return false;
  }
  // Parameter-name patterns are short; a long one is a mistake or an
  // attempt to make the regex compiler's memory explode.
  constexpr size_t kMaxPatternLength = 4096;
  if (pattern.size() > kMaxPatternLength) {
    why = "pattern longer than " + std::to_string(kMaxPatternLength) + " characters";
    return false;
  }
  if (size_t at = adjacentRepetition(pattern); at != std::string::npos) {
    why = "adjacent repetition operators at offset " + std::to_string(at) +
          " (undefined in POSIX extended regular expressions)";
    return false;
  }
  regex_t compiled;
  int status = regcomp(&compiled, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (status == 0) {
    regfree(&compiled);
    return true;
  }
  char message[256];
  regerror(status, &compiled, message, sizeof(message));
  why = message;
  return false;
}

std::string fsdp::usage() {
  const CompileOptions defaults;
  const size_t column = 34, width = 80 - column;
  std::string text =
      "usage: fsdp-opt MODEL.onnx|MODEL.mlir [-o OUT] [options]\n"
      "  -o OUT                          output file; '-' (default) is "
      "stdout\n";
  for (const FlagSpec &spec : flagTable()) {
    std::string left = "  --" + spec.name;
    if (!spec.syntax.empty())
      left += "=" + spec.syntax;
    // Long value lists push the description onto its own line.
    left += left.size() + 2 > column ? "\n" + std::string(column, ' ')
                                     : std::string(column - left.size(), ' ');
    std::string shown = spec.show(defaults);
    std::string help = spec.help;
    if (!shown.empty())
      help += (help.empty() ? "" : " ") + ("(default: " + shown + ")");
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
