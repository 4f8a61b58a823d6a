//===- Checkpoint.h - sharded training checkpoints, atomic and verified ---===//
//
// `fsdp-run --save=DIR` writes, every --save-every steps, the state one
// step hands the next (ModelState::readState: this rank's unit shards,
// optimizer state and whole parameters) as one checkpoint directory:
//
//   DIR/step-00000300/rank-00000-of-00002.safetensors   each rank's state
//   DIR/step-00000300/rank-00001-of-00002.safetensors
//   DIR/step-00000300/plan.fsdp                          the saving plan
//   DIR/step-00000300/COMMIT                             written last
//
// The plan lays out the shards, so a sharded checkpoint is self-describing:
// another plan of the model (another world size, strategy or schedule)
// loads it by reading it through that plan, tensor by tensor, and keeping
// its part (StateSource, CheckpointState.cpp).
// A full checkpoint (--save-format=full) is one model.safetensors instead,
// written by rank 0 as the ranks gather each unit (it never holds the whole
// state): every parameter whole under its model name and its optimizer
// state as "<name>.exp_avg" etc.; any plan of the same model and optimizer
// loads it, at any world size.
//
// COMMIT is the checkpoint's metadata (format, step, world size, plan hash,
// each file's size and content hash; CheckpointManifest.h). The directory
// protocol is CheckpointDirectory.h's: a checkpoint is assembled in
// DIR/.tmp-step-N, every file written and fsynced, COMMIT written last, the
// directory renamed into place and DIR fsynced: a crash at any moment
// leaves earlier checkpoints intact, and a directory without COMMIT is
// never loaded, nor is a .tmp- directory even when named. A save that fails
// (every rank agrees it did) removes its temporary directory, and a
// re-save of the same step keeps the old one until the new one is in. Loading checks the plan hash and world size and each
// file's size and hash, so a truncated, flipped or missing shard is refused
// naming the file. The data position and the dropout randomness are
// functions of the step (the data contract, per-step seeds), so the step
// is all a resumed run needs besides the state: it continues bitwise. An
// fp16 run's COMMIT also records its loss scaler (scale, growth tracker,
// optimizer steps), which a resumed fp16 run continues from; a checkpoint
// without it (another run's, or an older one) starts the scaler afresh
// with every saved step counted as an optimizer step.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_CHECKPOINT_H
#define FSDP_RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/checkpoint/CheckpointDirectory.h"
#include "runtime/checkpoint/CheckpointManifest.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::rt {

/// Writes the state after step `step` as a checkpoint under `root`; with
/// `keep` > 0, then removes all but the newest `keep` committed ones.
/// Collective: every rank calls it, and every rank fails if one does.
/// `written`, when given, receives the committed checkpoint's manifest.
Status saveCheckpoint(Executor &executor, const std::string &root, int64_t step, int64_t keep,
                      CheckpointFormat format = CheckpointFormat::Sharded,
                      CheckpointManifest *written = nullptr);

/// A checkpoint's state consolidated, as a full checkpoint holds it:
/// every parameter whole under its model name, and its optimizer state as
/// "<name>.exp_avg", "<name>.exp_avg_sq" or "<name>.momentum_buffer".
struct CheckpointState {
  int64_t step = -1;
  std::vector<std::pair<std::string, HostTensor>> parameters, optimizer;
};

/// The consolidated state, tensor by tensor: in memory (a CheckpointState),
/// or read from a checkpoint's files as each tensor is asked for, so whoever
/// reads a checkpoint this way holds one tensor at a time whatever the
/// model's size.
class StateSource {
public:
  /// One tensor: its name, whether it is a parameter, dtype and shape.
  struct Tensor {
    std::string name;
    bool parameter = false;
    TensorRef type; // no data
  };
  virtual ~StateSource() = default;
  /// Every tensor, parameters first.
  virtual const std::vector<Tensor> &tensors() const = 0;
  /// Tensor `name` in `out` (nullptr when the source has none): the
  /// source's own tensor, or one read into `scratch`.
  virtual Status find(const std::string &name, HostTensor &scratch, const HostTensor *&out) = 0;
};

/// `manifest`'s checkpoint as a source, in either format, every file first
/// verified whole against COMMIT. A sharded checkpoint is read through the
/// plan it carries (its shard layout), straight from the rank files.
Status openCheckpointSource(const CheckpointManifest &manifest,
                            std::unique_ptr<StateSource> &out);
/// A source over `state`, which must outlive it.
std::unique_ptr<StateSource> memorySource(const CheckpointState &state);

/// Reads `manifest`'s checkpoint consolidated into memory (only the
/// parameters with `parametersOnly`). Not collective.
Status readCheckpointState(const CheckpointManifest &manifest, CheckpointState &out,
                           bool parametersOnly = false);

/// Restores consolidated state into `executor`'s plan (any world size or
/// strategy of the model): each rank keeps its part. `source` is rank 0's
/// (the others pass null): each tensor the plan asks for is broadcast from
/// rank 0 as it is restored, so the other ranks hold one tensor at a time.
/// Every tensor must find its place; `what` names the source in errors.
/// Collective.
Status restoreCheckpointState(Executor &executor, StateSource *source, const std::string &what);

/// Writes `source` as a full checkpoint of step `step` under `root`, not
/// collectively and one tensor at a time: what `fsdp-ckpt convert
/// --format=full` writes. COMMIT records `worldSize` and `planHash` of the
/// run the state came from.
Status saveFullCheckpoint(const std::string &root, StateSource &source, int64_t step,
                          int64_t worldSize, uint64_t planHash);
/// The same for a state in memory (step state.step).
Status saveFullCheckpoint(const std::string &root, const CheckpointState &state,
                          int64_t worldSize, uint64_t planHash);

/// Whether `manifest` is a sharded checkpoint of the executor's own plan,
/// which each rank restores from its own file (any other is resharded).
bool savedByThisPlan(const Executor &executor, const CheckpointManifest &manifest);

/// Restores the newest committed checkpoint under `path` (a --save
/// directory, or one step-N directory of it) and returns its step. A
/// sharded checkpoint of this plan loads directly; a full one, or a sharded
/// one of another plan of the model (another world size, strategy or
/// schedule), is read tensor by tensor by rank 0, which hands each rank
/// what it keeps (restoreCheckpointState). Collective,
/// like saveCheckpoint.
/// `loaded`, when given, receives its manifest.
Status loadCheckpoint(Executor &executor, const std::string &path, int64_t &step,
                      CheckpointManifest *loaded = nullptr);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_CHECKPOINT_H
