//===- NpyTest.cpp - .npy reading, writing and hostile files --------------===//
//
// Round trips every dtype .npy can hold at ranks 0..4 (and 8), checks the
// header spellings other writers use, feeds the reader damaged files
// (truncation at every byte, corrupted header bytes, lying lengths and
// shapes), each of which must fail with a message naming the file, and,
// where Debian's python3 has numpy, checks that numpy loads what we write
// and that we load what numpy writes.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/FormatTestUtil.h"
#include "runtime/io/Npy.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace {

using namespace fsdp::rt;
using namespace fsdp::rt::formattest;
namespace fs = std::filesystem;

const DType kNpyTypes[] = {DType::F32, DType::F64, DType::F16, DType::I8,  DType::I16,
                           DType::I32, DType::I64, DType::U8,  DType::U16, DType::U32,
                           DType::U64, DType::Bool};
const std::vector<std::vector<int64_t>> kShapes = {
    {}, {5}, {2, 3}, {2, 1, 3}, {2, 3, 1, 2}, {0}, {3, 0, 2}};

/// A .npy file from its parts, for headers no writer would produce.
std::string npyBytes(const std::string &header, const std::string &data, int major = 1) {
  std::string out = std::string("\x93" "NUMPY") + static_cast<char>(major) + '\0';
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

class NpyTest : public formattest::FormatTest {
protected:
  NpyTest() : FormatTest("fsdp-npy-", "t.npy") {}

  /// Reads `path`, expecting an error that names the file and says `why`.
  void expectReadError(const std::string &why) {
    HostTensor t;
    Status s = readNpy(path, t);
    ASSERT_FALSE(s.isOk()) << "accepted a bad file, expected: " << why;
    EXPECT_EQ(s.message().rfind("npy file '" + path + "'", 0), 0u) << s.message();
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  }
};

TEST_F(NpyTest, RoundTripsEveryDTypeAndRank) {
  for (DType dtype : kNpyTypes)
    for (const auto &shape : kShapes) {
      SCOPED_TRACE(std::string(dtypeName(dtype)) + " rank " + std::to_string(shape.size()));
      HostTensor in = makeTensor(dtype, shape, static_cast<int>(dtype));
      ASSERT_TRUE(writeNpy(path, in.ref()).isOk());
      HostTensor out;
      Status s = readNpy(path, out);
      ASSERT_TRUE(s.isOk()) << s.message();
      EXPECT_EQ(out.dtype, dtype);
      EXPECT_EQ(out.shape, shape);
      EXPECT_EQ(out.data, in.data);
      // NumPy aligns the data to 64 bytes; so do we.
      EXPECT_EQ((fs::file_size(path) - in.data.size()) % 64, 0u);
    }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(NpyTest, RoundTripsRankEightAndRefusesRankNine) {
  HostTensor in = makeTensor(DType::I16, {2, 1, 2, 1, 2, 1, 2, 3}, 3);
  ASSERT_TRUE(writeNpy(path, in.ref()).isOk());
  HostTensor out;
  ASSERT_TRUE(readNpy(path, out).isOk());
  EXPECT_EQ(out.shape, in.shape);
  EXPECT_EQ(out.data, in.data);

  TensorRef nine = in.ref();
  nine.rank = 9;
  Status s = writeNpy(dir + "/nine.npy", nine);
  EXPECT_NE(s.message().find("rank 9 exceeds"), std::string::npos) << s.message();
  writeBytes(path, npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                            "(1,1,1,1,1,1,1,1,1), }\n", std::string(4, '\0')));
  expectReadError("more than 8 dimensions");
}

TEST_F(NpyTest, RefusesBf16AndBadTensorsWithoutWriting) {
  HostTensor bf16 = makeTensor(DType::BF16, {2}, 0);
  Status s = writeNpy(path, bf16.ref());
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("bf16 has no NumPy dtype"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(path), std::string::npos);

  TensorRef null = makeTensor(DType::F32, {2}, 0).ref();
  null.data = nullptr;
  EXPECT_NE(writeNpy(path, null).message().find("null"), std::string::npos);
  TensorRef negative = makeTensor(DType::F32, {2}, 0).ref();
  negative.dims[0] = -2;
  EXPECT_NE(writeNpy(path, negative).message().find("negative dimension"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(NpyTest, WritesAtomicallyAndReportsUnwritablePaths) {
  HostTensor a = makeTensor(DType::F32, {4}, 1), b = makeTensor(DType::F32, {2, 2}, 2);
  ASSERT_TRUE(writeNpy(path, a.ref()).isOk());
  ASSERT_TRUE(writeNpy(path, b.ref()).isOk());
  HostTensor out;
  ASSERT_TRUE(readNpy(path, out).isOk());
  EXPECT_EQ(out.shape, b.shape);
  EXPECT_FALSE(fs::exists(path + ".tmp"));

  std::string missing = dir + "/no/such/dir/t.npy";
  Status s = writeNpy(missing, a.ref());
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(missing), std::string::npos) << s.message();
}

TEST_F(NpyTest, AcceptsHeaderSpellingsOfOtherWriters) {
  struct Case {
    std::string header;
    int major;
    DType dtype;
  } cases[] = {
      {"{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3), }", 1, DType::I8},
      {"{'descr': '<i1', 'fortran_order': False, 'shape': (2, 3), }", 1, DType::I8},
      {"{'descr': '<u1', 'fortran_order': False, 'shape': (2, 3), }", 1, DType::U8},
      {"{'descr': '|b1', 'fortran_order': False, 'shape': (2, 3), }", 1, DType::Bool},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }\n", 2, DType::U8},
      {"{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }\n", 3, DType::U8},
      {"{\"shape\": (2,3), \"descr\": \"|u1\", \"fortran_order\": False}", 1, DType::U8},
      {"{'descr':'|u1','fortran_order':False,'shape':(2L, 3L,)}   \t\n", 1, DType::U8},
      {"{\n 'descr': '|i1',\n 'fortran_order': False,\n 'shape': ( 2 , 3 ) ,\n}", 1, DType::I8},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    writeBytes(path, npyBytes(c.header, "abcdef", c.major));
    HostTensor out;
    Status s = readNpy(path, out);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(out.dtype, c.dtype);
    EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(std::string(out.data.begin(), out.data.end()), "abcdef");
  }
}

TEST_F(NpyTest, RefusesMalformedHeaders) {
  const std::string ok = "'fortran_order': False, 'shape': (2,), }";
  struct Case {
    std::string header, why;
  } cases[] = {
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", "fortran_order arrays"},
      {"{'descr': '>f4', " + ok, "big-endian dtype '>f4'"},
      {"{'descr': '|f4', " + ok, "lacks a byte order"},
      {"{'descr': '<c8', " + ok, "unsupported dtype '<c8'"},
      {"{'descr': '|O', " + ok, "unsupported dtype '|O'"},
      {"{'descr': '<V2', " + ok, "unsupported dtype"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", "negative dimension -2"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
       "overflows 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }",
       "overflows 64-bit sizes"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", "trailing comma"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", "expected '('"},
      {"{'descr': '<f4', 'fortran_order': False, }", "lacks one of"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'descr': '<f4', " + ok, "repeats key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2,), }", "expected True or False"},
      {"{'descr' '<f4', " + ok, "expected ':'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,) ", "expected '}'"},
      {"{'descr': '<f4', " + ok + " junk", "trailing characters"},
      {"{'descr': '<f\\4', " + ok, "escapes"},
      {"", "expected '{'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2,,), }", "expected an integer"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.header);
    writeBytes(path, npyBytes(c.header, std::string(8, '\0')));
    expectReadError(c.why);
  }
}

TEST_F(NpyTest, RefusesBadPreambleAndLengths) {
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  std::string good = npyBytes(header, std::string(8, '\0'));
  writeBytes(path, "");
  expectReadError("truncated");
  writeBytes(path, "\x93NUMPZ" + good.substr(6));
  expectReadError("bad magic");
  for (auto [major, minor] : std::vector<std::pair<int, int>>{{4, 0}, {1, 1}, {0, 0}}) {
    std::string bad = good;
    bad[6] = static_cast<char>(major);
    bad[7] = static_cast<char>(minor);
    writeBytes(path, bad);
    expectReadError("unsupported format version " + std::to_string(major));
  }
  std::string longer = good;
  longer[8] = '\xff';
  writeBytes(path, longer);
  expectReadError("runs past the end");
  writeBytes(path, npyBytes(header, std::string(8, '\0'), 2).replace(8, 4, "\xff\xff\xff\xff"));
  expectReadError("exceeds the limit");
  writeBytes(path, npyBytes(header, std::string(7, '\0')));
  expectReadError("needs 8 data bytes but the file holds 7");
  writeBytes(path, npyBytes(header, std::string(9, '\0')));
  expectReadError("holds 9");

  path = dir + "/absent.npy";
  expectReadError("cannot open");
  path = dir;
  expectReadError("not a regular file");
}

TEST_F(NpyTest, TruncationAtEveryByteIsAnError) {
  HostTensor in = makeTensor(DType::F32, {2, 3}, 5);
  ASSERT_TRUE(writeNpy(path, in.ref()).isOk());
  std::string whole = readBytes(path);
  for (size_t n = 0; n < whole.size(); ++n) {
    SCOPED_TRACE(n);
    writeBytes(path, whole.substr(0, n));
    expectReadError("");
  }
}

TEST_F(NpyTest, CorruptedBytesNeverCrash) {
  HostTensor in = makeTensor(DType::I32, {3, 2}, 9);
  ASSERT_TRUE(writeNpy(path, in.ref()).isOk());
  std::string whole = readBytes(path);
  size_t headerEnd = whole.size() - in.data.size();
  int accepted = 0;
  for (size_t i = 0; i < headerEnd; ++i)
    for (char value : {'\0', '\xff', '(', ')', ',', '\'', '9', '-', ' ', 'T', '{'}) {
      std::string bad = whole;
      bad[i] = value;
      writeBytes(path, bad);
      HostTensor out;
      Status s = readNpy(path, out);
      if (s.isOk()) {
        ++accepted; // e.g. a changed padding byte: must still be consistent
        EXPECT_EQ(out.data.size(), static_cast<size_t>(out.numElements()) * dtypeSize(out.dtype));
      } else {
        EXPECT_EQ(s.message().rfind("npy file '" + path + "'", 0), 0u) << s.message();
      }
    }
  EXPECT_GT(accepted, 0);
}

TEST_F(NpyTest, NumpyLoadsWhatWeWrite) {
  if (!havePython())
    FAIL() << "/usr/bin/python3 with numpy is not available (setup.sh installs it)";
  std::ofstream manifest(dir + "/manifest.txt");
  int n = 0;
  for (DType dtype : kNpyTypes)
    for (size_t rank = 0; rank <= 4; ++rank) {
      HostTensor t = makeTensor(dtype, kShapes[rank], n);
      std::string base = dir + "/w" + std::to_string(n++);
      ASSERT_TRUE(writeNpy(base + ".npy", t.ref()).isOk());
      writeBytes(base + ".bin", std::string(t.data.begin(), t.data.end()));
      manifest << base << " " << dtypeName(dtype) << " shape:";
      for (size_t i = 0; i < rank; ++i)
        manifest << (i ? "," : "") << t.shape[i];
      manifest << "\n";
    }
  manifest.close();
  EXPECT_TRUE(runPython(R"(
import sys, numpy as np
names = {'f32': '<f4', 'f64': '<f8', 'f16': '<f2', 'i8': 'i1', 'i16': '<i2', 'i32': '<i4',
         'i64': '<i8', 'ui8': 'u1', 'ui16': '<u2', 'ui32': '<u4', 'ui64': '<u8', 'i1': '?'}
for line in open(sys.argv[1]):
    base, dtype, shape = line.split()
    shape = tuple(int(d) for d in shape[len('shape:'):].split(',') if d)
    a = np.load(base + '.npy', allow_pickle=False)
    raw = open(base + '.bin', 'rb').read()
    assert a.dtype == np.dtype(names[dtype]), (base, a.dtype, dtype)
    assert a.shape == shape and a.flags.c_contiguous, (base, a.shape, shape)
    assert a.tobytes() == raw, base
)", dir + "/manifest.txt"));
}

TEST_F(NpyTest, WeLoadWhatNumpyWrites) {
  if (!havePython())
    FAIL() << "/usr/bin/python3 with numpy is not available (setup.sh installs it)";
  ASSERT_TRUE(runPython(R"(
import sys, numpy as np
out = sys.argv[1]
names = {'<f4': 'f32', '<f8': 'f64', '<f2': 'f16', '|i1': 'i8', '<i2': 'i16', '<i4': 'i32',
         '<i8': 'i64', '|u1': 'ui8', '<u2': 'ui16', '<u4': 'ui32', '<u8': 'ui64', '|b1': 'i1'}
shapes = [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 2), (0, 3)]
with open(out + '/manifest.txt', 'w') as manifest:
    n = 0
    for descr, name in names.items():
        for shape, version in zip(shapes, [None, (1, 0), (2, 0), (3, 0), None, None]):
            count = int(np.prod(shape))
            a = (np.arange(count) % 2 if name == 'i1' else np.arange(count) * 7 - 5)
            a = a.astype(np.dtype(descr)).reshape(shape)
            base = '%s/p%d' % (out, n); n += 1
            if version is None:
                np.save(base + '.npy', a)
            else:
                with open(base + '.npy', 'wb') as f:
                    np.lib.format.write_array(f, a, version=version)
            open(base + '.bin', 'wb').write(a.tobytes())
            manifest.write('%s %s shape:%s\n' % (base, name, ','.join(map(str, shape))))
np.save(out + '/fortran.npy', np.asfortranarray(np.ones((2, 3), np.float32)))
np.save(out + '/big.npy', np.ones(3, dtype='>i4'))
)", dir));
  std::ifstream manifest(dir + "/manifest.txt");
  std::string base, dtype, shapeText;
  int count = 0;
  while (manifest >> base >> dtype >> shapeText) {
    SCOPED_TRACE(base);
    HostTensor t;
    Status s = readNpy(base + ".npy", t);
    ASSERT_TRUE(s.isOk()) << s.message();
    EXPECT_EQ(dtypeName(t.dtype), dtype);
    std::string dims;
    for (size_t i = 0; i < t.shape.size(); ++i)
      dims += (i ? "," : "") + std::to_string(t.shape[i]);
    EXPECT_EQ("shape:" + dims, shapeText);
    EXPECT_EQ(std::string(t.data.begin(), t.data.end()), readBytes(base + ".bin"));
    ++count;
  }
  EXPECT_EQ(count, 72);
  path = dir + "/fortran.npy";
  expectReadError("fortran_order");
  path = dir + "/big.npy";
  expectReadError("big-endian");
}

} // namespace
