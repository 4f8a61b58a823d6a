//===- Export.h - fsdp-ckpt export ----------------------------------------===//
//
// `fsdp-ckpt export DIR (--onnx=MODEL | --safetensors) -o OUT` writes a
// checkpoint's trained parameters (consolidated, whatever its format) for
// use outside fsdp-run: into the source ONNX model, or as safetensors.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_CKPT_EXPORT_H
#define FSDP_TOOLS_FSDP_CKPT_EXPORT_H

#include "runtime/support/Status.h"

namespace fsdp::ckpt {

/// Runs `export` on its arguments (those after "export").
rt::Status exportCommand(int argc, char **argv);

} // namespace fsdp::ckpt

#endif // FSDP_TOOLS_FSDP_CKPT_EXPORT_H
