//===- ContentHashTest.cpp - one hash however the bytes arrive ------------===//
//
// Plans and weights files are identified by ContentHasher. A writer hashes
// what it writes and a reader what it reads, in whatever pieces they have,
// so every split of the same bytes must give the one-shot value, and the
// safetensors writer and reader must agree with a hash of the whole file.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/ContentHash.h"
#include "runtime/io/Safetensors.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

namespace {

using namespace fsdp::rt;

TEST(ContentHash, EverySplitGivesTheOneShotValue) {
  std::mt19937 rng(3);
  std::vector<uint8_t> bytes(1000);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(rng());
  for (size_t size : {0u, 1u, 7u, 8u, 9u, 64u, 1000u}) {
    uint64_t expected = contentHash(bytes.data(), size);
    for (int trial = 0; trial < 50; ++trial) {
      ContentHasher hasher;
      size_t done = 0;
      while (done < size) {
        size_t piece = std::min<size_t>(size - done, rng() % 13);
        hasher.update(bytes.data() + done, piece);
        done += piece;
      }
      ASSERT_EQ(hasher.finish(), expected) << "size " << size;
    }
  }
  // Length is part of the hash: trailing zeros change it.
  std::vector<uint8_t> zeros(16, 0);
  EXPECT_NE(contentHash(zeros.data(), 8), contentHash(zeros.data(), 16));
  uint64_t before = contentHash(bytes.data(), 1000);
  bytes[500] ^= 1;
  EXPECT_NE(contentHash(bytes.data(), 1000), before);
}

TEST(ContentHash, SafetensorsWriterAndReaderAgreeWithTheWholeFile) {
  std::string path = ::testing::TempDir() + "fsdp-hash-test.safetensors";
  std::vector<float> a(37, 1.5f);
  std::vector<int64_t> b(5, -3);
  TensorRef ra, rb;
  ra.dtype = DType::F32;
  ra.rank = 1;
  ra.dims[0] = 37;
  ra.data = a.data();
  rb.dtype = DType::I64;
  rb.rank = 2;
  rb.dims[0] = 1;
  rb.dims[1] = 5;
  rb.data = b.data();
  uint64_t written = 0;
  ASSERT_TRUE(writeSafetensors(path, {{"w", ra}, {"idx", rb}}, {{"k", "v"}}, &written).isOk());
  std::ifstream in(path, std::ios::binary);
  std::stringstream content;
  content << in.rdbuf();
  std::string whole = content.str();
  EXPECT_EQ(written, contentHash(whole.data(), whole.size()));
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(path, file).isOk());
  EXPECT_EQ(file.contentHash(), written);
  std::remove(path.c_str());
}

} // namespace
