//===- InProcessRanksTest.cpp - a plan's ranks as threads of this process -===//
//
// The group fsdp-run, the step session and fsdp-ckpt share: each rank runs
// every job on its own thread, the same one job after job (a rank's device
// is used from one thread); the ranks' communicators are one group; a job
// returns once every rank has; the first failure reported wins over the
// "aborted" errors of the ranks it stopped.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/InProcessRanks.h"

#include <gtest/gtest.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace fsdp::rt {
namespace {

TEST(InProcessRanks, EachRankKeepsItsThreadAcrossJobs) {
  std::unique_ptr<InProcessRanks> ranks;
  ASSERT_TRUE(InProcessRanks::create(3, ranks).isOk());
  ASSERT_EQ(ranks->size(), 3);
  std::vector<std::thread::id> first(3), second(3);
  ASSERT_TRUE(ranks->onEveryRank([&](int r) {
                      first[r] = std::this_thread::get_id();
                      return Status::ok();
                    })
                  .isOk());
  ASSERT_TRUE(ranks->onEveryRank([&](int r) {
                      second[r] = std::this_thread::get_id();
                      return Status::ok();
                    })
                  .isOk());
  EXPECT_EQ(first, second);
  std::set<std::thread::id> distinct(first.begin(), first.end());
  EXPECT_EQ(distinct.size(), 3u);
  EXPECT_EQ(distinct.count(std::this_thread::get_id()), 0u);
}

TEST(InProcessRanks, RanksFormOneGroup) {
  std::unique_ptr<InProcessRanks> ranks;
  ASSERT_TRUE(InProcessRanks::create(4, ranks).isOk());
  std::vector<double> sums(4);
  Status s = ranks->onEveryRank([&](int r) -> Status {
    EXPECT_EQ(ranks->comm(r).rank(), r);
    EXPECT_EQ(ranks->comm(r).size(), 4);
    double mine = r + 1;
    return ranks->comm(r).allReduce(&mine, &sums[r], 1, DType::F64, ReduceOp::Sum);
  });
  ASSERT_TRUE(s.isOk()) << s.message();
  for (double sum : sums)
    EXPECT_EQ(sum, 10.0);
}

TEST(InProcessRanks, TheFirstReportedFailureWins) {
  std::unique_ptr<InProcessRanks> ranks;
  ASSERT_TRUE(InProcessRanks::create(3, ranks).isOk());
  std::vector<Status> results(3, Status::ok());
  Status s = ranks->onEveryRank([&](int r) -> Status {
    if (r == 1) {
      // Reported before the abort, so the others' "aborted" comes later.
      Status failure = ranks->reportFailure(Status::error("rank 1 could not load its shard"));
      ranks->comm(r).abort(failure.message());
      return results[r] = failure;
    }
    double x = 1, y = 0;
    return results[r] = ranks->comm(r).allReduce(&x, &y, 1, DType::F64, ReduceOp::Sum);
  });
  EXPECT_EQ(s.message(), "rank 1 could not load its shard");
  EXPECT_FALSE(results[0].isOk());
  EXPECT_FALSE(results[2].isOk());
}

TEST(InProcessRanks, AJobAfterASuccessfulOneStartsClean) {
  std::unique_ptr<InProcessRanks> ranks;
  ASSERT_TRUE(InProcessRanks::create(2, ranks).isOk());
  EXPECT_FALSE(ranks->onEveryRank([](int r) {
                      return r == 0 ? Status::error("no") : Status::ok();
                    })
                   .isOk());
  EXPECT_TRUE(ranks->onEveryRank([](int) { return Status::ok(); }).isOk());
}

} // namespace
} // namespace fsdp::rt
