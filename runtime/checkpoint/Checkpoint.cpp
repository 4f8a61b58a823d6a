//===- Checkpoint.cpp - training checkpoints, atomic and verified ---------===//
//
// The collective save and load, in both formats. Every collective step of
// a save or load ends in an agreement (Communicator::agree), so a rank
// that fails (a full disk, a bad shard) fails every rank with its message
// instead of leaving the others waiting in the next collective. Rank 0
// alone touches the directory structure (creates the temporary directory,
// commits, prunes: CheckpointDirectory.cpp); every rank writes only its
// own file. COMMIT's format is CheckpointManifest.cpp's; consolidating
// state for another plan is CheckpointState.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/ModelState.h"
#include "runtime/io/ContentHash.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace fsdp::rt {
namespace {

namespace fs = std::filesystem;

/// Runs `body` as rank 0's part of a collective phase (others wait for its
/// verdict).
template <typename Body> Status onLead(Communicator &world, const char *what, Body body) {
  return world.agree(world.rank() == 0 ? body() : Status::ok(), what);
}

/// Writes `state` as the safetensors file `tmp/name` (fsynced) and returns
/// its size and content hash for COMMIT.
Status writeStateFile(const fs::path &tmp, const std::string &name,
                      const std::vector<NamedTensor> &tensors,
                      const std::map<std::string, std::string> &metadata,
                      std::pair<uint64_t, uint64_t> &entry) {
  const std::string path = (tmp / name).string();
  FSDP_RETURN_IF_ERROR(writeSafetensors(path, tensors, metadata, &entry.second));
  std::error_code ec;
  entry.first = fs::file_size(path, ec);
  return ec ? Status::error(path + ": " + ec.message()) : Status::ok();
}

/// Rank 0's share of a sharded save: the plan that lays out the shards, so
/// any other plan (world size, strategy) can consolidate and load them.
Status writePlanCopy(const Executor &executor, const fs::path &tmp,
                     std::pair<uint64_t, uint64_t> &entry) {
  const LoadedPlan &plan = executor.plan();
  const std::string path = (tmp / kCheckpointPlanFile).string();
  FSDP_RETURN_IF_ERROR(writePlanFile(path, plan.flatbuffer(), plan.flatbufferSize()));
  return hashFile(path, entry.first, entry.second);
}

/// A full checkpoint's file, written as the units are gathered: rank 0
/// holds one unit's flat buffer at a time, never the whole state. Every
/// rank takes part in every gather even after rank 0's write fails, so the
/// failure reaches the agreement instead of leaving ranks waiting.
Status writeFullFile(Executor &executor, const std::string &path,
                     const std::map<std::string, std::string> &metadata,
                     std::pair<uint64_t, uint64_t> &entry) {
  const bool lead = executor.world().rank() == 0;
  const std::vector<StateEntry> order = writeOrder(consolidatedLayout(executor.plan().plan()));
  SafetensorsWriter writer;
  Status writing = Status::ok();
  if (lead) {
    std::vector<SafetensorsWriter::Spec> specs;
    for (const StateEntry &e : order)
      specs.push_back({e.name, e.type});
    writing = writer.begin(path, specs, metadata);
  }
  Status gathered = ModelState(executor).visitFullState(
      order, lead && writing, [&](const StateEntry &, const TensorRef &view) {
        return writer.add(view.data, view.byteSize());
      });
  if (!lead)
    return gathered;
  FSDP_RETURN_IF_ERROR(writing);
  FSDP_RETURN_IF_ERROR(gathered);
  FSDP_RETURN_IF_ERROR(writer.finish(&entry.second));
  entry.first = writer.bytesWritten();
  return Status::ok();
}

Status saveCheckpointIn(Executor &executor, const fs::path &rootPath, const fs::path &tmp,
                        int64_t step, int64_t keep, CheckpointFormat format,
                        CheckpointManifest *written) {
  const bool full = format == CheckpointFormat::Full;
  Communicator &world = executor.world();
  FSDP_RETURN_IF_ERROR(onLead(world, "creating the checkpoint directory",
                              [&]() { return makeCheckpointTempDir(rootPath, tmp); }));
  // Sharded: each rank writes its own state, rank 0 also the plan. Full:
  // every rank helps gather the consolidated state unit by unit, and rank 0
  // streams each tensor into the file as it arrives (writeFullFile).
  const int rank = world.rank(), size = world.size();
  const std::string name = full ? kFullCheckpointFile : checkpointFileName(rank, size);
  const auto metadata = checkpointFileMetadata(format, step, rank, size, executor.planHash());
  std::pair<uint64_t, uint64_t> entry{0, 0}, planEntry{0, 0}; // bytes, content hash
  Status wrote = [&]() -> Status {
    if (full)
      return writeFullFile(executor, (tmp / name).string(), metadata, entry);
    std::vector<std::pair<std::string, HostTensor>> state;
    FSDP_RETURN_IF_ERROR(ModelState(executor).readState(state));
    if (rank == 0)
      FSDP_RETURN_IF_ERROR(writePlanCopy(executor, tmp, planEntry));
    std::vector<NamedTensor> tensors;
    for (const auto &[n, value] : state)
      tensors.push_back({n, value.ref()});
    return writeStateFile(tmp, name, tensors, metadata, entry);
  }();
  FSDP_RETURN_IF_ERROR(world.agree(wrote, "writing checkpoint shards"));
  uint64_t mine[2] = {entry.first, entry.second};
  std::vector<uint64_t> entries(2 * static_cast<size_t>(size));
  FSDP_RETURN_IF_ERROR(world.allGather(mine, entries.data(), 2, DType::U64));
  CheckpointManifest info;
  info.format = format;
  info.step = step;
  info.worldSize = size;
  info.planHash = executor.planHash();
  if (const LossScaler *scaler = executor.lossScaler())
    info.lossScaler = scaler->state();
  if (full) {
    info.files[kFullCheckpointFile] = {entries[0], entries[1]};
  } else {
    for (int r = 0; r < size; ++r)
      info.files[checkpointFileName(r, size)] = {entries[2 * r], entries[2 * r + 1]};
    info.files[kCheckpointPlanFile] = planEntry; // rank 0's, and only rank 0 commits
  }
  FSDP_RETURN_IF_ERROR(onLead(world, "committing the checkpoint",
                              [&]() { return commitCheckpoint(rootPath, tmp, info, keep); }));
  if (written) {
    info.dir = (rootPath / checkpointDirName(step)).string();
    *written = std::move(info);
  }
  return Status::ok();
}

} // namespace

Status saveCheckpoint(Executor &executor, const std::string &root, int64_t step, int64_t keep,
                      CheckpointFormat format, CheckpointManifest *written) {
  // Every failure passes an agreement first, so every rank gets here with
  // it: rank 0 removes the temporary directory (no rank still writes into
  // it) while the others wait, since a rank that returned at once could end
  // the job (an MPI abort) before the directory is gone.
  const fs::path tmp = checkpointTempDir(root, step);
  Status saved = saveCheckpointIn(executor, root, tmp, step, keep, format, written);
  if (!saved)
    (void)onLead(executor.world(), "removing the failed save's temporary directory", [&]() {
      (void)removeTempDirIfFailed(saved, tmp);
      return Status::ok();
    });
  return saved;
}

namespace {

Status saveFullCheckpointIn(const fs::path &rootPath, const fs::path &tmp, StateSource &source,
                            int64_t step, int64_t worldSize, uint64_t planHash) {
  FSDP_RETURN_IF_ERROR(makeCheckpointTempDir(rootPath, tmp));
  // Widest element type first (the writer's alignment rule), otherwise in
  // the source's order; each tensor is read as it is written.
  std::vector<StateSource::Tensor> order = source.tensors();
  std::stable_sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
    return dtypeSize(a.type.dtype) > dtypeSize(b.type.dtype);
  });
  std::vector<SafetensorsWriter::Spec> specs;
  for (const StateSource::Tensor &t : order)
    specs.push_back({t.name, t.type});
  CheckpointManifest info;
  info.format = CheckpointFormat::Full;
  info.step = step;
  info.worldSize = worldSize;
  info.planHash = planHash;
  const std::string path = (tmp / kFullCheckpointFile).string();
  SafetensorsWriter writer;
  FSDP_RETURN_IF_ERROR(writer.begin(
      path, specs, checkpointFileMetadata(CheckpointFormat::Full, step, 0, worldSize, planHash)));
  HostTensor scratch;
  for (const StateSource::Tensor &t : order) {
    const HostTensor *value = nullptr;
    FSDP_RETURN_IF_ERROR(source.find(t.name, scratch, value));
    if (!value)
      return Status::error(path + ": the source lists '" + t.name + "' but has no value");
    FSDP_RETURN_IF_ERROR(writer.add(value->data.data(), value->data.size()));
  }
  std::pair<uint64_t, uint64_t> &entry = info.files[kFullCheckpointFile];
  FSDP_RETURN_IF_ERROR(writer.finish(&entry.second));
  entry.first = writer.bytesWritten();
  return commitCheckpoint(rootPath, tmp, info, /*keep=*/0);
}

} // namespace

Status saveFullCheckpoint(const std::string &root, StateSource &source, int64_t step,
                          int64_t worldSize, uint64_t planHash) {
  const fs::path tmp = checkpointTempDir(root, step);
  return removeTempDirIfFailed(
      saveFullCheckpointIn(root, tmp, source, step, worldSize, planHash), tmp);
}

Status saveFullCheckpoint(const std::string &root, const CheckpointState &state,
                          int64_t worldSize, uint64_t planHash) {
  std::unique_ptr<StateSource> source = memorySource(state);
  return saveFullCheckpoint(root, *source, state.step, worldSize, planHash);
}

bool savedByThisPlan(const Executor &executor, const CheckpointManifest &manifest) {
  return manifest.format == CheckpointFormat::Sharded && manifest.planHash == executor.planHash() &&
         manifest.worldSize == executor.world().size();
}

namespace {

Status loadOwnShard(Executor &executor, const CheckpointManifest &manifest) {
  const std::string name = checkpointFileName(executor.rank(), executor.world().size());
  SafetensorsFile file;
  FSDP_RETURN_IF_ERROR(openCheckpointFile(manifest, name, file));
  return ModelState(executor).writeState([&](const std::string &n) { return file.find(n); },
                                         (fs::path(manifest.dir) / name).string());
}

} // namespace

Status loadCheckpoint(Executor &executor, const std::string &path, int64_t &step,
                      CheckpointManifest *out) {
  // Every rank takes the same collective path: each reads the same COMMIT
  // (checked by its step, in case a save elsewhere commits a newer one
  // meanwhile), and the plan hash was agreed at start-up.
  Communicator &world = executor.world();
  CheckpointManifest manifest;
  FSDP_RETURN_IF_ERROR(world.agree(findCheckpoint(path, manifest), "finding the checkpoint"));
  FSDP_RETURN_IF_ERROR(world.checkSameOnAllRanks(static_cast<uint64_t>(manifest.step),
                                                 "the checkpoint step found"));
  if (savedByThisPlan(executor, manifest)) {
    FSDP_RETURN_IF_ERROR(world.agree(loadOwnShard(executor, manifest), "loading the checkpoint"));
  } else {
    // Another plan's checkpoint (or a full one): rank 0 reads it tensor by
    // tensor and hands each rank the tensors it needs, one at a time.
    std::unique_ptr<StateSource> source;
    FSDP_RETURN_IF_ERROR(world.agree(
        world.rank() == 0 ? openCheckpointSource(manifest, source) : Status::ok(),
        "opening the checkpoint"));
    const std::string what =
        manifest.format == CheckpointFormat::Full
            ? (fs::path(manifest.dir) / kFullCheckpointFile).string()
            : cat(manifest.dir, " (sharded over ", manifest.worldSize, " ranks)");
    FSDP_RETURN_IF_ERROR(world.agree(restoreCheckpointState(executor, source.get(), what),
                                     "restoring the checkpoint"));
  }
  if (LossScaler *scaler = executor.lossScaler()) {
    LossScalerState state;
    state.optimizerSteps = manifest.step; // a run without loss scaling applied every step
    scaler->setState(manifest.lossScaler.value_or(state));
  }
  step = manifest.step;
  if (out)
    *out = std::move(manifest);
  return Status::ok();
}

} // namespace fsdp::rt
