//===- CheckpointManifest.cpp - a checkpoint's COMMIT file ----------------===//
//
// COMMIT is read through the file layer with a size cap (a FIFO, a device
// or a directory named COMMIT is refused, not waited on or read forever)
// and parsed line by line; a checkpoint's files are opened once each and
// every check and read goes through that descriptor, so a file cannot be
// replaced between its check and its use.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/CheckpointManifest.h"

#include "runtime/io/ContentHash.h"
#include "runtime/io/FileIO.h"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

namespace fsdp::rt {
namespace {

namespace fs = std::filesystem;

constexpr const char *kFormatLine = "fsdp-checkpoint 1";

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

uint64_t CheckpointManifest::totalBytes() const {
  uint64_t total = 0;
  for (const auto &[name, entry] : files)
    total += entry.first;
  return total;
}

std::map<std::string, std::string> checkpointFileMetadata(CheckpointFormat format, int64_t step,
                                                          int rank, int64_t worldSize,
                                                          uint64_t planHash) {
  return {{"format", format == CheckpointFormat::Full ? "fsdp-full-checkpoint"
                                                      : "fsdp-sharded-checkpoint"},
          {"step", std::to_string(step)},
          {"rank", std::to_string(rank)},
          {"world_size", std::to_string(worldSize)},
          {"plan_hash", hashHex(planHash)}};
}

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

} // namespace fsdp::rt
