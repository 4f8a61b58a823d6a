//===- ParameterManifest.h - torch's parameters of an ONNX export ---------===//
//
// An ONNX file does not say which initializers are torch parameters: the
// exporters fold, merge and rename them, and store buffers and constants as
// float initializers too. `fsdp_opt.export` (python/fsdp_opt) therefore
// writes `MODEL.onnx.params.json` beside the model, listing each parameter
// under its torch name with the initializer that holds it, the frozen
// (requires_grad=False) parameters, and the buffers. This file reads that
// manifest (untrusted input: every field is checked, nothing is assumed)
// and checks it against the model; ParameterProvenance.h decides from it.
// The format, version 1:
//
//   {"format": "fsdp-opt.params", "version": 1, "torch": "...",
//    "exporter": "...",
//    "parameters": [{"name": "wte.weight", "initializer": "wte.weight",
//                    "shape": [64, 32], "dtype": "float32",
//                    "tied": ["head.weight"]}, ...],
//    "frozen": [same fields],
//    "buffers": [{"name": "...", "initializer": "..." | null,
//                 "persistent": true | false}]}
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_PARAMETERMANIFEST_H
#define FSDP_FRONTENDS_ONNX_PARAMETERMANIFEST_H

#include "frontends/onnx/OnnxModel.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::onnx {

struct ManifestParameter {
  std::string name;        // torch's name (named_parameters())
  std::string initializer; // the graph initializer holding its value
  std::vector<int64_t> shape;
  std::string dtype; // torch's spelling: "float32", "bfloat16", ...
  /// Other torch names of the same tensor (tied weights); they are not
  /// separate parameters.
  std::vector<std::string> tied;
};

struct ManifestBuffer {
  std::string name;
  std::optional<std::string> initializer; // null: not in the graph
  bool persistent = true;
};

struct ParameterManifest {
  std::string path; // prefixes every diagnostic
  std::string torchVersion, exporter;
  std::vector<ManifestParameter> parameters, frozen;
  std::vector<ManifestBuffer> buffers;
};

/// `MODEL.onnx.params.json`: where fsdp_opt.export writes the manifest of
/// `modelPath`, and where the driver looks for one.
std::string defaultManifestPath(const std::string &modelPath);

/// Parses manifest text. On failure returns nullopt and sets `error` to a
/// message starting with `path` and naming the entry ("m.params.json:
/// parameters[3] (\"h.0.w\"): shape must be a list of integers >= 0").
std::optional<ParameterManifest> parseManifest(const std::string &text,
                                               const std::string &path,
                                               std::string &error);

/// Reads and parses the manifest file `path` (at most 256 MiB).
std::optional<ParameterManifest> readManifest(const std::string &path,
                                              std::string &error);

/// Checks `manifest` against `model`: every named initializer exists, is a
/// floating-point tensor of the stated shape and dtype, and holds one
/// parameter only (shared tensors are listed once, with `tied`); no torch
/// name appears twice. On failure sets `error` (naming the manifest file,
/// the entry and the model) and returns false.
bool checkManifest(const ParameterManifest &manifest, const Model &model,
                   std::string &error);

/// torch's dtype name of an ONNX element type ("float32" for float), or
/// the ONNX name where torch has none.
std::string torchDtypeName(DType type);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_PARAMETERMANIFEST_H
