//===- JsonReader.cpp - a strict reader of small JSON texts ---------------===//
//
// Numbers are checked against RFC 8259's grammar before strtod converts
// them, so what strtod alone would take ("0x10", "inf", ".5", "1.") is
// refused as JSON refuses it.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/JsonReader.h"

#include <cstdlib>
#include <cstring>

namespace fsdp::rt::detail {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }

void appendUtf8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

} // namespace

Status JsonReader::parseString(std::string &out) {
  out.clear();
  FSDP_RETURN_IF_ERROR(expect('"'));
  while (true) {
    if (pos_ >= text_.size())
      return malformed("unterminated string");
    char c = text_[pos_++];
    if (c == '"')
      return Status::ok();
    if (static_cast<unsigned char>(c) < 0x20)
      return malformed("control character in string");
    if (c != '\\') {
      out += c;
      continue;
    }
    if (pos_ >= text_.size())
      return malformed("unterminated string");
    char e = text_[pos_++];
    switch (e) {
    case '"': case '\\': case '/': out += e; break;
    case 'b': out += '\b'; break;
    case 'f': out += '\f'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 't': out += '\t'; break;
    case 'u': {
      uint32_t cp;
      FSDP_RETURN_IF_ERROR(parseHex4(cp));
      if (cp >= 0xDC00 && cp <= 0xDFFF)
        return malformed("lone low surrogate in \\u escape");
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (text_.compare(pos_, 2, "\\u") != 0)
          return malformed("high surrogate without a low surrogate");
        pos_ += 2;
        FSDP_RETURN_IF_ERROR(parseHex4(low));
        if (low < 0xDC00 || low > 0xDFFF)
          return malformed("high surrogate without a low surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      }
      appendUtf8(out, cp);
      break;
    }
    default:
      return malformed(std::string("invalid escape '\\") + e + "'");
    }
  }
}

Status JsonReader::parseInteger(int64_t &out) {
  skipSpace();
  bool negative = pos_ < text_.size() && text_[pos_] == '-';
  pos_ += negative;
  if (pos_ >= text_.size() || !isDigit(text_[pos_]))
    return malformed("expected an integer");
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && isDigit(text_[pos_ + 1]))
    return malformed("leading zero in number");
  int64_t value = 0;
  while (pos_ < text_.size() && isDigit(text_[pos_])) {
    if (__builtin_mul_overflow(value, 10, &value) ||
        __builtin_add_overflow(value, text_[pos_] - '0', &value))
      return malformed("integer overflows 64 bits");
    ++pos_;
  }
  if (pos_ < text_.size() && std::string(".eE").find(text_[pos_]) != std::string::npos)
    return malformed("numbers must be integers");
  out = negative ? -value : value;
  return Status::ok();
}

Status JsonReader::parseNumber(double &out) {
  skipSpace();
  const size_t start = pos_;
  auto digits = [&] {
    size_t from = pos_;
    while (pos_ < text_.size() && isDigit(text_[pos_]))
      ++pos_;
    return pos_ > from;
  };
  if (pos_ < text_.size() && text_[pos_] == '-')
    ++pos_;
  if (pos_ >= text_.size() || !isDigit(text_[pos_]))
    return malformed("expected a number");
  if (text_[pos_] == '0' && pos_ + 1 < text_.size() && isDigit(text_[pos_ + 1]))
    return malformed("leading zero in number");
  digits();
  if (pos_ < text_.size() && text_[pos_] == '.') {
    ++pos_;
    if (!digits())
      return malformed("expected digits after '.'");
  }
  if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
      ++pos_;
    if (!digits())
      return malformed("expected digits in the exponent");
  }
  out = std::strtod(text_.substr(start, pos_ - start).c_str(), nullptr);
  return Status::ok();
}

Status JsonReader::parseIntArray(std::vector<int64_t> &out, size_t maxCount, const char *what) {
  out.clear();
  FSDP_RETURN_IF_ERROR(expect('['));
  if (consume(']'))
    return Status::ok();
  do {
    if (out.size() == maxCount)
      return Status::error(cat(what, " has more than ", maxCount, " entries"));
    int64_t value;
    FSDP_RETURN_IF_ERROR(parseInteger(value));
    out.push_back(value);
  } while (consume(','));
  return expect(']');
}

char JsonReader::peek() {
  skipSpace();
  return pos_ < text_.size() ? text_[pos_] : '\0';
}

bool JsonReader::consumeWord(const char *word) {
  skipSpace();
  const size_t n = std::strlen(word);
  if (text_.compare(pos_, n, word) != 0)
    return false;
  pos_ += n;
  return true;
}

Status JsonReader::finish(const char *value) {
  skipSpace();
  return pos_ == text_.size() ? Status::ok()
                              : malformed(std::string("trailing characters after the ") + value);
}

Status JsonReader::parseHex4(uint32_t &out) {
  out = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    char c = pos_ < text_.size() ? text_[pos_] : '\0';
    int digit = isDigit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                                    : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (digit < 0)
      return malformed("bad \\u escape");
    out = out * 16 + static_cast<uint32_t>(digit);
  }
  return Status::ok();
}

} // namespace fsdp::rt::detail
