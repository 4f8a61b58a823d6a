//===- TextScanner.h - lexing primitives of the file header parsers -------===//
//
// Private to the runtime. The .npy header parser and the JSON reader (of
// safetensors headers and --metrics lines, JsonReader.h) are both small
// recursive-descent parsers over an in-memory text; TextScanner is the
// cursor they share: skipping whitespace, consuming or
// expecting one punctuation character, and building the "malformed <what>
// at byte N" error, so both report positions the same way.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_TEXTSCANNER_H
#define FSDP_RUNTIME_IO_TEXTSCANNER_H

#include "runtime/support/Status.h"

#include <cstddef>
#include <string>

namespace fsdp::rt::detail {

/// A position in `text`, which must outlive the scanner.
class TextScanner {
protected:
  /// `what` names the text in errors, e.g. "JSON header".
  TextScanner(const std::string &text, const char *what) : text_(text), what_(what) {}

  Status malformed(const std::string &why) const {
    return Status::error(cat("malformed ", what_, " at byte ", pos_, ": ", why));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\n'))
      ++pos_;
  }
  /// Skips whitespace, then `c` if it comes next.
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status expect(char c) {
    return consume(c) ? Status::ok() : malformed(std::string("expected '") + c + "'");
  }

  const std::string &text_;
  size_t pos_ = 0;

private:
  const char *what_;
};

} // namespace fsdp::rt::detail

#endif // FSDP_RUNTIME_IO_TEXTSCANNER_H
