//===- ParamManifestFuzzer.cpp - libFuzzer target: --params manifests -----===//
//
// fsdp-opt --params=FILE (and MODEL.onnx.params.json beside a model) is a
// JSON manifest naming which initializers are parameters, with torch's
// names, shapes, dtypes and tied names. The input is parsed by
// JsonReader and the manifest rules (parseManifest), then checked against
// a fixed small model (checkManifest) when it parses.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ParameterManifest.h"
#include "tests/fuzz/FuzzSupport.h"

using namespace fsdp;

namespace {

/// A model with one float matrix and one float vector initializer.
const onnx::Model &fixedModel() {
  static const onnx::Model model = [] {
    onnx::Model m;
    m.path = "fixed.onnx";
    m.opsets[""] = 17;
    for (auto [name, dims] : {std::pair<const char *, std::vector<int64_t>>{"w", {4, 3}},
                              {"b", {3}}}) {
      onnx::Tensor t;
      t.name = name;
      t.dtype = onnx::DType::Float;
      t.dims = dims;
      t.data.resize(static_cast<size_t>(t.numElements()) * sizeof(float));
      m.initializers.push_back(t);
    }
    return m;
  }();
  return model;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  std::optional<onnx::ParameterManifest> manifest = onnx::parseManifest(text, "input.json", error);
  if (manifest)
    (void)onnx::checkManifest(*manifest, fixedModel(), error);
  return 0;
}
