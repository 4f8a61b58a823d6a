//===- CheckpointState.cpp - a checkpoint's state, consolidated -----------===//
//
// What lets any plan of a model load any checkpoint of it: the state is
// brought to one layout-free form (CheckpointState: parameters whole under
// their model names, optimizer state as torch names it), from which
// Executor::writeFullState lets each rank keep its part. A full checkpoint
// is that form already. A sharded one is consolidated by the plan that
// wrote it, which it carries: that plan's ranks run in this process, each
// restores its rank file and the ranks gather (Executor::readFullState),
// the same code a full save runs, so consolidation cannot disagree with
// the layout that wrote the shards.
//
//===----------------------------------------------------------------------===//

#include "fsdp/runtime/Checkpoint.h"

#include "fsdp/runtime/ContentHash.h"
#include "fsdp/runtime/InProcessRanks.h"
#include "fsdp/runtime/PlanFile.h"
#include "fsdp/runtime/Safetensors.h"
#include "runtime/schema/plan_generated.h"

#include <cstring>
#include <filesystem>
#include <map>

namespace fsdp::rt {
namespace {

namespace fs = std::filesystem;

/// Loads the plan a sharded checkpoint carries, verified like its shards.
Status openCheckpointPlan(const CheckpointManifest &manifest, LoadedPlan &plan) {
  const fs::path path = fs::path(manifest.dir) / kCheckpointPlanFile;
  auto entry = manifest.files.find(kCheckpointPlanFile);
  if (entry == manifest.files.end())
    return Status::error(manifest.dir + ": carries no " + kCheckpointPlanFile +
                         " (saved before checkpoints carried their plan), so only the plan "
                         "that saved it can load it");
  uint64_t bytes = 0, hash = 0;
  FSDP_RETURN_IF_ERROR(hashFile(path.string(), bytes, hash));
  if (bytes != entry->second.first || hash != entry->second.second)
    return Status::error(cat(path.string(), ": ", bytes, " bytes with content hash ",
                             hashHex(hash), "; the checkpoint wrote ", entry->second.first,
                             " bytes, hash ", hashHex(entry->second.second),
                             " (truncated or corrupted)"));
  FSDP_RETURN_IF_ERROR(loadPlan(path.string(), plan));
  if (plan.hash() != manifest.planHash || plan.plan().world_size() != manifest.worldSize)
    return Status::error(path.string() + ": is not the plan COMMIT names");
  return Status::ok();
}

/// A sharded checkpoint consolidated: its saving plan's ranks, run in this
/// process, each restore their rank file and gather the full state.
Status consolidateSharded(const CheckpointManifest &manifest, CheckpointState &out) {
  LoadedPlan plan;
  FSDP_RETURN_IF_ERROR(openCheckpointPlan(manifest, plan));
  const int size = static_cast<int>(manifest.worldSize);
  std::vector<std::pair<std::string, HostTensor>> full;
  FSDP_RETURN_IF_ERROR(runInProcessRanks(plan, [&](Executor &executor) -> Status {
    const std::string name = checkpointFileName(executor.rank(), size);
    {
      SafetensorsFile file;
      FSDP_RETURN_IF_ERROR(openCheckpointFile(manifest, name, file));
      FSDP_RETURN_IF_ERROR(executor.writeState([&](const std::string &n) { return file.find(n); },
                                               (fs::path(manifest.dir) / name).string()));
    }
    if (executor.rank() != 0) {
      std::vector<std::pair<std::string, HostTensor>> none;
      return executor.readFullState(none, /*keep=*/false);
    }
    return executor.readFullState(full);
  }));
  // readFullState lists the parameters first, in plan order.
  const size_t numParams = plan.plan().parameters() ? plan.plan().parameters()->size() : 0;
  for (size_t i = 0; i < full.size(); ++i)
    (i < numParams ? out.parameters : out.optimizer).push_back(std::move(full[i]));
  return Status::ok();
}

/// Splits a full checkpoint's tensors into parameters and optimizer state:
/// "<name>.<suffix>" is state when <name> is also in the file and the
/// suffix is one of torch's optimizer state names.
void splitFullState(SafetensorsFile &file, CheckpointState &out) {
  static const char *const kStateSuffixes[] = {".exp_avg", ".exp_avg_sq", ".momentum_buffer"};
  for (const std::string &name : file.names()) {
    bool state = false;
    for (const char *suffix : kStateSuffixes) {
      const size_t n = std::strlen(suffix);
      state |= name.size() > n && name.compare(name.size() - n, n, suffix) == 0 &&
               file.find(name.substr(0, name.size() - n));
    }
    (state ? out.optimizer : out.parameters).emplace_back(name, *file.find(name));
  }
}

} // namespace

Status readCheckpointState(const CheckpointManifest &manifest, CheckpointState &out) {
  CheckpointState state;
  state.step = manifest.step;
  if (manifest.format == CheckpointFormat::Full) {
    SafetensorsFile file;
    FSDP_RETURN_IF_ERROR(openCheckpointFile(manifest, kFullCheckpointFile, file));
    splitFullState(file, state);
  } else {
    FSDP_RETURN_IF_ERROR(consolidateSharded(manifest, state));
  }
  out = std::move(state);
  return Status::ok();
}

Status restoreCheckpointState(Executor &executor, const CheckpointState *state,
                              const std::string &what) {
  // Rank 0 looks each tensor up; with more ranks it then broadcasts a
  // header (found, dtype, rank, dims) and the bytes. writeFullState asks for
  // the same names in the same order on every rank (the plan's), so the
  // broadcasts pair up, and a missing tensor fails every rank alike.
  Communicator &world = executor.world();
  const bool lead = world.rank() == 0;
  if (lead != (state != nullptr))
    return Status::error("restoreCheckpointState: rank 0, and only rank 0, passes the state");
  std::map<std::string, std::pair<const HostTensor *, bool>> byName; // value, used
  if (lead)
    for (const auto *part : {&state->parameters, &state->optimizer})
      for (const auto &[name, value] : *part)
        byName[name] = {&value, false};
  HostTensor received;   // the other ranks' current tensor
  Status sent = Status::ok(); // the first broadcast failure
  auto lookup = [&](const std::string &n) -> const HostTensor * {
    const HostTensor *value = nullptr;
    if (lead) {
      auto it = byName.find(n);
      if (it != byName.end()) {
        it->second.second = true;
        value = it->second.first;
      }
    }
    if (world.size() == 1 || !sent)
      return value;
    int64_t header[3 + kMaxRank] = {};
    if (value) {
      header[0] = 1;
      header[1] = static_cast<int64_t>(value->dtype);
      header[2] = static_cast<int64_t>(value->shape.size());
      for (size_t d = 0; d < value->shape.size() && d < static_cast<size_t>(kMaxRank); ++d)
        header[3 + d] = value->shape[d];
    }
    sent = world.broadcast(header, 3 + kMaxRank, DType::I64, 0);
    if (!sent || header[0] == 0)
      return value;
    if (!lead) {
      received.dtype = static_cast<DType>(header[1]);
      received.shape.assign(header + 3, header + 3 + header[2]);
      received.data.resize(static_cast<size_t>(received.numElements()) *
                           dtypeSize(received.dtype));
    }
    // broadcast takes one mutable buffer; the root's is only read.
    HostTensor &bytes = lead ? const_cast<HostTensor &>(*value) : received;
    sent = world.broadcast(bytes.data.data(), static_cast<int64_t>(bytes.data.size()), DType::U8,
                           0);
    return sent ? (lead ? value : &received) : nullptr;
  };
  Status restored = executor.writeFullState(lookup, what);
  FSDP_RETURN_IF_ERROR(sent);
  FSDP_RETURN_IF_ERROR(restored);
  // State the plan has no place for would be dropped silently: refuse it,
  // as torch's load_state_dict refuses unexpected keys.
  for (const auto &[name, entry] : byName)
    if (!entry.second)
      return Status::error(what + ": holds '" + name + "', which " + executor.plan().path() +
                           " has no place for (another model, or another optimizer)");
  return Status::ok();
}

} // namespace fsdp::rt
