//===- CompileOptions.cpp - fsdp-opt command-line options model -----------===//
//
// One table describes every fsdp-opt flag: its name, the syntax of its value,
// its help line, how to parse a value into CompileOptions and how to render
// the current value back. Parsing, the help text (with defaults rendered from
// a default-constructed CompileOptions) and formatCompileFlags all read that
// table, so a flag's spelling, values and default live in exactly one place.
// Enumerated values come from one name table per enum; the "valid: a, b"
// part of every error message is formatted from the same table.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <regex.h>
#include <vector>

using namespace fsdp;

namespace {

template <typename E> struct NamedValue {
  const char *name;
  E value;
};

// A spelling containing ':' ("hybrid:G") is parametric: any value starting
// with the text up to and including ':' selects it, and the rest is the
// parameter. The placeholder after ':' is what help and errors show.
constexpr NamedValue<Stage> stageNames[] = {
    {"import", Stage::Import},     {"train", Stage::Train},
    {"shard", Stage::Shard},       {"checkpoint", Stage::Checkpoint},
    {"schedule", Stage::Schedule}, {"memory", Stage::Memory}};
constexpr NamedValue<Mode> modeNames[] = {{"train", Mode::Train},
                                          {"forward", Mode::Forward}};
constexpr NamedValue<EmitKind> emitNames[] = {
    {"plan", EmitKind::Plan},     {"mlir", EmitKind::Mlir},
    {"binary", EmitKind::Binary}, {"report", EmitKind::Report},
    {"trace", EmitKind::Trace},   {"summary", EmitKind::Summary}};
constexpr NamedValue<ShardKind> shardNames[] = {
    {"full", ShardKind::Full},
    {"grad-op", ShardKind::GradOp},
    {"none", ShardKind::None},
    {"hybrid:G", ShardKind::Hybrid}};
constexpr NamedValue<WrapKind> wrapNames[] = {{"blocks", WrapKind::Blocks},
                                              {"size:N", WrapKind::Size},
                                              {"regex:RE", WrapKind::Regex}};
constexpr NamedValue<CkptKind> ckptNames[] = {
    {"none", CkptKind::None},
    {"blocks", CkptKind::Blocks},
    {"selective", CkptKind::Selective},
    {"auto", CkptKind::Auto}};
constexpr NamedValue<OptimizerKind> optimizerNames[] = {
    {"adamw", OptimizerKind::AdamW}, {"sgd", OptimizerKind::Sgd}};
constexpr NamedValue<LossKind> lossNames[] = {
    {"auto", LossKind::Auto}, {"xent:OUTPUT[,LABELS]", LossKind::CrossEntropy}};
constexpr NamedValue<DType> dtypeNames[] = {{"f32", DType::F32},
                                            {"bf16", DType::BF16}};
constexpr NamedValue<OffloadKind> offloadNames[] = {{"none", OffloadKind::None},
                                                    {"cpu", OffloadKind::Cpu}};
constexpr NamedValue<DeviceKind> deviceNames[] = {{"h100", DeviceKind::H100},
                                                  {"a100", DeviceKind::A100},
                                                  {"cpu", DeviceKind::Cpu}};
constexpr NamedValue<ReportFormat> reportFormatNames[] = {
    {"text", ReportFormat::Text}, {"json", ReportFormat::Json}};
constexpr NamedValue<int64_t> sizeUnits[] = {
    {"B", 1},
    {"KB", 1000},
    {"MB", 1000 * 1000},
    {"GB", 1000 * 1000 * 1000},
    {"TB", int64_t(1000) * 1000 * 1000 * 1000},
    {"KiB", int64_t(1) << 10},
    {"MiB", int64_t(1) << 20},
    {"GiB", int64_t(1) << 30},
    {"TiB", int64_t(1) << 40}};

template <typename E, size_t N>
const NamedValue<E> *matchName(const NamedValue<E> (&table)[N],
                               const std::string &text, std::string &param) {
  for (const NamedValue<E> &entry : table) {
    std::string name = entry.name;
    size_t colon = name.find(':');
    if (colon == std::string::npos
            ? text == name
            : text.compare(0, colon + 1, name, 0, colon + 1) == 0) {
      param = colon == std::string::npos ? "" : text.substr(colon + 1);
      return &entry;
    }
  }
  return nullptr;
}

template <typename E, size_t N>
std::string joinNames(const NamedValue<E> (&table)[N], const char *separator) {
  std::string joined;
  for (const NamedValue<E> &entry : table)
    joined += (joined.empty() ? "" : separator) + std::string(entry.name);
  return joined;
}

template <typename E, size_t N>
std::string validList(const NamedValue<E> (&table)[N]) {
  return "valid: " + joinNames(table, ", ");
}

/// The spelling of `value`, with a parametric placeholder replaced by `param`.
template <typename E, size_t N>
std::string spell(const NamedValue<E> (&table)[N], E value,
                  const std::string &param = "") {
  for (const NamedValue<E> &entry : table) {
    if (entry.value != value)
      continue;
    std::string name = entry.name;
    size_t colon = name.find(':');
    return colon == std::string::npos ? name
                                      : name.substr(0, colon + 1) + param;
  }
  return "?";
}

// strtoll and strtod alone accept leading blanks, '+' and trailing junk;
// these insist the whole text is the number.
bool parseInteger(const std::string &text, int64_t &out) {
  size_t digits = !text.empty() && text[0] == '-' ? 1 : 0;
  if (digits >= text.size() || !std::isdigit((unsigned char)text[digits]))
    return false;
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0')
    return false;
  out = value;
  return true;
}

bool parseIntAtLeast(const std::string &text, int64_t min,
                     const std::string &subject, int64_t &out,
                     std::string &why) {
  std::string prefix = subject.empty() ? "" : subject + " ";
  if (!parseInteger(text, out))
    why = prefix + "must be an integer";
  else if (out < min)
    why = prefix + "must be >= " + std::to_string(min);
  else
    return true;
  return false;
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
/// shows "0.001" while formatCompileFlags still round-trips exactly.
std::string formatReal(double value) {
  char buffer[32];
  for (int precision : {6, 15, 17}) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

using ParseFn = std::function<bool(const std::string &value,
                                   CompileOptions &opts, std::string &why)>;
using ShowFn = std::function<std::string(const CompileOptions &opts)>;

struct FlagSpec {
  std::string name;
  std::string
      syntax; // What follows '='; empty for a switch such as --nesterov.
  std::string help;
  ParseFn parse; // Writes `opts` only when it succeeds.
  ShowFn show;   // Empty when the option is unset (no stage, no budget).
};

template <typename E, size_t N>
FlagSpec enumFlag(const char *name, const NamedValue<E> (&table)[N],
                  E CompileOptions::*field, const char *help) {
  return {name, joinNames(table, "|"), help,
          [&table, field](const std::string &value, CompileOptions &opts,
                          std::string &why) {
            std::string param;
            const NamedValue<E> *entry = matchName(table, value, param);
            if (!entry) {
              why = validList(table);
              return false;
            }
            opts.*field = entry->value;
            return true;
          },
          [&table, field](const CompileOptions &opts) {
            return spell(table, opts.*field);
          }};
}

FlagSpec intFlag(const char *name, const char *metavar,
                 int64_t CompileOptions::*field, int64_t min,
                 const char *help) {
  return {name, metavar, help,
          [field, min](const std::string &value, CompileOptions &opts,
                       std::string &why) {
            return parseIntAtLeast(value, min, "", opts.*field, why);
          },
          [field](const CompileOptions &opts) {
            return std::to_string(opts.*field);
          }};
}

/// `rule` says in words what `accept` checks, for the error message.
FlagSpec realFlag(const char *name, double CompileOptions::*field,
                  bool (*accept)(double), const char *rule, const char *help) {
  return {
      name, "X", help,
      [=](const std::string &value, CompileOptions &opts, std::string &why) {
        double parsed;
        if (!parseReal(value, parsed)) {
          why = "must be a finite number";
          return false;
        }
        if (!accept(parsed)) {
          why = rule;
          return false;
        }
        opts.*field = parsed;
        return true;
      },
      [field](const CompileOptions &opts) { return formatReal(opts.*field); }};
}

bool parseShard(const std::string &value, CompileOptions &opts,
                std::string &why) {
  std::string param;
  const NamedValue<ShardKind> *entry = matchName(shardNames, value, param);
  int64_t group = 0;
  if (!entry) {
    why = validList(shardNames);
    return false;
  }
  if (entry->value == ShardKind::Hybrid &&
      !parseIntAtLeast(param, 1, "G", group, why))
    return false;
  opts.shard = entry->value;
  opts.hybridGroupSize = group;
  return true;
}

bool parseWrap(const std::string &value, CompileOptions &opts,
               std::string &why) {
  std::string param;
  const NamedValue<WrapKind> *entry = matchName(wrapNames, value, param);
  int64_t minParams = 0;
  if (!entry) {
    why = validList(wrapNames);
    return false;
  }
  if (entry->value == WrapKind::Size &&
      !parseIntAtLeast(param, 1, "N", minParams, why))
    return false;
  if (entry->value == WrapKind::Regex && !isValidRegex(param, why)) {
    why = "RE is not a valid regex: " + why;
    return false;
  }
  opts.wrap = entry->value;
  opts.wrapMinParams = minParams;
  opts.wrapRegex = entry->value == WrapKind::Regex ? param : "";
  return true;
}

bool parseLoss(const std::string &value, CompileOptions &opts,
               std::string &why) {
  std::string param;
  const NamedValue<LossKind> *entry = matchName(lossNames, value, param);
  if (!entry) {
    why = validList(lossNames);
    return false;
  }
  size_t comma = param.find(',');
  std::string output = param.substr(0, comma);
  std::string labels =
      comma == std::string::npos ? "" : param.substr(comma + 1);
  if (entry->value == LossKind::CrossEntropy &&
      (output.empty() || (comma != std::string::npos && labels.empty()))) {
    why = "OUTPUT and LABELS must not be empty";
    return false;
  }
  opts.loss = entry->value;
  opts.lossOutput = output;
  opts.lossLabels = labels;
  return true;
}

const std::vector<FlagSpec> &flagTable() {
  static const std::vector<FlagSpec> table = {
      enumFlag("mode", modeNames, &CompileOptions::mode,
               "the whole training step, or the forward pass only"),
      enumFlag("emit", emitNames, &CompileOptions::emit,
               "plan is what fsdp-run runs; summary describes the import"),
      {"stop-after", joinNames(stageNames, "|"),
       "with --emit=mlir: print the IR after this stage (default: all)",
       [](const std::string &value, CompileOptions &opts, std::string &why) {
         std::optional<Stage> stage = parseStage(value);
         if (!stage)
           why = validList(stageNames);
         else
           opts.stopAfter = stage;
         return stage.has_value();
       },
       [](const CompileOptions &opts) -> std::string {
         return opts.stopAfter ? stageName(*opts.stopAfter) : "";
       }},
      intFlag("world-size", "N", &CompileOptions::worldSize, 1,
              "ranks the plan is compiled for"),
      {"shard", joinNames(shardNames, "|"),
       "hybrid:G shards within groups of G ranks", parseShard,
       [](const CompileOptions &opts) {
         return spell(shardNames, opts.shard,
                      std::to_string(opts.hybridGroupSize));
       }},
      {"wrap", joinNames(wrapNames, "|"),
       "units: model blocks, >= N parameter elements, or names matching RE",
       parseWrap,
       [](const CompileOptions &opts) {
         return spell(wrapNames, opts.wrap,
                      opts.wrap == WrapKind::Size
                          ? std::to_string(opts.wrapMinParams)
                          : opts.wrapRegex);
       }},
      enumFlag("ckpt", ckptNames, &CompileOptions::ckpt,
               "activation checkpointing; auto fits --mem-budget"),
      intFlag("prefetch", "K", &CompileOptions::prefetch, 0,
              "units all-gathered ahead of use"),
      intFlag("limit-all-gathers", "K", &CompileOptions::limitAllGathers, 1,
              "all-gathers in flight at once"),
      enumFlag("optimizer", optimizerNames, &CompileOptions::optimizer, ""),
      realFlag(
          "lr", &CompileOptions::lr, [](double v) { return v > 0; },
          "must be > 0", "learning rate"),
      realFlag(
          "beta1", &CompileOptions::beta1,
          [](double v) { return v >= 0 && v < 1; }, "must be in [0, 1)",
          "AdamW first-moment decay"),
      realFlag(
          "beta2", &CompileOptions::beta2,
          [](double v) { return v >= 0 && v < 1; }, "must be in [0, 1)",
          "AdamW second-moment decay"),
      realFlag(
          "eps", &CompileOptions::eps, [](double v) { return v > 0; },
          "must be > 0", "AdamW denominator term"),
      realFlag(
          "weight-decay", &CompileOptions::weightDecay,
          [](double v) { return v >= 0; }, "must be >= 0", ""),
      realFlag(
          "momentum", &CompileOptions::momentum,
          [](double v) { return v >= 0; }, "must be >= 0", "SGD momentum"),
      {"nesterov", "", "SGD Nesterov momentum",
       [](const std::string &, CompileOptions &opts, std::string &) {
         opts.nesterov = true;
         return true;
       },
       [](const CompileOptions &opts) {
         return std::string(opts.nesterov ? "on" : "");
       }},
      {"loss", joinNames(lossNames, "|"),
       "keep the model's loss, or cross-entropy on OUTPUT", parseLoss,
       [](const CompileOptions &opts) {
         return spell(lossNames, opts.loss,
                      opts.lossOutput + (opts.lossLabels.empty() ? "" : ",") +
                          opts.lossLabels);
       }},
      enumFlag("param-dtype", dtypeNames, &CompileOptions::paramDtype,
               "dtype of gathered parameters (master shards stay f32)"),
      enumFlag("reduce-dtype", dtypeNames, &CompileOptions::reduceDtype,
               "dtype gradients are reduced in"),
      enumFlag("offload", offloadNames, &CompileOptions::offload,
               "keep parameter and optimizer shards in host memory"),
      {"mem-budget", "SIZE",
       "bytes per rank, e.g. 80GiB or 1.5GB (default: no limit)",
       [](const std::string &value, CompileOptions &opts, std::string &why) {
         int64_t bytes = 0;
         if (!parseByteSize(value, bytes, why))
           return false;
         if (bytes == 0) {
           why = "must be > 0";
           return false;
         }
         opts.memBudget = bytes;
         return true;
       },
       [](const CompileOptions &opts) {
         return opts.memBudget ? std::to_string(*opts.memBudget) : "";
       }},
      enumFlag("device", deviceNames, &CompileOptions::device,
               "the cost model scheduling and --ckpt=auto use"),
      enumFlag("report-format", reportFormatNames,
               &CompileOptions::reportFormat, "with --emit=report"),
  };
  return table;
}

const FlagSpec *findFlag(const std::string &name) {
  for (const FlagSpec &spec : flagTable())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

} // namespace

const char *fsdp::stageName(Stage stage) {
  for (const NamedValue<Stage> &entry : stageNames)
    if (entry.value == stage)
      return entry.name;
  return "?";
}

std::optional<Stage> fsdp::parseStage(const std::string &name) {
  std::string param;
  const NamedValue<Stage> *entry = matchName(stageNames, name, param);
  return entry ? std::optional<Stage>(entry->value) : std::nullopt;
}

FlagParse fsdp::parseCompileFlag(const std::string &arg, CompileOptions &opts,
                                 std::string &error) {
  size_t dashes =
      arg.compare(0, 2, "--") == 0 ? 2 : arg.compare(0, 1, "-") == 0;
  size_t equals = arg.find('=');
  std::string name = arg.substr(dashes, equals - dashes);
  const FlagSpec *spec = dashes ? findFlag(name) : nullptr;
  if (!spec)
    return FlagParse::NotOurs;

  bool isSwitch = spec->syntax.empty();
  if (isSwitch != (equals == std::string::npos)) {
    error = "--" + name +
            (isSwitch ? ": takes no value"
                      : ": missing value; use --" + name + "=" + spec->syntax);
    return FlagParse::Error;
  }
  std::string value = isSwitch ? "" : arg.substr(equals + 1);
  std::string why;
  CompileOptions parsed = opts;
  if (!spec->parse(value, parsed, why)) {
    error = "--" + name + ": invalid value '" + value + "'; " + why;
    return FlagParse::Error;
  }
  opts = std::move(parsed);
  opts.explicitlySet.insert(name);
  return FlagParse::Ok;
}

bool fsdp::validateCompileOptions(const CompileOptions &opts,
                                  std::string &error) {
  // Flags that mean nothing unless another flag has a given value. Forward
  // mode comes first: there the flag itself is the mistake, not its partner.
  struct Requirement {
    const char *flag;
    bool (*holds)(const CompileOptions &);
    const char *requirement;
  };
  auto train = [](const CompileOptions &o) { return o.mode == Mode::Train; };
  auto sgd = [](const CompileOptions &o) {
    return o.optimizer == OptimizerKind::Sgd;
  };
  auto adamw = [](const CompileOptions &o) {
    return o.optimizer == OptimizerKind::AdamW;
  };
  const Requirement requirements[] = {
      {"shard", train, "--mode=train"},
      {"wrap", train, "--mode=train"},
      {"ckpt", train, "--mode=train"},
      {"prefetch", train, "--mode=train"},
      {"limit-all-gathers", train, "--mode=train"},
      {"optimizer", train, "--mode=train"},
      {"lr", train, "--mode=train"},
      {"beta1", train, "--mode=train"},
      {"beta2", train, "--mode=train"},
      {"eps", train, "--mode=train"},
      {"weight-decay", train, "--mode=train"},
      {"momentum", train, "--mode=train"},
      {"nesterov", train, "--mode=train"},
      {"loss", train, "--mode=train"},
      {"reduce-dtype", train, "--mode=train"},
      {"stop-after",
       [](const CompileOptions &o) { return o.emit == EmitKind::Mlir; },
       "--emit=mlir"},
      {"report-format",
       [](const CompileOptions &o) { return o.emit == EmitKind::Report; },
       "--emit=report"},
      {"momentum", sgd, "--optimizer=sgd"},
      {"nesterov", sgd, "--optimizer=sgd"},
      {"beta1", adamw, "--optimizer=adamw"},
      {"beta2", adamw, "--optimizer=adamw"},
      {"eps", adamw, "--optimizer=adamw"},
  };
  if (opts.mode == Mode::Forward && opts.worldSize > 1) {
    error = "--world-size=" + std::to_string(opts.worldSize) +
            " requires --mode=train: forward plans run on one rank";
    return false;
  }
  for (const Requirement &rule : requirements) {
    if (opts.explicitlySet.count(rule.flag) && !rule.holds(opts)) {
      error = "--" + std::string(rule.flag) + " requires " + rule.requirement;
      return false;
    }
  }

  if (opts.shard == ShardKind::Hybrid) {
    int64_t group = opts.hybridGroupSize;
    std::string flag = "--shard=hybrid:" + std::to_string(group) + ": ";
    std::string world = "--world-size=" + std::to_string(opts.worldSize);
    std::string why = group < 1                ? "G must be >= 1"
                      : group > opts.worldSize ? "group size exceeds " + world
                      : opts.worldSize % group != 0
                          ? "group size does not divide " + world
                          : "";
    if (!why.empty()) {
      error = flag + why;
      return false;
    }
  }
  // torch.optim.SGD refuses the same: Nesterov without momentum is plain SGD.
  if (opts.nesterov && opts.momentum <= 0) {
    error = "--nesterov requires --momentum > 0";
    return false;
  }
  // parseCompileFlag rejects "xent:"; this catches options built in code.
  if (opts.loss == LossKind::CrossEntropy && opts.lossOutput.empty()) {
    error = "--loss=xent:OUTPUT needs a non-empty OUTPUT";
    return false;
  }
  return true;
}

bool fsdp::parseByteSize(const std::string &text, int64_t &bytes,
                         std::string &why) {
  if (text.empty() || text[0] == '-') {
    why = text.empty() ? "empty size" : "size must not be negative";
    return false;
  }
  size_t unitStart =
      std::min(text.find_first_not_of("0123456789."), text.size());
  std::string number = text.substr(0, unitStart);
  std::string unit = text.substr(unitStart);
  size_t dot = number.find('.');
  std::string whole = number.substr(0, dot);
  std::string fraction = dot == std::string::npos ? "" : number.substr(dot + 1);
  if (whole.empty() ||
      (dot != std::string::npos &&
       (fraction.empty() || fraction.find('.') != std::string::npos))) {
    why = "expected a number and a unit, such as 80GiB or 1.5GB";
    return false;
  }
  int64_t scale = 1;
  if (!unit.empty()) {
    std::string param;
    const NamedValue<int64_t> *entry = matchName(sizeUnits, unit, param);
    if (!entry) {
      why = "unknown unit '" + unit + "'; " + validList(sizeUnits);
      return false;
    }
    scale = entry->value;
  }
  while (!fraction.empty() && fraction.back() == '0')
    fraction.pop_back();
  // 18 digits keep the fraction's numerator below 10^18; wider input is
  // never a meaningful byte count.
  if (fraction.size() > 18) {
    why = "too many fractional digits";
    return false;
  }

  // 128-bit intermediates: whole * scale and the fraction's numerator * scale
  // both fit, so overflow is a comparison rather than a wrapped value.
  __extension__ typedef unsigned __int128 Wide;
  const Wide limit = std::numeric_limits<int64_t>::max();
  Wide value = 0;
  for (char digit : whole)
    if ((value = value * 10 + Wide(digit - '0')) > limit)
      break;
  Wide numerator = 0, denominator = 1;
  for (char digit : fraction) {
    numerator = numerator * 10 + Wide(digit - '0');
    denominator *= 10;
  }
  if ((numerator * Wide(scale)) % denominator != 0) {
    why = "'" + text + "' is not a whole number of bytes";
    return false;
  }
  value = value * Wide(scale) + numerator * Wide(scale) / denominator;
  if (value > limit) {
    why = "too large (the limit is 2^63-1 bytes)";
    return false;
  }
  bytes = int64_t(value);
  return true;
}

bool fsdp::isValidRegex(const std::string &pattern, std::string &why) {
  // llvm::Regex (BSD regcomp) rejects an empty pattern while glibc accepts
  // it; refuse it here so the wrap pass never sees one.
  if (pattern.empty()) {
    why = "empty pattern";
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

std::vector<std::string> fsdp::formatCompileFlags(const CompileOptions &opts) {
  const CompileOptions defaults;
  std::vector<std::string> flags;
  for (const FlagSpec &spec : flagTable()) {
    std::string value = spec.show(opts);
    if (value.empty() ||
        (!opts.explicitlySet.count(spec.name) && value == spec.show(defaults)))
      continue;
    flags.push_back("--" + spec.name +
                    (spec.syntax.empty() ? "" : "=" + value));
  }
  return flags;
}

std::string fsdp::usage() {
  const CompileOptions defaults;
  const size_t column = 34;
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
    size_t lineStart = 0, width = 80 - column;
    while (help.size() - lineStart > width) {
      size_t space = help.rfind(' ', lineStart + width);
      if (space == std::string::npos || space <= lineStart)
        break;
      help.replace(space, 1, "\n" + std::string(column, ' '));
      lineStart = space + 1 + column;
    }
    text += left + help + "\n";
  }
  text += "On .mlir input, mlir-opt options (--pass-pipeline, "
          "--mlir-print-ir-after-all,\n--verify-diagnostics, "
          "--split-input-file) also apply.\n";
  return text;
}
