//===- CheckpointTest.cpp - the checkpoint directory protocol -------------===//
//
// What needs no plan: a full checkpoint written without an executor
// (saveFullCheckpoint) and read back (findCheckpoint, readCheckpointState:
// parameters and optimizer state told apart by torch's suffixes), the
// manifest COMMIT records, verification of every file against it (a flipped
// byte, a truncated or a missing file), which directory findCheckpoint
// picks (the newest committed; never one without COMMIT or a .tmp one),
// refusal of a malformed COMMIT naming it, and a sharded checkpoint that
// carries no plan; paths (issue 20): a verified file is read through the
// descriptor that was hashed, COMMIT names only plain file names, and a
// symlinked step-N entry is replaced as a link. Saving and loading through
// executors, resharding and crashes are tests/e2e/test_resume.py's and
// test_ckpt_convert.py's; the path attacks on the tools are
// tests/e2e/test_path_attacks.py's.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

namespace fsdp::rt {
namespace {

using formattest::makeTensor;
using formattest::readBytes;
using formattest::writeBytes;
namespace fs = std::filesystem;

class CheckpointTest : public formattest::FormatTest {
protected:
  CheckpointTest() : FormatTest("fsdp-ckpt-test-", "unused") {}

  /// A consolidated AdamW-and-SGD-like state at `step`.
  CheckpointState state(int64_t step) {
    CheckpointState s;
    s.step = step;
    s.parameters = {{"a", makeTensor(DType::F32, {3}, 1)},
                    {"b.weight", makeTensor(DType::F32, {2, 2}, 2)},
                    // ".exp_avg" without a parameter "x": a parameter itself.
                    {"x.exp_avg", makeTensor(DType::BF16, {4}, 3)}};
    s.optimizer = {{"a.exp_avg", makeTensor(DType::F32, {3}, 4)},
                   {"a.exp_avg_sq", makeTensor(DType::F32, {3}, 5)},
                   {"b.weight.momentum_buffer", makeTensor(DType::F32, {2, 2}, 6)}};
    return s;
  }

  std::string modelFile(int64_t step) {
    return dir + "/" + checkpointDirName(step) + "/" + kFullCheckpointFile;
  }
};

std::vector<std::string> names(const std::vector<std::pair<std::string, HostTensor>> &tensors) {
  std::vector<std::string> out;
  for (const auto &[name, value] : tensors)
    out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(CheckpointTest, NamesAreFixedWidth) {
  EXPECT_EQ(checkpointDirName(300), "step-00000300");
  EXPECT_EQ(checkpointFileName(1, 16), "rank-00001-of-00016.safetensors");
}

TEST_F(CheckpointTest, FullCheckpointRoundTrips) {
  ASSERT_TRUE(saveFullCheckpoint(dir, state(7), /*worldSize=*/4, /*planHash=*/0xabcdef).isOk());
  CheckpointManifest manifest;
  Status found = findCheckpoint(dir, manifest);
  ASSERT_TRUE(found.isOk()) << found.message();
  EXPECT_EQ(manifest.format, CheckpointFormat::Full);
  EXPECT_EQ(manifest.step, 7);
  EXPECT_EQ(manifest.worldSize, 4);
  EXPECT_EQ(manifest.planHash, 0xabcdefu);
  ASSERT_EQ(manifest.files.size(), 1u);
  EXPECT_EQ(manifest.totalBytes(), fs::file_size(modelFile(7)));

  CheckpointState back;
  Status read = readCheckpointState(manifest, back);
  ASSERT_TRUE(read.isOk()) << read.message();
  EXPECT_EQ(back.step, 7);
  CheckpointState want = state(7);
  EXPECT_EQ(names(back.parameters), names(want.parameters));
  EXPECT_EQ(names(back.optimizer), names(want.optimizer));
  for (const auto *part : {&want.parameters, &want.optimizer})
    for (const auto &[name, value] : *part) {
      bool matched = false;
      for (const auto *got : {&back.parameters, &back.optimizer})
        for (const auto &[n, v] : *got)
          if (n == name) {
            matched = true;
            EXPECT_EQ(v.dtype, value.dtype) << name;
            EXPECT_EQ(v.shape, value.shape) << name;
            EXPECT_EQ(v.data, value.data) << name;
          }
      EXPECT_TRUE(matched) << name;
    }
}

TEST_F(CheckpointTest, EveryFileIsVerifiedAgainstCommit) {
  ASSERT_TRUE(saveFullCheckpoint(dir, state(3), 2, 1).isOk());
  CheckpointManifest manifest;
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  const std::string file = modelFile(3), good = readBytes(file);
  CheckpointState out;

  std::string flipped = good;
  flipped[flipped.size() - 2] ^= 0x10;
  writeBytes(file, flipped);
  Status s = readCheckpointState(manifest, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(file), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("corrupted"), std::string::npos) << s.message();

  writeBytes(file, good.substr(0, good.size() - 1));
  s = readCheckpointState(manifest, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("truncated"), std::string::npos) << s.message();

  fs::remove(file);
  s = readCheckpointState(manifest, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("missing"), std::string::npos) << s.message();

  writeBytes(file, good);
  EXPECT_TRUE(readCheckpointState(manifest, out).isOk());
}

TEST_F(CheckpointTest, FindsTheNewestCommitted) {
  CheckpointManifest manifest;
  Status none = findCheckpoint(dir, manifest);
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.message().find("no committed checkpoint"), std::string::npos);

  ASSERT_TRUE(saveFullCheckpoint(dir, state(2), 1, 1).isOk());
  ASSERT_TRUE(saveFullCheckpoint(dir, state(5), 1, 1).isOk());
  // A later step without COMMIT (a crashed save, or one being pruned) and
  // an unfinished temporary directory are never picked.
  fs::create_directories(dir + "/" + checkpointDirName(9));
  fs::create_directories(dir + "/.tmp-" + checkpointDirName(11));
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  EXPECT_EQ(manifest.step, 5);
  // One step-N directory names that checkpoint.
  ASSERT_TRUE(findCheckpoint(dir + "/" + checkpointDirName(2), manifest).isOk());
  EXPECT_EQ(manifest.step, 2);
}

TEST_F(CheckpointTest, MalformedCommitIsRefusedNamingIt) {
  ASSERT_TRUE(saveFullCheckpoint(dir, state(4), 1, 1).isOk());
  const std::string commit = dir + "/" + checkpointDirName(4) + "/COMMIT";
  const std::string good = readBytes(commit);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not a checkpoint\n", "not an fsdp checkpoint"},
      {"fsdp-checkpoint 1\nkind diagonal\nstep 4\nworld_size 1\n", "unknown checkpoint kind"},
      {"fsdp-checkpoint 1\nkind full\nworld_size 1\n", "no step or world size"},
      {"fsdp-checkpoint 1\nkind full\nstep four\nworld_size 1\n", "malformed line"},
  };
  for (const auto &[text, expected] : cases) {
    writeBytes(commit, text);
    CheckpointManifest manifest;
    Status s = findCheckpoint(dir, manifest);
    ASSERT_FALSE(s.isOk()) << text;
    EXPECT_NE(s.message().find(commit), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
  writeBytes(commit, good);
  CheckpointManifest manifest;
  EXPECT_TRUE(findCheckpoint(dir, manifest).isOk());
}

/// fp16 runs' COMMIT records the loss scaler (scale, growth tracker,
/// optimizer steps); older ones and other runs' have none, and still load;
/// a scale that is not a positive finite number is refused.
TEST_F(CheckpointTest, CommitCarriesTheLossScaler) {
  const std::string step = dir + "/" + checkpointDirName(6);
  fs::create_directories(step);
  const std::string head = "fsdp-checkpoint 1\nkind sharded\nstep 6\nworld_size 2\n";
  writeBytes(step + "/COMMIT", head);
  CheckpointManifest manifest;
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  EXPECT_FALSE(manifest.lossScaler.has_value());
  writeBytes(step + "/COMMIT", head + "loss_scale 131072\nloss_scale_growth_tracker 3\n"
                                      "optimizer_steps 4\n");
  manifest = CheckpointManifest();
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  ASSERT_TRUE(manifest.lossScaler.has_value());
  EXPECT_EQ(manifest.lossScaler->scale, 131072.0f);
  EXPECT_EQ(manifest.lossScaler->growthTracker, 3);
  EXPECT_EQ(manifest.lossScaler->optimizerSteps, 4);
  for (const char *bad : {"loss_scale 0\n", "loss_scale -2\n", "loss_scale inf\n"}) {
    writeBytes(step + "/COMMIT", head + bad);
    manifest = CheckpointManifest();
    Status s = findCheckpoint(dir, manifest);
    EXPECT_FALSE(s.isOk()) << bad;
  }
}

TEST_F(CheckpointTest, ShardedCheckpointWithoutItsPlanIsRefused) {
  // A sharded checkpoint of an older layout, carrying no plan: another plan
  // cannot consolidate it, and says why.
  const std::string step = dir + "/" + checkpointDirName(1);
  fs::create_directories(step);
  writeBytes(step + "/COMMIT",
             "fsdp-checkpoint 1\nkind sharded\nstep 1\nworld_size 2\nplan_hash 0000000000000001\n");
  CheckpointManifest manifest;
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  CheckpointState out;
  Status s = readCheckpointState(manifest, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("carries no plan.fsdp"), std::string::npos) << s.message();
}

// Paths (issue 20).

/// Whether every tensor of `want` reads back from `index` byte for byte.
bool holds(const SafetensorsIndex &index, const CheckpointState &want) {
  for (const auto *part : {&want.parameters, &want.optimizer})
    for (const auto &[name, value] : *part) {
      const SafetensorsIndex::Info *info = index.find(name);
      std::vector<char> bytes(info ? info->bytes : 0);
      if (!info || !index.read(name, 0, bytes.size(), bytes.data()).isOk() ||
          bytes != value.data)
        return false;
    }
  return true;
}

TEST_F(CheckpointTest, AVerifiedFileIsReadThroughTheDescriptorThatWasHashed) {
  // The file is replaced (same size, other bytes) after its hash was checked
  // and before its tensors are read: reading through the verified
  // descriptor still gives the committed bytes, where reading the path
  // again (what the sources did before) gives the replacement's.
  ASSERT_TRUE(saveFullCheckpoint(dir, state(3), 1, 1).isOk());
  CheckpointManifest manifest;
  ASSERT_TRUE(findCheckpoint(dir, manifest).isOk());
  std::string path;
  std::shared_ptr<const detail::InputFile> verified;
  ASSERT_TRUE(verifyCheckpointFile(manifest, kFullCheckpointFile, path, &verified).isOk());
  std::string swapped = readBytes(path);
  swapped[swapped.size() - 2] ^= 0x10;
  writeBytes(path, swapped); // a new file under the name

  SafetensorsIndex index, reopened;
  ASSERT_TRUE(SafetensorsIndex::open(verified, path, index).isOk());
  EXPECT_TRUE(holds(index, state(3)));
  ASSERT_TRUE(SafetensorsIndex::open(path, reopened).isOk());
  EXPECT_FALSE(holds(reopened, state(3))); // the swap took effect on the name
}

TEST_F(CheckpointTest, CommitNamesOnlyPlainFileNames) {
  ASSERT_TRUE(saveFullCheckpoint(dir, state(4), 1, 1).isOk());
  const std::string commit = dir + "/" + checkpointDirName(4) + "/COMMIT";
  const std::string good = readBytes(commit);
  for (const std::string name : {"../model.safetensors", "/etc/passwd", "sub/model.safetensors",
                                 ".."}) {
    writeBytes(commit, good + "file " + name + " 10 00000000000000ff\n");
    CheckpointManifest manifest;
    Status s = findCheckpoint(dir, manifest);
    ASSERT_FALSE(s.isOk()) << name;
    EXPECT_NE(s.message().find("'" + name + "' is not a plain name"), std::string::npos)
        << s.message();
  }
}

TEST_F(CheckpointTest, ASymlinkedStepDirectoryIsReplacedAsALink) {
  // step-00000003 -> another directory holding a COMMIT: re-saving step 3
  // replaces the link and leaves the other directory's COMMIT alone.
  const std::string other = dir + "/other";
  fs::create_directories(dir + "/ckpt");
  fs::create_directories(other);
  writeBytes(other + "/COMMIT", "not ours");
  fs::create_directory_symlink(other, dir + "/ckpt/" + checkpointDirName(3));
  ASSERT_TRUE(saveFullCheckpoint(dir + "/ckpt", state(3), 1, 1).isOk());
  EXPECT_EQ(readBytes(other + "/COMMIT"), "not ours");
  EXPECT_FALSE(fs::is_symlink(dir + "/ckpt/" + checkpointDirName(3)));
  CheckpointState out;
  CheckpointManifest manifest;
  ASSERT_TRUE(findCheckpoint(dir + "/ckpt", manifest).isOk());
  EXPECT_TRUE(readCheckpointState(manifest, out).isOk());
}

} // namespace
} // namespace fsdp::rt
