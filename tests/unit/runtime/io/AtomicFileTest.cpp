//===- AtomicFileTest.cpp - the atomic write against planted paths --------===//
//
// writeFileAtomic writes PATH.tmp and renames it over PATH. Whatever sits
// at PATH.tmp beforehand (a stale file, or a symlink, hard link or FIFO
// planted there) must never be written through, truncated or waited on,
// and a PATH that is a FIFO or directory is refused rather than replaced;
// a PATH that is a symlink is replaced as a link. InputFile, the readers'
// side, refuses a FIFO without waiting for a writer. The tools' flags are
// attacked end to end in tests/e2e/test_path_attacks.py.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/FileIO.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <sys/stat.h>

namespace fsdp::rt {
namespace {

using formattest::readBytes;
using formattest::writeBytes;
namespace fs = std::filesystem;

class AtomicFileTest : public formattest::FormatTest {
protected:
  AtomicFileTest() : FormatTest("fsdp-atomic-test-", "out.bin") {}

  Status write(const std::string &bytes) {
    return writeFileAtomic(path, {ByteSpan{bytes.data(), bytes.size()}});
  }
  std::string victim() {
    const std::string v = dir + "/victim";
    writeBytes(v, "victim");
    return v;
  }
};

TEST_F(AtomicFileTest, APlantedSymlinkAtTheTemporaryNameIsNotWrittenThrough) {
  const std::string v = victim();
  fs::create_symlink(v, path + ".tmp");
  ASSERT_TRUE(write("new").isOk());
  EXPECT_EQ(readBytes(v), "victim");
  EXPECT_EQ(readBytes(path), "new");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_FALSE(fs::exists(fs::symlink_status(path + ".tmp")));
}

TEST_F(AtomicFileTest, APlantedHardLinkAtTheTemporaryNameIsNotTruncated) {
  const std::string v = victim();
  fs::create_hard_link(v, path + ".tmp");
  ASSERT_TRUE(write("new").isOk());
  EXPECT_EQ(readBytes(v), "victim");
  EXPECT_EQ(readBytes(path), "new");
}

TEST_F(AtomicFileTest, APlantedFifoAtTheTemporaryNameIsReplacedNotWaitedOn) {
  ASSERT_EQ(::mkfifo((path + ".tmp").c_str(), 0644), 0);
  ASSERT_TRUE(write("new").isOk()); // before the fix: blocked in open()
  EXPECT_EQ(readBytes(path), "new");
}

TEST_F(AtomicFileTest, AFifoOrDirectoryIsRefusedNotReplaced) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  Status s = write("new");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'" + path + "' is a FIFO, not a regular file; refusing to replace it"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(fs::is_fifo(path));
  fs::remove(path);
  fs::create_directory(path);
  s = write("new");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is a directory, not a regular file"), std::string::npos)
      << s.message();
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST_F(AtomicFileTest, ASymlinkIsReplacedAndItsTargetKept) {
  const std::string v = victim();
  fs::create_symlink(v, path);
  ASSERT_TRUE(write("new").isOk());
  EXPECT_EQ(readBytes(v), "victim");
  EXPECT_FALSE(fs::is_symlink(path));
  EXPECT_EQ(readBytes(path), "new");
}

TEST_F(AtomicFileTest, AnInputFifoIsRefusedNotWaitedOn) {
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  detail::InputFile file;
  Status s = file.open(path); // before the fix: blocked until a writer opened it
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message(), "not a regular file (a FIFO)");
}

} // namespace
} // namespace fsdp::rt
