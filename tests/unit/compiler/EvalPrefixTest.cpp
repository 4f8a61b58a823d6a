//===- EvalPrefixTest.cpp - the evaluation prefix's end -------------------===//
//
// evalPrefixEnd (compiler/Target/EvalPrefix.h) on hand-made instruction
// lists: the prefix ends at the loss instruction when its producers come
// first, reaches past it to a producer scheduled later (through a buffer
// or an event), and ignores later writers of a buffer it reads (an
// optimizer rewriting a parameter) and instructions it does not need.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/EvalPrefix.h"
#include "runtime/plan/plan_generated.h"

#include <gtest/gtest.h>

namespace fsdp {
namespace {

InstructionDesc inst(std::vector<uint32_t> inputs, std::vector<uint32_t> outputs,
                     std::vector<uint32_t> waits = {}, int32_t signal = -1) {
  InstructionDesc d;
  d.kernel = plan::Kernel::Copy;
  d.inputs = std::move(inputs);
  d.outputs = std::move(outputs);
  d.waits = std::move(waits);
  d.signal = signal;
  return d;
}

TEST(EvalPrefixTest, EndsAtTheLossWhenItsProducersComeFirst) {
  // 0: b1 = f(b0); 1: b2 = g(b0) (unneeded); 2: loss b3 = h(b1); 3: update b0.
  std::vector<InstructionDesc> list = {inst({0}, {1}), inst({0}, {2}), inst({1}, {3}),
                                       inst({0, 3}, {0})};
  EXPECT_EQ(evalPrefixEnd(list, 2), 3u);
  // The update rewriting b0 after the loss is no producer of it.
  EXPECT_EQ(evalPrefixEnd(list, 0), 1u);
}

TEST(EvalPrefixTest, ReachesAProducerScheduledAfterTheLoss) {
  // The loss (1) waits for event 0, which instruction 3 signals; 3 reads
  // what 2 wrote: the prefix must hold both.
  std::vector<InstructionDesc> list = {inst({0}, {1}), inst({1}, {2}, {0}), inst({0}, {4}),
                                       inst({4}, {5}, {}, 0), inst({2}, {6})};
  EXPECT_EQ(evalPrefixEnd(list, 1), 4u);
}

TEST(EvalPrefixTest, ReadsTheLatestEarlierWriter) {
  // b1 is written by 0 and again by 3; the loss at 4 reads the latest, 3,
  // which reads b7 written by nobody (an input): the prefix is 0..4.
  std::vector<InstructionDesc> list = {inst({0}, {1}), inst({1}, {2}), inst({0}, {8}),
                                       inst({7}, {1}), inst({1}, {3}), inst({3}, {9})};
  EXPECT_EQ(evalPrefixEnd(list, 4), 5u);
}

} // namespace
} // namespace fsdp
