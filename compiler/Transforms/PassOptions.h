//===- PassOptions.h - typed values of the passes' options ----------------===//
//
// The option types Passes.td names, and how the command line parses and
// prints them. Choices are enums listed with ::llvm::cl::values in
// Passes.td; the explicit specializations of llvm::cl::parser<E>::parse
// below only replace llvm's "Cannot find option named 'x'!" with an error
// naming the option and its values ("error: optimizer must be adamw or
// sgd, not 'adam'"). `shard` and `wrap` carry a parameter ("hybrid:2",
// "size:20") and get whole parsers that read the same text as fsdp-opt's
// --shard and --wrap (compiler/Pipelines/CompileOptions.h) and print it
// back, which pass-pipeline printing and crash reproducers need.
//
// Included by compiler/Transforms/Passes.h before the generated code: a
// specialization must be seen before the options that use it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_PASSOPTIONS_H
#define FSDP_COMPILER_TRANSFORMS_PASSOPTIONS_H

#include "compiler/Pipelines/CompileOptions.h"
#include "compiler/Transforms/ApplyOptimizer.h"
#include "compiler/Transforms/RecomputeActivations.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace fsdp {

/// fsdp-shard-parameters{shard=...}: full, grad-op, none or hybrid:G.
struct ShardSpec {
  ShardKind kind = ShardKind::Full;
  int64_t hybridGroupSize = 0; // G of hybrid:G
};

/// fsdp-shard-parameters{wrap=...}: blocks, size:N or regex:RE.
struct WrapSpec {
  WrapKind kind = WrapKind::Blocks;
  int64_t minParams = 0; // N of size:N
  std::string regex;     // RE of regex:RE, a valid POSIX extended regex
};

/// The values of each choice option (::llvm::cl::values), shared by the
/// passes (Passes.td) and fsdp-train-pipeline. Spelled as fsdp-opt's flags
/// spell them.
inline llvm::cl::ValuesClass optimizerValues() {
  return llvm::cl::values(
      clEnumValN(OptimizerOptions::Kind::AdamW, "adamw", "AdamW (decoupled weight decay)"),
      clEnumValN(OptimizerOptions::Kind::Sgd, "sgd", "SGD with optional momentum"));
}
inline llvm::cl::ValuesClass recomputePolicyValues() {
  return llvm::cl::values(
      clEnumValN(RecomputeOptions::Policy::Blocks, "blocks",
                 "recompute everything: a block keeps only its input"),
      clEnumValN(RecomputeOptions::Policy::Selective, "selective",
                 "recompute all but matmul, gemm and softmax outputs"));
}
inline llvm::cl::ValuesClass deviceValues() {
  return llvm::cl::values(clEnumValN(DeviceKind::H100, "h100", "NVIDIA H100"),
                          clEnumValN(DeviceKind::A100, "a100", "NVIDIA A100"),
                          clEnumValN(DeviceKind::Cpu, "cpu", "a CPU"));
}
inline llvm::cl::ValuesClass dtypeValues() {
  return llvm::cl::values(clEnumValN(DType::F32, "f32", "float32"),
                          clEnumValN(DType::BF16, "bf16", "bfloat16"),
                          clEnumValN(DType::F16, "f16", "float16 (loss scaling)"));
}

inline llvm::cl::ValuesClass accumReduceValues() {
  return llvm::cl::values(
      clEnumValN(AccumReduceKind::Each, "each", "reduce every micro-batch's gradient"),
      clEnumValN(AccumReduceKind::Last, "last", "sum unsharded, reduce after the last"));
}

namespace detail {

/// Looks `arg` up among the values `parser` was given (::llvm::cl::values);
/// prints "error: NAME must be a, b or c, not 'ARG'" when it is none of
/// them. Returns true on error, as llvm::cl parsers do.
template <typename E>
bool parseChoice(const llvm::cl::parser<E> &parser, llvm::StringRef name, llvm::StringRef arg,
                 E &value) {
  unsigned count = parser.getNumOptions();
  for (unsigned i = 0; i < count; ++i)
    if (parser.getOption(i) == arg) {
      value =
          static_cast<const llvm::cl::OptionValue<E> &>(parser.getOptionValue(i)).getValue();
      return false;
    }
  llvm::errs() << "error: " << name << " must be ";
  for (unsigned i = 0; i < count; ++i)
    llvm::errs() << (i == 0 ? "" : i + 1 == count ? " or " : ", ") << parser.getOption(i);
  llvm::errs() << ", not '" << arg << "'\n";
  return true;
}

/// Parses a flag's value into a scratch CompileOptions; prints
/// "error: NAME: invalid value 'ARG'; valid: ..." on failure.
bool parseFlagText(llvm::StringRef name, llvm::StringRef arg, CompileOptions &parsed);

} // namespace detail
} // namespace fsdp

namespace llvm {
namespace cl {

// For each enum option type, only parse() is specialized: the values list
// (::llvm::cl::values), help and printing stay llvm's generic parser's.
#define FSDP_CHOICE_OPTION(E)                                                                  \
  template <>                                                                                  \
  inline bool parser<E>::parse(Option &owner, StringRef, StringRef arg, E &value) {          \
    return ::fsdp::detail::parseChoice(*this, owner.ArgStr, arg, value);                       \
  }
FSDP_CHOICE_OPTION(::fsdp::OptimizerOptions::Kind)
FSDP_CHOICE_OPTION(::fsdp::RecomputeOptions::Policy)
FSDP_CHOICE_OPTION(::fsdp::DeviceKind)
FSDP_CHOICE_OPTION(::fsdp::DType)
FSDP_CHOICE_OPTION(::fsdp::CkptKind)
FSDP_CHOICE_OPTION(::fsdp::AccumReduceKind)
#undef FSDP_CHOICE_OPTION

/// Reads and prints ShardSpec as --shard does.
template <> class parser<::fsdp::ShardSpec> : public basic_parser<::fsdp::ShardSpec> {
public:
  parser(Option &owner) : basic_parser(owner) {}
  bool parse(Option &owner, StringRef, StringRef arg, ::fsdp::ShardSpec &value);
  StringRef getValueName() const override { return "full|grad-op|none|hybrid:G"; }
  static void print(raw_ostream &os, const ::fsdp::ShardSpec &value);
  void printOptionDiff(const Option &owner, const ::fsdp::ShardSpec &value,
                       const OptionValue<::fsdp::ShardSpec> &, size_t globalWidth) const;
};

/// Reads and prints WrapSpec as --wrap does.
template <> class parser<::fsdp::WrapSpec> : public basic_parser<::fsdp::WrapSpec> {
public:
  parser(Option &owner) : basic_parser(owner) {}
  bool parse(Option &owner, StringRef, StringRef arg, ::fsdp::WrapSpec &value);
  StringRef getValueName() const override { return "blocks|size:N|regex:RE"; }
  static void print(raw_ostream &os, const ::fsdp::WrapSpec &value);
  void printOptionDiff(const Option &owner, const ::fsdp::WrapSpec &value,
                       const OptionValue<::fsdp::WrapSpec> &, size_t globalWidth) const;
};

} // namespace cl
} // namespace llvm

#endif // FSDP_COMPILER_TRANSFORMS_PASSOPTIONS_H
