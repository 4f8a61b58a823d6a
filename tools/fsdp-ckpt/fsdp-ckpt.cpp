//===- fsdp-ckpt.cpp - inspect training checkpoints -----------------------===//
//
// `fsdp-ckpt inspect DIR` prints what a checkpoint holds: its step, world
// size, plan hash and format, and each file (one per rank, or the full
// checkpoint's one) with every tensor (name, dtype,
// shape, bytes), reading every file through the same verification a resume
// does (size and content hash against COMMIT), so it doubles as a check
// that a checkpoint is intact. `export DIR --onnx=MODEL -o OUT` writes its
// trained parameters into the source ONNX model, `export DIR --safetensors
// -o OUT` as safetensors (Export.h). `convert` is not built yet and is
// refused, naming the fsdp-run command that does the same today.
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-ckpt/Export.h"

#include "fsdp/runtime/Checkpoint.h"
#include "fsdp/runtime/ContentHash.h"
#include "fsdp/runtime/DType.h"

#include <cinttypes>
#include <cstdio>
#include <string>

using namespace fsdp::rt;

namespace {

const char *kUsage =
    "usage: fsdp-ckpt inspect DIR   print a checkpoint's step, world size, files and\n"
    "                               tensors, verifying every file (DIR: a --save\n"
    "                               directory, its newest checkpoint, or one step-N)\n"
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
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string command = argc > 1 ? argv[1] : "";
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
    return fail("convert: not implemented yet (reshard with fsdp-run on the target plan: "
                "--resume=SRC --steps=<its step> --save=DST --save-format=full)");
  if (command == "export")
    return fsdp::ckpt::exportCommand(argc - 2, argv + 2);
  return fail(command.empty() ? "no command (see --help)" : "unknown command '" + command + "'");
}
