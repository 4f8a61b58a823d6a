//===- Npy.cpp - NumPy .npy tensor files ----------------------------------===//
//
// A .npy file is a 6-byte magic, a version, a little-endian header length
// (2 bytes in 1.0, 4 in 2.0 and 3.0), a Python dict literal such as
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } and then the
// raw elements. Rather than evaluate Python, the header is parsed by a
// small recursive-descent parser that accepts exactly that dict: string
// keys, a string, a bool and a tuple of integers, in any order, with the
// spacing and trailing commas NumPy and hand-written files use.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"

#include "runtime/io/FileIO.h"
#include "runtime/io/TextScanner.h"

#include <cstring>

namespace fsdp::rt {
namespace {

using namespace detail;

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
/// NumPy itself refuses headers above 10000 bytes by default; a generous
/// cap still stops a hostile 2.0 length from buying a 4 GiB allocation.
constexpr uint64_t kMaxHeaderBytes = 1 << 20;
/// NumPy pads magic + length + header to a multiple of 64 so the data of
/// a memory-mapped file is aligned.
constexpr size_t kHeaderAlignment = 64;

/// Maps a descr such as '<f4' or '|u1' to a dtype. One-byte types have no
/// byte order, so both '|' and '<' spellings are accepted for them.
Status parseDescr(const std::string &descr, DType &dtype) {
  if (descr.size() >= 2 && descr[0] == '>')
    return Status::error("big-endian dtype '" + descr + "' is not supported");
  if (descr.size() >= 2 && (descr[0] == '<' || descr[0] == '|')) {
    std::string code = descr.substr(1);
    for (const DTypeFileNames &names : kDTypeFileNames) {
      if (!names.numpyCode || code != names.numpyCode)
        continue;
      if (descr[0] == '|' && dtypeSize(names.dtype) != 1)
        return Status::error("dtype '" + descr + "' lacks a byte order");
      dtype = names.dtype;
      return Status::ok();
    }
  }
  return Status::error("unsupported dtype '" + descr + "'");
}

struct NpyHeader {
  DType dtype = DType::F32;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

/// Parses the header dict; see the file comment for the accepted grammar.
class HeaderParser : TextScanner {
public:
  explicit HeaderParser(const std::string &text) : TextScanner(text, "header") {}

  Status parse(NpyHeader &out) {
    bool seenDescr = false, seenOrder = false, seenShape = false;
    FSDP_RETURN_IF_ERROR(expect('{'));
    while (!consume('}')) {
      std::string key;
      FSDP_RETURN_IF_ERROR(parseString(key));
      FSDP_RETURN_IF_ERROR(expect(':'));
      bool *seen = key == "descr"           ? &seenDescr
                   : key == "fortran_order" ? &seenOrder
                   : key == "shape"         ? &seenShape
                                            : nullptr;
      if (!seen)
        return Status::error("header has unexpected key '" + key + "'");
      if (*seen)
        return Status::error("header repeats key '" + key + "'");
      *seen = true;
      if (key == "descr") {
        std::string descr;
        FSDP_RETURN_IF_ERROR(parseString(descr));
        FSDP_RETURN_IF_ERROR(parseDescr(descr, out.dtype));
      } else if (key == "fortran_order") {
        FSDP_RETURN_IF_ERROR(parseBool(out.fortranOrder));
      } else {
        FSDP_RETURN_IF_ERROR(parseShape(out.shape));
      }
      if (!consume(',')) {
        FSDP_RETURN_IF_ERROR(expect('}'));
        break;
      }
    }
    skipSpace();
    if (pos_ != text_.size())
      return malformed("trailing characters after the dict");
    if (!seenDescr || !seenOrder || !seenShape)
      return Status::error("header lacks one of 'descr', 'fortran_order', 'shape'");
    return Status::ok();
  }

private:
  bool consumeWord(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }

  /// A quoted string without escapes: NumPy never writes any in the keys
  /// or in a simple descr.
  Status parseString(std::string &out) {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return malformed("expected a quoted string");
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos)
      return malformed("unterminated string");
    out = text_.substr(pos_, end - pos_);
    if (out.find_first_of("\\\n") != std::string::npos)
      return malformed("escapes and newlines are not supported in strings");
    pos_ = end + 1;
    return Status::ok();
  }

  Status parseBool(bool &out) {
    skipSpace();
    if (consumeWord("True"))
      out = true;
    else if (consumeWord("False"))
      out = false;
    else
      return malformed("expected True or False");
    return Status::ok();
  }

  /// A tuple of integers: "()", "(3,)", "(2, 3)" or "(2, 3,)". "(3)" is
  /// the integer 3 in Python, not a tuple, so it is refused.
  Status parseShape(std::vector<int64_t> &shape) {
    shape.clear();
    FSDP_RETURN_IF_ERROR(expect('('));
    bool trailingComma = false;
    while (!consume(')')) {
      if (shape.size() == static_cast<size_t>(kMaxRank))
        return Status::error(cat("shape has more than ", kMaxRank, " dimensions"));
      int64_t dim;
      FSDP_RETURN_IF_ERROR(parseInt(dim));
      shape.push_back(dim);
      trailingComma = consume(',');
      if (!trailingComma) {
        FSDP_RETURN_IF_ERROR(expect(')'));
        break;
      }
    }
    if (shape.size() == 1 && !trailingComma)
      return malformed("a one-element shape needs a trailing comma");
    return Status::ok();
  }

  /// A decimal integer; Python 2 era files may carry an 'L' suffix.
  Status parseInt(int64_t &out) {
    skipSpace();
    bool negative = consume('-');
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      return malformed("expected an integer");
    int64_t value = 0;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (__builtin_mul_overflow(value, 10, &value) ||
          __builtin_add_overflow(value, text_[pos_] - '0', &value))
        return malformed("integer overflows 64 bits");
      ++pos_;
    }
    consumeWord("L");
    out = negative ? -value : value;
    return Status::ok();
  }
};

Status readNpyImpl(const std::string &path, HostTensor &out) {
  InputFile file;
  FSDP_RETURN_IF_ERROR(file.open(path));
  unsigned char preamble[kMagicSize + 2];
  FSDP_RETURN_IF_ERROR(file.readAt(0, preamble, sizeof(preamble)));
  if (std::memcmp(preamble, kMagic, kMagicSize) != 0)
    return Status::error("bad magic: not a .npy file");
  int major = preamble[kMagicSize], minor = preamble[kMagicSize + 1];
  if (major < 1 || major > 3 || minor != 0)
    return Status::error(cat("unsupported format version ", major, ".", minor));

  // 1.0 stores the header length in 2 bytes; 2.0 and 3.0 (3.0 only allows
  // UTF-8 in the header, irrelevant to the dtypes read here) in 4.
  size_t lengthBytes = major == 1 ? 2 : 4;
  unsigned char lengthField[4] = {};
  FSDP_RETURN_IF_ERROR(file.readAt(sizeof(preamble), lengthField, lengthBytes));
  uint64_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |= static_cast<uint64_t>(lengthField[i]) << (8 * i);
  uint64_t headerStart = sizeof(preamble) + lengthBytes;
  if (headerLength > kMaxHeaderBytes)
    return Status::error(cat("header length ", headerLength, " exceeds the limit of ",
                             kMaxHeaderBytes));
  if (headerLength > file.size() - headerStart)
    return Status::error(cat("header length ", headerLength, " runs past the end of the ",
                             file.size(), "-byte file"));
  std::string text(headerLength, '\0');
  FSDP_RETURN_IF_ERROR(file.readAt(headerStart, text.data(), text.size()));

  NpyHeader header;
  FSDP_RETURN_IF_ERROR(HeaderParser(text).parse(header));
  if (header.fortranOrder)
    return Status::error("fortran_order arrays are not supported; save a C-order array");
  uint64_t bytes = 0;
  FSDP_RETURN_IF_ERROR(
      checkedByteSize(header.dtype, header.shape.data(), header.shape.size(), bytes));
  uint64_t dataStart = headerStart + headerLength;
  if (bytes != file.size() - dataStart)
    return Status::error(cat("shape ", shapeString(header.shape.data(), header.shape.size()),
                             " of ", dtypeName(header.dtype), " needs ", bytes,
                             " data bytes but the file holds ", file.size() - dataStart));

  // Only now, with the size matched against the file, allocate.
  HostTensor tensor;
  tensor.dtype = header.dtype;
  tensor.shape = std::move(header.shape);
  tensor.data.resize(bytes);
  FSDP_RETURN_IF_ERROR(file.readAt(dataStart, tensor.data.data(), bytes));
  out = std::move(tensor);
  return Status::ok();
}

Status writeNpyImpl(const std::string &path, const TensorRef &tensor) {
  uint64_t bytes = 0;
  FSDP_RETURN_IF_ERROR(checkTensorRef(tensor, bytes));
  const char *code = fileNames(tensor.dtype).numpyCode;
  if (!code)
    return Status::error(std::string(dtypeName(tensor.dtype)) +
                         " has no NumPy dtype; write it with safetensors instead");

  std::string header = std::string("{'descr': '") +
                       (dtypeSize(tensor.dtype) == 1 ? "|" : "<") + code +
                       "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < tensor.rank; ++i)
    header += (i ? ", " : "") + std::to_string(tensor.dims[i]);
  header += tensor.rank == 1 ? ",), }" : "), }"; // Python's repr of a tuple
  // Pad with spaces and end with '\n', as NumPy does. With rank <= 8 the
  // header stays far below the 65535 bytes a 1.0 length field can hold.
  size_t prefix = kMagicSize + 2 + 2;
  size_t total = prefix + header.size() + 1;
  header.append((kHeaderAlignment - total % kHeaderAlignment) % kHeaderAlignment, ' ');
  header += '\n';

  char preamble[kMagicSize + 4];
  std::memcpy(preamble, kMagic, kMagicSize);
  preamble[kMagicSize] = 1;
  preamble[kMagicSize + 1] = 0;
  preamble[kMagicSize + 2] = static_cast<char>(header.size() & 0xff);
  preamble[kMagicSize + 3] = static_cast<char>(header.size() >> 8);
  return writeFileAtomic(path, {{preamble, sizeof(preamble)},
                                {header.data(), header.size()},
                                {tensor.data, static_cast<size_t>(bytes)}});
}

} // namespace

Status readNpy(const std::string &path, HostTensor &out) {
  return withContext("npy file '" + path + "'", readNpyImpl(path, out));
}

Status writeNpy(const std::string &path, const TensorRef &tensor) {
  return withContext("npy file '" + path + "'", writeNpyImpl(path, tensor));
}

} // namespace fsdp::rt
