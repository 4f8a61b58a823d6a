//===- CompileFlagValues.cpp - byte sizes and regexes in fsdp-opt's flags -===//
//
// The two value syntaxes of fsdp-opt's flags that are more than a number or
// a name: byte counts (--mem-budget=80GiB) and POSIX extended regexes
// (--freeze, --no-decay, --wrap=regex:RE), kept apart from the flag table
// (CompileOptions.cpp) because each guards against hostile input on its
// own: a size is checked exactly in 128-bit arithmetic, a regex before
// regcomp can blow up on it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Pipelines/CompileOptions.h"

#include <iterator>
#include <limits>
#include <regex.h>

using namespace fsdp;

namespace {

constexpr const char *sizeUnitNames[] = {"B",   "KB",  "MB",  "GB", "TB",
                                         "KiB", "MiB", "GiB", "TiB"};
constexpr int64_t sizeUnitScales[] = {
    1,       1'000,   1'000'000, 1'000'000'000,   1'000'000'000'000,
    1 << 10, 1 << 20, 1 << 30,   int64_t(1) << 40};

int unitIndexOf(const std::string &unit) {
  for (size_t i = 0; i < std::size(sizeUnitNames); ++i)
    if (unit == sizeUnitNames[i])
      return int(i);
  return -1;
}

std::string unitList() {
  std::string joined;
  for (const char *name : sizeUnitNames)
    joined += (joined.empty() ? "" : ", ") + std::string(name);
  return joined;
}

} // namespace

bool fsdp::parseByteSize(const std::string &text, int64_t &bytes,
                         std::string &why) {
  size_t unitStart =
      std::min(text.find_first_not_of("0123456789."), text.size());
  std::string number = text.substr(0, unitStart);
  std::string unit = text.substr(unitStart);
  size_t dot = std::min(number.find('.'), number.size());
  std::string whole = number.substr(0, dot);
  std::string fraction = number.substr(std::min(dot + 1, number.size()));
  while (!fraction.empty() && fraction.back() == '0')
    fraction.pop_back();
  int unitIndex = unit.empty() ? 0 : unitIndexOf(unit);
  std::string problem;
  if (text.empty() || text[0] == '-')
    problem = text.empty() ? "empty size" : "size must not be negative";
  else if (whole.empty() || dot + 1 == number.size() ||
           number.find('.', dot + 1) != std::string::npos)
    problem = "expected a number and a unit, such as 80GiB or 1.5GB";
  else if (unitIndex < 0)
    problem = "unknown unit '" + unit + "'; valid: " + unitList();
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
