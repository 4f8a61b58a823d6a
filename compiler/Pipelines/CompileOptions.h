//===- CompileOptions.h - fsdp-opt command-line options model -------------===//
//
// Everything a user can ask of `fsdp-opt` on its command line (docs/design.md,
// "Command line"), as one plain struct with the documented defaults, a parser
// for one argv element at a time, and the cross-flag rules. It depends only on
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
enum class CkptKind { None, Blocks, Selective, Auto };
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

/// Every fsdp-opt flag with its default. Defaults are those a user gets by
/// saying nothing; `explicitlySet` lets rules tell "left at the default" from
/// "asked for the default", which matters when a mode forbids a flag.
struct CompileOptions {
  /// Positional MODEL.onnx|MODEL.mlir and `-o`; both filled by the driver.
  std::string inputPath;
  std::string outputPath = "-"; // "-" is stdout.

  Mode mode = Mode::Train;
  EmitKind emit = EmitKind::Plan;
  /// Unset runs every stage.
  std::optional<Stage> stopAfter;

  int64_t worldSize = 1;
  ShardKind shard = ShardKind::Full;
  int64_t hybridGroupSize = 0; // G of hybrid:G; 0 for other kinds.
  WrapKind wrap = WrapKind::Blocks;
  /// N of size:N: a unit closes once it holds at least this many parameter
  /// elements (PyTorch's size_based_auto_wrap_policy min_num_params).
  int64_t wrapMinParams = 0;
  /// RE of regex:RE, a POSIX extended regex over parameter names.
  std::string wrapRegex;

  CkptKind ckpt = CkptKind::None;
  /// Blocks to checkpoint under `Blocks` or `Selective`, by index in model
  /// order (unset: all). Not a flag: --ckpt=auto resolves to Blocks with
  /// the set it chose.
  std::optional<std::vector<int64_t>> ckptBlocks;
  int64_t prefetch = 1;        // units gathered ahead of use; 0 disables.
  int64_t limitAllGathers = 2; // all-gathers in flight at once.
  /// --grad-accum=K: micro-batches per optimizer step; --accum-reduce:
  /// how each unit accumulates (auto: chosen against --mem-budget).
  int64_t gradAccum = 1;
  AccumReduceKind accumReduce = AccumReduceKind::Auto;
  /// The units --accum-reduce=auto resolved to `last` (not a flag).
  std::optional<std::vector<std::string>> accumLastUnits;

  OptimizerKind optimizer = OptimizerKind::AdamW;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Decoupled (AdamW) or L2 (SGD) weight decay; one field for both. The
  /// default is torch's: 0.01 for AdamW, 0 for SGD (see effectiveWeightDecay).
  double weightDecay = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
  /// --freeze=RE: float initializers that are not trained (torch buffers
  /// such as a positional table); --no-decay=RE: parameters without weight
  /// decay. POSIX extended regexes over parameter names; empty: none.
  std::string freezeRegex;
  std::string noDecayRegex;
  /// --params=FILE: the parameter manifest of an ONNX model
  /// (frontends/onnx/ParameterManifest.h); empty: MODEL.onnx.params.json
  /// when that file exists.
  std::string paramsPath;

  LossKind loss = LossKind::Auto;
  std::string lossOutput; // OUTPUT of xent:OUTPUT[,LABELS].
  std::string lossLabels; // LABELS, or empty to use the remaining input.

  DType paramDtype = DType::F32;
  DType reduceDtype = DType::F32;
  /// Dynamic loss scaling (--param-dtype=f16): good steps after which the
  /// scale doubles (torch.amp.GradScaler's growth_interval).
  int64_t lossScaleGrowthInterval = 2000;
  OffloadKind offload = OffloadKind::None;
  /// Bytes per rank a plan may use; unset means no limit.
  std::optional<int64_t> memBudget;
  DeviceKind device = DeviceKind::H100;
  ReportFormat reportFormat = ReportFormat::Text;
  FusionKind fusion = FusionKind::Elementwise;
  /// --clip-grad-norm=MAX (0: not given) and --clip-norm-type: torch's
  /// clip_grad_norm_ before the optimizer; --log-grad-norm computes and
  /// outputs the norm without clipping (any clipping outputs it too).
  double clipGradNorm = 0;
  ClipNormType clipNormType = ClipNormType::Two;
  bool logGradNorm = false;

  /// --embed-weights: a compiled step carries its weights instead of
  /// reading them from the file beside it.
  bool embedWeights = false;

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

/// The flags of the shard stage. A training plan is sharded when any is
/// given (--offload only as cpu: host memory holds shard units, at world
/// size 1 too, as ZeRO-Offload on one GPU) or the world size exceeds one;
/// otherwise it stays a plain single-rank step (no flat buffers, no
/// collectives).
inline constexpr const char *kShardFlags[] = {"world-size", "shard",        "wrap",
                                              "param-dtype", "reduce-dtype", "offload"};
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

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_COMPILEOPTIONS_H
