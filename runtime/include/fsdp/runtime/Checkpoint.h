//===- Checkpoint.h - sharded training checkpoints, atomic and verified ---===//
//
// `fsdp-run --save=DIR` writes, every --save-every steps, the state one
// step hands the next (Executor::readState: this rank's unit shards,
// optimizer state and whole parameters) as one checkpoint directory:
//
//   DIR/step-00000300/rank-00000-of-00002.safetensors   each rank's state
//   DIR/step-00000300/rank-00001-of-00002.safetensors
//   DIR/step-00000300/COMMIT                             written last
//
// A full checkpoint (--save-format=full) is one model.safetensors instead,
// written by rank 0: every parameter whole under its model name and its
// optimizer state as "<name>.exp_avg" etc.; any plan of the same model
// and optimizer loads it, at any world size.
//
// COMMIT is the checkpoint's metadata (format, step, world size, plan hash,
// each file's size and content hash). A checkpoint is assembled in
// DIR/.tmp-step-N, every file written and fsynced, COMMIT written last, the
// directory renamed into place and DIR fsynced: a crash at any moment
// leaves earlier checkpoints intact, and a directory without COMMIT is
// never loaded. Loading checks the plan hash and world size and each
// file's size and hash, so a truncated, flipped or missing shard is refused
// naming the file. The data position and the dropout randomness are
// functions of the step (the data contract, per-step seeds), so the step
// is all a resumed run needs besides the state: it continues bitwise.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_H
#define FSDP_RUNTIME_CHECKPOINT_H

#include "fsdp/runtime/Executor.h"
#include "fsdp/runtime/Safetensors.h"
#include "fsdp/runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>

namespace fsdp::rt {

/// Writes the state after step `step` as a checkpoint under `root`; with
/// `keep` > 0, then removes all but the newest `keep` committed ones.
/// Collective: every rank calls it, and every rank fails if one does.
/// sharded: every rank writes its own state (fast, needs the same plan to
/// load); full: rank 0 writes one consolidated model.safetensors that any
/// plan of the same model and optimizer loads (another world size or
/// strategy: resharding), and torch's safetensors loader reads.
enum class CheckpointFormat { Sharded, Full };
Status saveCheckpoint(Executor &executor, const std::string &root, int64_t step, int64_t keep,
                      CheckpointFormat format = CheckpointFormat::Sharded);

/// A committed checkpoint as its COMMIT file describes it.
struct CheckpointManifest {
  std::string dir; // the step-N directory
  CheckpointFormat format = CheckpointFormat::Sharded;
  int64_t step = -1, worldSize = -1; // world size: of the run that saved it
  uint64_t planHash = 0;
  std::map<std::string, std::pair<uint64_t, uint64_t>> files; // name -> (bytes, content hash)
};

/// The newest committed checkpoint under `path` (a --save directory, or one
/// step-N directory of it).
Status findCheckpoint(const std::string &path, CheckpointManifest &out);

/// The name of rank `rank`'s file in a sharded checkpoint of `worldSize`
/// ranks, and the one file of a full checkpoint.
std::string checkpointFileName(int rank, int worldSize);
inline constexpr const char *kFullCheckpointFile = "model.safetensors";

/// Reads the checkpoint's file `name`, refusing one whose size or content
/// hash is not what the checkpoint committed.
Status openCheckpointFile(const CheckpointManifest &manifest, const std::string &name,
                          SafetensorsFile &file);

/// Restores the newest committed checkpoint under `path` (a --save
/// directory, or one step-N directory of it) and returns its step.
/// Collective, like saveCheckpoint.
Status loadCheckpoint(Executor &executor, const std::string &path, int64_t &step);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_H
