//===- Checkpoint.cpp - training checkpoints, atomic and verified ---------===//
//
// The directory protocol (COMMIT, the temporary directory, pruning) and the
// collective save and load. Every collective step of a save or load ends in
// an agreement (Communicator::agree), so a rank that fails (a full disk, a
// bad shard) fails every rank with its message instead of leaving the
// others waiting in the next collective. Rank 0 alone touches the
// directory structure (creates the temporary directory, commits, prunes);
// every rank writes only its own file. Consolidating state for another
// plan is CheckpointState.cpp's.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"

#include "runtime/checkpoint/ModelState.h"
#include "runtime/io/ContentHash.h"
#include "runtime/io/FaultInjection.h"
#include "runtime/io/FileIO.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>
#include <unistd.h>

namespace fsdp::rt {
namespace {

namespace fs = std::filesystem;

constexpr const char *kCommitFile = "COMMIT";
constexpr const char *kFormatLine = "fsdp-checkpoint 1";
constexpr const char *kTempDirPrefix = ".tmp-";

/// fsyncs a file or directory so a rename or write survives a crash.
Status syncPath(const std::string &path) {
  int fd = sysio::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error("cannot open '" + path + "' to fsync it: " + detail::errnoText());
  int rc = sysio::fsync(fd, path.c_str());
  const std::string why = rc == 0 ? "" : detail::errnoText();
  ::close(fd);
  return rc == 0 ? Status::ok() : Status::error("cannot fsync '" + path + "': " + why);
}

/// Runs `body` as rank 0's part of a collective phase (others wait for its
/// verdict).
template <typename Body> Status onLead(Communicator &world, const char *what, Body body) {
  return world.agree(world.rank() == 0 ? body() : Status::ok(), what);
}

std::string renderCommit(const CheckpointManifest &info) {
  std::ostringstream os;
  os << kFormatLine << "\nkind " << (info.format == CheckpointFormat::Full ? "full" : "sharded")
     << "\nstep " << info.step << "\nworld_size " << info.worldSize
     << "\nplan_hash " << hashHex(info.planHash)
     << "\ndata_position step\nrng step\n"; // both derive from the step alone
  if (const std::optional<LossScalerState> &scaler = info.lossScaler)
    os << "loss_scale " << std::setprecision(9) << scaler->scale << "\nloss_scale_growth_tracker "
       << scaler->growthTracker << "\noptimizer_steps " << scaler->optimizerSteps << "\n";
  for (const auto &[name, entry] : info.files)
    os << "file " << name << " " << entry.first << " " << hashHex(entry.second) << "\n";
  return os.str();
}

/// The manifest's loss scaler state, made on first mention.
LossScalerState &scalerOf(CheckpointManifest &info) {
  if (!info.lossScaler)
    info.lossScaler.emplace();
  return *info.lossScaler;
}

/// COMMIT holds a few lines per file; anything this large is not one.
constexpr uint64_t kMaxCommitBytes = 16 << 20;

/// Whether `name` (from COMMIT) is a plain file name inside the checkpoint
/// directory: no '/', so no absolute path, subdirectory or '..' step.
bool isPlainFileName(const std::string &name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

Status parseCommit(const std::string &path, CheckpointManifest &info) {
  // Read through the file layer: a FIFO, a device (/dev/zero) or a
  // directory named COMMIT is refused instead of waited on or read forever.
  detail::InputFile file;
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.open(path)));
  if (file.size() > kMaxCommitBytes)
    return Status::error(cat(path, ": ", file.size(), " bytes; a COMMIT file is at most ",
                             kMaxCommitBytes));
  std::string text(static_cast<size_t>(file.size()), '\0');
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.readAt(0, text.data(), text.size())));
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kFormatLine)
    return Status::error(path + ": not an fsdp checkpoint (first line '" + line + "')");
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    if (key == "step")
      fields >> info.step;
    else if (key == "world_size")
      fields >> info.worldSize;
    else if (key == "plan_hash")
      fields >> std::hex >> info.planHash;
    else if (key == "loss_scale")
      fields >> scalerOf(info).scale;
    else if (key == "loss_scale_growth_tracker")
      fields >> scalerOf(info).growthTracker;
    else if (key == "optimizer_steps")
      fields >> scalerOf(info).optimizerSteps;
    else if (key == "kind") {
      std::string kind;
      fields >> kind;
      if (kind != "sharded" && kind != "full")
        return Status::error(path + ": unknown checkpoint kind '" + kind + "'");
      info.format = kind == "full" ? CheckpointFormat::Full : CheckpointFormat::Sharded;
    } else if (key == "file") {
      std::string name;
      uint64_t bytes = 0, hash = 0;
      fields >> name >> bytes >> std::hex >> hash;
      if (!fields.fail() && !isPlainFileName(name))
        return Status::error(path + ": file name '" + name +
                             "' is not a plain name inside the checkpoint directory");
      info.files[name] = {bytes, hash};
    }
    if (fields.fail())
      return Status::error(path + ": malformed line '" + line + "'");
  }
  if (info.step < 0 || info.worldSize < 1)
    return Status::error(path + ": no step or world size");
  if (info.lossScaler && !(info.lossScaler->scale > 0 && std::isfinite(info.lossScaler->scale)))
    return Status::error(path + ": loss_scale must be a positive finite number");
  if (info.lossScaler && (info.lossScaler->growthTracker < 0 ||
                          info.lossScaler->optimizerSteps < 0 ||
                          info.lossScaler->optimizerSteps > info.step))
    return Status::error(path + ": loss_scale_growth_tracker and optimizer_steps must be >= 0, "
                                "and optimizer_steps at most the step");
  return Status::ok();
}

/// Committed checkpoints under `root`, by step.
std::map<int64_t, fs::path> committed(const std::string &root) {
  std::map<int64_t, fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(root, ec)) {
    std::string name = entry.path().filename().string();
    long long step = -1;
    char tail = 0;
    if (std::sscanf(name.c_str(), "step-%lld%c", &step, &tail) == 1 && step >= 0 &&
        fs::exists(entry.path() / kCommitFile, ec))
      out[step] = entry.path();
  }
  return out;
}

/// Removes a committed checkpoint: its COMMIT first (durably), so a crash
/// halfway leaves an uncommitted directory, never a committed one with
/// files missing.
void removeCheckpoint(const fs::path &dir) {
  std::error_code ec;
  if (fs::is_symlink(dir, ec)) { // not one this writer made: drop the link, never its target
    fs::remove(dir, ec);
    return;
  }
  if (fs::remove(dir / kCommitFile, ec))
    (void)syncPath(dir.string());
  fs::remove_all(dir, ec);
}

Status commitCheckpoint(const fs::path &root, const fs::path &tmp, const CheckpointManifest &info,
                        int64_t keep) {
  std::error_code ec;
  const std::string commit = renderCommit(info);
  FSDP_RETURN_IF_ERROR(
      writeFileAtomic((tmp / kCommitFile).string(), {{commit.data(), commit.size()}}));
  FSDP_RETURN_IF_ERROR(syncPath(tmp.string()));
  const fs::path final = root / checkpointDirName(info.step);
  // A re-save of the same step (a run resumed at its last step saving to
  // the same DIR) replaces it only once the new one is in: the old one is
  // moved aside first (no scan takes ".old-step-N") and back if the new
  // one cannot be renamed in, so a failed save never loses it.
  const fs::path aside = root / (".old-" + checkpointDirName(info.step));
  removeCheckpoint(aside); // a crash's leftover
  const bool replacing = fs::exists(final, ec);
  if (replacing && sysio::rename(final.c_str(), aside.c_str()) != 0)
    return Status::error("cannot move the earlier '" + final.string() + "' aside to '" +
                         aside.string() + "': " + detail::errnoText());
  if (sysio::rename(tmp.c_str(), final.c_str()) != 0) {
    std::string why = "cannot commit '" + final.string() + "' (renaming '" + tmp.string() +
                      "'): " + detail::errnoText();
    if (replacing && sysio::rename(aside.c_str(), final.c_str()) != 0)
      why += "; the earlier checkpoint of this step stays at '" + aside.string() +
             "' (moving it back: " + detail::errnoText() + ")";
    return Status::error(why);
  }
  if (replacing)
    removeCheckpoint(aside);
  // Committed from here on: a failure to sync DIR is still an error (the
  // rename may not survive a crash), but the checkpoint is whole.
  FSDP_RETURN_IF_ERROR(syncPath(root.string()));
  if (keep > 0) {
    std::map<int64_t, fs::path> all = committed(root.string());
    while (static_cast<int64_t>(all.size()) > keep) { // oldest first
      removeCheckpoint(all.begin()->second);
      all.erase(all.begin());
    }
  }
  return Status::ok();
}

} // namespace

namespace {

/// Opens the checkpoint's file `name` (once: every later check and read
/// uses this descriptor) after checking COMMIT lists it, and checks it has
/// the committed size; `hash` receives its committed content hash. A file
/// that is a symlink is followed: the content hash, not the name, is what
/// is trusted, and only a regular file is accepted.
Status committedFile(const CheckpointManifest &manifest, const std::string &name,
                     std::string &path, uint64_t &hash, detail::InputFile &file) {
  const fs::path dir(manifest.dir);
  path = (dir / name).string();
  auto entry = manifest.files.find(name);
  if (entry == manifest.files.end())
    return Status::error((dir / kCommitFile).string() + ": lists no " + name);
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    return Status::error(path + ": missing");
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.open(path)));
  if (file.size() != entry->second.first)
    return Status::error(cat(path, ": ", file.size(), " bytes, the checkpoint wrote ",
                             entry->second.first, " (truncated or replaced)"));
  hash = entry->second.second;
  return Status::ok();
}

Status checkHash(const std::string &path, uint64_t got, uint64_t committed) {
  if (got == committed)
    return Status::ok();
  return Status::error(path + ": content hash " + hashHex(got) + " does not match the checkpoint's " +
                       hashHex(committed) + " (the file is corrupted)");
}

} // namespace

Status openCheckpointFile(const CheckpointManifest &manifest, const std::string &name,
                          SafetensorsFile &file) {
  std::string path;
  uint64_t hash = 0;
  detail::InputFile input;
  FSDP_RETURN_IF_ERROR(committedFile(manifest, name, path, hash, input));
  FSDP_RETURN_IF_ERROR(SafetensorsFile::open(input, path, file)); // hashes what it reads
  return checkHash(path, file.contentHash(), hash);
}

Status verifyCheckpointFile(const CheckpointManifest &manifest, const std::string &name,
                            std::string &path, std::shared_ptr<const detail::InputFile> *opened) {
  uint64_t committed = 0, hash = 0;
  auto file = std::make_shared<detail::InputFile>();
  FSDP_RETURN_IF_ERROR(committedFile(manifest, name, path, committed, *file));
  FSDP_RETURN_IF_ERROR(hashFile(*file, path, hash));
  FSDP_RETURN_IF_ERROR(checkHash(path, hash, committed));
  if (opened)
    *opened = std::move(file);
  return Status::ok();
}

std::string checkpointDirName(int64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "step-%08" PRId64, step);
  return buf;
}

std::string checkpointFileName(int rank, int worldSize) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "rank-%05d-of-%05d.safetensors", rank, worldSize);
  return buf;
}

Status findCheckpoint(const std::string &path, CheckpointManifest &out) {
  std::error_code ec;
  fs::path dir(path);
  // A save's temporary directory may hold a COMMIT (its rename failed, or a
  // crash came first): never a checkpoint, even when named.
  const fs::path named = dir.filename().empty() ? dir.parent_path() : dir;
  if (named.filename().string().rfind(std::string(kTempDirPrefix) + "step-", 0) == 0)
    return Status::error(path + ": the temporary directory of a save that did not finish, not "
                                "a committed checkpoint (resume from its parent directory)");
  if (!fs::exists(dir / kCommitFile, ec)) {
    std::map<int64_t, fs::path> all = committed(path);
    if (all.empty())
      return Status::error(path + ": no committed checkpoint (no step-N directory with " +
                           kCommitFile + ")");
    dir = all.rbegin()->second;
  }
  CheckpointManifest manifest;
  FSDP_RETURN_IF_ERROR(parseCommit((dir / kCommitFile).string(), manifest));
  manifest.dir = dir.string();
  out = std::move(manifest);
  return Status::ok();
}

namespace {

/// Creates root/.tmp-step-N afresh (a crashed save may have left one).
Status makeTempDir(const fs::path &root, const fs::path &tmp) {
  std::error_code ec;
  fs::create_directories(root, ec);
  fs::remove_all(tmp, ec);
  if (sysio::mkdir(tmp.c_str(), 0755) != 0)
    return Status::error("cannot create '" + tmp.string() + "': " + detail::errnoText());
  return Status::ok();
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

std::map<std::string, std::string> fileMetadata(CheckpointFormat format, int64_t step, int rank,
                                                int64_t worldSize, uint64_t planHash) {
  return {{"format", format == CheckpointFormat::Full ? "fsdp-full-checkpoint"
                                                      : "fsdp-sharded-checkpoint"},
          {"step", std::to_string(step)},
          {"rank", std::to_string(rank)},
          {"world_size", std::to_string(worldSize)},
          {"plan_hash", hashHex(planHash)}};
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

} // namespace

uint64_t CheckpointManifest::totalBytes() const {
  uint64_t total = 0;
  for (const auto &[name, entry] : files)
    total += entry.first;
  return total;
}

namespace {

/// The temporary directory a save of step `step` under `root` assembles in.
fs::path tempDirOf(const fs::path &root, int64_t step) {
  return root / (kTempDirPrefix + checkpointDirName(step));
}

/// `saved`, after removing what a failed save left (its temporary
/// directory, whatever it holds), so no half-written step stays beside
/// the committed ones. A crash cannot clean up: findCheckpoint never
/// takes a temporary directory, and the next save of that step replaces it.
Status removeTempDirIfFailed(const Status &saved, const fs::path &tmp) {
  std::error_code ec;
  if (!saved)
    fs::remove_all(tmp, ec);
  return saved;
}

Status saveCheckpointIn(Executor &executor, const fs::path &rootPath, const fs::path &tmp,
                        int64_t step, int64_t keep, CheckpointFormat format,
                        CheckpointManifest *written) {
  const bool full = format == CheckpointFormat::Full;
  Communicator &world = executor.world();
  FSDP_RETURN_IF_ERROR(onLead(world, "creating the checkpoint directory",
                              [&]() { return makeTempDir(rootPath, tmp); }));
  // Sharded: each rank writes its own state, rank 0 also the plan. Full:
  // every rank helps gather the consolidated state unit by unit, and rank 0
  // streams each tensor into the file as it arrives (writeFullFile).
  const int rank = world.rank(), size = world.size();
  const std::string name = full ? kFullCheckpointFile : checkpointFileName(rank, size);
  const auto metadata = fileMetadata(format, step, rank, size, executor.planHash());
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
  const fs::path tmp = tempDirOf(root, step);
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
  FSDP_RETURN_IF_ERROR(makeTempDir(rootPath, tmp));
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
      path, specs, fileMetadata(CheckpointFormat::Full, step, 0, worldSize, planHash)));
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
  const fs::path tmp = tempDirOf(root, step);
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
