//===- DataSourceTest.cpp - the training data contract --------------------===//
//
// The index formulas of docs/design.md's data contract checked directly (sample
// rows and token starts, wrap-around, rank slices, steps far beyond 64-bit
// products), then both sources end to end on small files: which rows and
// token windows each step and rank receives, lossless dtype conversion, and
// every refusal naming the input and the file.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/DataSource.h"
#include "runtime/io/Npy.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cstring>

namespace fsdp::rt {
namespace {

using formattest::FormatTest;

template <typename T> HostTensor tensorOf(DType dtype, std::vector<int64_t> shape,
                                          const std::vector<T> &values) {
  HostTensor t{dtype, std::move(shape), {}};
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty()) // an empty vector's data() may be null (UBSan)
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

template <typename T> std::vector<T> valuesOf(const HostTensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

bool contains(const Status &s, const std::string &text) {
  return s.message().find(text) != std::string::npos;
}

TEST(DataIndexTest, SampleRowsFollowTheContract) {
  // B = 4, S = 10: step 0 rows 0..3, step 1 rows 4..7, step 2 wraps: 8, 9, 0, 1.
  std::vector<int64_t> rows;
  for (int64_t step = 0; step < 3; ++step)
    for (int64_t j = 0; j < 4; ++j)
      rows.push_back(sampleRow(step, j, 4, 10));
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
  EXPECT_EQ(sampleRow(7, 3, 4, 3), (7 * 4 + 3) % 3);
  // No overflow: (2^62 * 8 + 5) mod 7 computed exactly.
  int64_t big = int64_t{1} << 62;
  EXPECT_EQ(sampleRow(big, 5, 8, 7), static_cast<int64_t>((static_cast<__int128>(big) * 8 + 5) % 7));
}

TEST(DataIndexTest, TokenStartsFollowTheContract) {
  // n = 100, T = 8: modulus 91.
  for (int64_t step : {0, 1, 5, 1000})
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(tokenStart(step, j, 3, 8, 100), ((step * 3 + j) * 8) % 91) << step << " " << j;
  // Wrap-around: (2*4 + 1) * 8 = 72 mod 91 = 72; (3*4 + 0) * 8 = 96 mod 91 = 5.
  EXPECT_EQ(tokenStart(3, 0, 4, 8, 100), 5);
  int64_t big = int64_t{1} << 61;
  __int128 exact = (static_cast<__int128>(big) * 16 + 3) * 1024 % (1000003 - 1024 - 1);
  EXPECT_EQ(tokenStart(big, 3, 16, 1024, 1000003), static_cast<int64_t>(exact));
}

TEST(DataIndexTest, ConversionIsLosslessOrRefused) {
  std::vector<int32_t> small{1, -2, 3};
  std::vector<int64_t> wide(3);
  ASSERT_TRUE(convertElements(DType::I32, small.data(), DType::I64, wide.data(), 3, true).isOk());
  EXPECT_EQ(wide, (std::vector<int64_t>{1, -2, 3}));
  std::vector<int64_t> big{5, int64_t{1} << 40};
  std::vector<int32_t> narrow(2);
  Status s = convertElements(DType::I64, big.data(), DType::I32, narrow.data(), 2, true);
  EXPECT_TRUE(contains(s, "element 1 (1099511627776) of i64 is not representable in i32"))
      << s.message();
  std::vector<float> halves{0.5f, 1.5f};
  std::vector<int64_t> ints(2);
  EXPECT_TRUE(contains(convertElements(DType::F32, halves.data(), DType::I64, ints.data(), 2, true),
                       "element 0 (0.5)"));
  std::vector<double> tenth{0.25, 0.1};
  std::vector<float> f(2);
  EXPECT_TRUE(contains(convertElements(DType::F64, tenth.data(), DType::F32, f.data(), 2, true),
                       "element 1 (0.10000000000000001) of f64"));
  std::vector<uint16_t> ids{0, 255, 256};
  EXPECT_TRUE(contains(convertElements(DType::U16, ids.data(), DType::U8, nullptr, 3, true),
                       "element 2 (256) of ui16 is not representable in ui8"));
  // Past one 64K chunk the index is still the file's.
  std::vector<int64_t> many(70000, 1);
  many[69999] = -1;
  EXPECT_TRUE(contains(convertElements(DType::I64, many.data(), DType::U32, nullptr, 70000, true),
                       "element 69999 (-1)"));
}

class SampleSourceTest : public FormatTest {
protected:
  SampleSourceTest() : FormatTest("fsdp-data-", "x.npy") {}

  std::string save(const std::string &name, const HostTensor &t) {
    std::string file = dir + "/" + name;
    EXPECT_TRUE(writeNpy(file, t.ref()).isOk());
    return file;
  }
  /// 5 samples of [3] f32: sample k holds k*10, k*10+1, k*10+2.
  std::string fiveSamples() {
    std::vector<float> v;
    for (int k = 0; k < 5; ++k)
      for (int c = 0; c < 3; ++c)
        v.push_back(static_cast<float>(k * 10 + c));
    return save("x.npy", tensorOf(DType::F32, {5, 3}, v));
  }
  /// The first element of each row of batch input `k`, divided by 10.
  static std::vector<int> rowsOf(const DataSource &source, size_t k, int64_t rowElements) {
    std::vector<int> rows;
    std::vector<float> v = valuesOf<float>(source.batch()[k]);
    for (size_t i = 0; i < v.size(); i += rowElements)
      rows.push_back(static_cast<int>(v[i]) / 10);
    return rows;
  }
};

TEST_F(SampleSourceTest, StepsWalkTheRowsAndWrap) {
  std::vector<InputSpec> specs{{"x", DType::F32, {2, 3}}};
  std::unique_ptr<DataSource> source;
  ASSERT_TRUE(openSampleFiles(specs, {{"x", fiveSamples()}}, {}, source).isOk());
  EXPECT_EQ(source->samplesPerStep(), 2);
  EXPECT_EQ(source->tokensPerStep(), 0);
  EXPECT_EQ(source->distinctSamples(), 5); // the rows before sampling wraps
  std::vector<std::vector<int>> seen;
  for (int64_t step = 0; step < 4; ++step) {
    ASSERT_TRUE(source->fill(step).isOk());
    seen.push_back(rowsOf(*source, 0, 3));
  }
  EXPECT_EQ(seen, (std::vector<std::vector<int>>{{0, 1}, {2, 3}, {4, 0}, {1, 2}}));
  std::vector<float> row = valuesOf<float>(source->batch()[0]);
  EXPECT_EQ(row, (std::vector<float>{10, 11, 12, 20, 21, 22}));
}

TEST_F(SampleSourceTest, RanksTakeTheirSliceOfTheGlobalBatch) {
  // b = 2, N = 2: B = 4. Rank 1 takes samples 2, 3 of each step.
  std::vector<InputSpec> specs{{"x", DType::F32, {2, 3}}};
  std::unique_ptr<DataSource> source;
  ASSERT_TRUE(openSampleFiles(specs, {{"x", fiveSamples()}}, {1, 2}, source).isOk());
  EXPECT_EQ(source->samplesPerStep(), 4);
  ASSERT_TRUE(source->fill(0).isOk());
  EXPECT_EQ(rowsOf(*source, 0, 3), (std::vector<int>{2, 3}));
  ASSERT_TRUE(source->fill(1).isOk());
  EXPECT_EQ(rowsOf(*source, 0, 3), (std::vector<int>{1, 2})); // rows 6, 7 mod 5
  EXPECT_FALSE(openSampleFiles(specs, {{"x", fiveSamples()}}, {2, 2}, source).isOk());
}

TEST_F(SampleSourceTest, MicroBatchesSpreadOverAllRanks) {
  // --grad-accum: b = 1, N = 2, K = 2: B = 4; the binding holds K*b = 2
  // rows, micro-batch k of rank r reading sample k*b*N + r*b.
  std::vector<InputSpec> specs{{"x", DType::F32, {2, 3}}};
  std::unique_ptr<DataSource> source;
  ASSERT_TRUE(openSampleFiles(specs, {{"x", fiveSamples()}}, {1, 2, 2}, source).isOk());
  EXPECT_EQ(source->samplesPerStep(), 4);
  ASSERT_TRUE(source->fill(0).isOk());
  EXPECT_EQ(rowsOf(*source, 0, 3), (std::vector<int>{1, 3}));
  ASSERT_TRUE(source->fill(1).isOk());
  EXPECT_EQ(rowsOf(*source, 0, 3), (std::vector<int>{0, 2})); // samples 5, 7 mod 5
  // K = 1 is the rank slice of before.
  ASSERT_TRUE(openSampleFiles(specs, {{"x", fiveSamples()}}, {1, 2, 1}, source).isOk());
  ASSERT_TRUE(source->fill(0).isOk());
  EXPECT_EQ(rowsOf(*source, 0, 3), (std::vector<int>{2, 3}));
  // Rows that do not split into K equal micro-batches are refused.
  Status s = openSampleFiles(specs, {{"x", fiveSamples()}}, {0, 1, 3}, source);
  EXPECT_TRUE(contains(s, "input 'x' has 2 rows, not 3 micro-batches of equal size")) << s.message();
}

TEST(DataContract, GlobalSampleOfRow) {
  // b = 2, N = 3, K = 2: rank 1 holds samples 2, 3 (micro-batch 0) and
  // 8, 9 (micro-batch 1).
  RankLayout layout{1, 3, 2};
  std::vector<int64_t> samples;
  for (int64_t row = 0; row < 4; ++row)
    samples.push_back(globalSampleOfRow(layout, 2, row));
  EXPECT_EQ(samples, (std::vector<int64_t>{2, 3, 8, 9}));
}


TEST_F(SampleSourceTest, InputsConvertOnlyWithoutLoss) {
  std::string labels = save("y.npy", tensorOf<int32_t>(DType::I32, {3}, {7, 8, 9}));
  std::vector<InputSpec> specs{{"x", DType::F32, {2, 3}}, {"y", DType::I64, {2}}};
  std::unique_ptr<DataSource> source;
  Status s = openSampleFiles(specs, {{"x", fiveSamples()}, {"y", labels}}, {}, source);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(source->fill(1).isOk());
  EXPECT_EQ(valuesOf<int64_t>(source->batch()[1]), (std::vector<int64_t>{9, 7}));
  EXPECT_EQ(source->batch()[1].dtype, DType::I64);

  std::string wide = save("w.npy", tensorOf<int64_t>(DType::I64, {2}, {1, int64_t{1} << 33}));
  specs[1].dtype = DType::I32;
  s = openSampleFiles(specs, {{"x", fiveSamples()}, {"y", wide}}, {}, source);
  EXPECT_TRUE(contains(s, "w.npy' for input 'y': element 1 (8589934592) of i64 is not "
                          "representable in i32 (the input's dtype is i32)"))
      << s.message();
  specs[0].dtype = DType::I64;
  s = openSampleFiles(specs, {{"x", fiveSamples()}, {"y", labels}}, {}, source);
  EXPECT_TRUE(s.isOk()) << s.message(); // integral floats are exact in i64
}

TEST_F(SampleSourceTest, RefusalsNameTheInputAndFile) {
  std::vector<InputSpec> specs{{"x", DType::F32, {2, 3}}};
  std::unique_ptr<DataSource> source;
  std::string x = fiveSamples();
  Status s = openSampleFiles(specs, {}, {}, source);
  EXPECT_TRUE(contains(s, "no data for input 'x'")) << s.message();
  s = openSampleFiles(specs, {{"x", x}, {"z", x}}, {}, source);
  EXPECT_TRUE(contains(s, "input 'z' (file '" + x + "') is not in the plan (it has: x)"))
      << s.message();
  std::string wrong = save("wrong.npy", tensorOf<float>(DType::F32, {2, 4}, std::vector<float>(8)));
  s = openSampleFiles(specs, {{"x", wrong}}, {}, source);
  EXPECT_TRUE(contains(s, "wrong.npy' for input 'x': holds f32[2,4], but samples of the input "
                          "are [3] (the plan needs f32[2,3]"))
      << s.message();
  std::string empty = save("empty.npy", tensorOf<float>(DType::F32, {0, 3}, {}));
  EXPECT_TRUE(contains(openSampleFiles(specs, {{"x", empty}}, {}, source), "holds no samples"));
  EXPECT_TRUE(contains(openSampleFiles(specs, {{"x", dir + "/nope.npy"}}, {}, source), "nope.npy"));
}

class TokenSourceTest : public FormatTest {
protected:
  TokenSourceTest() : FormatTest("fsdp-tokens-", "tokens.bin") {}

  /// Tokens 0..n-1 as raw uint16.
  std::string binTokens(int n) {
    std::string bytes;
    for (int i = 0; i < n; ++i) {
      bytes.push_back(static_cast<char>(i & 0xff));
      bytes.push_back(static_cast<char>(i >> 8));
    }
    formattest::writeBytes(path, bytes);
    return path;
  }
  std::vector<InputSpec> gptInputs(DType dtype = DType::I64) {
    return {{"idx", dtype, {2, 4}}, {"targets", dtype, {2, 4}}};
  }
};

TEST_F(TokenSourceTest, MicroBatchWindows) {
  // n = 20, T = 4, b = 1, N = 2, K = 2: B = 4; rank 0 reads samples 0 and 2
  // of each step, starting at ((4s + j) * 4) mod 15.
  std::vector<InputSpec> inputs{{"idx", DType::I64, {2, 4}}, {"targets", DType::I64, {2, 4}}};
  std::unique_ptr<DataSource> source;
  Status s = openTokenFile(inputs, binTokens(20), {0, 2, 2}, source);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(source->tokensPerStep(), 16);
  ASSERT_TRUE(source->fill(1).isOk());
  std::vector<int64_t> idx = valuesOf<int64_t>(source->batch()[0]);
  EXPECT_EQ(idx[0], (4 * 4) % 15);
  EXPECT_EQ(idx[4], (6 * 4) % 15);
}

TEST_F(TokenSourceTest, WindowsFollowTheContract) {
  // n = 20, T = 4, b = 2: sample j of step s starts at ((2s + j) * 4) mod 15.
  std::unique_ptr<DataSource> source;
  Status s = openTokenFile(gptInputs(), binTokens(20), {}, source);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(source->tokensPerStep(), 8);
  // Windows starting at 0, 4, 8, 12 (below 15) come before the first wrap.
  EXPECT_EQ(source->distinctSamples(), 4);
  EXPECT_EQ(source->inputs(), (std::vector<std::string>{"idx", "targets"}));
  for (int64_t step = 0; step < 5; ++step) {
    ASSERT_TRUE(source->fill(step).isOk());
    std::vector<int64_t> idx = valuesOf<int64_t>(source->batch()[0]);
    std::vector<int64_t> targets = valuesOf<int64_t>(source->batch()[1]);
    for (int64_t j = 0; j < 2; ++j) {
      int64_t start = ((2 * step + j) * 4) % 15;
      for (int64_t t = 0; t < 4; ++t) {
        EXPECT_EQ(idx[j * 4 + t], start + t) << "step " << step << " sample " << j;
        EXPECT_EQ(targets[j * 4 + t], start + t + 1) << "step " << step << " sample " << j;
      }
    }
  }
  // Step 2 wraps: sample 0 starts at 16 mod 15 = 1.
  ASSERT_TRUE(source->fill(2).isOk());
  EXPECT_EQ(valuesOf<int64_t>(source->batch()[0])[0], 1);
}

TEST_F(TokenSourceTest, NpyTokensOfAnyIntegerDtype) {
  std::vector<int32_t> ids(30);
  for (int i = 0; i < 30; ++i)
    ids[i] = 1000 + i;
  std::string file = dir + "/tokens.npy";
  ASSERT_TRUE(writeNpy(file, tensorOf(DType::I32, {3, 10}, ids).ref()).isOk());
  std::unique_ptr<DataSource> source;
  // Rank 1 of 2: B = 4, its samples are j = 2, 3; n = 30, T = 4: modulus 25.
  Status s = openTokenFile(gptInputs(DType::I32), file, {1, 2}, source);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(source->distinctSamples(), 7); // starts 0, 4, ..., 24 (below 25)
  ASSERT_TRUE(source->fill(1).isOk()); // j = 6, 7: starts 24, 28 mod 25 = 3
  std::vector<int32_t> idx = valuesOf<int32_t>(source->batch()[0]);
  EXPECT_EQ(idx, (std::vector<int32_t>{1024, 1025, 1026, 1027, 1003, 1004, 1005, 1006}));
  std::vector<int32_t> targets = valuesOf<int32_t>(source->batch()[1]);
  EXPECT_EQ(targets[3], 1028);
}

TEST_F(TokenSourceTest, RefusalsNameTheFile) {
  std::unique_ptr<DataSource> source;
  Status s = openTokenFile(gptInputs(), binTokens(5), {}, source);
  EXPECT_TRUE(contains(s, "tokens.bin' holds 5 tokens; sequences of 4 need at least 6"))
      << s.message();
  s = openTokenFile(gptInputs(DType::I8), binTokens(300), {}, source);
  EXPECT_TRUE(contains(s, "tokens.bin': element 128 (128) of ui16 is not representable in i8 "
                          "(input 'idx' is i8)"))
      << s.message();
  s = openTokenFile({{"idx", DType::I64, {2, 4}}}, binTokens(20), {}, source);
  EXPECT_TRUE(contains(s, "exactly two integer [b, T] tensors")) << s.message();
  EXPECT_TRUE(contains(s, "this plan's inputs are idx i64[2,4]")) << s.message();
  s = openTokenFile({{"x", DType::F32, {2, 4}}, {"y", DType::I64, {2, 4}}}, binTokens(20), {},
                    source);
  EXPECT_TRUE(contains(s, "x f32[2,4], y i64[2,4]")) << s.message();
  formattest::writeBytes(path, "abc");
  EXPECT_TRUE(contains(openTokenFile(gptInputs(), path, {}, source),
                       "has 3 bytes, not a whole number of uint16 tokens"));
  std::string floats = dir + "/f.npy";
  ASSERT_TRUE(writeNpy(floats, tensorOf<float>(DType::F32, {8}, std::vector<float>(8)).ref()).isOk());
  EXPECT_TRUE(contains(openTokenFile(gptInputs(), floats, {}, source),
                       "holds f32; token ids must be an integer dtype"));
  EXPECT_TRUE(contains(openTokenFile(gptInputs(), dir + "/t.txt", {}, source),
                       "expected .npy (integer ids) or .bin"));
}

} // namespace
} // namespace fsdp::rt
