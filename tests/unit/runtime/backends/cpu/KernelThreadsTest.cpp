//===- KernelThreadsTest.cpp - the rank's intra-op pool -------------------===//
//
// parallelFor covers a range exactly once in contiguous pieces, one per
// thread at most and none shorter than the grain; runs small ranges, a
// thread without a pool and a nested call inline; and returns the lowest
// failing piece's error. A pool is only used by the thread whose Scope
// names it.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/KernelThreads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using Pieces = std::vector<std::pair<int64_t, int64_t>>;

/// The pieces parallelFor hands out for [begin, end), sorted.
Pieces piecesOf(int64_t begin, int64_t end, int64_t grain) {
  Pieces pieces;
  std::mutex mutex;
  EXPECT_TRUE(parallelFor(begin, end, grain, [&](int64_t b, int64_t e) {
                std::lock_guard<std::mutex> lock(mutex);
                pieces.emplace_back(b, e);
              }).isOk());
  std::sort(pieces.begin(), pieces.end());
  return pieces;
}

void expectCovers(const Pieces &pieces, int64_t begin, int64_t end) {
  ASSERT_FALSE(pieces.empty());
  EXPECT_EQ(pieces.front().first, begin);
  EXPECT_EQ(pieces.back().second, end);
  for (size_t i = 1; i < pieces.size(); ++i)
    EXPECT_EQ(pieces[i].first, pieces[i - 1].second);
}

TEST(KernelThreads, SplitsARangeIntoOnePiecePerThread) {
  for (int threads : {2, 3, 8}) {
    KernelThreads pool(threads);
    KernelThreads::Scope scope(&pool);
    EXPECT_EQ(pool.size(), threads);
    const Pieces pieces = piecesOf(5, 100006, 100);
    EXPECT_EQ(static_cast<int>(pieces.size()), threads);
    expectCovers(pieces, 5, 100006);
    EXPECT_EQ(pool.jobsRun(), 1u);
    // Fewer pieces than threads when the grain says so, none below it.
    const Pieces few = piecesOf(0, 250, 100);
    EXPECT_EQ(few.size(), 2u);
    expectCovers(few, 0, 250);
    for (const auto &[b, e] : few)
      EXPECT_GE(e - b, 100);
  }
}

TEST(KernelThreads, SmallRangesAndThreadsWithoutAPoolRunInline) {
  KernelThreads pool(4);
  {
    KernelThreads::Scope scope(&pool);
    EXPECT_EQ(piecesOf(0, 199, 100), (Pieces{{0, 199}}));
    EXPECT_TRUE(piecesOf(7, 7, 1).empty());
    EXPECT_EQ(pool.jobsRun(), 0u);
  }
  // Out of the scope, and on another thread, there is no pool.
  EXPECT_EQ(KernelThreads::current(), nullptr);
  EXPECT_EQ(piecesOf(0, 100000, 1), (Pieces{{0, 100000}}));
  std::thread other([&] { EXPECT_EQ(KernelThreads::current(), nullptr); });
  other.join();
  EXPECT_EQ(pool.jobsRun(), 0u);
}

TEST(KernelThreads, NestedCallsRunInline) {
  KernelThreads pool(3);
  KernelThreads::Scope scope(&pool);
  std::mutex mutex;
  std::vector<size_t> innerPieces;
  ASSERT_TRUE(parallelFor(0, 3000, 1000, [&](int64_t b, int64_t e) {
                const Pieces inner = piecesOf(b, e, 1);
                std::lock_guard<std::mutex> lock(mutex);
                innerPieces.push_back(inner.size());
              }).isOk());
  EXPECT_EQ(innerPieces, (std::vector<size_t>{1, 1, 1}));
  EXPECT_EQ(pool.jobsRun(), 1u);
}

TEST(KernelThreads, ReturnsTheLowestFailingPiecesError) {
  KernelThreads pool(8);
  KernelThreads::Scope scope(&pool);
  for (int repeat = 0; repeat < 20; ++repeat) {
    Status s = parallelFor(0, 8000, 1000, [&](int64_t b, int64_t) -> Status {
      if (b >= 3000)
        return Status::error(cat("piece at ", b));
      return Status::ok();
    });
    ASSERT_FALSE(s.isOk());
    EXPECT_EQ(s.message(), "piece at 3000");
  }
  // The pool keeps working after an error.
  EXPECT_TRUE(parallelFor(0, 8000, 1000, [](int64_t, int64_t) {}).isOk());
}

TEST(KernelThreads, RankThreadsFollowTheBlasEnvironment) {
  const char *saved = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string restore = saved ? saved : "";
  setenv("OPENBLAS_NUM_THREADS", "3", 1);
  EXPECT_EQ(rankKernelThreads(), 3);
  if (saved)
    setenv("OPENBLAS_NUM_THREADS", restore.c_str(), 1);
  else
    unsetenv("OPENBLAS_NUM_THREADS");
  EXPECT_GE(rankKernelThreads(), 1);
}

} // namespace
