//===- JsonReader.h - a strict reader of small JSON texts -----------------===//
//
// Private to the runtime. The runtime reads JSON in two places, the
// safetensors header and the --metrics lines fsdp-plot and fsdp-run --plot
// read back, and has no JSON library: this is the small strict
// recursive-descent reader both share. Strict means RFC 8259 where it
// matters (no trailing commas, no leading zeros, escapes checked, lone
// surrogates refused, duplicate keys refused); each caller decides which
// values it accepts where, so a reader of one format refuses what the
// format does not hold instead of skipping it. Errors say "malformed
// <what> at byte N: why" (TextScanner).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_JSONREADER_H
#define FSDP_RUNTIME_IO_JSONREADER_H

#include "runtime/io/TextScanner.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace fsdp::rt::detail {

class JsonReader : TextScanner {
public:
  /// `what` names the text in errors ("JSON header"); `text` must outlive
  /// the reader.
  JsonReader(const std::string &text, const char *what) : TextScanner(text, what) {}

  /// Calls `onMember(key)` with the reader at each member's value;
  /// `keyKind` names the keys in the duplicate-key error.
  template <typename OnMember> Status parseObject(const char *keyKind, OnMember &&onMember) {
    FSDP_RETURN_IF_ERROR(expect('{'));
    if (consume('}'))
      return Status::ok();
    std::set<std::string> seen;
    do {
      std::string key;
      FSDP_RETURN_IF_ERROR(parseString(key));
      FSDP_RETURN_IF_ERROR(expect(':'));
      if (!seen.insert(key).second)
        return Status::error(std::string("duplicate ") + keyKind + " '" + key + "'");
      FSDP_RETURN_IF_ERROR(onMember(key));
    } while (consume(','));
    return expect('}');
  }

  /// A string, its escapes decoded (\u escapes to UTF-8).
  Status parseString(std::string &out);
  /// A JSON number that must be an integer fitting in int64.
  Status parseInteger(int64_t &out);
  /// Any JSON number, as the nearest double (infinite when out of range).
  Status parseNumber(double &out);
  /// An array of at most `maxCount` integers; `what` names it in errors.
  Status parseIntArray(std::vector<int64_t> &out, size_t maxCount, const char *what);
  /// The next character after whitespace ('\0' at the end), not consumed:
  /// what decides which kind of value comes next.
  char peek();
  /// Consumes the literal `word` (true, false, null) if it comes next.
  bool consumeWord(const char *word);
  /// Only whitespace may follow the top-level value; `value` names it in
  /// the error ("trailing characters after the <value>").
  Status finish(const char *value);

private:
  Status parseHex4(uint32_t &out);
};

} // namespace fsdp::rt::detail

#endif // FSDP_RUNTIME_IO_JSONREADER_H
