//===- MlirInputGuard.h - .mlir text that Debian's MLIR 19 cannot parse ---===//
//
// fsdp-opt's .mlir input is untrusted, and MLIR 19's parser builds a
// dense bool array written with integer literals (`array<i1: 0, 1>`,
// also spelt `i01`, `ui1`, `si1` or through a type alias) with no storage
// behind it: printing it, as any
// diagnostic naming its op does, reads a null pointer. (`array<i1: true,
// false>` is sound.) Until a fixed MLIR is the build's, the text is
// scanned for that spelling (between its tokens whatever MLIR's lexer
// skips: whitespace, NULs, comments) before parsing and refused with its
// line, so
// the input gets an error and exit 1 instead of a crash. fsdp-opt and its
// fuzz target (tests/fuzz/MlirInputFuzzer.cpp) call the same check.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_OPT_MLIRINPUTGUARD_H
#define FSDP_TOOLS_FSDP_OPT_MLIRINPUTGUARD_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <optional>

namespace fsdp {

/// The 1-based line of the first bool array written with integer literals
/// in `text`, if any: `array<T: <integer>` where T is a 1-bit integer type
/// (i1, si1 or ui1, any zeros before the 1) or a type alias defined
/// (`!name = T`, through other aliases too) as one.
inline std::optional<size_t> findIntegerBoolArray(llvm::StringRef text) {
  // What MLIR's lexer skips between tokens: whitespace, NUL characters
  // and `//` comments to the end of the line (the fuzz target got past a
  // guard that skipped whitespace alone with NULs after `array<`).
  auto skipSpace = [&](size_t i) {
    while (i < text.size()) {
      if (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == '\0') {
        ++i;
      } else if (text.substr(i).starts_with("//")) {
        const size_t end = text.find('\n', i);
        i = end == llvm::StringRef::npos ? text.size() : end;
      } else {
        break;
      }
    }
    return i;
  };
  auto identifierChar = [&](size_t i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    return std::isalnum(c) || c == '_' || c == '$' || c == '.' || c == '-';
  };
  // The end of the 1-bit integer type spelt at i, or npos.
  auto oneBitType = [&](size_t i) {
    if (text.substr(i).starts_with("si") || text.substr(i).starts_with("ui"))
      i += 2;
    else if (i < text.size() && text[i] == 'i')
      ++i;
    else
      return llvm::StringRef::npos;
    while (i < text.size() && text[i] == '0')
      ++i;
    if (i >= text.size() || text[i] != '1' || (i + 1 < text.size() && identifierChar(i + 1)))
      return llvm::StringRef::npos;
    return i + 1;
  };
  // The type alias named at i (`!name`), its name's end in `end`.
  auto aliasAt = [&](size_t i, size_t &end) {
    if (i >= text.size() || text[i] != '!')
      return llvm::StringRef();
    end = i + 1;
    while (end < text.size() && identifierChar(end))
      ++end;
    return text.slice(i, end);
  };
  llvm::StringSet<> oneBitAliases;
  for (bool grew = true; grew;) {
    grew = false;
    for (size_t at = text.find('!'); at != llvm::StringRef::npos; at = text.find('!', at + 1)) {
      size_t end;
      const llvm::StringRef name = aliasAt(at, end);
      if (name.size() < 2 || oneBitAliases.contains(name))
        continue;
      size_t i = skipSpace(end);
      if (i >= text.size() || text[i] != '=')
        continue;
      i = skipSpace(i + 1);
      size_t aliasEnd;
      if (oneBitType(i) != llvm::StringRef::npos || oneBitAliases.contains(aliasAt(i, aliasEnd)))
        grew = oneBitAliases.insert(name).second || grew;
    }
  }
  for (size_t at = text.find("array"); at != llvm::StringRef::npos;
       at = text.find("array", at + 1)) {
    size_t i = skipSpace(at + 5);
    if (i >= text.size() || text[i] != '<')
      continue;
    i = skipSpace(i + 1);
    size_t end = oneBitType(i);
    if (end == llvm::StringRef::npos && !oneBitAliases.contains(aliasAt(i, end)))
      continue;
    i = skipSpace(end);
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
