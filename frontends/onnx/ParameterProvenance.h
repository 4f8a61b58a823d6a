//===- ParameterProvenance.h - which initializers are torch's parameters --===//
//
// Decides which initializers of an ONNX model are trained, under which
// names, before the importer builds anything. ONNX has no notion of a
// parameter, and torch's exporters store parameters, buffers and constants
// alike as float initializers; training every float initializer (what the
// importer did) silently trains causal masks and rotary tables, trains the
// two halves of a tied weight apart, and loses parameters the exporter
// folded into constants. In order of trust:
//
//  1. a parameter manifest (ParameterManifest.h) decides alone: its
//     `parameters` are trained under their torch names, its `frozen` are
//     parameters that are not trained, everything else is a constant;
//  2. the dynamo exporter's graph signature (graph metadata
//     `pkg.torch.export.ExportedProgram.graph_signature`): PARAMETER
//     targets that are initializers are trained under the target name,
//     every other initializer is a constant; parameters the optimizer
//     folded away or merged are reported, since what remains is not torch's
//     model;
//  3. no metadata (the legacy exporter): every float initializer is
//     trained under its own name, and a weight that is exactly the
//     transpose of another (a tied weight split by constant folding) is
//     reported.
//
// Reports are warnings for the driver to print; they never fail the import.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_PARAMETERPROVENANCE_H
#define FSDP_FRONTENDS_ONNX_PARAMETERPROVENANCE_H

#include "frontends/onnx/OnnxModel.h"
#include "frontends/onnx/ParameterManifest.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::onnx {

/// One float initializer that is a parameter.
struct ParameterBinding {
  std::string name;    // the name it trains and is saved under
  bool frozen = false; // a parameter that is not trained (requires_grad=False)
  std::vector<std::string> tied; // other torch names of the same tensor
};

struct ParameterProvenance {
  enum class Source { Manifest, GraphSignature, InitializerNames };
  Source source = Source::InitializerNames;
  /// Initializers that are parameters, by initializer name. Every
  /// initializer not listed is a constant of the model.
  std::map<std::string, ParameterBinding> parameters;
  /// Each a full sentence starting with the model's path.
  std::vector<std::string> warnings;
};

struct ProvenanceOptions {
  /// The model's manifest, already read; null: decide from the model.
  const ParameterManifest *manifest = nullptr;
  /// Torch names the user freezes (--freeze): not reported as lost.
  std::function<bool(const std::string &)> isFrozen;
};

/// Decides the parameters of `model`. Fails (nullopt, `error` naming the
/// manifest file and the entry) only when a manifest does not match the
/// model.
std::optional<ParameterProvenance>
decideParameters(const Model &model, const ProvenanceOptions &options,
                 std::string &error);

/// One input of the dynamo exporter's graph signature:
/// `p_wte_weight: PARAMETER target='wte.weight'`.
struct SignatureInput {
  std::string placeholder; // p_wte_weight
  std::string kind;   // PARAMETER, BUFFER, CONSTANT_TENSOR, USER_INPUT, ...
  std::string target; // wte.weight; empty for user inputs
};

/// The inputs of a graph signature's text (its "# inputs" section); lines
/// that do not parse are skipped, since the text is informal.
std::vector<SignatureInput> parseGraphSignature(const std::string &text);

/// The graph metadata key of the dynamo exporter's signature.
inline constexpr const char *kGraphSignatureKey =
    "pkg.torch.export.ExportedProgram.graph_signature";

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_PARAMETERPROVENANCE_H
