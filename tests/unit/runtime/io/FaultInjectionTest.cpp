//===- FaultInjectionTest.cpp - FSDP_FAULT_INJECT's rules and wrappers ----===//
//
// The hook is only worth its tests if a rule fails exactly the call it
// names: the parser must refuse every malformed rule (a typo must not test
// nothing), the counts must be exact under concurrent callers (in-process
// ranks are threads), and a failed atomic write must leave the old file
// and no temporary one, with a message naming the file and the errno.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/FaultInjection.h"
#include "runtime/io/FileIO.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <thread>

namespace {

using namespace fsdp::rt;
using namespace fsdp::rt::formattest;

std::unique_ptr<FaultPlan> parsed(const std::string &spec) {
  std::unique_ptr<FaultPlan> plan;
  Status s = FaultPlan::parse(spec, plan);
  EXPECT_TRUE(s.isOk()) << spec << ": " << s.message();
  return plan;
}

TEST(FaultInjection, ParsesRules) {
  std::unique_ptr<FaultPlan> plan = parsed("write:3:ENOSPC,fsync:1:EIO,rename:12+:EDQUOT,trace");
  ASSERT_TRUE(plan);
  ASSERT_EQ(plan->rules().size(), 3u);
  EXPECT_EQ(plan->rules()[0].op, FileOp::Write);
  EXPECT_EQ(plan->rules()[0].nth, 3u);
  EXPECT_FALSE(plan->rules()[0].onward);
  EXPECT_EQ(plan->rules()[0].error, ENOSPC);
  EXPECT_EQ(plan->rules()[1].op, FileOp::Fsync);
  EXPECT_EQ(plan->rules()[1].error, EIO);
  EXPECT_EQ(plan->rules()[2].op, FileOp::Rename);
  EXPECT_EQ(plan->rules()[2].nth, 12u);
  EXPECT_TRUE(plan->rules()[2].onward);
  EXPECT_EQ(plan->rules()[2].error, EDQUOT);
  EXPECT_TRUE(plan->tracing());
  for (const char *op : {"open", "write", "fsync", "rename", "read", "mkdir"})
    for (const char *error : {"ENOSPC", "EIO", "EDQUOT", "EROFS"})
      EXPECT_TRUE(parsed(std::string(op) + ":1:" + error)) << op << " " << error;
}

TEST(FaultInjection, RefusesMalformedRules) {
  const struct {
    const char *spec, *message;
  } cases[] = {
      {"bogus", "expected OP:N:ERRNO or trace"},
      {"write:3", "expected OP:N:ERRNO or trace"},
      {"write:3:ENOSPC:x", "expected OP:N:ERRNO or trace"},
      {"write:3:ENOSPC,", "expected OP:N:ERRNO or trace"},
      {",write:3:ENOSPC", "expected OP:N:ERRNO or trace"},
      {"writes:3:ENOSPC", "unknown operation 'writes'"},
      {"WRITE:3:ENOSPC", "unknown operation 'WRITE'"},
      {"write:0:ENOSPC", "the call number must be an integer from 1"},
      {"write::ENOSPC", "the call number must be an integer from 1"},
      {"write:+:ENOSPC", "the call number must be an integer from 1"},
      {"write:-1:ENOSPC", "the call number must be an integer from 1"},
      {"write:3x:ENOSPC", "the call number must be an integer from 1"},
      {"write: 3:ENOSPC", "the call number must be an integer from 1"},
      {"write:99999999999999999999999:EIO", "the call number must be an integer from 1"},
      {"write:3:ENOSPACE", "unknown errno 'ENOSPACE'"},
      {"write:3:28", "unknown errno '28'"},
      {"write:3:", "unknown errno ''"},
  };
  for (const auto &c : cases) {
    std::unique_ptr<FaultPlan> plan;
    Status s = FaultPlan::parse(c.spec, plan);
    ASSERT_FALSE(s.isOk()) << c.spec;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << c.spec << ": " << s.message();
    EXPECT_FALSE(plan) << c.spec;
  }
}

TEST(FaultInjection, FailsExactlyTheNamedCalls) {
  std::unique_ptr<FaultPlan> plan = parsed("write:3:ENOSPC,write:5+:EIO,fsync:2:EROFS");
  std::vector<int> writes, fsyncs;
  for (int i = 0; i < 7; ++i)
    writes.push_back(plan->onCall(FileOp::Write, "f"));
  for (int i = 0; i < 3; ++i)
    fsyncs.push_back(plan->onCall(FileOp::Fsync, "f"));
  EXPECT_EQ(writes, (std::vector<int>{0, 0, ENOSPC, 0, EIO, EIO, EIO}));
  EXPECT_EQ(fsyncs, (std::vector<int>{0, EROFS, 0}));
  // Each operation has its own count; unnamed operations never fail.
  EXPECT_EQ(plan->onCall(FileOp::Rename, "f"), 0);
  EXPECT_EQ(plan->calls(FileOp::Write), 7u);
  EXPECT_EQ(plan->calls(FileOp::Fsync), 3u);
  EXPECT_EQ(plan->calls(FileOp::Rename), 1u);
  EXPECT_EQ(plan->calls(FileOp::Open), 0u);
}

TEST(FaultInjection, CountsAcrossThreadsExactly) {
  std::unique_ptr<FaultPlan> plan = parsed("read:2500:EIO");
  std::atomic<int> failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i)
        if (plan->onCall(FileOp::Read, nullptr) != 0)
          ++failed;
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT_EQ(plan->calls(FileOp::Read), 4000u);
  EXPECT_EQ(failed.load(), 1); // the 2500th call, whichever thread made it
}

/// Installs a plan for one test and removes it after.
class FaultFiles : public FormatTest {
protected:
  FaultFiles() : FormatTest("fsdp-fault-test-", "out.bin") {}
  void install(const std::string &spec) {
    plan_ = parsed(spec);
    setFaultPlanForTesting(plan_.get());
  }
  void TearDown() override {
    setFaultPlanForTesting(nullptr);
    FormatTest::TearDown();
  }
  std::unique_ptr<FaultPlan> plan_;
};

TEST_F(FaultFiles, FailedAtomicWriteKeepsTheOldFile) {
  const std::string fresh(1000, 'n');
  const struct {
    const char *spec, *message;
  } cases[] = {
      {"open:1:EROFS", "cannot create '%.tmp': Read-only file system"},
      {"write:1:ENOSPC", "cannot write '%.tmp': No space left on device"},
      {"write:2:EDQUOT", "cannot write '%.tmp': Disk quota exceeded"},
      {"fsync:1:EIO", "cannot fsync '%.tmp': Input/output error"},
      {"rename:1:EIO", "cannot rename to '%' from '%.tmp': Input/output error"},
  };
  for (const auto &c : cases) {
    writeBytes(path, "old");
    install(c.spec);
    AtomicFileWriter file;
    Status s = file.open(path);
    for (int piece = 0; s.isOk() && piece < 2; ++piece)
      s = file.write(fresh.data(), fresh.size() / 2);
    if (s.isOk())
      s = file.commit();
    ASSERT_FALSE(s.isOk()) << c.spec;
    std::string message = c.message;
    for (size_t at; (at = message.find('%')) != std::string::npos;)
      message.replace(at, 1, path);
    EXPECT_NE(s.message().find(message), std::string::npos) << c.spec << ": " << s.message();
    EXPECT_EQ(readBytes(path), "old") << c.spec;
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp")) << c.spec;
  }
}

TEST_F(FaultFiles, InterruptedWritesAreRetried) {
  install("write:1:EINTR,write:2:EINTR");
  ASSERT_TRUE(writeFileAtomic(path, {{"new", 3}}).isOk());
  EXPECT_EQ(readBytes(path), "new");
  EXPECT_EQ(plan_->calls(FileOp::Write), 3u);
}

TEST_F(FaultFiles, ReadErrorsAreReported) {
  writeBytes(path, "contents");
  install("read:1:EIO,open:2:EACCES");
  detail::InputFile file;
  ASSERT_TRUE(file.open(path).isOk());
  char buffer[8];
  Status s = file.readAt(0, buffer, sizeof buffer);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "read failed: Input/output error");
  ASSERT_TRUE(file.readAt(0, buffer, sizeof buffer).isOk()); // only the first read fails
  detail::InputFile again;
  s = again.open(path);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "cannot open: Permission denied");
}

TEST_F(FaultFiles, UnsetCostsNothingAndFailsNothing) {
  // No plan installed and (in this test binary) no FSDP_FAULT_INJECT: the
  // wrappers are the system calls.
  ASSERT_EQ(std::getenv(kFaultInjectEnv), nullptr);
  EXPECT_TRUE(checkFaultInjectionEnv().isOk());
  ASSERT_TRUE(writeFileAtomic(path, {{"abc", 3}}).isOk());
  EXPECT_EQ(readBytes(path), "abc");
}

} // namespace
