//===- fsdp-ckpt.cpp - inspect, convert and export training checkpoints --===//
//
// `fsdp-ckpt inspect DIR` prints what a checkpoint holds: its step, world
// size, plan hash and format, and each file (one per rank, or the full
// checkpoint's one) with every tensor (name, dtype,
// shape, bytes), reading every file through the same verification a resume
// does (size and content hash against COMMIT), so it doubles as a check
// that a checkpoint is intact. `convert` rewrites a checkpoint in the other
// format or for another world size, exactly, reading the source tensor by
// tensor (StateSource): a full target is written as it is read; a sharded
// one is restored into the ranks of the target plan, run in this process
// (runInProcessRanks), which save it, so the layout code is ModelState's,
// the same a training run saves with. A sharded layout is a plan's decision, so a
// sharded target needs that plan (--plan); a full one needs none. `export
// DIR --onnx=MODEL -o OUT` writes the trained parameters into the source
// ONNX model, `export DIR --safetensors -o OUT` as safetensors (Export.h).
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-ckpt/Export.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/io/ContentHash.h"
#include "runtime/io/FaultInjection.h"
#include "runtime/support/DType.h"
#include "runtime/exec/InProcessRanks.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

using namespace fsdp::rt;

namespace {

const char *kUsage =
    "usage: fsdp-ckpt inspect DIR   print a checkpoint's step, world size, files and\n"
    "                               tensors, verifying every file (DIR: a --save\n"
    "                               directory, its newest checkpoint, or one step-N)\n"
    "       fsdp-ckpt convert SRC DST --format=full\n"
    "       fsdp-ckpt convert SRC DST --format=sharded --plan=PLAN [--world-size=M]\n"
    "                               rewrite SRC's checkpoint (either format, any world\n"
    "                               size) as DST/step-N, bit for bit: one consolidated\n"
    "                               model.safetensors, or PLAN's shards (PLAN: a training\n"
    "                               plan of the model compiled for M ranks)\n"
    "       fsdp-ckpt export DIR --onnx=MODEL -o OUT\n"
    "                               write the trained parameters into MODEL, the ONNX\n"
    "                               model DIR was trained from, as OUT\n"
    "       fsdp-ckpt export DIR --safetensors -o OUT\n"
    "                               write the trained parameters (no optimizer state)\n"
    "                               as safetensors, as fsdp-run --save-weights does\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "fsdp-ckpt: error: %s\n", message.c_str());
  return 1;
}

std::string shapeOf(const HostTensor &t) {
  std::string s = "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

int inspect(const std::string &path) {
  CheckpointManifest manifest;
  if (Status s = findCheckpoint(path, manifest); !s)
    return fail(s.message());
  const bool full = manifest.format == CheckpointFormat::Full;
  std::printf("checkpoint %s\n  step %" PRId64 ", world size %" PRId64 ", plan hash %s, %s\n",
              manifest.dir.c_str(), manifest.step, manifest.worldSize,
              hashHex(manifest.planHash).c_str(), full ? "full" : "sharded");
  uint64_t total = 0;
  const int64_t files = full ? 1 : manifest.worldSize;
  for (int rank = 0; rank < files; ++rank) {
    const std::string name =
        full ? kFullCheckpointFile : checkpointFileName(rank, static_cast<int>(manifest.worldSize));
    SafetensorsFile file;
    if (Status s = openCheckpointFile(manifest, name, file); !s)
      return fail(s.message());
    std::printf("  %s: %" PRIu64 " bytes, content hash %s (verified)\n", name.c_str(),
                manifest.files.at(name).first, hashHex(file.contentHash()).c_str());
    for (const std::string &tensor : file.names()) {
      const HostTensor *t = file.find(tensor);
      std::printf("    %-40s %-5s %-16s %zu bytes\n", tensor.c_str(), dtypeName(t->dtype),
                  shapeOf(*t).c_str(), t->data.size());
      total += t->data.size();
    }
  }
  std::printf("  %" PRIu64 " bytes of state in %" PRId64 " file%s\n", total, files,
              files == 1 ? "" : "s");
  if (!full && manifest.files.count(kCheckpointPlanFile)) {
    std::string planPath;
    if (Status s = verifyCheckpointFile(manifest, kCheckpointPlanFile, planPath); !s)
      return fail(s.message());
    std::printf("  %s: the saving plan (%" PRIu64 " bytes, verified; lets other plans load it)\n",
                kCheckpointPlanFile, manifest.files.at(kCheckpointPlanFile).first);
  }
  return 0;
}

struct ConvertOptions {
  std::string source, dest, planPath;
  std::optional<CheckpointFormat> format;
  std::optional<int64_t> worldSize;
};

Status parseConvert(int argc, char **argv, ConvertOptions &opts) {
  std::vector<std::string> positional;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char *flag) -> std::optional<std::string> {
      const std::string prefix = std::string(flag) + "=";
      if (arg.compare(0, prefix.size(), prefix) != 0)
        return std::nullopt;
      return arg.substr(prefix.size());
    };
    if (auto v = value("--format")) {
      if (*v != "full" && *v != "sharded")
        return Status::error("--format=" + *v + ": expected full or sharded");
      opts.format = *v == "full" ? CheckpointFormat::Full : CheckpointFormat::Sharded;
    } else if (auto v = value("--plan")) {
      opts.planPath = *v;
    } else if (auto v = value("--world-size")) {
      char *end = nullptr;
      long long n = std::strtoll(v->c_str(), &end, 10);
      if (v->empty() || *end || n < 1)
        return Status::error("--world-size=" + *v + ": expected a positive integer");
      opts.worldSize = n;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Status::error("convert: unknown flag '" + arg + "' (see --help)");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 2)
    return Status::error("convert takes a source and a destination directory (see --help)");
  opts.source = positional[0];
  opts.dest = positional[1];
  if (!opts.format)
    return Status::error("convert: --format=full|sharded is required");
  if (*opts.format == CheckpointFormat::Full && (!opts.planPath.empty() || opts.worldSize))
    return Status::error("convert --format=full: a full checkpoint has no layout or world size "
                         "(any plan of the model loads it); drop --plan and --world-size");
  if (*opts.format == CheckpointFormat::Sharded && opts.planPath.empty())
    return Status::error("convert --format=sharded needs --plan=PLAN: shards are laid out by a "
                         "plan (compile one with fsdp-opt --world-size=M and the strategy to "
                         "train with)");
  return Status::ok();
}

/// The sharded target's plan, checked before any state is read.
Status loadTargetPlan(const ConvertOptions &opts, LoadedPlan &plan) {
  FSDP_RETURN_IF_ERROR(loadPlan(opts.planPath, plan));
  if (!plan.isTraining())
    return Status::error(opts.planPath + ": a forward plan; checkpoints hold a training step's "
                                         "state (compile without --mode=forward)");
  if (opts.worldSize && *opts.worldSize != plan.plan().world_size())
    return Status::error(cat("--world-size=", *opts.worldSize, ": ", opts.planPath,
                             " was compiled for world size ", plan.plan().world_size()));
  return Status::ok();
}

/// Restores the source checkpoint into each rank of `plan` (rank 0 reads
/// it tensor by tensor) and saves it there.
Status saveSharded(const LoadedPlan &plan, const CheckpointManifest &manifest,
                   const std::string &dest) {
  std::unique_ptr<StateSource> source;
  FSDP_RETURN_IF_ERROR(openCheckpointSource(manifest, source));
  return runInProcessRanks(plan, [&](Executor &executor) -> Status {
    FSDP_RETURN_IF_ERROR(restoreCheckpointState(
        executor, executor.rank() == 0 ? source.get() : nullptr, manifest.dir));
    return saveCheckpoint(executor, dest, manifest.step, /*keep=*/0, CheckpointFormat::Sharded);
  });
}

int convert(int argc, char **argv) {
  ConvertOptions opts;
  if (Status s = parseConvert(argc, argv, opts); !s)
    return fail(s.message());
  CheckpointManifest manifest;
  if (Status s = findCheckpoint(opts.source, manifest); !s)
    return fail(s.message());
  // Never replace a committed checkpoint: convert only adds one.
  const std::string stepDir = checkpointDirName(manifest.step);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(opts.dest) / stepDir, ec))
    return fail(opts.dest + "/" + stepDir + ": already exists (convert writes a new checkpoint, "
                "never over one)");
  const bool full = *opts.format == CheckpointFormat::Full;
  LoadedPlan target;
  if (!full)
    if (Status s = loadTargetPlan(opts, target); !s)
      return fail(s.message());
  Status wrote = [&]() -> Status {
    if (!full)
      return saveSharded(target, manifest, opts.dest);
    std::unique_ptr<StateSource> source;
    FSDP_RETURN_IF_ERROR(openCheckpointSource(manifest, source));
    return saveFullCheckpoint(opts.dest, *source, manifest.step, manifest.worldSize,
                              manifest.planHash);
  }();
  if (!wrote)
    return fail(wrote.message());
  std::printf("converted %s (step %" PRId64 ", %s, world size %" PRId64 ") to %s/%s (%s)\n",
              manifest.dir.c_str(), manifest.step,
              manifest.format == CheckpointFormat::Full ? "full" : "sharded", manifest.worldSize,
              opts.dest.c_str(), stepDir.c_str(), full ? "full" : "sharded");
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (Status s = checkFaultInjectionEnv(); !s) // a mistyped rule must not test nothing
    return fail(s.message());
  if (command == "-h" || command == "--help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "inspect") {
    if (argc != 3)
      return fail("inspect takes one checkpoint directory (see --help)");
    return inspect(argv[2]);
  }
  if (command == "convert")
    return convert(argc, argv);
  if (command == "export") {
    if (Status s = fsdp::ckpt::exportCommand(argc - 2, argv + 2); !s)
      return fail(s.message());
    return 0;
  }
  return fail(command.empty() ? "no command (see --help)" : "unknown command '" + command + "'");
}
