//===- WrapPolicy.cpp - which parameters form a shard unit ----------------===//
//
// `blocks` looks at dotted name components: a component made of digits
// whose parent path has at least two distinct numbered children across all
// parameters is a block index (a ModuleList); the leftmost such component
// of a name decides its block, so nested lists (experts inside a layer)
// stay inside their layer's unit. A single numbered child is not a
// repetition and does not start a unit.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/WrapPolicy.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Regex.h"

#include <map>
#include <set>

namespace fsdp {
namespace {

std::vector<std::string> components(const std::string &name) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  llvm::StringRef(name).split(parts, '.');
  return {parts.begin(), parts.end()};
}

bool isNumber(const std::string &s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

std::string joinPrefix(const std::vector<std::string> &parts, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i)
    out += (i ? "." : "") + parts[i];
  return out;
}

/// The unit key of each parameter ("" for the root).
std::vector<std::string> blockKeys(const std::vector<ParamInfo> &params) {
  std::map<std::string, std::set<std::string>> numberedChildren;
  std::vector<std::vector<std::string>> split;
  for (const ParamInfo &p : params) {
    split.push_back(components(p.name));
    const auto &parts = split.back();
    for (size_t i = 0; i + 1 < parts.size(); ++i)
      if (isNumber(parts[i]))
        numberedChildren[joinPrefix(parts, i)].insert(parts[i]);
  }
  std::vector<std::string> keys;
  for (const auto &parts : split) {
    std::string key;
    for (size_t i = 0; i + 1 < parts.size() && key.empty(); ++i)
      if (isNumber(parts[i]) && numberedChildren[joinPrefix(parts, i)].size() >= 2)
        key = joinPrefix(parts, i + 1);
    keys.push_back(key);
  }
  return keys;
}

std::vector<std::string> regexKeys(const std::vector<ParamInfo> &params, const std::string &re) {
  llvm::Regex regex(re, llvm::Regex::NoFlags);
  std::vector<std::string> keys;
  for (const ParamInfo &p : params) {
    llvm::SmallVector<llvm::StringRef, 2> matches;
    keys.push_back(regex.match(p.name, &matches) && !matches[0].empty() ? matches[0].str() : "");
  }
  return keys;
}

/// Consecutive parameters until a unit reaches `minParams`; the unfinished
/// tail belongs to the root.
std::vector<std::string> sizeKeys(const std::vector<ParamInfo> &params, int64_t minParams) {
  std::vector<std::string> keys(params.size());
  size_t start = 0, unit = 0;
  int64_t numel = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    numel += params[i].numel;
    if (numel >= minParams) {
      for (size_t j = start; j <= i; ++j)
        keys[j] = "unit" + std::to_string(unit);
      ++unit;
      start = i + 1;
      numel = 0;
    }
  }
  return keys;
}

} // namespace

std::vector<WrapUnit> formUnits(const std::vector<ParamInfo> &params, const WrapPolicy &policy) {
  std::vector<std::string> keys = policy.kind == WrapPolicyKind::Blocks ? blockKeys(params)
                                  : policy.kind == WrapPolicyKind::Regex
                                      ? regexKeys(params, policy.regex)
                                      : sizeKeys(params, policy.minParams);
  std::vector<WrapUnit> units(1);
  units[0].name = "root";
  std::map<std::string, size_t> unitOf;
  for (size_t i = 0; i < params.size(); ++i) {
    size_t u = 0;
    if (!keys[i].empty()) {
      auto [it, inserted] = unitOf.emplace(keys[i], units.size());
      if (inserted)
        units.push_back({keys[i], {}, 0});
      u = it->second;
    }
    units[u].params.push_back(i);
    units[u].numel += params[i].numel;
  }
  return units;
}

} // namespace fsdp
