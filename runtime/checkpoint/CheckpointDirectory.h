//===- CheckpointDirectory.h - step-N directories, committed atomically ---===//
//
// The directory protocol of `fsdp-run --save=DIR`: each checkpoint is
// DIR/step-NNNNNNNN, assembled in DIR/.tmp-step-N (every file written and
// fsynced), committed by writing COMMIT last (CheckpointManifest.h),
// renamed into place and DIR fsynced, so a crash at any moment leaves the
// earlier checkpoints intact. A directory without COMMIT is never loaded,
// nor is a .tmp- directory even when named; a re-save of a step keeps the
// old one until the new one is in; --keep rotates the oldest out. Rank 0
// alone calls what changes the directory structure (Checkpoint.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H
#define FSDP_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H

#include "runtime/checkpoint/CheckpointManifest.h"

#include <cstdint>
#include <filesystem>
#include <string>

namespace fsdp::rt {

/// The newest committed checkpoint under `path` (a --save directory, or one
/// step-N directory of it).
Status findCheckpoint(const std::string &path, CheckpointManifest &out);

/// The directory name of step `step`'s checkpoint ("step-00000300").
std::string checkpointDirName(int64_t step);

/// The name of rank `rank`'s file in a sharded checkpoint of `worldSize`
/// ranks, and the one file of a full checkpoint.
std::string checkpointFileName(int rank, int worldSize);
inline constexpr const char *kFullCheckpointFile = "model.safetensors";
/// The plan a sharded checkpoint carries: it lays out the shards, so any
/// other plan of the model can consolidate them (readCheckpointState).
inline constexpr const char *kCheckpointPlanFile = "plan.fsdp";

/// The temporary directory a save of step `step` under `root` assembles in.
std::filesystem::path checkpointTempDir(const std::filesystem::path &root, int64_t step);
/// Creates `tmp` (checkpointTempDir) afresh under `root`, which it creates
/// if need be (a crashed save may have left one).
Status makeCheckpointTempDir(const std::filesystem::path &root, const std::filesystem::path &tmp);
/// Writes `info`'s COMMIT into `tmp` and renames `tmp` into place as
/// step `info.step`'s directory under `root`; with `keep` > 0, then
/// removes all but the newest `keep` committed checkpoints.
Status commitCheckpoint(const std::filesystem::path &root, const std::filesystem::path &tmp,
                        const CheckpointManifest &info, int64_t keep);
/// `saved`, after removing what a failed save left (its temporary
/// directory `tmp`, whatever it holds).
Status removeTempDirIfFailed(const Status &saved, const std::filesystem::path &tmp);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_CHECKPOINTDIRECTORY_H
