//===- CheckpointState.cpp - a checkpoint's state, consolidated -----------===//
//
// What lets any plan of a model load any checkpoint of it: the state is
// brought to one layout-free form (parameters whole under their model
// names, optimizer state as torch names it), from which
// ModelState::writeFullState lets each rank keep its part. A full checkpoint
// is that form already. A sharded one is read through the plan that wrote
// it, which it carries: StateLayout says, for each consolidated tensor,
// which stored tensor holds it and, for a slice of a unit, which element
// range each rank file holds, so each tensor is assembled from byte ranges
// of the files (SafetensorsIndex) as it is asked for. ModelState gathers
// and scatters by the same layout, so the two cannot disagree, and nothing
// holds more than one consolidated tensor at a time.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/ModelState.h"
#include "runtime/io/ContentHash.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace fsdp::rt {
namespace {

/// Loads the plan a sharded checkpoint carries, verified like its shards.
Status openCheckpointPlan(const CheckpointManifest &manifest, LoadedPlan &plan) {
  if (!manifest.files.count(kCheckpointPlanFile))
    return Status::error(manifest.dir + ": carries no " + kCheckpointPlanFile +
                         " (saved before checkpoints carried their plan), so only the plan "
                         "that saved it can load it");
  std::string path;
  FSDP_RETURN_IF_ERROR(verifyCheckpointFile(manifest, kCheckpointPlanFile, path));
  // Loaded again by name, but the hash check below covers the bytes loaded.
  FSDP_RETURN_IF_ERROR(loadPlan(path, plan));
  if (plan.hash() != manifest.planHash || plan.plan().world_size() != manifest.worldSize)
    return Status::error(path + ": is not the plan COMMIT names");
  return Status::ok();
}

class MemorySource : public StateSource {
public:
  explicit MemorySource(const CheckpointState &state) {
    for (const auto *part : {&state.parameters, &state.optimizer})
      for (const auto &[name, value] : *part) {
        names_.push_back({name, part == &state.parameters, value.ref()});
        names_.back().type.data = nullptr;
        byName_[name] = &value;
      }
  }
  const std::vector<Tensor> &tensors() const override { return names_; }
  Status find(const std::string &name, HostTensor &, const HostTensor *&out) override {
    auto it = byName_.find(name);
    out = it == byName_.end() ? nullptr : it->second;
    return Status::ok();
  }

private:
  std::vector<Tensor> names_;
  std::map<std::string, const HostTensor *> byName_;
};

/// Reads bytes [offset, offset + bytes) of the stored tensor `name` into
/// `out`, after checking it has the dtype and size the layout expects.
Status readStored(const SafetensorsIndex &file, const std::string &fileName,
                  const std::string &name, DType dtype, uint64_t expectBytes, uint64_t offset,
                  uint64_t bytes, char *out) {
  const SafetensorsIndex::Info *info = file.find(name);
  if (!info || info->dtype != dtype || info->bytes != expectBytes)
    return Status::error(cat(fileName, ": tensor '", name, "' is ",
                             info ? cat(dtypeName(info->dtype), ", ", info->bytes, " bytes")
                                  : std::string("missing"),
                             "; its plan stores ", dtypeName(dtype), ", ", expectBytes, " bytes"));
  return file.read(name, offset, bytes, out);
}

/// A full checkpoint's one file, tensor by tensor.
class FullFileSource : public StateSource {
public:
  Status open(const CheckpointManifest &manifest) {
    std::shared_ptr<const detail::InputFile> verified;
    FSDP_RETURN_IF_ERROR(verifyCheckpointFile(manifest, kFullCheckpointFile, path_, &verified));
    FSDP_RETURN_IF_ERROR(SafetensorsIndex::open(std::move(verified), path_, file_));
    // "<name>.<suffix>" is state when <name> is also in the file and the
    // suffix is one of torch's optimizer state names.
    static const char *const kStateSuffixes[] = {".exp_avg", ".exp_avg_sq", ".momentum_buffer"};
    std::vector<Tensor> state;
    for (const auto &[name, info] : file_.tensors()) {
      bool isState = false;
      for (const char *suffix : kStateSuffixes) {
        const size_t n = std::strlen(suffix);
        isState |= name.size() > n && name.compare(name.size() - n, n, suffix) == 0 &&
                   file_.find(name.substr(0, name.size() - n));
      }
      Tensor t{name, !isState, {}};
      t.type.dtype = info.dtype;
      t.type.rank = static_cast<int>(info.shape.size());
      std::copy(info.shape.begin(), info.shape.end(), t.type.dims);
      (isState ? state : names_).push_back(std::move(t));
    }
    names_.insert(names_.end(), state.begin(), state.end());
    return Status::ok();
  }
  const std::vector<Tensor> &tensors() const override { return names_; }
  Status find(const std::string &name, HostTensor &scratch, const HostTensor *&out) override {
    out = nullptr;
    const SafetensorsIndex::Info *info = file_.find(name);
    if (!info)
      return Status::ok();
    scratch = HostTensor{info->dtype, info->shape, std::vector<char>(info->bytes)};
    FSDP_RETURN_IF_ERROR(file_.read(name, 0, info->bytes, scratch.data.data()));
    out = &scratch;
    return Status::ok();
  }

private:
  std::string path_;
  SafetensorsIndex file_;
  std::vector<Tensor> names_;
};

/// A sharded checkpoint read through the plan that wrote it: a tensor held
/// whole is rank 0's copy; a slice of a unit is assembled from the element
/// ranges of the unit's group ranks 0..G-1 (rank s holds shard s).
class ShardedSource : public StateSource {
public:
  Status open(const CheckpointManifest &manifest) {
    FSDP_RETURN_IF_ERROR(openCheckpointPlan(manifest, plan_));
    layout_ = consolidatedLayout(plan_.plan());
    for (size_t i = 0; i < layout_.size(); ++i) {
      names_.push_back({layout_[i].name, layout_[i].parameter, layout_[i].type});
      byName_[layout_[i].name] = i;
    }
    const int size = static_cast<int>(manifest.worldSize);
    files_.resize(size);
    fileNames_.resize(size);
    for (int r = 0; r < size; ++r) {
      const std::string name = checkpointFileName(r, size);
      std::shared_ptr<const detail::InputFile> verified;
      FSDP_RETURN_IF_ERROR(verifyCheckpointFile(manifest, name, fileNames_[r], &verified));
      FSDP_RETURN_IF_ERROR(SafetensorsIndex::open(std::move(verified), fileNames_[r], files_[r]));
    }
    return Status::ok();
  }
  const std::vector<Tensor> &tensors() const override { return names_; }
  Status find(const std::string &name, HostTensor &scratch, const HostTensor *&out) override {
    out = nullptr;
    auto it = byName_.find(name);
    if (it == byName_.end())
      return Status::ok();
    const StateEntry &e = layout_[it->second];
    const DType dtype = e.type.dtype;
    const uint64_t size = dtypeSize(dtype), bytes = e.type.byteSize();
    scratch = HostTensor{dtype, std::vector<int64_t>(e.type.dims, e.type.dims + e.type.rank),
                         std::vector<char>(bytes)};
    if (!e.slice) { // held whole by every rank: rank 0's copy
      FSDP_RETURN_IF_ERROR(readStored(files_[0], fileNames_[0], e.stored, dtype, bytes, 0, bytes,
                                      scratch.data.data()));
      out = &scratch;
      return Status::ok();
    }
    // Rank s holds flat elements [s * shard, (s + 1) * shard) of the unit.
    const plan::Unit *unit = plan_.plan().units()->Get(e.slice->unit());
    const uint64_t shard = unit->shard_numel(), first = e.slice->flat_offset();
    const uint64_t last = first + bytes / size;
    for (uint32_t s = 0; s < unit->group_size(); ++s) {
      const uint64_t begin = std::max(first, s * shard), end = std::min(last, (s + 1) * shard);
      if (begin < end)
        FSDP_RETURN_IF_ERROR(readStored(files_[s], fileNames_[s], e.stored, dtype, shard * size,
                                        (begin - s * shard) * size, (end - begin) * size,
                                        scratch.data.data() + (begin - first) * size));
    }
    out = &scratch;
    return Status::ok();
  }

private:
  LoadedPlan plan_;
  std::vector<StateEntry> layout_;
  std::vector<Tensor> names_;
  std::map<std::string, size_t> byName_;
  std::vector<SafetensorsIndex> files_;
  std::vector<std::string> fileNames_;
};

} // namespace

std::unique_ptr<StateSource> memorySource(const CheckpointState &state) {
  return std::make_unique<MemorySource>(state);
}

Status openCheckpointSource(const CheckpointManifest &manifest,
                            std::unique_ptr<StateSource> &out) {
  if (manifest.format == CheckpointFormat::Full) {
    auto source = std::make_unique<FullFileSource>();
    FSDP_RETURN_IF_ERROR(source->open(manifest));
    out = std::move(source);
  } else {
    auto source = std::make_unique<ShardedSource>();
    FSDP_RETURN_IF_ERROR(source->open(manifest));
    out = std::move(source);
  }
  return Status::ok();
}

Status readCheckpointState(const CheckpointManifest &manifest, CheckpointState &out,
                           bool parametersOnly) {
  std::unique_ptr<StateSource> source;
  FSDP_RETURN_IF_ERROR(openCheckpointSource(manifest, source));
  CheckpointState state;
  state.step = manifest.step;
  for (const StateSource::Tensor &t : source->tensors()) {
    if (parametersOnly && !t.parameter)
      continue;
    HostTensor scratch;
    const HostTensor *value = nullptr;
    FSDP_RETURN_IF_ERROR(source->find(t.name, scratch, value));
    if (!value)
      return Status::error(manifest.dir + ": lists '" + t.name + "' but cannot read it");
    (t.parameter ? state.parameters : state.optimizer)
        .emplace_back(t.name, value == &scratch ? std::move(scratch) : *value);
  }
  out = std::move(state);
  return Status::ok();
}

Status restoreCheckpointState(Executor &executor, StateSource *source, const std::string &what) {
  // Rank 0 looks each tensor up; with more ranks it then broadcasts a
  // header (found, dtype, rank, dims) and the bytes. writeFullState asks for
  // the same names in the same order on every rank (the plan's), so the
  // broadcasts pair up, and a missing tensor fails every rank alike.
  Communicator &world = executor.world();
  const bool lead = world.rank() == 0;
  if (lead != (source != nullptr))
    return Status::error("restoreCheckpointState: rank 0, and only rank 0, passes the source");
  std::map<std::string, bool> used;
  if (lead)
    for (const StateSource::Tensor &t : source->tensors())
      used[t.name] = false;
  HostTensor received; // the current tensor, if not the source's own
  // Rank 0's first read failure, and the first broadcast failure. After a
  // read fails, rank 0 still broadcasts "absent" for each tensor asked
  // for, so every rank's writeFullState stops at the same tensor instead
  // of the others waiting for bytes that never come.
  Status read = Status::ok(), sent = Status::ok();
  auto lookup = [&](const std::string &n) -> const HostTensor * {
    const HostTensor *value = nullptr;
    if (lead && read) {
      read = source->find(n, received, value);
      if (!read)
        value = nullptr;
      else if (value)
        used[n] = true;
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
  Status restored = ModelState(executor).writeFullState(lookup, what);
  FSDP_RETURN_IF_ERROR(read);
  FSDP_RETURN_IF_ERROR(sent);
  FSDP_RETURN_IF_ERROR(restored);
  // State the plan has no place for would be dropped silently: refuse it,
  // as torch's load_state_dict refuses unexpected keys.
  for (const auto &[name, wasUsed] : used)
    if (!wasUsed)
      return Status::error(what + ": holds '" + name + "', which " + executor.plan().path() +
                           " has no place for (another model, or another optimizer)");
  return Status::ok();
}

} // namespace fsdp::rt
