//===- WrapPolicyTest.cpp - shard units from parameter names --------------===//
//
// The three --wrap policies on the names torch exports for the test
// families (GPT: blocks.N; nn.Transformer: transformer.encoder.layers.N and
// transformer.decoder.layers.N; a nested list inside a block), plus the
// edge cases: a single numbered child is not a repetition, size:N closes
// units at the threshold and leaves the tail to the root, regex units per
// distinct match, and every parameter lands in exactly one unit.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/WrapPolicy.h"

#include <gtest/gtest.h>

#include <set>

using namespace fsdp;

namespace {

std::vector<ParamInfo> params(std::initializer_list<const char *> names, int64_t numel = 10) {
  std::vector<ParamInfo> out;
  for (const char *n : names)
    out.push_back({n, numel});
  return out;
}

std::vector<std::string> unitNames(const std::vector<WrapUnit> &units) {
  std::vector<std::string> out;
  for (const WrapUnit &u : units)
    out.push_back(u.name);
  return out;
}

void expectPartition(const std::vector<WrapUnit> &units, size_t count) {
  std::set<size_t> seen;
  for (const WrapUnit &u : units)
    for (size_t p : u.params)
      EXPECT_TRUE(seen.insert(p).second) << "parameter " << p << " in two units";
  EXPECT_EQ(seen.size(), count);
}

TEST(WrapPolicy, BlocksOfAGpt) {
  auto ps = params({"tok_emb.weight", "pos_emb.weight", "blocks.0.ln1.weight",
                    "blocks.0.attn.qkv.weight", "blocks.1.ln1.weight", "blocks.1.attn.qkv.weight",
                    "ln_f.weight", "head.weight"});
  auto units = formUnits(ps, {});
  EXPECT_EQ(unitNames(units), (std::vector<std::string>{"root", "blocks.0", "blocks.1"}));
  EXPECT_EQ(units[0].params, (std::vector<size_t>{0, 1, 6, 7}));
  EXPECT_EQ(units[1].params, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(units[2].numel, 20);
  expectPartition(units, ps.size());
}

TEST(WrapPolicy, BlocksOfAnEncoderDecoder) {
  auto ps = params({"embedding.weight", "transformer.encoder.layers.0.linear1.weight",
                    "transformer.encoder.layers.1.linear1.weight", "transformer.encoder.norm.weight",
                    "transformer.decoder.layers.0.linear1.weight",
                    "transformer.decoder.layers.1.linear1.weight", "decoder.weight"});
  auto units = formUnits(ps, {});
  EXPECT_EQ(unitNames(units),
            (std::vector<std::string>{"root", "transformer.encoder.layers.0",
                                      "transformer.encoder.layers.1",
                                      "transformer.decoder.layers.0",
                                      "transformer.decoder.layers.1"}));
  EXPECT_EQ(units[0].params, (std::vector<size_t>{0, 3, 6}));
  expectPartition(units, ps.size());
}

TEST(WrapPolicy, NestedListsStayInTheirBlockAndSingletonsAreNotBlocks) {
  auto ps = params({"layers.0.experts.0.w", "layers.0.experts.1.w", "layers.1.experts.0.w",
                    "layers.1.experts.1.w", "head.0.weight"});
  auto units = formUnits(ps, {});
  // head.0 is the only numbered child of head: not a repetition.
  EXPECT_EQ(unitNames(units), (std::vector<std::string>{"root", "layers.0", "layers.1"}));
  EXPECT_EQ(units[0].params, (std::vector<size_t>{4}));
  EXPECT_EQ(units[1].params, (std::vector<size_t>{0, 1}));
}

TEST(WrapPolicy, SizeClosesUnitsAtTheThreshold) {
  std::vector<ParamInfo> ps{{"a", 6}, {"b", 6}, {"c", 20}, {"d", 3}, {"e", 4}};
  WrapPolicy policy{WrapPolicyKind::Size, 10, ""};
  auto units = formUnits(ps, policy);
  EXPECT_EQ(unitNames(units), (std::vector<std::string>{"root", "unit0", "unit1"}));
  EXPECT_EQ(units[1].params, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(units[2].params, (std::vector<size_t>{2}));
  EXPECT_EQ(units[0].params, (std::vector<size_t>{3, 4})); // the tail stays in the root
  expectPartition(units, ps.size());
}

TEST(WrapPolicy, RegexUnitsPerDistinctMatch) {
  auto ps = params({"emb.weight", "blocks.0.a", "blocks.1.a", "blocks.0.b", "out.weight"});
  WrapPolicy policy{WrapPolicyKind::Regex, 0, "blocks\\.[0-9]+"};
  auto units = formUnits(ps, policy);
  EXPECT_EQ(unitNames(units), (std::vector<std::string>{"root", "blocks.0", "blocks.1"}));
  EXPECT_EQ(units[1].params, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(units[0].params, (std::vector<size_t>{0, 4}));
}

TEST(WrapPolicy, EmptyModelHasAnEmptyRoot) {
  auto units = formUnits({}, {});
  ASSERT_EQ(units.size(), 1u);
  EXPECT_EQ(units[0].name, "root");
  EXPECT_TRUE(units[0].params.empty());
}

} // namespace
