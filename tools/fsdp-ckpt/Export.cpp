//===- Export.cpp - fsdp-ckpt export --------------------------------------===//
//
// Parses `export`'s arguments, reads the checkpoint's parameters
// consolidated (either format: readCheckpointState reads a sharded one
// through the plan it carries), never its optimizer state, and writes
// them: into the source ONNX model (OnnxExport.cpp) or as safetensors with
// the metadata `fsdp-run --save-weights` writes, so both tools' files are
// the same bytes for the same state.
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-ckpt/Export.h"

#include "tools/fsdp-ckpt/OnnxExport.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/io/Safetensors.h"

#include <string>

namespace fsdp::ckpt {
namespace {

using rt::Status;

struct ExportArgs {
  std::string checkpoint, onnxModel, output;
  bool safetensors = false;
};

Status parseArgs(int argc, char **argv, ExportArgs &args) {
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-o") {
      if (i + 1 == argc)
        return Status::error("export: -o needs an output file");
      args.output = argv[++i];
    } else if (arg.rfind("--onnx=", 0) == 0) {
      args.onnxModel = arg.substr(7);
      if (args.onnxModel.empty())
        return Status::error("export: --onnx needs the source model (--onnx=MODEL)");
    } else if (arg == "--safetensors") {
      args.safetensors = true;
    } else if (arg.size() > 1 && arg[0] == '-') {
      return Status::error("export: unknown option '" + arg + "' (see --help)");
    } else if (args.checkpoint.empty()) {
      args.checkpoint = arg;
    } else {
      return Status::error("export: takes one checkpoint directory, got '" + args.checkpoint +
                           "' and '" + arg + "'");
    }
  }
  if (args.checkpoint.empty())
    return Status::error("export: no checkpoint directory (see --help)");
  if (args.safetensors == !args.onnxModel.empty())
    return Status::error("export: give exactly one of --onnx=MODEL and --safetensors");
  if (args.output.empty())
    return Status::error("export: no output file (-o OUT)");
  return Status::ok();
}

Status exportCheckpoint(const ExportArgs &args) {
  rt::CheckpointManifest manifest;
  FSDP_RETURN_IF_ERROR(rt::findCheckpoint(args.checkpoint, manifest));
  rt::CheckpointState state;
  FSDP_RETURN_IF_ERROR(rt::readCheckpointState(manifest, state, /*parametersOnly=*/true));
  if (!args.onnxModel.empty())
    return exportOnnx(args.onnxModel, state.parameters, args.output);
  std::vector<rt::NamedTensor> tensors;
  for (const auto &[name, value] : state.parameters)
    tensors.push_back({name, value.ref()});
  return rt::writeSafetensors(args.output, tensors, rt::kWeightsMetadata);
}

} // namespace

Status exportCommand(int argc, char **argv) {
  ExportArgs args;
  FSDP_RETURN_IF_ERROR(parseArgs(argc, argv, args));
  return exportCheckpoint(args);
}

} // namespace fsdp::ckpt
