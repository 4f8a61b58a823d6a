//===- CheckpointManifest.h - a checkpoint's COMMIT file ------------------===//
//
// COMMIT is a checkpoint's metadata and the mark that it is whole: its
// format, step, world size and plan hash, an fp16 run's loss scaler, and
// each file's size and content hash, one "key value" line each after the
// format line "fsdp-checkpoint 1". A file is trusted only through it: it
// must be listed, a plain name inside the checkpoint directory, of the
// committed size and content hash, so a truncated, flipped, missing or
// replaced shard is refused naming the file. The directory protocol that
// writes COMMIT last is CheckpointDirectory.h's.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_CHECKPOINTMANIFEST_H
#define FSDP_RUNTIME_CHECKPOINT_CHECKPOINTMANIFEST_H

#include "runtime/io/Safetensors.h"
#include "runtime/support/Status.h"
#include "runtime/train/LossScaler.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

namespace fsdp::rt {

/// sharded: every rank writes its own state, and rank 0 the plan (fast;
/// another plan loads it by consolidating); full: rank 0 writes one
/// consolidated model.safetensors, in torch's names.
enum class CheckpointFormat { Sharded, Full };

/// A committed checkpoint as its COMMIT file describes it.
struct CheckpointManifest {
  std::string dir; // the step-N directory
  CheckpointFormat format = CheckpointFormat::Sharded;
  int64_t step = -1, worldSize = -1; // world size: of the run that saved it
  uint64_t planHash = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> files; // name -> (bytes, content hash)
  /// fp16 runs: the dynamic loss scaler's state after `step` (scale, good
  /// steps in a row, optimizer steps taken); absent in other checkpoints
  /// and in those written before it was recorded.
  std::optional<LossScalerState> lossScaler;
  /// The bytes of all its files.
  uint64_t totalBytes() const;
};

/// The name of the file that commits a checkpoint directory.
inline constexpr const char *kCommitFile = "COMMIT";

/// `info` as the text of its COMMIT file (`dir` is not written).
std::string renderCommit(const CheckpointManifest &info);
/// Reads the COMMIT file at `path` into `info` (all but `dir`), refusing a
/// file that is not one, too large, malformed, or names a file outside the
/// directory.
Status parseCommit(const std::string &path, CheckpointManifest &info);

/// The safetensors metadata every checkpoint file carries: its format,
/// step, the rank that wrote it, the world size and the plan hash.
std::map<std::string, std::string> checkpointFileMetadata(CheckpointFormat format, int64_t step,
                                                          int rank, int64_t worldSize,
                                                          uint64_t planHash);

/// Reads the checkpoint's file `name`, refusing one whose size or content
/// hash is not what the checkpoint committed.
Status openCheckpointFile(const CheckpointManifest &manifest, const std::string &name,
                          SafetensorsFile &file);
/// Checks the checkpoint's file `name` whole (size and content hash) without
/// keeping its bytes, for files read piecemeal afterwards; `path` receives
/// its path and `opened`, when given, the descriptor that was verified:
/// reading through it, not the path again, leaves no moment in which the
/// file could be replaced between the check and the use.
Status verifyCheckpointFile(const CheckpointManifest &manifest, const std::string &name,
                            std::string &path,
                            std::shared_ptr<const detail::InputFile> *opened = nullptr);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_CHECKPOINTMANIFEST_H
