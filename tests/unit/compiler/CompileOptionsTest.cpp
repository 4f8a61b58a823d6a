//===- CompileOptionsTest.cpp - fsdp-opt command-line options -------------===//
//
// The command line is the user's contract (DESIGN.md): these tests pin every
// flag's accepted spellings and defaults, the exact wording of errors (users
// and scripts read them), the byte-size grammar of --mem-budget, the
// cross-flag rules, and which arguments are left to MLIR's own options.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fsdp;

namespace {

/// Parses `args` in order; returns the first error, or "" if all were Ok.
/// An argument that is not ours is reported as an error too, so a typo in a
/// test cannot pass silently.
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
  EXPECT_EQ(error, "") << "while parsing " << (args.empty() ? "" : args[0]);
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
  const char *names[] = {"import",     "train",    "shard",
                         "checkpoint", "schedule", "memory"};
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(stageName(Stage(i)), std::string(names[i]));
    ASSERT_TRUE(parseStage(names[i]).has_value());
    EXPECT_EQ(*parseStage(names[i]), Stage(i));
  }
  EXPECT_LT(Stage::Import, Stage::Memory);
  EXPECT_FALSE(parseStage("Import").has_value());
  EXPECT_FALSE(parseStage("").has_value());
  EXPECT_FALSE(parseStage("shard:x").has_value());
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

  EXPECT_EQ(parsed({"--emit=mlir"}).emit, EmitKind::Mlir);
  EXPECT_EQ(parsed({"--emit=binary"}).emit, EmitKind::Binary);
  EXPECT_EQ(parsed({"--emit=report"}).emit, EmitKind::Report);
  EXPECT_EQ(parsed({"--emit=trace"}).emit, EmitKind::Trace);
  EXPECT_EQ(parsed({"--emit=plan"}).emit, EmitKind::Plan);
  EXPECT_EQ(parsed({"--ckpt=blocks"}).ckpt, CkptKind::Blocks);
  EXPECT_EQ(parsed({"--ckpt=auto"}).ckpt, CkptKind::Auto);
  EXPECT_EQ(parsed({"--device=cpu"}).device, DeviceKind::Cpu);
  EXPECT_EQ(parsed({"--stop-after=memory"}).stopAfter, Stage::Memory);
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
  // A later flag replaces the parameter of an earlier one.
  opts = parsed({"--shard=hybrid:2", "--shard=full", "--wrap=size:5",
                 "--wrap=blocks", "--loss=xent:y,t", "--loss=auto"});
  EXPECT_EQ(opts.shard, ShardKind::Full);
  EXPECT_EQ(opts.hybridGroupSize, 0);
  EXPECT_EQ(opts.wrapMinParams, 0);
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
}

struct BadFlag {
  const char *arg;
  const char *error;
};

TEST(CompileOptionsTest, InvalidValuesNameTheFlagAndValidValues) {
  const BadFlag cases[] = {
      {"--mode=eval", "--mode: invalid value 'eval'; valid: train, forward"},
      {"--emit=ir", "--emit: invalid value 'ir'; valid: plan, mlir, binary, "
                    "report, trace, summary"},
      {"--stop-after=lower", "--stop-after: invalid value 'lower'; valid: "
                             "import, train, shard, checkpoint, schedule, "
                             "memory"},
      {"--shard=fulll", "--shard: invalid value 'fulll'; valid: full, "
                        "grad-op, none, hybrid:G"},
      {"--shard=hybrid", "--shard: invalid value 'hybrid'; valid: full, "
                         "grad-op, none, hybrid:G"},
      {"--shard=hybrid:", "--shard: invalid value 'hybrid:'; G must be an "
                          "integer"},
      {"--shard=hybrid:x", "--shard: invalid value 'hybrid:x'; G must be an "
                           "integer"},
      {"--shard=hybrid:0", "--shard: invalid value 'hybrid:0'; G must be >= 1"},
      {"--wrap=layers", "--wrap: invalid value 'layers'; valid: blocks, "
                        "size:N, regex:RE"},
      {"--wrap=size:0", "--wrap: invalid value 'size:0'; N must be >= 1"},
      {"--wrap=size:1e6", "--wrap: invalid value 'size:1e6'; N must be an "
                          "integer"},
      {"--wrap=regex:", "--wrap: invalid value 'regex:'; RE is not a valid "
                        "regex: empty pattern"},
      {"--ckpt=full", "--ckpt: invalid value 'full'; valid: none, blocks, "
                      "selective, auto"},
      {"--optimizer=adam", "--optimizer: invalid value 'adam'; valid: adamw, "
                           "sgd"},
      {"--loss=mse", "--loss: invalid value 'mse'; valid: auto, "
                     "xent:OUTPUT[,LABELS]"},
      {"--loss=xent:", "--loss: invalid value 'xent:'; OUTPUT and LABELS "
                       "must not be empty"},
      {"--loss=xent:,labels", "--loss: invalid value 'xent:,labels'; OUTPUT "
                              "and LABELS must not be empty"},
      {"--loss=xent:logits,", "--loss: invalid value 'xent:logits,'; OUTPUT "
                              "and LABELS must not be empty"},
      {"--param-dtype=fp16", "--param-dtype: invalid value 'fp16'; valid: "
                             "f32, bf16"},
      {"--reduce-dtype=F32", "--reduce-dtype: invalid value 'F32'; valid: "
                             "f32, bf16"},
      {"--offload=gpu", "--offload: invalid value 'gpu'; valid: none, cpu"},
      {"--device=v100", "--device: invalid value 'v100'; valid: h100, a100, "
                        "cpu"},
      {"--report-format=yaml", "--report-format: invalid value 'yaml'; "
                               "valid: text, json"},
      {"--world-size=8x", "--world-size: invalid value '8x'; must be an "
                          "integer"},
      {"--world-size=0", "--world-size: invalid value '0'; must be >= 1"},
      {"--world-size=-2", "--world-size: invalid value '-2'; must be >= 1"},
      {"--world-size=", "--world-size: invalid value ''; must be an integer"},
      {"--world-size= 8", "--world-size: invalid value ' 8'; must be an "
                          "integer"},
      {"--world-size=+8", "--world-size: invalid value '+8'; must be an "
                          "integer"},
      {"--world-size=99999999999999999999", "--world-size: invalid value "
                                            "'99999999999999999999'; must be "
                                            "an integer"},
      {"--prefetch=-1", "--prefetch: invalid value '-1'; must be >= 0"},
      {"--limit-all-gathers=0", "--limit-all-gathers: invalid value '0'; "
                                "must be >= 1"},
      {"--lr=0", "--lr: invalid value '0'; must be > 0"},
      {"--lr=-1e-3", "--lr: invalid value '-1e-3'; must be > 0"},
      {"--lr=1e-3x", "--lr: invalid value '1e-3x'; must be a finite number"},
      {"--lr=fast", "--lr: invalid value 'fast'; must be a finite number"},
      {"--lr=nan", "--lr: invalid value 'nan'; must be a finite number"},
      {"--lr=inf", "--lr: invalid value 'inf'; must be a finite number"},
      {"--lr=1e999", "--lr: invalid value '1e999'; must be a finite number"},
      {"--lr=", "--lr: invalid value ''; must be a finite number"},
      {"--beta1=1", "--beta1: invalid value '1'; must be in [0, 1)"},
      {"--beta1=-0.1", "--beta1: invalid value '-0.1'; must be in [0, 1)"},
      {"--beta2=1.5", "--beta2: invalid value '1.5'; must be in [0, 1)"},
      {"--eps=0", "--eps: invalid value '0'; must be > 0"},
      {"--weight-decay=-0.01", "--weight-decay: invalid value '-0.01'; must "
                               "be >= 0"},
      {"--momentum=-0.5", "--momentum: invalid value '-0.5'; must be >= 0"},
      {"--mem-budget=0", "--mem-budget: invalid value '0'; must be > 0"},
      {"--mem-budget=80gb", "--mem-budget: invalid value '80gb'; unknown "
                            "unit 'gb'; valid: B, KB, MB, GB, TB, KiB, MiB, "
                            "GiB, TiB"},
      {"--nesterov=true", "--nesterov: takes no value"},
      {"--world-size", "--world-size: missing value; use --world-size=N"},
      {"--shard", "--shard: missing value; use "
                  "--shard=full|grad-op|none|hybrid:G"},
  };
  for (const BadFlag &bad : cases)
    EXPECT_EQ(parseError(bad.arg), bad.error) << bad.arg;
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
  EXPECT_FALSE(isValidRegex("[a-", why));
  EXPECT_FALSE(why.empty());
  EXPECT_FALSE(isValidRegex("", why));
  EXPECT_EQ(why, "empty pattern");
}

TEST(CompileOptionsTest, ErrorsLeaveOptionsUnchanged) {
  CompileOptions opts = parsed({"--shard=hybrid:2", "--wrap=size:7"});
  std::string error;
  EXPECT_EQ(parseCompileFlag("--shard=hybrid:0", opts, error),
            FlagParse::Error);
  EXPECT_EQ(parseCompileFlag("--wrap=regex:(", opts, error), FlagParse::Error);
  EXPECT_EQ(parseCompileFlag("--lr=-1", opts, error), FlagParse::Error);
  EXPECT_EQ(opts.shard, ShardKind::Hybrid);
  EXPECT_EQ(opts.hybridGroupSize, 2);
  EXPECT_EQ(opts.wrap, WrapKind::Size);
  EXPECT_EQ(opts.wrapMinParams, 7);
  EXPECT_EQ(opts.lr, 1e-3);
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
  const std::pair<const char *, int64_t> good[] = {
      {"80GiB", 85899345920},
      {"1.5GB", 1500000000},
      {"512MiB", 536870912},
      {"1000", 1000},
      {"64KiB", 65536},
      {"7B", 7},
      {"2KB", 2000},
      {"3MB", 3000000},
      {"1TB", 1000000000000},
      {"1TiB", 1099511627776},
      {"0.5KiB", 512},
      {"1.250KB", 1250},
      {"0", 0},
      {"8388607TiB", 9223370937343148032},
      {"9223372036854775807", std::numeric_limits<int64_t>::max()}};
  for (const auto &[text, expected] : good) {
    int64_t bytes = -1;
    std::string why;
    EXPECT_TRUE(parseByteSize(text, bytes, why)) << text << ": " << why;
    EXPECT_EQ(bytes, expected) << text;
  }
  const std::pair<const char *, const char *> bad[] = {
      {"", "empty size"},
      {"-1GiB", "size must not be negative"},
      {"GiB", "expected a number and a unit, such as 80GiB or 1.5GB"},
      {"1.GB", "expected a number and a unit, such as 80GiB or 1.5GB"},
      {".5GB", "expected a number and a unit, such as 80GiB or 1.5GB"},
      {"1.2.3GB", "expected a number and a unit, such as 80GiB or 1.5GB"},
      {"80gib", "unknown unit 'gib'; valid: B, KB, MB, GB, TB, KiB, MiB, "
                "GiB, TiB"},
      {"80 GiB", "unknown unit ' GiB'; valid: B, KB, MB, GB, TB, KiB, MiB, "
                 "GiB, TiB"},
      {"80PiB", "unknown unit 'PiB'; valid: B, KB, MB, GB, TB, KiB, MiB, "
                "GiB, TiB"},
      {"1.5B", "'1.5B' is not a whole number of bytes"},
      {"0.1KiB", "'0.1KiB' is not a whole number of bytes"},
      {"99999999999TiB", "too large (the limit is 2^63-1 bytes)"},
      {"8388608TiB", "too large (the limit is 2^63-1 bytes)"},
      {"9223372036854775808", "too large (the limit is 2^63-1 bytes)"},
      {"99999999999999999999999999999999GB",
       "too large (the limit is 2^63-1 bytes)"},
      {"1.0000000000000000001GB", "too many fractional digits"}};
  for (const auto &[text, expected] : bad) {
    int64_t bytes = 42;
    std::string why;
    EXPECT_FALSE(parseByteSize(text, bytes, why)) << text;
    EXPECT_EQ(why, expected) << text;
    EXPECT_EQ(bytes, 42) << text;
  }
}

TEST(CompileOptionsTest, CrossFlagRules) {
  const std::pair<std::vector<std::string>, const char *> cases[] = {
      {{"--world-size=8", "--shard=hybrid:4"}, ""},
      {{"--world-size=8", "--shard=hybrid:8"}, ""},
      {{"--world-size=8", "--shard=hybrid:1"}, ""},
      {{"--world-size=8", "--shard=hybrid:3"},
       "--shard=hybrid:3: group size does not divide --world-size=8"},
      {{"--world-size=4", "--shard=hybrid:8"},
       "--shard=hybrid:8: group size exceeds --world-size=4"},
      {{"--shard=hybrid:2"},
       "--shard=hybrid:2: group size exceeds "
       "--world-size=1"},
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
      {{"--mode=forward", "--world-size=1", "--param-dtype=bf16",
        "--emit=report", "--report-format=json", "--mem-budget=1GiB"},
       ""},
      {{"--mode=forward", "--world-size=2"},
       "--world-size=2 requires --mode=train: forward plans run on one rank"},
      // Forward mode names the training flag, not the optimizer mismatch.
      {{"--mode=forward", "--momentum=0.5"},
       "--momentum requires --mode=train"},
  };
  for (const auto &[args, expected] : cases)
    EXPECT_EQ(validationError(args), expected) << args.back();

  const char *trainingOnly[] = {
      "--shard=full", "--wrap=blocks",         "--ckpt=none",
      "--prefetch=1", "--limit-all-gathers=2", "--optimizer=adamw",
      "--lr=0.1",     "--beta1=0.9",           "--beta2=0.99",
      "--eps=1e-8",   "--weight-decay=0",      "--momentum=0",
      "--nesterov",   "--loss=auto",           "--reduce-dtype=f32"};
  for (std::string arg : trainingOnly) {
    std::string flag = arg.substr(0, arg.find('='));
    EXPECT_EQ(validationError({"--mode=forward", arg}),
              flag + " requires --mode=train");
  }
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
}

TEST(CompileOptionsTest, UsageListsEveryFlagWithValuesAndDefault) {
  std::string text = usage();
  const char *expected[] = {
      "  -o OUT ",
      "  --mode=train|forward ",
      "  --emit=plan|mlir|binary|report|trace|summary\n",
      "  --stop-after=import|train|shard|checkpoint|schedule|memory\n",
      "  --world-size=N ",
      "  --shard=full|grad-op|none|hybrid:G\n",
      "  --wrap=blocks|size:N|regex:RE ",
      "  --ckpt=none|blocks|selective|auto\n",
      "  --prefetch=K ",
      "  --limit-all-gathers=K ",
      "  --optimizer=adamw|sgd ",
      "  --lr=X ",
      "  --beta1=X ",
      "  --beta2=X ",
      "  --eps=X ",
      "  --weight-decay=X ",
      "  --momentum=X ",
      "  --nesterov ",
      "  --loss=auto|xent:OUTPUT[,LABELS]\n",
      "  --param-dtype=f32|bf16 ",
      "  --reduce-dtype=f32|bf16 ",
      "  --offload=none|cpu ",
      "  --mem-budget=SIZE ",
      "  --device=h100|a100|cpu ",
      "  --report-format=text|json ",
      "(default: train)",
      "(default: 0.001)",
      "(default: 1e-08)",
      "(default: 0.999)",
      "(default: adamw)",
      "(default: blocks)",
      "(default: 2)",
      "--pass-pipeline"};
  for (const char *piece : expected)
    EXPECT_NE(text.find(piece), std::string::npos) << piece;
  // Every line fits a terminal.
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    EXPECT_LE(end - start, 80u) << text.substr(start, end - start);
    start = end + 1;
  }
}

} // namespace
