//===- CheckpointSolverTest.cpp - the --ckpt=auto chain solver ------------===//
//
// How close to optimal the dynamic program is: on random chains of unequal
// blocks (up to 12, so every subset can be tried) its cost must equal the
// brute-force optimum under the same peak model, whenever one exists, and
// its selection must be feasible and priced as it says. Edge cases: an
// empty chain, a budget that needs nothing, one no selection meets, equal
// blocks (the first blocks are given up first), the thinned frontier of a
// long chain, and the range list the user sees.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/CheckpointSolver.h"

#include <gtest/gtest.h>

#include <random>

using namespace fsdp;

namespace {

/// The least cost over all 2^n selections whose peaks fit, or nullopt.
std::optional<double> bruteForce(const std::vector<ChainBlock> &blocks,
                                 const ChainCapacity &capacity) {
  std::optional<double> best;
  for (uint32_t mask = 0; mask < (1u << blocks.size()); ++mask) {
    std::vector<bool> chosen(blocks.size());
    double cost = 0;
    for (size_t i = 0; i < blocks.size(); ++i)
      if ((chosen[i] = mask >> i & 1))
        cost += blocks[i].cost; // in block order, as the solver sums
    if (fitsChain(chainPeaks(blocks, chosen), capacity) && (!best || cost < *best))
      best = cost;
  }
  return best;
}

double costOf(const std::vector<ChainBlock> &blocks, const std::vector<bool> &chosen) {
  double cost = 0;
  for (size_t i = 0; i < blocks.size(); ++i)
    cost += chosen[i] ? blocks[i].cost : 0;
  return cost;
}

std::vector<ChainBlock> randomChain(std::mt19937_64 &rng, size_t n) {
  std::uniform_int_distribution<uint64_t> held(1, 1000);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<ChainBlock> blocks(n);
  for (ChainBlock &b : blocks) {
    b.heldBytes = held(rng);
    // Some blocks free nothing (everything they hold is shared), some
    // almost all; the cost is unrelated to the bytes, as a matmul-heavy
    // block with small outputs would be.
    b.freedBytes = unit(rng) < 0.1 ? 0 : static_cast<uint64_t>(unit(rng) * b.heldBytes);
    b.cost = unit(rng) * 100;
  }
  return blocks;
}

TEST(CheckpointSolver, MatchesBruteForceOnRandomChains) {
  std::mt19937_64 rng(2019);
  int feasible = 0, infeasible = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    size_t n = 1 + trial % 12;
    std::vector<ChainBlock> blocks = randomChain(rng, n);
    ChainPeaks least = chainPeaks(blocks, std::vector<bool>(n, true));
    ChainPeaks most = chainPeaks(blocks, std::vector<bool>(n, false));
    // Each capacity from a little under "everything checkpointed" to
    // "nothing" (the backward peak does not depend on the choice of the
    // last block, so it can be tight on its own).
    auto pick = [&](uint64_t low, uint64_t high) {
      return std::uniform_int_distribution<uint64_t>(low - std::min<uint64_t>(low, 50), high)(rng);
    };
    ChainCapacity capacity{pick(least.turn, most.turn), pick(least.backward, most.backward)};

    std::optional<double> expected = bruteForce(blocks, capacity);
    std::optional<ChainSelection> got = solveCheckpointChain(blocks, capacity);
    ASSERT_EQ(expected.has_value(), got.has_value()) << "trial " << trial;
    if (!got) {
      ++infeasible;
      continue;
    }
    ++feasible;
    ASSERT_EQ(got->chosen.size(), n);
    EXPECT_EQ(got->cost, *expected) << "trial " << trial; // the optimum, exactly
    EXPECT_EQ(got->cost, costOf(blocks, got->chosen)) << "trial " << trial;
    ChainPeaks peaks = chainPeaks(blocks, got->chosen);
    EXPECT_EQ(got->peaks.turn, peaks.turn) << "trial " << trial;
    EXPECT_EQ(got->peaks.backward, peaks.backward) << "trial " << trial;
    EXPECT_TRUE(fitsChain(peaks, capacity)) << "trial " << trial;
  }
  // Both outcomes were exercised.
  EXPECT_GT(feasible, 1000);
  EXPECT_GT(infeasible, 10);
}

TEST(CheckpointSolver, EmptyChain) {
  std::optional<ChainSelection> got = solveCheckpointChain({}, {0, 0});
  ASSERT_TRUE(got);
  EXPECT_TRUE(got->chosen.empty());
  EXPECT_EQ(got->cost, 0);
  EXPECT_EQ(got->peaks.turn, 0u);
}

TEST(CheckpointSolver, NothingNeededChoosesNothing) {
  std::vector<ChainBlock> blocks = {{100, 80, 1}, {300, 250, 2}, {200, 150, 3}};
  std::optional<ChainSelection> got = solveCheckpointChain(blocks, {600, 600});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->chosen, std::vector<bool>(3, false));
  EXPECT_EQ(got->cost, 0);
  EXPECT_EQ(got->peaks.turn, 600u);
  EXPECT_EQ(got->peaks.backward, 600u);
}

TEST(CheckpointSolver, ImpossibleBudget) {
  std::vector<ChainBlock> blocks = {{100, 80, 1}, {300, 250, 2}, {200, 150, 3}};
  // Everything checkpointed keeps 20 + 50 + 50 at the turn, and still
  // peaks at 20 + 300 in block 1's backward (its recomputation).
  ChainPeaks all = chainPeaks(blocks, {true, true, true});
  EXPECT_EQ(all.turn, 120u);
  EXPECT_EQ(all.backward, 320u);
  EXPECT_FALSE(solveCheckpointChain(blocks, {119, 1000}));
  EXPECT_FALSE(solveCheckpointChain(blocks, {1000, 319}));
  ASSERT_TRUE(solveCheckpointChain(blocks, {120, 320}));
  // A block that holds more than the capacity by itself never fits.
  EXPECT_FALSE(solveCheckpointChain({{1000, 1000, 1}}, {1000, 999}));
}

TEST(CheckpointSolver, EqualBlocksGiveUpTheFirstOnes) {
  // Four identical blocks: checkpointing a late block frees bytes at the
  // turn, but its recomputation peaks at everything the blocks before it
  // keep plus all it holds, so the only three that fit are the first.
  std::vector<ChainBlock> blocks(4, ChainBlock{100, 90, 1});
  std::optional<ChainSelection> got = solveCheckpointChain(blocks, {210, 210});
  ASSERT_TRUE(got);
  EXPECT_EQ(got->chosen, (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ(got->cost, 3);
  EXPECT_EQ(got->peaks.turn, 130u);
  EXPECT_EQ(got->peaks.backward, 130u);
}

TEST(CheckpointSolver, UnequalBlocksAreNotTakenInOrder) {
  // A wide block that is cheap to recompute, after a narrow expensive one:
  // it alone frees enough (peak 400), where the first-k rule would need
  // blocks 0-1 at cost 6.
  std::vector<ChainBlock> blocks = {{100, 90, 5}, {300, 290, 1}, {100, 90, 1}};
  EXPECT_GT(chainPeaks(blocks, {true, false, false}).turn, 400u);
  std::optional<ChainSelection> got = solveCheckpointChain(blocks, {400, 400});
  ASSERT_TRUE(got);
  EXPECT_EQ(formatBlockRanges(got->chosen), "1");
  EXPECT_EQ(got->cost, 1);
  EXPECT_EQ(got->peaks.turn, 210u);
  EXPECT_EQ(got->peaks.backward, 400u);
  EXPECT_EQ(*bruteForce(blocks, {400, 400}), 1);
}

TEST(CheckpointSolver, LongChainsStayFeasibleWhenThinned) {
  // 200 distinct blocks under a loose budget: the exact frontier would
  // exceed kMaxChainStates, so it is thinned and the answer may not be
  // optimal, but it must fit and cost no more than checkpointing all.
  std::mt19937_64 rng(7);
  std::vector<ChainBlock> blocks = randomChain(rng, 200);
  std::vector<bool> all(200, true);
  ChainPeaks none = chainPeaks(blocks, std::vector<bool>(200));
  ChainCapacity capacity{none.turn * 3 / 4, none.backward * 3 / 4};
  std::optional<ChainSelection> got = solveCheckpointChain(blocks, capacity);
  ASSERT_TRUE(got);
  ChainPeaks peaks = chainPeaks(blocks, got->chosen);
  EXPECT_TRUE(fitsChain(peaks, capacity));
  EXPECT_EQ(got->peaks.turn, peaks.turn);
  EXPECT_LE(got->cost, costOf(blocks, all));
}

TEST(CheckpointSolver, FormatsRanges) {
  EXPECT_EQ(formatBlockRanges({}), "none");
  EXPECT_EQ(formatBlockRanges({false, false}), "none");
  EXPECT_EQ(formatBlockRanges({true}), "0");
  EXPECT_EQ(formatBlockRanges({true, true, true, false, false, true, false, true, true}),
            "0-2,5,7-8");
}

} // namespace
