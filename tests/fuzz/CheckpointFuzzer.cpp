//===- CheckpointFuzzer.cpp - libFuzzer target: checkpoint directories ----===//
//
// --resume and fsdp-ckpt read checkpoint directories that other machines
// wrote: COMMIT (format line, step, world size, plan hash, each file's
// size and content hash, the loss scaler), then a sharded checkpoint's
// rank files through the plan it carries, or a full checkpoint's one
// model.safetensors. The input is one step directory, cut into files by
// FuzzSupport's splitFiles. COMMIT commits to every file's hash, so a
// mutated shard would only ever test the hash check: in COMMIT, a "file
// NAME auto" line gets NAME's real size and hash, and "plan_hash auto"
// the carried plan's, before the loaders run. The loaders are the
// consolidating source (openCheckpointSource, every tensor asked for),
// readCheckpointState, and for a checkpoint of one rank whose own plan
// loads, loadCheckpoint into an executor of that plan (the direct
// restore of a run resumed at the same world size).
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/io/ContentHash.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "tests/fuzz/FuzzSupport.h"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace fsdp;

namespace {

constexpr uint64_t kMaxAllocatedBytes = 64ull << 20;

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// COMMIT with its "auto" fields filled in from the files beside it.
std::string resolveCommit(const std::string &commit, const std::string &dir) {
  std::istringstream in(commit);
  std::ostringstream out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, name, value;
    fields >> key >> name >> value;
    uint64_t bytes = 0, hash = 0;
    if (key == "file" && value == "auto" && rt::hashFile(dir + "/" + name, bytes, hash)) {
      std::ostringstream resolved;
      resolved << "file " << name << " " << bytes << " " << std::hex << hash;
      line = resolved.str();
    } else if (key == "plan_hash" && name == "auto") {
      rt::LoadedPlan plan;
      std::ostringstream resolved;
      resolved << "plan_hash " << std::hex
               << (rt::loadPlan(dir + "/" + rt::kCheckpointPlanFile, plan) ? plan.hash() : 0);
      line = resolved.str();
    }
    out << line << "\n";
  }
  return out.str();
}

/// --resume of the checkpoint into its own plan's executor.
void restoreIntoOwnPlan(const rt::CheckpointManifest &manifest, const std::string &root) {
  rt::LoadedPlan plan;
  if (manifest.worldSize != 1 ||
      !rt::loadPlan(manifest.dir + "/" + rt::kCheckpointPlanFile, plan))
    return;
  const plan::Plan &p = plan.plan();
  if (p.world_size() != 1 || p.persistent_bytes() > kMaxAllocatedBytes ||
      p.arena_bytes() > kMaxAllocatedBytes)
    return;
  std::unique_ptr<rt::Device> device;
  std::unique_ptr<rt::Executor> executor;
  if (!rt::createDevice("cpu", rt::DeviceOptions(), device) ||
      !rt::Executor::create(plan, *device, nullptr, executor))
    return;
  int64_t step = 0;
  (void)rt::loadCheckpoint(*executor, root, step);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string root = fuzz::freshScratchSubdir("ckpt");
  const std::string dir = root + "/" + rt::checkpointDirName(1);
  std::filesystem::create_directory(dir);
  std::string commit;
  for (const auto &[name, bytes] : fuzz::splitFiles(data, size)) {
    if (name == "COMMIT")
      commit = bytes;
    else
      writeFile(dir + "/" + name, bytes);
  }
  if (!commit.empty())
    writeFile(dir + "/COMMIT", resolveCommit(commit, dir));

  rt::CheckpointManifest manifest;
  if (!rt::findCheckpoint(root, manifest))
    return 0;
  std::unique_ptr<rt::StateSource> source;
  if (rt::openCheckpointSource(manifest, source)) {
    rt::HostTensor scratch;
    for (const rt::StateSource::Tensor &tensor : source->tensors()) {
      const rt::HostTensor *found = nullptr;
      if (!source->find(tensor.name, scratch, found))
        break;
    }
  }
  rt::CheckpointState state;
  (void)rt::readCheckpointState(manifest, state);
  restoreIntoOwnPlan(manifest, root);
  return 0;
}
