//===- PassOptions.cpp - typed values of the passes' options --------------===//
//
// `shard` and `wrap` are parsed by fsdp-opt's own flag table
// (parseFlagValue), so fsdp-shard-parameters{shard=hybrid:2} and
// --shard=hybrid:2 accept and refuse exactly the same text, and printed with
// the same spellings (shardValueText, wrapValueText).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/PassOptions.h"

using namespace llvm;

bool fsdp::detail::parseFlagText(StringRef name, StringRef arg, CompileOptions &parsed) {
  std::string error;
  if (parseFlagValue(name.str(), arg.str(), parsed, error))
    return false;
  errs() << "error: " << name << ": " << error << "\n";
  return true;
}

bool cl::parser<fsdp::ShardSpec>::parse(Option &owner, StringRef, StringRef arg,
                                        fsdp::ShardSpec &value) {
  fsdp::CompileOptions parsed;
  if (fsdp::detail::parseFlagText(owner.ArgStr, arg, parsed))
    return true;
  value = {parsed.shard, parsed.hybridGroupSize};
  return false;
}

void cl::parser<fsdp::ShardSpec>::print(raw_ostream &os, const fsdp::ShardSpec &value) {
  os << fsdp::shardValueText(value.kind, value.hybridGroupSize);
}

void cl::parser<fsdp::ShardSpec>::printOptionDiff(const Option &owner,
                                                  const fsdp::ShardSpec &value,
                                                  const OptionValue<fsdp::ShardSpec> &,
                                                  size_t globalWidth) const {
  printOptionName(owner, globalWidth);
  outs() << "= ";
  print(outs(), value);
  outs() << "\n";
}

bool cl::parser<fsdp::WrapSpec>::parse(Option &owner, StringRef, StringRef arg,
                                       fsdp::WrapSpec &value) {
  fsdp::CompileOptions parsed;
  if (fsdp::detail::parseFlagText(owner.ArgStr, arg, parsed))
    return true;
  value = {parsed.wrap, parsed.wrapMinParams, parsed.wrapRegex};
  return false;
}

void cl::parser<fsdp::WrapSpec>::print(raw_ostream &os, const fsdp::WrapSpec &value) {
  os << fsdp::wrapValueText(value.kind, value.minParams, value.regex);
}

void cl::parser<fsdp::WrapSpec>::printOptionDiff(const Option &owner,
                                                 const fsdp::WrapSpec &value,
                                                 const OptionValue<fsdp::WrapSpec> &,
                                                 size_t globalWidth) const {
  printOptionName(owner, globalWidth);
  outs() << "= ";
  print(outs(), value);
  outs() << "\n";
}
