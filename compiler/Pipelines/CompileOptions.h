//===- CompileOptions.h - fsdp-opt command-line options model -------------===//
//
// Everything a user can ask of `fsdp-opt` on its command line (docs/design.md,
// "Command line"), as one plain struct with the documented defaults, a parser
// for one argv element at a time, and the cross-flag rules. Each flag is
// declared once, as a row of compiler/Pipelines/CompileFlags.def, from which
// the struct's fields, their defaults, the parser, --help and docs/flags.md
// come. It depends only on
// the C++ standard library so the rules can be unit-tested without MLIR and so
// the driver can decide, flag by flag, whether an argument is ours or belongs
// to the mlir-opt-style options (`--pass-pipeline`, `--mlir-print-ir-*`) it
// forwards to MLIR. Nothing here throws: the project builds with
// -fno-exceptions, so errors come back as strings naming the flag and the
// values it accepts.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_COMPILEOPTIONS_H
#define FSDP_COMPILER_PIPELINES_COMPILEOPTIONS_H

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fsdp {

/// The pipeline stages `--stop-after` can name, in the order they run.
enum class Stage { Import, Train, Checkpoint, Shard, Schedule, Memory };

/// "import", "train", ...: the spelling `--stop-after` accepts.
const char *stageName(Stage stage);
/// The stage spelled `name`, or nullopt for anything else.
std::optional<Stage> parseStage(const std::string &name);

enum class Mode { Train, Forward };
/// `Summary` is an import-level description of the model (parameters, ops,
/// shapes) for checking what the frontend saw before compiling anything.
/// `Binary` and `Object` are compiled steps (the plan embedded in code the
/// runtime links with); `Llvm` and `LlvmIr` print their module as LLVM
/// dialect and as LLVM IR.
enum class EmitKind { Plan, Mlir, Binary, Report, Trace, Summary, Llvm, LlvmIr, Object };
/// Whether `emit` writes a compiled step (binary, object, llvm, llvm-ir):
/// outputs that emit the plan exactly as --emit=plan does and embed it.
bool emitsCompiledStep(EmitKind emit);
/// `Hybrid` shards inside groups of `hybridGroupSize` ranks and all-reduces
/// across the groups (HSDP).
enum class ShardKind { Full, GradOp, None, Hybrid };
enum class WrapKind { Blocks, Size, Regex };
/// --ckpt. `Blocks` and `Selective` are also what fsdp-recompute-activations
/// recomputes (compiler/Transforms/RecomputeActivations.h); `Auto` chooses
/// a set of blocks against --mem-budget (compiler/Pipelines/AutoCheckpoint.h).
enum class CkptKind { None, Blocks, Selective, Auto };
/// --optimizer, and fsdp-apply-optimizer's update rule.
enum class OptimizerKind { AdamW, Sgd };
/// `Auto` keeps a loss the model already returns; `CrossEntropy` attaches
/// one to the output named in `--loss=xent:OUTPUT[,LABELS]`.
enum class LossKind { Auto, CrossEntropy };
/// F16 is fp16 mixed precision with dynamic loss scaling (torch's GradScaler).
enum class DType { F32, BF16, F16 };
enum class OffloadKind { None, Cpu };
/// The device whose cost model drives scheduling and checkpoint choices.
enum class DeviceKind { H100, A100, Cpu };
enum class ReportFormat { Text, Json };
/// Elementwise fusion when a plan is emitted; `None` keeps one kernel per op
/// (for comparing, and for reading plans op by op).
enum class FusionKind { Elementwise, None };
/// --clip-norm-type: the 2-norm, or the largest |g| (torch's norm_type=inf).
enum class ClipNormType { Two, Inf };
/// --accum-reduce: how a unit's gradient accumulates over --grad-accum's
/// micro-batches (compiler/Transforms/AccumulateMicroBatches.h).
enum class AccumReduceKind { Each, Last, Auto };
/// A switch written as a value (--cast-forward-inputs=on|off): on by default.
enum class OnOff { On, Off };

/// fsdp::defaults::FIELD: each flag's default, from its row of
/// CompileFlags.def. Pass options that mirror a flag name these as their
/// defaults (compiler/Transforms/Passes.td), so a default is written once.
namespace defaults {
#define FSDP_FLAG(NAME, FIELD, TYPE, DEFAULT, VALUE, STAGE, SCOPE, PIPELINE, HELP)            \
  inline const TYPE FIELD = DEFAULT;
#include "compiler/Pipelines/CompileFlags.def"
} // namespace defaults

/// Every fsdp-opt flag with its default. Defaults are those a user gets by
/// saying nothing; `explicitlySet` lets rules tell "left at the default" from
/// "asked for the default", which matters when a mode forbids a flag.
struct CompileOptions {
  /// One field per flag (compiler/Pipelines/CompileFlags.def says what each
  /// means), in --help order.
#define FSDP_FLAG(NAME, FIELD, TYPE, DEFAULT, VALUE, STAGE, SCOPE, PIPELINE, HELP)            \
  TYPE FIELD = defaults::FIELD;
#include "compiler/Pipelines/CompileFlags.def"

  /// Positional MODEL.onnx|MODEL.mlir and `-o`; both filled by the driver.
  std::string inputPath;
  std::string outputPath = "-"; // "-" is stdout.

  /// The parameters of parametric values, set with their flag: G of
  /// --shard=hybrid:G (0 for other kinds); N of --wrap=size:N, a unit
  /// closing once it holds at least this many parameter elements
  /// (PyTorch's size_based_auto_wrap_policy min_num_params); RE of
  /// --wrap=regex:RE, a POSIX extended regex over parameter names; OUTPUT
  /// and LABELS of --loss=xent:OUTPUT[,LABELS] (LABELS empty: the remaining
  /// input).
  int64_t hybridGroupSize = 0;
  int64_t wrapMinParams = 0;
  std::string wrapRegex;
  std::string lossOutput;
  std::string lossLabels;

  /// Blocks to checkpoint under `Blocks` or `Selective`, by index in model
  /// order (unset: all). Not a flag: --ckpt=auto resolves to Blocks with
  /// the set it chose.
  std::optional<std::vector<int64_t>> ckptBlocks;
  /// The units --accum-reduce=auto resolved to `last` (not a flag).
  std::optional<std::vector<std::string>> accumLastUnits;

  /// Flags the user gave, by name without dashes ("world-size").
  std::set<std::string> explicitlySet;
};

/// Outcome of offering one argv element to parseCompileFlag.
enum class FlagParse {
  NotOurs, // not an fsdp-opt flag: the driver passes it on to MLIR.
  Ok,
  Error, // ours, but malformed: `error` says why.
};

/// Parses one argv element such as `--world-size=8` or `--nesterov` (a
/// single leading dash also works, as in LLVM's cl). On `Ok` the value is
/// stored and the name added to `explicitlySet`; on `Error` `opts` is left
/// unchanged. A repeated flag overrides the earlier one. `-o` and the
/// positional input are the driver's and come back `NotOurs`.
FlagParse parseCompileFlag(const std::string &arg, CompileOptions &opts,
                           std::string &error);

/// Parses `value` as the value of flag `name` (no dashes: "shard") into
/// `opts`, exactly as parseCompileFlag parses "--name=value" but without
/// marking it given. Pass options that take a flag's values
/// (fsdp-shard-parameters{shard=hybrid:2}) parse with it, so the flag and the
/// pass accept the same text. On failure `error` says why ("invalid value
/// 'x'; valid: ...") and `opts` is unchanged.
bool parseFlagValue(const std::string &name, const std::string &value, CompileOptions &opts,
                    std::string &error);

/// --shard's and --wrap's values as they are written: "hybrid:2", "size:20".
std::string shardValueText(ShardKind kind, int64_t hybridGroupSize);
std::string wrapValueText(WrapKind kind, int64_t minParams, const std::string &regex);
/// --ckpt's value as written: "none", "blocks", ...
std::string ckptValueText(CkptKind kind);
/// --param-dtype's and --reduce-dtype's values as written: "f32", "bf16", "f16".
std::string dtypeText(DType dtype);

/// Why --shard=hybrid:`group` cannot split --world-size=`world` ("--shard=
/// hybrid:3: group size does not divide --world-size=4"); "" when it can.
std::string checkHybridGroup(int64_t group, int64_t world);

/// Checks the rules that involve more than one flag: hybrid group size
/// against world size, and flags only meaningful with a given --emit,
/// --optimizer or --mode (judged by `explicitlySet`, so a default never
/// conflicts). Per-value checks already happened in parseCompileFlag.
bool validateCompileOptions(const CompileOptions &opts, std::string &error);

/// Whether the step computes the gradient norm (--clip-grad-norm or
/// --log-grad-norm): fsdp-clip-gradients runs and the plan outputs
/// "grad_norm".
bool gradNormRequested(const CompileOptions &opts);

/// --weight-decay as given, else torch's default for the optimizer.
double effectiveWeightDecay(const CompileOptions &opts);

/// Whether the plan is sharded: in train mode when a flag of the shard
/// stage (STAGE Shard in CompileFlags.def) is given (--offload only as cpu:
/// host memory holds shard units, at world size 1 too, as ZeRO-Offload on
/// one GPU) or the world size exceeds one; otherwise it stays a plain
/// single-rank step (no flat buffers, no collectives).
bool shardingRequested(const CompileOptions &opts);

/// Parses a byte count such as "80GiB", "1.5GB" or "1000". Units are
/// case-sensitive: B, KB, MB, GB, TB (powers of 1000) and KiB, MiB, GiB, TiB
/// (powers of 1024). The result must be a whole number of bytes that fits in
/// int64_t.
bool parseByteSize(const std::string &text, int64_t &bytes, std::string &why);

/// True if `pattern` compiles as a POSIX extended regex (the dialect
/// llvm::Regex implements); otherwise `why` holds the compiler's message.
/// Uses regcomp rather than std::regex, which reports errors by throwing.
bool isValidRegex(const std::string &pattern, std::string &why);

/// The help text: every flag with its values and default.
std::string usage();

/// docs/flags.md: every flag of usage() as a Markdown table (value syntax,
/// default, help, the stage it acts in, whether --mode=forward refuses it),
/// printed by the hidden `fsdp-opt --help-markdown`.
std::string usageMarkdown();

/// The values of enumerated flag `name` ("optimizer"), indexed by
/// enumerator; empty for a flag that is not enumerated. Pass options that
/// take a flag's choices list them from here (compiler/Transforms/
/// PassOptions.h), so a value is spelled once. The strings live as long as
/// the program (llvm::cl keeps references to them).
const std::vector<std::string> &flagValueNames(const std::string &name);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_COMPILEOPTIONS_H
