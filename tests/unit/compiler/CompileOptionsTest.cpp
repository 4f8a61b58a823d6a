//===- CompileOptionsTest.cpp - fsdp-opt command-line options -------------===//
//
// The command line is the user's contract (docs/design.md): these tests pin every
// flag's accepted spellings and defaults, the exact wording of errors (users
// and scripts read them), the byte-size grammar of --mem-budget, the
// cross-flag rules, and which arguments are left to MLIR's own options.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"

#include <gtest/gtest.h>

#include <limits>
#include <utility>
#include <vector>

using namespace fsdp;

namespace {

/// Parses `args` in order; returns the first error, or "" if all were Ok.
/// An argument that is not ours counts as an error, so a typo in a test
/// cannot pass silently.
std::string parse(const std::vector<std::string> &args, CompileOptions &opts) {
  for (const std::string &arg : args) {
    std::string error;
    FlagParse result = parseCompileFlag(arg, opts, error);
    if (result == FlagParse::NotOurs)
      return "not ours: " + arg;
    if (result == FlagParse::Error)
      return error;
  }
  return "";
}

CompileOptions parsed(const std::vector<std::string> &args) {
  CompileOptions opts;
  std::string error = parse(args, opts);
  EXPECT_EQ(error, "");
  return opts;
}

std::string parseError(const std::string &arg) {
  CompileOptions opts;
  return parse({arg}, opts);
}

/// Parses then validates; "" when both succeed.
std::string validationError(const std::vector<std::string> &args) {
  CompileOptions opts;
  std::string error = parse(args, opts);
  if (error.empty() && !validateCompileOptions(opts, error) && error.empty())
    return "validation failed without a message";
  return error;
}

TEST(CompileOptionsTest, Defaults) {
  CompileOptions opts;
  EXPECT_EQ(opts.outputPath, "-");
  EXPECT_EQ(opts.mode, Mode::Train);
  EXPECT_EQ(opts.emit, EmitKind::Plan);
  EXPECT_FALSE(opts.stopAfter.has_value());
  EXPECT_EQ(opts.worldSize, 1);
  EXPECT_EQ(opts.shard, ShardKind::Full);
  EXPECT_EQ(opts.wrap, WrapKind::Blocks);
  EXPECT_EQ(opts.ckpt, CkptKind::None);
  EXPECT_EQ(opts.prefetch, 1);
  EXPECT_EQ(opts.limitAllGathers, 2);
  EXPECT_EQ(opts.optimizer, OptimizerKind::AdamW);
  EXPECT_EQ(opts.lr, 1e-3);
  EXPECT_EQ(opts.beta1, 0.9);
  EXPECT_EQ(opts.beta2, 0.999);
  EXPECT_EQ(opts.eps, 1e-8);
  EXPECT_EQ(opts.weightDecay, 0.01);
  EXPECT_EQ(opts.momentum, 0.0);
  EXPECT_FALSE(opts.nesterov);
  EXPECT_EQ(opts.loss, LossKind::Auto);
  EXPECT_EQ(opts.paramDtype, DType::F32);
  EXPECT_EQ(opts.reduceDtype, DType::F32);
  EXPECT_EQ(opts.offload, OffloadKind::None);
  EXPECT_FALSE(opts.memBudget.has_value());
  EXPECT_EQ(opts.device, DeviceKind::H100);
  EXPECT_EQ(opts.reportFormat, ReportFormat::Text);
  EXPECT_TRUE(opts.explicitlySet.empty());
  std::string error;
  EXPECT_TRUE(validateCompileOptions(opts, error)) << error;
}

TEST(CompileOptionsTest, StageNamesRoundTripInPipelineOrder) {
  const char *names[] = {"import", "train",    "checkpoint",
                         "shard",  "schedule", "memory"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(stageName(Stage(i)), std::string(names[i]));
    EXPECT_EQ(parseStage(names[i]), Stage(i));
  }
  EXPECT_LT(Stage::Import, Stage::Train);
  // Checkpointing runs before sharding (compiler/Transforms/RecomputeActivations.h).
  EXPECT_LT(Stage::Checkpoint, Stage::Shard);
  EXPECT_LT(Stage::Schedule, Stage::Memory);
  EXPECT_EQ(parseStage("Import"), std::nullopt);
  EXPECT_EQ(parseStage(""), std::nullopt);
}

TEST(CompileOptionsTest, EnumFlagsAcceptEveryValue) {
  CompileOptions opts =
      parsed({"--mode=forward", "--emit=summary", "--stop-after=checkpoint",
              "--ckpt=selective", "--optimizer=sgd", "--param-dtype=bf16",
              "--reduce-dtype=bf16", "--offload=cpu", "--device=a100",
              "--report-format=json"});
  EXPECT_EQ(opts.mode, Mode::Forward);
  EXPECT_EQ(opts.emit, EmitKind::Summary);
  EXPECT_EQ(opts.stopAfter, Stage::Checkpoint);
  EXPECT_EQ(opts.ckpt, CkptKind::Selective);
  EXPECT_EQ(opts.optimizer, OptimizerKind::Sgd);
  EXPECT_EQ(opts.paramDtype, DType::BF16);
  EXPECT_EQ(opts.reduceDtype, DType::BF16);
  EXPECT_EQ(opts.offload, OffloadKind::Cpu);
  EXPECT_EQ(opts.device, DeviceKind::A100);
  EXPECT_EQ(opts.reportFormat, ReportFormat::Json);

  // The rest, then back to each default spelled out.
  opts = parsed({"--emit=mlir", "--ckpt=blocks", "--device=cpu"});
  EXPECT_EQ(opts.emit, EmitKind::Mlir);
  EXPECT_EQ(opts.ckpt, CkptKind::Blocks);
  EXPECT_EQ(opts.device, DeviceKind::Cpu);
  EXPECT_EQ(parsed({"--emit=binary"}).emit, EmitKind::Binary);
  EXPECT_EQ(parsed({"--emit=report"}).emit, EmitKind::Report);
  EXPECT_EQ(parsed({"--emit=trace"}).emit, EmitKind::Trace);
  EXPECT_EQ(parsed({"--emit=llvm"}).emit, EmitKind::Llvm);
  EXPECT_EQ(parsed({"--emit=llvm-ir"}).emit, EmitKind::LlvmIr);
  EXPECT_EQ(parsed({"--emit=object"}).emit, EmitKind::Object);
  EXPECT_TRUE(parsed({"--embed-weights"}).embedWeights);
  EXPECT_EQ(parsed({"--ckpt=auto"}).ckpt, CkptKind::Auto);
  opts =
      parsed({"--mode=forward", "--mode=train", "--emit=summary", "--emit=plan",
              "--ckpt=auto", "--ckpt=none", "--optimizer=sgd",
              "--optimizer=adamw", "--param-dtype=bf16", "--param-dtype=f32",
              "--offload=cpu", "--offload=none", "--device=cpu",
              "--device=h100", "--report-format=json", "--report-format=text"});
  EXPECT_EQ(opts.mode, Mode::Train);
  EXPECT_EQ(opts.emit, EmitKind::Plan);
  EXPECT_EQ(opts.ckpt, CkptKind::None);
  EXPECT_EQ(opts.optimizer, OptimizerKind::AdamW);
  EXPECT_EQ(opts.paramDtype, DType::F32);
  EXPECT_EQ(opts.offload, OffloadKind::None);
  EXPECT_EQ(opts.device, DeviceKind::H100);
  EXPECT_EQ(opts.reportFormat, ReportFormat::Text);
  EXPECT_EQ(parsed({"--stop-after=import"}).stopAfter, Stage::Import);
  EXPECT_EQ(parsed({"--param-dtype=f16"}).paramDtype, DType::F16);
  EXPECT_EQ(parsed({"--reduce-dtype=f16"}).reduceDtype, DType::F16);
}

TEST(CompileOptionsTest, ParametricFlags) {
  CompileOptions opts = parsed({"--shard=hybrid:4", "--wrap=size:1000000",
                                "--loss=xent:logits,targets"});
  EXPECT_EQ(opts.shard, ShardKind::Hybrid);
  EXPECT_EQ(opts.hybridGroupSize, 4);
  EXPECT_EQ(opts.wrap, WrapKind::Size);
  EXPECT_EQ(opts.wrapMinParams, 1000000);
  EXPECT_EQ(opts.loss, LossKind::CrossEntropy);
  EXPECT_EQ(opts.lossOutput, "logits");
  EXPECT_EQ(opts.lossLabels, "targets");

  opts = parsed({"--wrap=regex:^layers\\.[0-9]+\\.", "--loss=xent:logits",
                 "--shard=grad-op"});
  EXPECT_EQ(opts.wrap, WrapKind::Regex);
  EXPECT_EQ(opts.wrapRegex, "^layers\\.[0-9]+\\.");
  EXPECT_EQ(opts.lossOutput, "logits");
  EXPECT_EQ(opts.lossLabels, "");
  EXPECT_EQ(opts.shard, ShardKind::GradOp);
  EXPECT_EQ(parsed({"--shard=none"}).shard, ShardKind::None);
  // A later flag also clears the parameter of an earlier one.
  opts = parsed({"--shard=hybrid:2", "--shard=full", "--wrap=size:5",
                 "--wrap=blocks", "--loss=xent:y,t", "--loss=auto"});
  EXPECT_EQ(opts.shard, ShardKind::Full);
  EXPECT_EQ(opts.hybridGroupSize, 0);
  EXPECT_EQ(opts.wrap, WrapKind::Blocks);
  EXPECT_EQ(opts.wrapMinParams, 0);
  EXPECT_EQ(opts.loss, LossKind::Auto);
  EXPECT_EQ(opts.lossOutput, "");
  EXPECT_EQ(opts.lossLabels, "");
}

TEST(CompileOptionsTest, NumericFlags) {
  CompileOptions opts = parsed(
      {"--world-size=8", "--prefetch=0", "--limit-all-gathers=1", "--lr=3e-4",
       "--beta1=0", "--beta2=0.95", "--eps=1e-6", "--weight-decay=0",
       "--momentum=0.9", "--nesterov", "--mem-budget=80GiB"});
  EXPECT_EQ(opts.worldSize, 8);
  EXPECT_EQ(opts.prefetch, 0);
  EXPECT_EQ(opts.limitAllGathers, 1);
  EXPECT_EQ(opts.lr, 3e-4);
  EXPECT_EQ(opts.beta1, 0.0);
  EXPECT_EQ(opts.beta2, 0.95);
  EXPECT_EQ(opts.eps, 1e-6);
  EXPECT_EQ(opts.weightDecay, 0.0);
  EXPECT_EQ(opts.momentum, 0.9);
  EXPECT_TRUE(opts.nesterov);
  EXPECT_EQ(opts.memBudget, int64_t(85899345920));
  EXPECT_EQ(parsed({"--prefetch=3"}).prefetch, 3);
  EXPECT_EQ(parsed({"--limit-all-gathers=4"}).limitAllGathers, 4);
  // Gradient clipping: off unless asked; any of its flags computes the norm.
  EXPECT_FALSE(gradNormRequested(parsed({})));
  opts = parsed({"--clip-grad-norm=1.5", "--clip-norm-type=inf"});
  EXPECT_EQ(opts.clipGradNorm, 1.5);
  EXPECT_EQ(opts.clipNormType, ClipNormType::Inf);
  EXPECT_TRUE(gradNormRequested(opts));
  EXPECT_EQ(parsed({"--clip-grad-norm=2"}).clipNormType, ClipNormType::Two);
  EXPECT_TRUE(parsed({"--log-grad-norm"}).logGradNorm);
  EXPECT_TRUE(gradNormRequested(parsed({"--log-grad-norm"})));
  EXPECT_EQ(parsed({}).gradAccum, 1);
  EXPECT_EQ(parsed({}).accumReduce, AccumReduceKind::Auto);
  CompileOptions accum = parsed({"--grad-accum=4", "--accum-reduce=last"});
  EXPECT_EQ(accum.gradAccum, 4);
  EXPECT_EQ(accum.accumReduce, AccumReduceKind::Last);
  EXPECT_EQ(parsed({"--loss-scale-growth-interval=7"}).lossScaleGrowthInterval, 7);
  EXPECT_EQ(CompileOptions().lossScaleGrowthInterval, 2000); // torch's GradScaler
}

TEST(CompileOptionsTest, InvalidValuesNameTheFlagAndValidValues) {
  // {argument, reason}; the message is "--FLAG: invalid value 'V'; REASON".
  const std::pair<std::string, std::string> cases[] = {
      {"--mode=eval", "valid: train, forward"},
      {"--emit=ir", "valid: plan, mlir, binary, report, trace, summary, llvm, llvm-ir, object"},
      {"--stop-after=lower",
       "valid: import, train, checkpoint, shard, schedule, memory"},
      {"--shard=fulll", "valid: full, grad-op, none, hybrid:G"},
      {"--shard=hybrid", "valid: full, grad-op, none, hybrid:G"},
      {"--shard=hybrid:", "G must be an integer"},
      {"--shard=hybrid:x", "G must be an integer"},
      {"--shard=hybrid:0", "G must be >= 1"},
      {"--wrap=layers", "valid: blocks, size:N, regex:RE"},
      {"--wrap=size:0", "N must be >= 1"},
      {"--wrap=size:1e6", "N must be an integer"},
      {"--wrap=regex:", "RE is not a valid regex: empty pattern"},
      {"--ckpt=full", "valid: none, blocks, selective, auto"},
      {"--optimizer=adam", "valid: adamw, sgd"},
      {"--loss=mse", "valid: auto, xent:OUTPUT[,LABELS]"},
      {"--loss=xent:", "OUTPUT and LABELS must not be empty"},
      {"--loss=xent:,labels", "OUTPUT and LABELS must not be empty"},
      {"--loss=xent:logits,", "OUTPUT and LABELS must not be empty"},
      {"--param-dtype=fp16", "valid: f32, bf16, f16"},
      {"--reduce-dtype=F32", "valid: f32, bf16, f16"},
      {"--loss-scale-growth-interval=0", "must be >= 1"},
      {"--offload=gpu", "valid: none, cpu"},
      {"--device=v100", "valid: h100, a100, cpu"},
      {"--report-format=yaml", "valid: text, json"},
      {"--world-size=8x", "must be an integer"},
      {"--world-size=0", "must be >= 1"},
      {"--world-size=-2", "must be >= 1"},
      {"--world-size=", "must be an integer"},
      {"--world-size= 8", "must be an integer"},
      {"--world-size=+8", "must be an integer"},
      {"--world-size=99999999999999999999", "must be an integer"},
      {"--prefetch=-1", "must be >= 0"},
      {"--limit-all-gathers=0", "must be >= 1"},
      {"--lr=0", "must be > 0"},
      {"--lr=-1e-3", "must be > 0"},
      {"--lr=1e-3x", "must be a finite number"},
      {"--lr=fast", "must be a finite number"},
      {"--lr=nan", "must be a finite number"},
      {"--lr=inf", "must be a finite number"},
      {"--lr=1e999", "must be a finite number"},
      {"--lr=", "must be a finite number"},
      {"--lr= 0.1", "must be a finite number"},
      {"--beta1=1", "must be in [0, 1)"},
      {"--beta1=-0.1", "must be in [0, 1)"},
      {"--beta2=1.5", "must be in [0, 1)"},
      {"--eps=0", "must be > 0"},
      {"--weight-decay=-0.01", "must be >= 0"},
      {"--momentum=-0.5", "must be >= 0"},
      {"--mem-budget=0", "must be > 0"},
      {"--clip-grad-norm=-1", "must be > 0"},
      {"--clip-grad-norm=0", "must be > 0"},
      {"--clip-grad-norm=abc", "must be a finite number"},
      {"--clip-grad-norm=inf", "must be a finite number"},
      {"--clip-norm-type=1", "valid: 2, inf"},
      {"--mem-budget=80gb",
       "unknown unit 'gb'; valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"},
  };
  for (const auto &[arg, reason] : cases) {
    size_t equals = arg.find('=');
    std::string expected = arg.substr(0, equals) + ": invalid value '" +
                           arg.substr(equals + 1) + "'; " + reason;
    EXPECT_EQ(parseError(arg), expected);
  }
  EXPECT_EQ(parseError("--nesterov=true"), "--nesterov: takes no value");
  EXPECT_EQ(parseError("--world-size"),
            "--world-size: missing value; use --world-size=N");
  EXPECT_EQ(parseError("--shard"),
            "--shard: missing value; use --shard=full|grad-op|none|hybrid:G");
}

TEST(CompileOptionsTest, InvalidRegexReportsTheRegexError) {
  std::string error = parseError("--wrap=regex:layers.(");
  EXPECT_EQ(error.rfind("--wrap: invalid value 'regex:layers.('; RE is not a "
                        "valid regex: ",
                        0),
            0u)
      << error;
  std::string why;
  EXPECT_TRUE(isValidRegex("^layers\\.[0-9]+\\.(attn|mlp)$", why));
  EXPECT_EQ(why, "");
  EXPECT_FALSE(isValidRegex("[a-", why));
  EXPECT_NE(why, "");
  EXPECT_FALSE(isValidRegex("", why));
  EXPECT_EQ(why, "empty pattern");
  // Adjacent repetitions blow up regcomp (found by fuzz-compile-flags).
  EXPECT_FALSE(isValidRegex("mize" + std::string(30, '+'), why));
  EXPECT_NE(why.find("adjacent repetition operators at offset 5"), std::string::npos) << why;
  EXPECT_FALSE(isValidRegex("a*{2}", why));
  EXPECT_FALSE(isValidRegex("a{1,2}+", why));
  EXPECT_TRUE(isValidRegex("a+b*c?d{2}", why)) << why;
  EXPECT_TRUE(isValidRegex("[+*]+\\++", why)) << why;
  EXPECT_TRUE(isValidRegex("[]+]+", why)) << why;
  EXPECT_FALSE(isValidRegex(std::string(5000, 'a'), why));
}

TEST(CompileOptionsTest, ErrorsLeaveOptionsUnchanged) {
  CompileOptions opts = parsed({"--shard=hybrid:2", "--wrap=size:7"});
  std::string error;
  EXPECT_EQ(parseCompileFlag("--shard=hybrid:0", opts, error),
            FlagParse::Error);
  EXPECT_EQ(parseCompileFlag("--wrap=regex:(", opts, error), FlagParse::Error);
  EXPECT_EQ(parseCompileFlag("--lr=-1", opts, error), FlagParse::Error);
  EXPECT_EQ(parseCompileFlag("--mem-budget=1XB", opts, error),
            FlagParse::Error);
  EXPECT_EQ(opts.shard, ShardKind::Hybrid);
  EXPECT_EQ(opts.hybridGroupSize, 2);
  EXPECT_EQ(opts.wrap, WrapKind::Size);
  EXPECT_EQ(opts.wrapMinParams, 7);
  EXPECT_EQ(opts.lr, 1e-3);
  EXPECT_FALSE(opts.memBudget.has_value());
  EXPECT_EQ(opts.explicitlySet, (std::set<std::string>{"shard", "wrap"}));
}

TEST(CompileOptionsTest, RecordsExplicitFlagsAndAcceptsOneDash) {
  CompileOptions opts =
      parsed({"-world-size=4", "--nesterov", "--world-size=2", "--lr=0.001"});
  EXPECT_EQ(opts.worldSize, 2); // The last occurrence wins.
  EXPECT_EQ(opts.explicitlySet,
            (std::set<std::string>{"world-size", "nesterov", "lr"}));
}

TEST(CompileOptionsTest, OtherArgumentsAreNotOurs) {
  const char *others[] = {"--mlir-print-ir-after-all",
                          "--pass-pipeline=builtin.module(canonicalize)",
                          "--verify-diagnostics",
                          "--split-input-file",
                          "-o",
                          "out.plan",
                          "model.onnx",
                          "world-size=2",
                          "-",
                          "--",
                          "--world-sizes=2",
                          "--Mode=train",
                          "---mode=train",
                          "--help"};
  for (const char *arg : others) {
    CompileOptions opts;
    std::string error;
    EXPECT_EQ(parseCompileFlag(arg, opts, error), FlagParse::NotOurs) << arg;
    EXPECT_EQ(error, "") << arg;
    EXPECT_TRUE(opts.explicitlySet.empty()) << arg;
  }
}

TEST(CompileOptionsTest, ByteSizes) {
  // clang-format off
  const std::pair<const char *, int64_t> good[] = {
      {"80GiB", 85899345920}, {"1.5GB", 1500000000}, {"512MiB", 536870912},
      {"1000", 1000},         {"64KiB", 65536},      {"7B", 7},
      {"2KB", 2000},          {"3MB", 3000000},      {"1TB", 1000000000000},
      {"0.5KiB", 512},        {"1.250KB", 1250},     {"1TiB", 1099511627776},
      {"0", 0},               {"2.0B", 2},           {"007MB", 7000000}};
  // clang-format on
  for (const auto &[text, expected] : good) {
    int64_t bytes = -1;
    std::string why;
    EXPECT_TRUE(parseByteSize(text, bytes, why)) << text << ": " << why;
    EXPECT_EQ(bytes, expected) << text;
  }
  // The largest sizes that fit: 2^63 - 2^40 and 2^63 - 1.
  int64_t bytes = 0;
  std::string why;
  EXPECT_TRUE(parseByteSize("8388607TiB", bytes, why));
  EXPECT_EQ(bytes,
            std::numeric_limits<int64_t>::max() - (int64_t(1) << 40) + 1);
  EXPECT_TRUE(parseByteSize("9223372036854775807", bytes, why));
  EXPECT_EQ(bytes, std::numeric_limits<int64_t>::max());

  const std::string number = "expected a number and a unit, such as 80GiB "
                             "or 1.5GB";
  const std::string units = "; valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB";
  const std::string tooLarge = "too large (the limit is 2^63-1 bytes)";
  const std::pair<std::string, std::string> bad[] = {
      {"", "empty size"},
      {"-1GiB", "size must not be negative"},
      {"GiB", number},
      {"1.GB", number},
      {".5GB", number},
      {"1.2.3GB", number},
      {"+1GB", number},
      {"80gib", "unknown unit 'gib'" + units},
      {"80 GiB", "unknown unit ' GiB'" + units},
      {"80PiB", "unknown unit 'PiB'" + units},
      {"1e9", "unknown unit 'e9'" + units},
      {"1.5B", "'1.5B' is not a whole number of bytes"},
      {"0.1KiB", "'0.1KiB' is not a whole number of bytes"},
      {"99999999999TiB", tooLarge},
      {"8388608TiB", tooLarge},
      {"9223372036854775808", tooLarge},
      {"99999999999999999999999999999999GB", tooLarge},
      {"1.0000000000000000001GB", "too many fractional digits"},
      {"1." + std::string(200, '1') + "B", "too many fractional digits"}};
  for (const auto &[text, expected] : bad) {
    int64_t untouched = 42;
    std::string reason;
    EXPECT_FALSE(parseByteSize(text, untouched, reason)) << text;
    EXPECT_EQ(reason, expected) << text;
    EXPECT_EQ(untouched, 42) << text;
  }
}

TEST(CompileOptionsTest, CrossFlagRules) {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--world-size=8", "--shard=hybrid:4"}, ""},
      {{"--clip-grad-norm=1", "--clip-norm-type=inf"}, ""},
      {{"--clip-norm-type=inf"}, "--clip-norm-type requires --clip-grad-norm=MAX"},
      {{"--mode=forward", "--clip-grad-norm=1"}, "--clip-grad-norm requires --mode=train"},
      {{"--mode=forward", "--log-grad-norm"}, "--log-grad-norm requires --mode=train"},
      {{"--emit=mlir", "--stop-after=shard", "--log-grad-norm"}, ""},
      {{"--emit=mlir", "--stop-after=checkpoint", "--clip-grad-norm=1"},
       "--clip-grad-norm acts after the shard stage, which this output does not run (it "
       "needs --emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later)"},
      {{"--world-size=8", "--shard=hybrid:8"}, ""},
      {{"--world-size=8", "--shard=hybrid:1"}, ""},
      {{"--world-size=8", "--shard=hybrid:3"},
       "--shard=hybrid:3: group size does not divide --world-size=8"},
      {{"--world-size=4", "--shard=hybrid:8"},
       "--shard=hybrid:8: group size exceeds --world-size=4"},
      {{"--shard=hybrid:2"},
       "--shard=hybrid:2: group size exceeds --world-size=1"},
      {{"--emit=mlir", "--stop-after=shard"}, ""},
      {{"--stop-after=shard"}, "--stop-after requires --emit=mlir"},
      {{"--emit=report", "--report-format=json"}, ""},
      {{"--report-format=text"}, "--report-format requires --emit=report"},
      {{"--optimizer=sgd", "--momentum=0.9", "--nesterov"}, ""},
      {{"--momentum=0.9"}, "--momentum requires --optimizer=sgd"},
      {{"--optimizer=adamw", "--nesterov"},
       "--nesterov requires --optimizer=sgd"},
      {{"--optimizer=sgd", "--nesterov"}, "--nesterov requires --momentum > 0"},
      {{"--optimizer=sgd", "--beta1=0.8"},
       "--beta1 requires --optimizer=adamw"},
      {{"--optimizer=sgd", "--beta2=0.9"},
       "--beta2 requires --optimizer=adamw"},
      {{"--optimizer=sgd", "--eps=1e-6"}, "--eps requires --optimizer=adamw"},
      {{"--optimizer=sgd", "--weight-decay=0"}, ""},
      {{"--grad-accum=2", "--accum-reduce=each"}, ""},
      {{"--accum-reduce=last"}, "--accum-reduce requires --grad-accum=K with K > 1"},
      {{"--grad-accum=1", "--accum-reduce=auto"},
       "--accum-reduce requires --grad-accum=K with K > 1"},
      {{"--mode=forward", "--grad-accum=2"}, "--grad-accum requires --mode=train"},
      {{"--beta1=0.8", "--beta2=0.9", "--eps=1e-6"}, ""},
      {{"--mode=forward", "--world-size=1", "--emit=report", "--report-format=json",
        "--mem-budget=1GiB", "--device=cpu"},
       ""},
      // Offload moves a training step's shards: forward plans have none,
      // and IR printed before the shard stage has not moved them yet.
      {{"--mode=forward", "--offload=cpu"}, "--offload requires --mode=train"},
      {{"--emit=mlir", "--stop-after=train", "--offload=cpu"},
       "--offload acts in the shard stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later)"},
      {{"--offload=cpu"}, ""},
      // A forward plan computes in --param-dtype too; only the reduction
      // is training's.
      {{"--mode=forward", "--param-dtype=bf16"}, ""},
      {{"--mode=forward", "--reduce-dtype=bf16"}, "--reduce-dtype requires --mode=train"},
      {{"--output-dtype=f32"}, "--output-dtype needs --param-dtype=bf16 or f16 (it shapes the "
                               "low-precision compute; with f32 parameters there is nothing to "
                               "cast)"},
      // fp16 loss scaling: an f32 or f16 reduce of f16 parameters only.
      {{"--param-dtype=f16"}, ""},
      {{"--param-dtype=f16", "--reduce-dtype=f16", "--loss-scale-growth-interval=4"}, ""},
      {{"--param-dtype=f16", "--reduce-dtype=bf16"},
       "--param-dtype=f16 needs --reduce-dtype=f32 or f16, not bf16 (loss-scaled gradients are "
       "reduced in the precision they were scaled for)"},
      {{"--param-dtype=bf16", "--reduce-dtype=f16"},
       "--reduce-dtype=f16 needs --param-dtype=f16 (only loss-scaled gradients keep their small "
       "values in half precision)"},
      {{"--reduce-dtype=f16"},
       "--reduce-dtype=f16 needs --param-dtype=f16 (only loss-scaled gradients keep their small "
       "values in half precision)"},
      {{"--param-dtype=bf16", "--loss-scale-growth-interval=4"},
       "--loss-scale-growth-interval requires --param-dtype=f16 (only f16 scales the loss)"},
      {{"--param-dtype=f16", "--offload=cpu"},
       "--param-dtype=f16 with --offload=cpu is not supported yet (the skipped-step flag lives "
       "in device memory, the offloaded optimizer on the host)"},
      {{"--emit=mlir", "--mem-budget=8GiB"},
       "--mem-budget requires --emit=plan or --emit=report (or a compiled step: binary, object, "
       "llvm, llvm-ir)"},
      {{"--emit=binary", "--mem-budget=8GiB", "--embed-weights", "--device=cpu"}, ""},
      {{"--emit=llvm", "--embed-weights"},
       "--embed-weights requires --emit=binary or --emit=object (the other outputs write no "
       "step)"},
      // Scheduling flags need all-gathers to schedule.
      {{"--prefetch=2"},
       "--prefetch schedules the all-gathers of a sharded step, and this plan is not sharded "
       "(give --world-size=N or --shard)"},
      {{"--world-size=2", "--shard=none", "--limit-all-gathers=1"},
       "--limit-all-gathers schedules the all-gathers of a sharded step, and --shard=none has "
       "none"},
      {{"--world-size=2", "--prefetch=2", "--limit-all-gathers=3"}, ""},
      {{"--shard=full", "--prefetch=0"}, ""},
      {{"--emit=plan", "--mem-budget=8GiB"}, ""},
      // Distribution flags need the shard stage to run.
      {{"--emit=mlir", "--stop-after=train", "--world-size=2"},
       "--world-size acts in the shard stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later)"},
      {{"--emit=summary", "--param-dtype=bf16"},
       "--param-dtype acts in the shard stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later)"},
      {{"--emit=mlir", "--stop-after=shard", "--world-size=2", "--shard=hybrid:2"}, ""},
      {{"--emit=mlir", "--stop-after=checkpoint", "--world-size=2"},
       "--world-size acts in the shard stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=shard or later)"},
      // --ckpt needs the checkpoint stage to run.
      {{"--emit=mlir", "--stop-after=train", "--ckpt=blocks"},
       "--ckpt acts in the checkpoint stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=checkpoint or later)"},
      {{"--emit=summary", "--ckpt=selective"},
       "--ckpt acts in the checkpoint stage, which this output does not run (it needs "
       "--emit=plan or --emit=report, or --emit=mlir with --stop-after=checkpoint or later)"},
      {{"--emit=mlir", "--stop-after=checkpoint", "--ckpt=blocks"}, ""},
      {{"--emit=report", "--ckpt=selective"}, ""},
      {{"--mode=forward", "--ckpt=blocks"}, "--ckpt requires --mode=train"},
      {{"--mode=forward", "--world-size=2"},
       "--world-size=2 requires --mode=train: forward plans run on one rank"},
      // Training flags need the train stage to run.
      {{"--emit=summary", "--lr=0.1"},
       "--lr acts in the train stage, which this output does not run (it needs "
       "--emit=plan, or --emit=mlir with --stop-after=train or later)"},
      {{"--emit=mlir", "--stop-after=import", "--freeze=pe"},
       "--freeze acts in the train stage, which this output does not run (it needs "
       "--emit=plan, or --emit=mlir with --stop-after=train or later)"},
      {{"--emit=mlir", "--stop-after=train", "--freeze=pe"}, ""},
      // Forward mode names the training flag, not the optimizer mismatch.
      {{"--mode=forward", "--momentum=0.5"},
       "--momentum requires --mode=train"},
  };
  for (const auto &[args, expected] : cases)
    EXPECT_EQ(validationError(args), expected) << args.back();

  const std::string trainingOnly[] = {
      "--shard=full",      "--wrap=blocks",      "--ckpt=none",
      "--prefetch=1",      "--lr=0.1",           "--beta1=0.9",
      "--beta2=0.99",      "--eps=1e-8",         "--nesterov",
      "--loss=auto",       "--reduce-dtype=f32", "--momentum=0",
      "--optimizer=adamw", "--weight-decay=0",   "--limit-all-gathers=2"};
  for (const std::string &arg : trainingOnly)
    EXPECT_EQ(validationError({"--mode=forward", arg}),
              arg.substr(0, arg.find('=')) + " requires --mode=train");
}

TEST(CompileOptionsTest, ValidateChecksOptionsBuiltInCode) {
  CompileOptions opts;
  std::string error = "stale";
  opts.loss = LossKind::CrossEntropy;
  EXPECT_FALSE(validateCompileOptions(opts, error));
  EXPECT_EQ(error, "--loss=xent:OUTPUT needs a non-empty OUTPUT");
  opts = CompileOptions();
  opts.shard = ShardKind::Hybrid;
  EXPECT_FALSE(validateCompileOptions(opts, error));
  EXPECT_EQ(error, "--shard=hybrid:0: G must be >= 1");
  opts = CompileOptions();
  opts.mode = Mode::Forward;
  opts.worldSize = 3;
  EXPECT_FALSE(validateCompileOptions(opts, error));
  EXPECT_EQ(error,
            "--world-size=3 requires --mode=train: forward plans run on one "
            "rank");
}

TEST(CompileOptionsTest, UsageListsEveryFlagWithValuesAndDefault) {
  std::string text = usage();
  EXPECT_EQ(text.rfind("usage: fsdp-opt MODEL.onnx|MODEL.mlir [-o OUT] "
                       "[options]\n  -o OUT ",
                       0),
            0u);
  // Each flag starts a line, followed by its help or, if long, a newline.
  for (const char *flag :
       {"mode=train|forward",
        "emit=plan|mlir|binary|report|trace|summary|llvm|llvm-ir|object\n",
        "stop-after=import|train|checkpoint|shard|schedule|memory\n",
        "world-size=N ",
        "shard=full|grad-op|none|hybrid:G\n",
        "wrap=blocks|size:N|regex:RE ",
        "ckpt=none|blocks|selective|auto\n",
        "prefetch=K ",
        "limit-all-gathers=K ",
        "grad-accum=K ",
        "accum-reduce=each|last|auto ",
        "optimizer=adamw|sgd ",
        "lr=X ",
        "beta1=X ",
        "beta2=X ",
        "eps=X ",
        "weight-decay=X ",
        "momentum=X ",
        "nesterov ",
        "embed-weights ",
        "loss=auto|xent:OUTPUT[,LABELS]\n",
        "param-dtype=f32|bf16|f16 ",
        "reduce-dtype=f32|bf16|f16 ",
        "loss-scale-growth-interval=N ",
        "offload=none|cpu ",
        "mem-budget=SIZE ",
        "device=h100|a100|cpu ",
        "report-format=text|json ",
        "clip-grad-norm=X ",
        "clip-norm-type=2|inf ",
        "log-grad-norm "})
    EXPECT_NE(text.find("\n  --" + std::string(flag)), std::string::npos)
        << flag;
  // Defaults are rendered from CompileOptions, one per flag.
  for (const char *shown :
       {"--optimizer=adamw|sgd           (default: adamw)\n",
        "--weight-decay=X                (default: 0.01)\n", "(default: train)",
        "(default: plan)", "(default: 1)\n", "(default: full)",
        "(default: blocks)", "(default: none)", "(default: 2)",
        "(default: 0.001)", "(default: 0.9)", "(default: 0.999)",
        "(default: 1e-08)", "(default: 0)", "(default: auto)", "(default: f32)",
        "(default: h100)", "(default: text)", "--pass-pipeline"})
    EXPECT_NE(text.find(shown), std::string::npos) << shown;
  // Every line fits a terminal.
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    EXPECT_LE(end - start, 80u) << text.substr(start, end - start);
  }
}

} // namespace
