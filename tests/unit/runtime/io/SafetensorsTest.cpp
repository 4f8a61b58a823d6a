//===- SafetensorsTest.cpp - safetensors reading, writing, hostile files --===//
//
// Round trips every dtype at ranks 0..4 with metadata and awkward names,
// checks the layout other readers rely on (8-byte padded header, aligned
// and gap-free data), feeds the reader damaged files (truncation at every
// byte, corrupted header bytes, malformed JSON, lying offsets, overlaps),
// each of which must fail naming the file (and the tensor when one is at
// fault), and, where Debian's python3 has numpy, cross-checks with a
// json+numpy reader and writer (the safetensors package is not installed).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/FormatTestUtil.h"
#include "runtime/io/Safetensors.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

namespace {

using namespace fsdp::rt;
using namespace fsdp::rt::formattest;
namespace fs = std::filesystem;

/// A safetensors file from a header and a data buffer, unpadded.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string out;
  for (int i = 0; i < 8; ++i)
    out += static_cast<char>((static_cast<uint64_t>(header.size()) >> (8 * i)) & 0xff);
  return out + header + data;
}

/// Every dtype at ranks 0..4, named "<dtype>_r<rank>".
std::map<std::string, HostTensor> everyDTypeAndRank() {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {2, 3}, {2, 1, 3}, {2, 3, 1, 2}};
  std::map<std::string, HostTensor> tensors;
  for (int d = 0; d < kNumDTypes; ++d)
    for (size_t rank = 0; rank < shapes.size(); ++rank)
      tensors[std::string(dtypeName(static_cast<DType>(d))) + "_r" + std::to_string(rank)] =
          makeTensor(static_cast<DType>(d), shapes[rank], d * 5 + static_cast<int>(rank));
  return tensors;
}

std::vector<NamedTensor> named(const std::map<std::string, HostTensor> &tensors) {
  std::vector<NamedTensor> out;
  for (const auto &[name, t] : tensors)
    out.push_back({name, t.ref()});
  return out;
}

class SafetensorsTest : public formattest::FormatTest {
protected:
  SafetensorsTest() : FormatTest("fsdp-st-", "t.safetensors") {}

  /// Opens `path`, expecting an error that names the file and says `why`.
  void expectOpenError(const std::string &why) {
    SafetensorsFile f;
    Status s = SafetensorsFile::open(path, f);
    ASSERT_FALSE(s.isOk()) << "accepted a bad file, expected: " << why;
    EXPECT_EQ(s.message().rfind("safetensors file '" + path + "'", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  }

  void expectSame(const SafetensorsFile &f, const std::map<std::string, HostTensor> &tensors) {
    std::vector<std::string> names;
    for (const auto &[name, expected] : tensors) {
      names.push_back(name);
      const HostTensor *t = f.find(name);
      ASSERT_NE(t, nullptr) << name;
      EXPECT_EQ(t->dtype, expected.dtype) << name;
      EXPECT_EQ(t->shape, expected.shape) << name;
      EXPECT_EQ(t->data, expected.data) << name;
    }
    EXPECT_EQ(f.names(), names);
  }
};

TEST_F(SafetensorsTest, RoundTripsEveryDTypeAndRankWithMetadata) {
  std::map<std::string, HostTensor> tensors = everyDTypeAndRank();
  tensors["empty"] = makeTensor(DType::F32, {3, 0}, 0);
  std::map<std::string, std::string> metadata = {
      {"producer", "fsdp-opt"}, {"quote\"back\\slash", "new\nline\ttab\x01 \xc3\xa9"}, {"", ""}};
  ASSERT_TRUE(writeSafetensors(path, named(tensors), metadata).isOk());
  EXPECT_FALSE(fs::exists(path + ".tmp"));
  SafetensorsFile f;
  Status s = SafetensorsFile::open(path, f);
  ASSERT_TRUE(s.isOk()) << s.message();
  expectSame(f, tensors);
  EXPECT_EQ(f.metadata(), metadata);
  EXPECT_EQ(f.find("absent"), nullptr);
}

TEST_F(SafetensorsTest, LayoutIsPaddedAlignedAndGapFree) {
  ASSERT_TRUE(writeSafetensors(path, named(everyDTypeAndRank()), {}).isOk());
  std::string bytes = readBytes(path);
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(headerSize % 8, 0u);
  std::string header = bytes.substr(8, headerSize);
  EXPECT_EQ(header.find("__metadata__"), std::string::npos); // none given, none written
  std::regex entry(R"re("dtype":"(\w+)","shape":\[[0-9,]*\],"data_offsets":\[(\d+),(\d+)\])re");
  const std::map<std::string, uint64_t> sizes = {
      {"F64", 8}, {"I64", 8}, {"U64", 8}, {"F32", 4}, {"I32", 4}, {"U32", 4}, {"F16", 2},
      {"BF16", 2}, {"I16", 2}, {"U16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1}};
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (std::sregex_iterator it(header.begin(), header.end(), entry), end; it != end; ++it) {
    uint64_t begin = std::stoull((*it)[2]), stop = std::stoull((*it)[3]);
    EXPECT_EQ((8 + headerSize + begin) % sizes.at((*it)[1]), 0u) << it->str();
    ranges.push_back({begin, stop});
  }
  ASSERT_EQ(ranges.size(), 65u);
  std::sort(ranges.begin(), ranges.end());
  uint64_t next = 0;
  for (auto [begin, stop] : ranges) {
    EXPECT_EQ(begin, next);
    next = stop;
  }
  EXPECT_EQ(next, bytes.size() - 8 - headerSize);
}

TEST_F(SafetensorsTest, EmptyFileAndAwkwardNamesRoundTrip) {
  ASSERT_TRUE(writeSafetensors(path, {}, {}).isOk());
  SafetensorsFile f;
  ASSERT_TRUE(SafetensorsFile::open(path, f).isOk());
  EXPECT_TRUE(f.names().empty());
  EXPECT_TRUE(f.metadata().empty());

  std::map<std::string, HostTensor> tensors;
  int seed = 0;
  for (const char *name : {"a\"b", "back\\slash", "tab\there", "ctrl\x01\x1f", "", "/",
                           "\xc3\xa9t\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80",
                           "layers.0.attn.q_proj.weight"})
    tensors[name] = makeTensor(DType::BF16, {2}, seed++);
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"k", "v"}}).isOk());
  SafetensorsFile g;
  Status s = SafetensorsFile::open(path, g);
  ASSERT_TRUE(s.isOk()) << s.message();
  expectSame(g, tensors);
}

TEST_F(SafetensorsTest, ReadsEscapesAndSpacingOfOtherWriters) {
  writeBytes(path, fileBytes(R"({
  "__metadata__" : { "format" : "pt", "\u00e9\/\n" : "\ud83d\ude00" },
  "caf\u00e9" : { "data_offsets" : [ 0 , 2 ], "shape" : [ 2 ], "dtype" : "U8" },
  "z" : {"dtype":"I16","shape":[],"data_offsets":[2,4]}
}  )", "abcd"));
  SafetensorsFile f;
  Status s = SafetensorsFile::open(path, f);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(f.names(), (std::vector<std::string>{"caf\xc3\xa9", "z"}));
  EXPECT_EQ(f.metadata().at("\xc3\xa9/\n"), "\xf0\x9f\x98\x80");
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(std::string(f.find("z")->data.begin(), f.find("z")->data.end()), "cd");
  EXPECT_TRUE(f.find("z")->shape.empty());
}

TEST_F(SafetensorsTest, RefusesBadTensorsWithoutWriting) {
  HostTensor t = makeTensor(DType::F32, {2}, 0);
  TensorRef nullData = t.ref(), negative = t.ref(), nine = t.ref();
  nullData.data = nullptr;
  negative.dims[0] = -1;
  nine.rank = 9;
  struct Case {
    std::vector<NamedTensor> tensors;
    std::map<std::string, std::string> metadata;
    std::string why;
  } cases[] = {
      {{{"a", t.ref()}, {"a", t.ref()}}, {}, "tensor 'a': duplicate tensor name"},
      {{{"__metadata__", t.ref()}}, {}, "reserved for metadata"},
      {{{"bad\xff", t.ref()}}, {}, "not valid UTF-8"},
      {{{"n", nullData}}, {}, "tensor 'n': tensor data pointer is null"},
      {{{"n", negative}}, {}, "tensor 'n': negative dimension -1"},
      {{{"n", nine}}, {}, "rank 9 exceeds"},
      {{{"a", t.ref()}}, {{"k", "\xc0\xaf"}}, "metadata entry 'k' is not valid UTF-8"},
  };
  for (const Case &c : cases) {
    Status s = writeSafetensors(path, c.tensors, c.metadata);
    ASSERT_FALSE(s.isOk()) << c.why;
    EXPECT_EQ(s.message().rfind("safetensors file '" + path + "'", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(c.why), std::string::npos) << s.message();
    EXPECT_FALSE(fs::exists(path));
    EXPECT_FALSE(fs::exists(path + ".tmp"));
  }
  std::string missing = dir + "/no/such/dir/t.safetensors";
  EXPECT_NE(writeSafetensors(missing, {}, {}).message().find(missing), std::string::npos);
}

TEST_F(SafetensorsTest, RefusesMalformedHeaders) {
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  struct Case {
    std::string header, why;
  } cases[] = {
      {" {" + a + "}", "does not start with '{'"},
      {"[]", "does not start with '{'"},
      {"{" + a + ",}", "expected '\"'"},
      {R"({"a" {"dtype":"F32"}})", "expected ':'"},
      {R"({"a":{"dtype":"F32)", "unterminated string"},
      {R"({"a\x":{}})", "invalid escape '\\x'"},
      {R"({"\ud800":{}})", "high surrogate without a low surrogate"},
      {R"({"\udc00":{}})", "lone low surrogate"},
      {R"({"\u12g4":{}})", "bad \\u escape"},
      {"{\"a\tb\":{}}", "control character in string"},
      {"{\"\xff\":{}}", "not valid UTF-8"},
      {"{\"\xc0\xaf\":{}}", "not valid UTF-8"},
      {"{\"\xed\xa0\x80\":{}}", "not valid UTF-8"},
      {"{" + a + "} x", "trailing characters"},
      {"{" + a, "expected '}'"},
      {"", "does not start with '{'"},
      {R"({"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}})", "leading zero"},
      {R"({"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}})", "must be integers"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8e0]}})", "must be integers"},
      {R"({"a":{"dtype":"F32","shape":[true],"data_offsets":[0,8]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[[2]],"data_offsets":[0,8]}})", "expected an integer"},
      {R"({"a":{"dtype":null,"shape":[2],"data_offsets":[0,8]}})", "tensor 'a': malformed"},
      {R"({"a":{"dtype":"F32","shape":[2,],"data_offsets":[0,8]}})", "expected an integer"},
      {R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]}})",
       "overflows 64 bits"},
      {R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
       "tensor 'a': shape [4294967296,4294967296] overflows"},
      {R"({"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}})",
       "shape has more than 8 entries"},
      {R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", "negative dimension -2"},
      {R"({"a":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,8]}})",
       "tensor 'a': unsupported dtype 'F8_E4M3'"},
      {R"({"a":{"shape":[2],"data_offsets":[0,8]}})", "tensor 'a': lacks 'dtype'"},
      {R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", "tensor 'a': lacks 'shape'"},
      {R"({"a":{"dtype":"F32","shape":[2]}})", "tensor 'a': lacks 'data_offsets'"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", "unexpected field 'x'"},
      {R"({"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
       "duplicate field 'dtype'"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})",
       "data_offsets has more than 2 entries"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}})", "must hold [begin, end]"},
      {"{" + a + "," + a + "}", "duplicate tensor name 'a'"},
      {R"({"__metadata__":{"k":1}})", "expected '\"'"},
      {R"({"__metadata__":{"k":"v","k":"w"}})", "duplicate metadata key 'k'"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})",
       "tensor 'a': data_offsets [0, 12) runs past the 8-byte data buffer"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,0]}})", "is not a valid range"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", "is not a valid range"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})",
       "tensor 'a': data_offsets [0, 8) spans 8 bytes but shape [1] of f32 needs 4"},
      {R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
       R"("b":{"dtype":"I16","shape":[2],"data_offsets":[2,6]}})",
       "tensor 'b' [2, 6) overlaps tensor 'a' [0, 4)"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    writeBytes(path, fileBytes(c.header, std::string(8, '\0')));
    expectOpenError(c.why);
  }
}

TEST_F(SafetensorsTest, RefusesBadSizesAndPaths) {
  writeBytes(path, std::string("\x08\0\0", 3));
  expectOpenError("truncated");
  writeBytes(path, fileBytes("{}", "").replace(0, 1, "\x10"));
  expectOpenError("header size 16 runs past the end of the 10-byte file");
  writeBytes(path, std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}");
  expectOpenError("exceeds the limit");
  path = dir + "/absent.safetensors";
  expectOpenError("cannot open");
  path = dir;
  expectOpenError("not a regular file");
}

TEST_F(SafetensorsTest, TruncationAtEveryByteIsAnError) {
  std::map<std::string, HostTensor> tensors = {{"w", makeTensor(DType::F32, {2, 2}, 1)},
                                               {"b", makeTensor(DType::I8, {3}, 2)}};
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"step", "7"}}).isOk());
  std::string whole = readBytes(path);
  for (size_t n = 0; n < whole.size(); ++n) {
    SCOPED_TRACE(n);
    writeBytes(path, whole.substr(0, n));
    expectOpenError("");
  }
}

// The bytes of a file embedded in a compiled step binary read as the file
// does, hash included, and truncation is refused naming the given name.
TEST_F(SafetensorsTest, MemoryReadsAsTheFile) {
  std::map<std::string, HostTensor> tensors = {{"w", makeTensor(DType::F32, {2, 2}, 1)},
                                               {"b", makeTensor(DType::I8, {3}, 2)}};
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"step", "7"}}).isOk());
  std::string whole = readBytes(path);
  SafetensorsFile fromFile, fromMemory;
  ASSERT_TRUE(SafetensorsFile::open(path, fromFile).isOk());
  Status s = SafetensorsFile::openMemory(reinterpret_cast<const uint8_t *>(whole.data()),
                                         whole.size(), "embedded", fromMemory);
  ASSERT_TRUE(s.isOk()) << s.message();
  expectSame(fromMemory, tensors);
  EXPECT_EQ(fromMemory.metadata(), fromFile.metadata());
  EXPECT_EQ(fromMemory.contentHash(), fromFile.contentHash());
  for (size_t n : {size_t(0), size_t(7), whole.size() - 1}) {
    SafetensorsFile f;
    Status cut = SafetensorsFile::openMemory(reinterpret_cast<const uint8_t *>(whole.data()), n,
                                             "embedded", f);
    ASSERT_FALSE(cut.isOk()) << n;
    EXPECT_EQ(cut.message().rfind("safetensors file 'embedded': ", 0), 0u) << cut.message();
  }
}

TEST_F(SafetensorsTest, CorruptedHeaderBytesNeverCrash) {
  std::map<std::string, HostTensor> tensors = {{"w", makeTensor(DType::F32, {2, 2}, 1)},
                                               {"b", makeTensor(DType::I8, {3}, 2)}};
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"step", "7"}}).isOk());
  std::string whole = readBytes(path);
  size_t headerEnd = whole.size() - 19;
  int accepted = 0;
  for (size_t i = 0; i < headerEnd; ++i)
    for (char value : {'\0', '\xff', '\x80', '"', '\\', '{', '}', '[', ']', ',', ':', '9', '-', ' '}) {
      std::string bad = whole;
      bad[i] = value;
      writeBytes(path, bad);
      SafetensorsFile f;
      Status s = SafetensorsFile::open(path, f);
      if (!s.isOk()) {
        EXPECT_EQ(s.message().rfind("safetensors file '" + path + "'", 0), 0u) << s.message();
        continue;
      }
      ++accepted; // e.g. padding, or a name's letter: must still be consistent
      for (const std::string &name : f.names()) {
        const HostTensor *t = f.find(name);
        EXPECT_EQ(t->data.size(), static_cast<size_t>(t->numElements()) * dtypeSize(t->dtype));
      }
    }
  EXPECT_GT(accepted, 0);
}

TEST_F(SafetensorsTest, StreamedWriterMatchesAndRefusesMisuse) {
  std::map<std::string, HostTensor> tensors = {{"w", makeTensor(DType::F64, {3}, 1)},
                                               {"a", makeTensor(DType::F32, {2, 2}, 2)},
                                               {"b", makeTensor(DType::BF16, {5}, 3)}};
  // In writeSafetensors' order (widest first, then by name): the same bytes.
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"step", "2"}}).isOk());
  const std::string expected = readBytes(path);
  std::filesystem::remove(path);
  auto spec = [&](const std::string &name) {
    return SafetensorsWriter::Spec{name, tensors[name].ref()};
  };
  SafetensorsWriter writer;
  ASSERT_TRUE(writer.begin(path, {spec("w"), spec("a"), spec("b")}, {{"step", "2"}}).isOk());
  EXPECT_FALSE(fs::exists(path)); // nothing under the name until finish
  for (const char *name : {"w", "a", "b"})
    ASSERT_TRUE(writer.add(tensors[name].data.data(), tensors[name].data.size()).isOk());
  uint64_t hash = 0;
  ASSERT_TRUE(writer.finish(&hash).isOk());
  EXPECT_EQ(readBytes(path), expected);
  EXPECT_EQ(writer.bytesWritten(), expected.size());
  EXPECT_EQ(hash, contentHash(expected.data(), expected.size()));

  // A narrower type before a wider one would misalign: refused up front.
  SafetensorsWriter narrowFirst;
  Status s = narrowFirst.begin(dir + "/n.safetensors", {spec("b"), spec("w")}, {});
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("misaligned"), std::string::npos) << s.message();
  // A tensor of the wrong size, or too few tensors, fails; an abandoned
  // writer leaves no file and no temporary behind.
  {
    SafetensorsWriter short_;
    const std::string other = dir + "/short.safetensors";
    ASSERT_TRUE(short_.begin(other, {spec("w"), spec("a")}, {}).isOk());
    EXPECT_FALSE(short_.add(tensors["w"].data.data(), 3).isOk());
    ASSERT_TRUE(short_.add(tensors["w"].data.data(), tensors["w"].data.size()).isOk());
    EXPECT_FALSE(short_.finish().isOk());
  }
  EXPECT_FALSE(fs::exists(dir + "/short.safetensors"));
  EXPECT_FALSE(fs::exists(dir + "/short.safetensors.tmp"));
}

TEST_F(SafetensorsTest, IndexReadsRangesOfWhatTheFullReaderReads) {
  std::map<std::string, HostTensor> tensors = everyDTypeAndRank();
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"step", "3"}}).isOk());
  SafetensorsFile whole;
  ASSERT_TRUE(SafetensorsFile::open(path, whole).isOk());
  SafetensorsIndex index;
  Status s = SafetensorsIndex::open(path, index);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(index.metadata(), whole.metadata());
  EXPECT_EQ(index.tensors().size(), tensors.size());
  for (const auto &[name, expected] : tensors) {
    const SafetensorsIndex::Info *info = index.find(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->dtype, expected.dtype) << name;
    EXPECT_EQ(info->shape, expected.shape) << name;
    ASSERT_EQ(info->bytes, expected.data.size()) << name;
    // Every split of the tensor into a head and a tail reads the same bytes.
    for (uint64_t cut = 0; cut <= info->bytes; cut += std::max<uint64_t>(1, info->bytes / 5)) {
      std::vector<char> bytes(info->bytes);
      ASSERT_TRUE(index.read(name, 0, cut, bytes.data()).isOk());
      ASSERT_TRUE(index.read(name, cut, info->bytes - cut, bytes.data() + cut).isOk());
      EXPECT_EQ(bytes, expected.data) << name << " cut at " << cut;
    }
  }
  std::vector<char> bytes(64);
  const auto &[first, info] = *index.tensors().begin();
  Status past = index.read(first, info.bytes, 1, bytes.data());
  ASSERT_FALSE(past.isOk());
  EXPECT_NE(past.message().find("'" + first + "'"), std::string::npos) << past.message();
  EXPECT_FALSE(index.read("absent", 0, 0, bytes.data()).isOk());
  // The index refuses what the full reader refuses.
  writeBytes(path, readBytes(path).substr(0, 12));
  EXPECT_FALSE(SafetensorsIndex::open(path, index).isOk());
}

TEST_F(SafetensorsTest, JsonAndNumpyReadWhatWeWrite) {
  if (!havePython())
    FAIL() << "/usr/bin/python3 with numpy is not available (setup.sh installs it)";
  std::map<std::string, HostTensor> tensors = everyDTypeAndRank();
  ASSERT_TRUE(writeSafetensors(path, named(tensors), {{"producer", "fsdp-opt"}}).isOk());
  ASSERT_TRUE(runPython(R"(
import json, struct, sys, numpy as np
path, out = sys.argv[1], sys.argv[2]
data = open(path, 'rb').read()
n, = struct.unpack('<Q', data[:8])
assert n % 8 == 0, n
header = json.loads(data[8:8 + n].decode('utf-8'))
assert header.pop('__metadata__') == {'producer': 'fsdp-opt'}
buf = data[8 + n:]
# BF16 has no numpy dtype: compare its bit patterns.
types = {'F32': '<f4', 'F64': '<f8', 'F16': '<f2', 'BF16': '<u2', 'I8': 'i1', 'I16': '<i2',
         'I32': '<i4', 'I64': '<i8', 'U8': 'u1', 'U16': '<u2', 'U32': '<u4', 'U64': '<u8',
         'BOOL': '?'}
lines, end = [], 0
for name in sorted(header):
    e = header[name]
    begin, stop = e['data_offsets']
    dt = np.dtype(types[e['dtype']])
    assert (8 + n + begin) % dt.itemsize == 0, name
    a = np.frombuffer(buf[begin:stop], dtype=dt).reshape(e['shape'])
    lines.append('%s|%s|%s|%s' % (name, e['dtype'], ','.join(map(str, a.shape)), a.tobytes().hex()))
    end = max(end, stop)
assert end == len(buf)
open(out, 'w').write('\n'.join(lines) + '\n')
)", path + " " + dir + "/seen.txt"));
  const char *names[] = {"F32", "F64", "F16", "BF16", "I8", "I16", "I32",
                         "I64", "U8", "U16", "U32", "U64", "BOOL"};
  std::string expected;
  for (const auto &[name, t] : tensors) {
    std::string dims, hex;
    for (size_t i = 0; i < t.shape.size(); ++i)
      dims += (i ? "," : "") + std::to_string(t.shape[i]);
    for (char c : t.data) {
      hex += "0123456789abcdef"[(c >> 4) & 0xf];
      hex += "0123456789abcdef"[c & 0xf];
    }
    expected += name + "|" + names[static_cast<int>(t.dtype)] + "|" + dims + "|" + hex + "\n";
  }
  EXPECT_EQ(readBytes(dir + "/seen.txt"), expected);
}

TEST_F(SafetensorsTest, WeReadWhatAJsonWriterWrites) {
  if (!havePython())
    FAIL() << "/usr/bin/python3 with numpy is not available (setup.sh installs it)";
  // Lays out the file as the reference writer does; json.dumps escapes
  // non-ASCII names as \u sequences, surrogate pairs included.
  ASSERT_TRUE(runPython(R"(
import json, struct, sys, numpy as np
out = sys.argv[1]
arrays = {'f': np.arange(6, dtype='<f4').reshape(2, 3), 'h': np.float16(1.5) * np.ones(3, '<f2'),
          'q': np.arange(4, dtype='<i8'), 'b': np.array([True, False, True]),
          'caf\u00e9': np.array(7, dtype='u1'), '\U0001F600': np.zeros((2, 0), '<i4'),
          'bf': np.array([0x3f80, 0xc000], dtype='<u2')}
codes = {'<f4': 'F32', '<f2': 'F16', '<i8': 'I64', '|b1': 'BOOL', '|u1': 'U8', '<i4': 'I32'}
header, chunks, offset = {'__metadata__': {'format': 'np'}}, [], 0
for i, (name, a) in enumerate(arrays.items()):
    raw = a.tobytes()
    code = 'BF16' if name == 'bf' else codes[a.dtype.str]
    header[name] = {'dtype': code, 'shape': list(a.shape), 'data_offsets': [offset, offset + len(raw)]}
    chunks.append(raw)
    offset += len(raw)
    open('%s/%d.bin' % (out, i), 'wb').write(raw)
text = json.dumps(header).encode()
text += b' ' * (-len(text) % 8)
open(out + '/py.safetensors', 'wb').write(struct.pack('<Q', len(text)) + text + b''.join(chunks))
)", dir));
  SafetensorsFile f;
  Status s = SafetensorsFile::open(dir + "/py.safetensors", f);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(f.metadata().at("format"), "np");
  const char *order[] = {"f", "h", "q", "b", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "bf"};
  const DType types[] = {DType::F32, DType::F16, DType::I64, DType::Bool,
                         DType::U8,  DType::I32, DType::BF16};
  for (int i = 0; i < 7; ++i) {
    const HostTensor *t = f.find(order[i]);
    ASSERT_NE(t, nullptr) << order[i];
    EXPECT_EQ(t->dtype, types[i]);
    EXPECT_EQ(std::string(t->data.begin(), t->data.end()),
              readBytes(dir + "/" + std::to_string(i) + ".bin"));
  }
  EXPECT_EQ(f.find("\xf0\x9f\x98\x80")->shape, (std::vector<int64_t>{2, 0}));
  EXPECT_TRUE(f.find("caf\xc3\xa9")->shape.empty());
}

} // namespace
