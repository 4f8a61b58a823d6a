//===- CheckpointDirectory.cpp - step-N directories, committed atomically -===//
//
// Every change to the directory is made durable before the next one
// depends on it: files and the temporary directory are fsynced before the
// rename that commits them, DIR after it. A committed checkpoint is
// removed COMMIT first (durably), so a crash halfway leaves an
// uncommitted directory, never a committed one with files missing; a
// symlinked step directory (not one this writer made) loses only the link.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/CheckpointDirectory.h"

#include "runtime/io/FaultInjection.h"
#include "runtime/io/FileIO.h"

#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <map>
#include <unistd.h>

namespace fsdp::rt {
namespace {

namespace fs = std::filesystem;

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

} // namespace

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

fs::path checkpointTempDir(const fs::path &root, int64_t step) {
  return root / (kTempDirPrefix + checkpointDirName(step));
}

Status makeCheckpointTempDir(const fs::path &root, const fs::path &tmp) {
  std::error_code ec;
  fs::create_directories(root, ec);
  fs::remove_all(tmp, ec);
  if (sysio::mkdir(tmp.c_str(), 0755) != 0)
    return Status::error("cannot create '" + tmp.string() + "': " + detail::errnoText());
  return Status::ok();
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

} // namespace fsdp::rt
