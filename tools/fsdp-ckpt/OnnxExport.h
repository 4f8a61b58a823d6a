//===- OnnxExport.h - trained parameters written into an ONNX model -------===//
//
// `fsdp-ckpt export --onnx` writes a checkpoint's parameters into the model
// it was trained from: the source model, every initializer that is a
// checkpoint parameter replaced by its trained value, everything else
// unchanged. The implementation is the only code of fsdp-ckpt that touches
// protobuf, so it alone is built with exceptions and RTTI (as the ONNX
// frontend's reader is); this interface exposes none of it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_CKPT_ONNXEXPORT_H
#define FSDP_TOOLS_FSDP_CKPT_ONNXEXPORT_H

#include "runtime/support/HostTensor.h"
#include "runtime/support/Status.h"

#include <string>
#include <utility>
#include <vector>

namespace fsdp::ckpt {

/// Reads the ONNX model `modelPath` (untrusted), replaces the initializer
/// of each of `parameters` (which must all exist, with the same dtype and
/// shape) by its value as little-endian raw_data, and writes the result to
/// `outPath` atomically. Refuses a result protobuf cannot hold (2 GiB).
rt::Status exportOnnx(const std::string &modelPath,
                      const std::vector<std::pair<std::string, rt::HostTensor>> &parameters,
                      const std::string &outPath);

} // namespace fsdp::ckpt

#endif // FSDP_TOOLS_FSDP_CKPT_ONNXEXPORT_H
