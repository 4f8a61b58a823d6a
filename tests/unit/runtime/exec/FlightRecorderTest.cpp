//===- FlightRecorderTest.cpp - the ring of a rank's last collectives -----===//
//
// The ring keeps the newest `capacity` collectives, oldest first, with
// sequence numbers counting every collective ever recorded; updates for a
// collective already overwritten are dropped, a time is set once; the
// printed form is the documented one, line for line.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/FlightRecorder.h"

#include <gtest/gtest.h>

namespace fsdp::rt {
namespace {

CollectiveRecord record(int64_t step, const char *kind, const char *unit, uint64_t bytes) {
  CollectiveRecord r;
  r.step = step;
  r.kind = kind;
  r.unit = unit;
  r.bytes = bytes;
  r.group = "world";
  r.issued = 0.5 * step;
  return r;
}

TEST(FlightRecorder, KeepsTheNewestEntriesOldestFirst) {
  FlightRecorder recorder(4);
  for (int i = 1; i <= 6; ++i)
    EXPECT_EQ(recorder.add(record(i, "AllGather", "-", 8)), static_cast<uint64_t>(i));
  EXPECT_EQ(recorder.recorded(), 6u);
  std::vector<CollectiveRecord> entries = recorder.entries();
  ASSERT_EQ(entries.size(), 4u);
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].sequence, i + 3);
    EXPECT_EQ(entries[i].step, static_cast<int64_t>(i + 3));
  }
  // Sequence 2 was overwritten by 6: its updates are dropped.
  recorder.markStarted(2, 1.0);
  recorder.markFinished(2, 2.0);
  CollectiveRecord found;
  EXPECT_FALSE(recorder.find(2, found));
  ASSERT_TRUE(recorder.find(6, found));
  EXPECT_LT(found.started, 0);
  // A time is set once: a later look does not move it.
  recorder.markStarted(6, 1.0);
  recorder.markStarted(6, 3.0);
  recorder.markFinished(6, 4.0);
  recorder.markFinished(6, 5.0);
  ASSERT_TRUE(recorder.find(6, found));
  EXPECT_EQ(found.started, 1.0);
  EXPECT_EQ(found.finished, 4.0);
  EXPECT_FALSE(recorder.find(0, found));
  EXPECT_FALSE(recorder.find(7, found));
}

TEST(FlightRecorder, DefaultCapacityIs64) {
  FlightRecorder recorder;
  for (int i = 1; i <= 100; ++i)
    recorder.add(record(i, "AllReduce", "-", 4));
  std::vector<CollectiveRecord> entries = recorder.entries();
  ASSERT_EQ(entries.size(), FlightRecorder::kCapacity);
  EXPECT_EQ(entries.front().sequence, 37u);
  EXPECT_EQ(entries.back().sequence, 100u);
}

TEST(FlightRecorder, PrintedForm) {
  FlightRecorder recorder(8);
  recorder.add(record(0, "plan agreement", "-", 8));
  recorder.markStarted(1, 0);
  recorder.markFinished(1, 0.0125);
  recorder.add(record(3, "AllGather", "1 'blocks.0'", 66944));
  recorder.markStarted(2, 1.75);
  recorder.add(record(3, "AllReduce", "-", 4));
  EXPECT_EQ(recorder.format(1),
            "rank 1: last 3 collectives (oldest first; seconds since the run started)\n"
            "  #1 start-up: plan agreement (8 B, group world): issued 0.000, started 0.000, "
            "finished 0.013\n"
            "  #2 step 3: AllGather of unit 1 'blocks.0' (65.4 KiB, group world): issued 1.500, "
            "started 1.750, finished -\n"
            "  #3 step 3: AllReduce (4 B, group world): issued 1.500, started -, finished -\n");
  CollectiveRecord save = record(5, "checkpoint save", "-", CollectiveRecord::kUnknownBytes);
  EXPECT_EQ(save.describe(), "step 5: checkpoint save (group world)");
  EXPECT_EQ(FlightRecorder(2).format(0),
            "rank 0: last 0 collectives (oldest first; seconds since the run started)\n");
}

TEST(FlightRecorder, ClockStartsAtCreation) {
  FlightRecorder recorder;
  const double t = recorder.now();
  EXPECT_GE(t, 0);
  EXPECT_LT(t, 5);
  EXPECT_GE(recorder.now(), t);
}

} // namespace
} // namespace fsdp::rt
