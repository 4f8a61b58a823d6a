//===- MlirInputGuard.h - .mlir text that Debian's MLIR 19 cannot parse ---===//
//
// fsdp-opt's .mlir input is untrusted, and MLIR 19's parser builds a
// dense bool array written with integer literals (`array<i1: 0, 1>`,
// also spelt `i01`) with no storage behind it: printing it, as any
// diagnostic naming its op does, reads a null pointer. (`array<i1: true,
// false>` is sound.) Until a fixed MLIR is the build's, the text is
// scanned for that spelling before parsing and refused with its line, so
// the input gets an error and exit 1 instead of a crash. fsdp-opt and its
// fuzz target (tests/fuzz/MlirInputFuzzer.cpp) call the same check.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_OPT_MLIRINPUTGUARD_H
#define FSDP_TOOLS_FSDP_OPT_MLIRINPUTGUARD_H

#include "llvm/ADT/StringRef.h"

#include <cctype>
#include <optional>

namespace fsdp {

/// The 1-based line of the first `array<i1: <integer>` in `text`, if any.
inline std::optional<size_t> findIntegerBoolArray(llvm::StringRef text) {
  auto skipSpace = [&](size_t i) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    return i;
  };
  for (size_t at = text.find("array"); at != llvm::StringRef::npos;
       at = text.find("array", at + 1)) {
    size_t i = skipSpace(at + 5);
    if (i >= text.size() || text[i] != '<')
      continue;
    i = skipSpace(i + 1);
    if (i >= text.size() || text[i] != 'i')
      continue;
    ++i;
    while (i < text.size() && text[i] == '0')
      ++i;
    if (i >= text.size() || text[i] != '1')
      continue;
    ++i;
    if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
      continue; // i16, i10, ...: another width
    i = skipSpace(i);
    if (i >= text.size() || text[i] != ':')
      continue;
    i = skipSpace(i + 1);
    if (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) ||
                            text[i] == '-' || text[i] == '+'))
      return 1 + text.take_front(at).count('\n');
  }
  return std::nullopt;
}

} // namespace fsdp

#endif // FSDP_TOOLS_FSDP_OPT_MLIRINPUTGUARD_H
