//===- ParseNumber.h - a flag value that must be a whole number -----------===//
//
// The number parsing fsdp-run's flags (runtime/run/RunFlags.cpp) and the
// --lr-schedule fields (runtime/train/LrSchedule.cpp) share: strtoll and
// strtod alone stop at the first character that is not part of a number
// and clamp what is out of range, so "10x" or "1e999" would quietly become
// 10 or infinity; these accept the text only when all of it is one number
// (strtoll's base-10 or strtod's syntax, a leading sign or blanks
// included) in range, and the double also finite. Each caller adds its own
// rule on top (an integer >= 1, a rate >= 0, a step count that starts with
// a digit). Header-only, like the rest of runtime/support.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_PARSENUMBER_H
#define FSDP_RUNTIME_SUPPORT_PARSENUMBER_H

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace fsdp::rt {

/// `text`, all of it, as a base-10 int64; false (and `value` untouched) for
/// empty text, trailing characters or a number out of range.
inline bool parseWholeInt(const std::string &text, int64_t &value) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0)
    return false;
  value = v;
  return true;
}

/// `text`, all of it, as a finite double; false (and `value` untouched) for
/// empty text, trailing characters, a number out of range, inf or nan.
inline bool parseWholeDouble(const std::string &text, double &value) {
  char *end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
    return false;
  value = v;
  return true;
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SUPPORT_PARSENUMBER_H
