//===- PassOptions.h - typed values of the passes' options ----------------===//
//
// The option types Passes.td names, and how the command line parses and
// prints them. Choices are the enums of compiler/Pipelines/CompileOptions.h
// (one enum per concept, shared by the flag and the pass), their values
// listed by flagChoices from the flag's own name table; the explicit
// specializations of llvm::cl::parser<E>::parse below only replace llvm's
// "Cannot find option named 'x'!" with an error naming the option and its
// values ("error: optimizer must be adamw or sgd, not 'adam'"). `shard` and `wrap` carry a parameter ("hybrid:2",
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

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace fsdp {

/// fsdp-shard-parameters{shard=...}: full, grad-op, none or hybrid:G.
struct ShardSpec {
  ShardKind kind = defaults::shard;
  int64_t hybridGroupSize = 0; // G of hybrid:G
};

/// fsdp-shard-parameters{wrap=...}: blocks, size:N or regex:RE.
struct WrapSpec {
  WrapKind kind = defaults::wrap;
  int64_t minParams = 0; // N of size:N
  std::string regex;     // RE of regex:RE, a valid POSIX extended regex
};

/// The values of a choice option, spelled as fsdp-opt's flag `flag`
/// spells them (its name table in compiler/Pipelines/CompileOptions.cpp):
/// an ::llvm::cl modifier, used in Passes.td and fsdp-train-pipeline where
/// ::llvm::cl::values would list the spellings a second time.
/// `only` restricts them to the enumerators a pass accepts (fsdp-recompute-
/// activations takes ckpt=blocks or selective, not none or auto). On an
/// option that is not an enum it adds nothing, so generated options can
/// pass it whatever their type.
template <typename T> struct FlagChoices {
  const char *flag;
  std::vector<T> only;
  template <typename Opt> void apply(Opt &option) const {
    if constexpr (std::is_enum_v<T>) {
      const std::vector<std::string> &names = flagValueNames(flag);
      for (size_t i = 0; i < names.size(); ++i)
        if (only.empty() || std::find(only.begin(), only.end(), T(i)) != only.end())
          option.getParser().addLiteralOption(names[i], T(i), names[i]);
    }
  }
};
template <typename T>
FlagChoices<T> flagChoices(const char *flag, std::initializer_list<T> only = {}) {
  return {flag, std::vector<T>(only)};
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
FSDP_CHOICE_OPTION(::fsdp::OptimizerKind)
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
