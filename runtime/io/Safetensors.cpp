//===- Safetensors.cpp - safetensors checkpoint files ---------------------===//
//
// The header is JSON, read by the runtime's strict reader (JsonReader.h):
// the header needs only objects, arrays of integers and strings. Strict
// means RFC 8259 where it matters plus valid UTF-8 and the safetensors
// rules (header starts with '{', only trailing whitespace), and
// everything else a header could hold (floats, booleans, null, other
// fields) is refused rather than skipped. Tensors are read straight from
// the file into their own buffers once every offset has been checked, so
// what is allocated never exceeds the file's size.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"

#include "runtime/io/ContentHash.h"
#include "runtime/io/FileIO.h"
#include "runtime/io/JsonReader.h"

#include <algorithm>
#include <set>

namespace fsdp::rt {
namespace {

using namespace detail;

constexpr char kMetadataKey[] = "__metadata__";
/// The reference implementation's limit; also bounds the header buffer.
constexpr uint64_t kMaxHeaderBytes = 100 << 20;
/// The header is padded so that the data buffer starts 8-byte aligned.
constexpr size_t kHeaderAlignment = 8;

bool isValidUtf8(const std::string &s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    size_t more;
    uint32_t cp, min;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0)
      more = 1, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
      more = 2, cp = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
      more = 3, cp = c & 0x07, min = 0x10000;
    else
      return false;
    if (more >= s.size() - i)
      return false;
    for (size_t k = 1; k <= more; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return false;
    i += more + 1;
  }
  return true;
}

void appendJsonString(std::string &out, const std::string &s) {
  static const char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\')
      out += std::string("\\") + c;
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (u < 0x20)
      out += std::string("\\u00") + hex[u >> 4] + hex[u & 0xF];
    else
      out += c;
  }
  out += '"';
}

struct Entry {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t begin = 0, end = 0;
  uint64_t bytes = 0;
};

std::string rangeString(const Entry &e) { return cat("[", e.begin, ", ", e.end, ")"); }

Status parseEntry(JsonReader &json, Entry &entry) {
  bool hasDType = false, hasShape = false, hasOffsets = false;
  std::string dtype;
  std::vector<int64_t> offsets;
  FSDP_RETURN_IF_ERROR(json.parseObject("field", [&](const std::string &key) -> Status {
    if (key == "dtype") {
      hasDType = true;
      return json.parseString(dtype);
    }
    if (key == "shape") {
      hasShape = true;
      return json.parseIntArray(entry.shape, kMaxRank, "shape");
    }
    if (key == "data_offsets") {
      hasOffsets = true;
      return json.parseIntArray(offsets, 2, "data_offsets");
    }
    return Status::error("unexpected field '" + key + "'");
  }));
  if (!hasDType || !hasShape || !hasOffsets)
    return Status::error(std::string("lacks '") +
                         (!hasDType ? "dtype" : !hasShape ? "shape" : "data_offsets") + "'");
  const auto *known = std::find_if(std::begin(kDTypeFileNames), std::end(kDTypeFileNames),
                            [&](const DTypeFileNames &n) { return dtype == n.safetensors; });
  if (known == std::end(kDTypeFileNames))
    return Status::error("unsupported dtype '" + dtype + "'");
  entry.dtype = known->dtype;
  if (offsets.size() != 2)
    return Status::error("data_offsets must hold [begin, end]");
  entry.begin = offsets[0];
  entry.end = offsets[1];
  return checkedByteSize(entry.dtype, entry.shape.data(), entry.shape.size(), entry.bytes);
}

Status parseHeader(const std::string &text, std::vector<Entry> &entries,
                   std::map<std::string, std::string> &metadata) {
  if (!isValidUtf8(text))
    return Status::error("header is not valid UTF-8");
  if (text.empty() || text[0] != '{')
    return Status::error("header does not start with '{'");
  JsonReader json(text, "JSON header");
  FSDP_RETURN_IF_ERROR(json.parseObject("tensor name", [&](const std::string &key) -> Status {
    if (key == kMetadataKey)
      return json.parseObject("metadata key", [&](const std::string &mdKey) -> Status {
        return json.parseString(metadata[mdKey]);
      });
    Entry entry;
    entry.name = key;
    Status parsed = withContext("tensor '" + key + "'", parseEntry(json, entry));
    if (parsed.isOk())
      entries.push_back(std::move(entry));
    return parsed;
  }));
  return json.finish("header");
}

/// Checks every range against the data buffer and the others, so that
/// reading the tensors allocates at most the file's size.
Status checkRanges(std::vector<Entry> &entries, uint64_t bufferSize) {
  for (const Entry &e : entries) {
    std::string where = "tensor '" + e.name + "': data_offsets " + rangeString(e);
    if (e.begin < 0 || e.end < e.begin)
      return Status::error(where + " is not a valid range");
    if (static_cast<uint64_t>(e.end) > bufferSize)
      return Status::error(where + cat(" runs past the ", bufferSize, "-byte data buffer"));
    if (static_cast<uint64_t>(e.end - e.begin) != e.bytes)
      return Status::error(where + cat(" spans ", e.end - e.begin, " bytes but shape ",
                                       shapeString(e.shape.data(), e.shape.size()), " of ",
                                       dtypeName(e.dtype), " needs ", e.bytes));
  }
  std::vector<const Entry *> byBegin;
  for (const Entry &e : entries)
    if (e.bytes > 0) // empty ranges overlap nothing
      byBegin.push_back(&e);
  std::sort(byBegin.begin(), byBegin.end(),
            [](const Entry *a, const Entry *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byBegin.size(); ++i)
    if (byBegin[i]->begin < byBegin[i - 1]->end)
      return Status::error("tensor '" + byBegin[i]->name + "' " + rangeString(*byBegin[i]) +
                           " overlaps tensor '" + byBegin[i - 1]->name + "' " +
                           rangeString(*byBegin[i - 1]));
  return Status::ok();
}

/// Reads and checks the size field and header of an opened file: its
/// entries (in file order) and metadata, and where the data buffer starts.
/// Hashes what it reads into `hasher`.
Status readHeader(const InputFile &file, std::vector<Entry> &entries,
                  std::map<std::string, std::string> &metadata, uint64_t &bufferStart,
                  ContentHasher &hasher) {
  unsigned char sizeField[8];
  FSDP_RETURN_IF_ERROR(file.readAt(0, sizeField, sizeof(sizeField)));
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= static_cast<uint64_t>(sizeField[i]) << (8 * i);
  if (headerSize > kMaxHeaderBytes)
    return Status::error(cat("header size ", headerSize, " exceeds the limit of ",
                             kMaxHeaderBytes));
  if (headerSize > file.size() - sizeof(sizeField))
    return Status::error(cat("header size ", headerSize, " runs past the end of the ",
                             file.size(), "-byte file"));
  std::string header(headerSize, '\0');
  FSDP_RETURN_IF_ERROR(file.readAt(sizeof(sizeField), header.data(), header.size()));
  hasher.update(sizeField, sizeof(sizeField));
  hasher.update(header.data(), header.size());
  FSDP_RETURN_IF_ERROR(parseHeader(header, entries, metadata));
  bufferStart = sizeof(sizeField) + headerSize;
  FSDP_RETURN_IF_ERROR(checkRanges(entries, file.size() - bufferStart));
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin < b.begin; });
  return Status::ok();
}

Status openImpl(const InputFile &file, std::map<std::string, std::string> &metadata,
                std::map<std::string, HostTensor> &tensors, uint64_t &hash) {
  ContentHasher hasher;
  std::vector<Entry> entries;
  uint64_t bufferStart = 0;
  FSDP_RETURN_IF_ERROR(readHeader(file, entries, metadata, bufferStart, hasher));
  // In file order, so the hash covers the bytes as they lie in the file.
  for (Entry &e : entries) {
    HostTensor &t = tensors[e.name];
    t.dtype = e.dtype;
    t.shape = std::move(e.shape);
    t.data.resize(e.bytes);
    FSDP_RETURN_IF_ERROR(withContext(
        "tensor '" + e.name + "'",
        file.readAt(bufferStart + static_cast<uint64_t>(e.begin), t.data.data(), e.bytes)));
    hasher.update(t.data.data(), t.data.size());
  }
  hash = hasher.finish();
  return Status::ok();
}

} // namespace

Status SafetensorsWriter::begin(const std::string &path, const std::vector<Spec> &specs,
                                const std::map<std::string, std::string> &metadata) {
  path_ = path;
  sizes_.clear();
  next_ = 0;
  written_ = 0;
  hasher_ = ContentHasher();
  const std::string context = "safetensors file '" + path + "'";
  std::set<std::string> names;
  std::vector<std::pair<const Spec *, uint64_t>> byName; // spec, data offset
  uint64_t offset = 0;
  size_t widest = 8;
  for (const Spec &spec : specs) {
    const std::string where = context + ": tensor '" + spec.name + "'";
    if (spec.name == kMetadataKey)
      return Status::error(where + ": the name is reserved for metadata");
    if (!isValidUtf8(spec.name))
      return Status::error(where + ": the name is not valid UTF-8");
    if (!names.insert(spec.name).second)
      return Status::error(where + ": duplicate tensor name");
    uint64_t bytes = 0;
    FSDP_RETURN_IF_ERROR(withContext(
        where, checkedByteSize(spec.type.dtype, spec.type.dims, spec.type.rank, bytes)));
    // Widest elements first: every size is a power of two dividing the
    // ones before it, so each tensor lands aligned with no padding between
    // them (the reference reader refuses gaps in the buffer).
    if (dtypeSize(spec.type.dtype) > widest)
      return Status::error(where + ": a wider element type after a narrower one would be "
                                   "misaligned (give the widest first)");
    widest = dtypeSize(spec.type.dtype);
    byName.emplace_back(&spec, offset);
    sizes_.push_back(bytes);
    offset += bytes;
  }
  for (const auto &[key, value] : metadata)
    if (!isValidUtf8(key) || !isValidUtf8(value))
      return Status::error(context + ": metadata entry '" + key + "' is not valid UTF-8");

  std::sort(byName.begin(), byName.end(),
            [](const auto &a, const auto &b) { return a.first->name < b.first->name; });
  std::string header = "{";
  if (!metadata.empty()) {
    header += std::string("\"") + kMetadataKey + "\":{";
    for (const auto &[key, value] : metadata) {
      if (header.back() != '{')
        header += ',';
      appendJsonString(header, key);
      header += ':';
      appendJsonString(header, value);
    }
    header += '}';
  }
  for (size_t i = 0; i < byName.size(); ++i) {
    const Spec &spec = *byName[i].first;
    const uint64_t begin = byName[i].second;
    const uint64_t bytes = sizes_[static_cast<size_t>(&spec - specs.data())];
    if (header.size() > 1)
      header += ',';
    appendJsonString(header, spec.name);
    header += std::string(":{\"dtype\":\"") + fileNames(spec.type.dtype).safetensors + "\",\"shape\":[";
    for (int d = 0; d < spec.type.rank; ++d)
      header += (d ? "," : "") + std::to_string(spec.type.dims[d]);
    header += cat("],\"data_offsets\":[", begin, ",", begin + bytes, "]}");
  }
  header += '}';
  header.append((kHeaderAlignment - header.size() % kHeaderAlignment) % kHeaderAlignment, ' ');

  unsigned char sizeField[8];
  for (int i = 0; i < 8; ++i)
    sizeField[i] = static_cast<unsigned char>(static_cast<uint64_t>(header.size()) >> (8 * i));
  FSDP_RETURN_IF_ERROR(withContext(context, file_.open(path)));
  FSDP_RETURN_IF_ERROR(put(sizeField, sizeof(sizeField)));
  return put(header.data(), header.size());
}

Status SafetensorsWriter::put(const void *data, size_t bytes) {
  hasher_.update(data, bytes);
  written_ += bytes;
  return withContext("safetensors file '" + path_ + "'", file_.write(data, bytes));
}

Status SafetensorsWriter::add(const void *data, size_t bytes) {
  if (next_ >= sizes_.size() || bytes != sizes_[next_])
    return Status::error(cat("safetensors file '", path_, "': tensor ", next_, " has ", bytes,
                             " bytes, its header ",
                             next_ < sizes_.size() ? cat(sizes_[next_]) : std::string("none")));
  ++next_;
  return put(data, bytes);
}

Status SafetensorsWriter::finish(uint64_t *contentHash) {
  if (next_ != sizes_.size())
    return Status::error(cat("safetensors file '", path_, "': ", next_, " of ", sizes_.size(),
                             " tensors written"));
  if (contentHash)
    *contentHash = hasher_.finish();
  return withContext("safetensors file '" + path_ + "'", file_.commit());
}

Status writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                        const std::map<std::string, std::string> &metadata, uint64_t *contentHash) {
  // Every tensor checked before anything is written; then widest element
  // type first, by name.
  std::vector<const NamedTensor *> order;
  for (const NamedTensor &t : tensors) {
    uint64_t n = 0;
    FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + path + "': tensor '" + t.name + "'",
                                     checkTensorRef(t.tensor, n)));
    order.push_back(&t);
  }
  std::stable_sort(order.begin(), order.end(), [](const NamedTensor *a, const NamedTensor *b) {
    size_t sa = dtypeSize(a->tensor.dtype), sb = dtypeSize(b->tensor.dtype);
    return sa != sb ? sa > sb : a->name < b->name;
  });
  std::vector<SafetensorsWriter::Spec> specs;
  for (const NamedTensor *t : order)
    specs.push_back({t->name, t->tensor});
  SafetensorsWriter writer;
  FSDP_RETURN_IF_ERROR(writer.begin(path, specs, metadata));
  for (const NamedTensor *t : order)
    FSDP_RETURN_IF_ERROR(writer.add(t->tensor.data, t->tensor.byteSize()));
  return writer.finish(contentHash);
}


Status SafetensorsFile::open(const std::string &path, SafetensorsFile &out) {
  InputFile input;
  FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + path + "'", input.open(path)));
  return open(input, path, out);
}

Status SafetensorsFile::open(const InputFile &input, const std::string &path,
                             SafetensorsFile &out) {
  SafetensorsFile file;
  FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + path + "'",
                                   openImpl(input, file.metadata_, file.tensors_,
                                            file.contentHash_)));
  out = std::move(file);
  return Status::ok();
}

Status SafetensorsFile::openMemory(const uint8_t *data, uint64_t size, const std::string &name,
                                   SafetensorsFile &out) {
  SafetensorsFile file;
  InputFile input;
  input.openMemory(data, size);
  FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + name + "'",
                                   openImpl(input, file.metadata_, file.tensors_,
                                            file.contentHash_)));
  out = std::move(file);
  return Status::ok();
}

Status SafetensorsIndex::open(const std::string &path, SafetensorsIndex &out) {
  auto file = std::make_shared<InputFile>();
  FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + path + "'", file->open(path)));
  return open(std::move(file), path, out);
}

Status SafetensorsIndex::open(std::shared_ptr<const InputFile> file, const std::string &path,
                              SafetensorsIndex &out) {
  SafetensorsIndex index;
  Status read = [&]() -> Status {
    std::vector<Entry> entries;
    ContentHasher unused; // the whole file is verified separately (hashFile)
    FSDP_RETURN_IF_ERROR(readHeader(*file, entries, index.metadata_, index.bufferStart_, unused));
    for (Entry &e : entries)
      index.tensors_[e.name] = {e.dtype, std::move(e.shape), static_cast<uint64_t>(e.begin),
                                e.bytes};
    return Status::ok();
  }();
  FSDP_RETURN_IF_ERROR(withContext("safetensors file '" + path + "'", read));
  index.path_ = path;
  index.file_ = std::move(file);
  out = std::move(index);
  return Status::ok();
}

const SafetensorsIndex::Info *SafetensorsIndex::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status SafetensorsIndex::read(const std::string &name, uint64_t byteOffset, uint64_t bytes,
                              void *out) const {
  const Info *info = find(name);
  if (!info)
    return Status::error("safetensors file '" + path_ + "': no tensor '" + name + "'");
  if (byteOffset > info->bytes || bytes > info->bytes - byteOffset)
    return Status::error(cat("safetensors file '", path_, "': tensor '", name, "' has ",
                             info->bytes, " bytes, not [", byteOffset, ", ", byteOffset + bytes,
                             ")"));
  return withContext("safetensors file '" + path_ + "'",
                     file_->readAt(bufferStart_ + info->offset + byteOffset, out, bytes));
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  for (const auto &entry : tensors_)
    out.push_back(entry.first);
  return out;
}

const HostTensor *SafetensorsFile::find(const std::string &name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

} // namespace fsdp::rt
