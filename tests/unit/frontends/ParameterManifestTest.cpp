//===- ParameterManifestTest.cpp - the parameter manifest reader ----------===//
//
// MODEL.onnx.params.json is untrusted input. These tests pin what a valid
// manifest decides (ParameterProvenance), that each malformed field and
// each mismatch with the model is an error naming the manifest and the
// entry, and, as ModelReaderFuzzTest does for model files, that truncated
// and byte-corrupted manifests either parse or fail with a message naming
// the file, never crash. The graph signature parser is tested here too.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ParameterManifest.h"
#include "frontends/onnx/ParameterProvenance.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>

namespace {

using namespace fsdp::onnx;

const char *kPath = "m.onnx.params.json";

const char *kValid =
    R"json({"format": "fsdp-opt.params", "version": 1, "torch": "2.15.0",
  "exporter": "torch.onnx.export(dynamo=True, optimize=False)",
  "parameters": [
    {"name": "wte.weight", "initializer": "wte.weight", "shape": [3, 2], "dtype": "float32",
     "tied": ["head.weight"]},
    {"name": "fc.weight", "initializer": "val_7", "shape": [2, 2], "dtype": "float32"}],
  "frozen": [{"name": "ln.weight", "initializer": "ln.weight", "shape": [2],
              "dtype": "float32", "tied": []}],
  "buffers": [{"name": "rot.inv_freq", "initializer": "rot.inv_freq", "persistent": false},
              {"name": "cache", "initializer": null, "persistent": true}]})json";

Tensor floatTensor(const std::string &name, std::vector<int64_t> dims) {
  Tensor t;
  t.name = name;
  t.dtype = DType::Float;
  t.dims = std::move(dims);
  t.data.assign(static_cast<size_t>(t.numElements()) * 4, 0);
  return t;
}

/// The model kValid describes: three parameters, a buffer, a constant.
Model matchingModel() {
  Model model;
  model.path = "m.onnx";
  model.initializers = {
      floatTensor("wte.weight", {3, 2}), floatTensor("val_7", {2, 2}),
      floatTensor("ln.weight", {2}), floatTensor("rot.inv_freq", {1}),
      floatTensor("val_9", {})};
  return model;
}

std::string parseError(const std::string &text) {
  std::string error;
  EXPECT_FALSE(parseManifest(text, kPath, error)) << text;
  EXPECT_EQ(error.rfind(kPath, 0), 0u)
      << "error does not name the manifest: " << error;
  return error;
}

/// kValid with `from` replaced by `to` (once).
std::string edited(const std::string &from, const std::string &to) {
  std::string text = kValid;
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(ParameterManifest, ValidManifestDecidesTheParameters) {
  std::string error;
  std::optional<ParameterManifest> manifest =
      parseManifest(kValid, kPath, error);
  ASSERT_TRUE(manifest) << error;
  EXPECT_EQ(manifest->torchVersion, "2.15.0");
  ASSERT_EQ(manifest->parameters.size(), 2u);
  EXPECT_EQ(manifest->parameters[0].tied,
            std::vector<std::string>{"head.weight"});
  EXPECT_EQ(manifest->parameters[1].shape, (std::vector<int64_t>{2, 2}));
  ASSERT_EQ(manifest->buffers.size(), 2u);
  EXPECT_FALSE(manifest->buffers[0].persistent);
  EXPECT_FALSE(manifest->buffers[1].initializer);

  Model model = matchingModel();
  ProvenanceOptions options;
  options.manifest = &*manifest;
  std::optional<ParameterProvenance> decided =
      decideParameters(model, options, error);
  ASSERT_TRUE(decided) << error;
  EXPECT_EQ(decided->source, ParameterProvenance::Source::Manifest);
  EXPECT_TRUE(decided->warnings.empty());
  // Trained under torch names; the buffer and the constant are not listed.
  ASSERT_EQ(decided->parameters.size(), 3u);
  EXPECT_EQ(decided->parameters.at("val_7").name, "fc.weight");
  EXPECT_FALSE(decided->parameters.at("val_7").frozen);
  EXPECT_TRUE(decided->parameters.at("ln.weight").frozen);
  EXPECT_EQ(decided->parameters.at("wte.weight").tied,
            std::vector<std::string>{"head.weight"});
  EXPECT_FALSE(decided->parameters.count("rot.inv_freq"));
  EXPECT_FALSE(decided->parameters.count("val_9"));
}

TEST(ParameterManifest, MalformedFieldsNameTheEntry) {
  EXPECT_NE(parseError("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parseError("[]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(parseError(edited("fsdp-opt.params", "other")).find("'format'"),
            std::string::npos);
  EXPECT_NE(
      parseError(edited("\"version\": 1", "\"version\": 2")).find("version 2"),
      std::string::npos);
  EXPECT_NE(parseError(edited("\"shape\": [3, 2]", "\"shape\": [3, -2]"))
                .find("parameters[0] (\"wte.weight\"): 'shape'"),
            std::string::npos);
  EXPECT_NE(
      parseError(edited("\"initializer\": \"val_7\"", "\"initializer\": 7"))
          .find(
              "parameters[1] (\"fc.weight\"): 'initializer' must be a string"),
      std::string::npos);
  EXPECT_NE(
      parseError(edited("\"tied\": []", "\"tied\": [1]")).find("frozen[0]"),
      std::string::npos);
  EXPECT_NE(parseError(edited("\"persistent\": false", "\"persistent\": 0"))
                .find("buffers[0] (\"rot.inv_freq\"): 'persistent'"),
            std::string::npos);
  EXPECT_NE(parseError(edited("\"initializer\": null", "\"initializer\": []"))
                .find("buffers[1]"),
            std::string::npos);
  EXPECT_NE(parseError(edited("\"frozen\":", "\"frozen_\":"))
                .find("'frozen' must be a list"),
            std::string::npos);
}

TEST(ParameterManifest, MismatchWithTheModelIsAnError) {
  auto checkError = [](const std::string &text, Model model) {
    std::string error;
    std::optional<ParameterManifest> manifest =
        parseManifest(text, kPath, error);
    EXPECT_TRUE(manifest) << error;
    if (!manifest)
      return error;
    EXPECT_FALSE(checkManifest(*manifest, model, error));
    EXPECT_EQ(error.rfind(kPath, 0), 0u) << error;
    return error;
  };
  Model model = matchingModel();
  EXPECT_NE(checkError(edited("\"val_7\"", "\"val_8\""), model)
                .find("parameters[1] (\"fc.weight\"): initializer 'val_8' is "
                      "not in m.onnx"),
            std::string::npos);
  EXPECT_NE(checkError(edited("[2, 2]", "[2, 3]"), model)
                .find("shape [2, 3] differs"),
            std::string::npos);
  EXPECT_NE(checkError(edited("\"dtype\": \"float32\", \"tied\": []",
                              "\"dtype\": \"bfloat16\", \"tied\": []"),
                       model)
                .find("frozen[0] (\"ln.weight\"): dtype bfloat16 differs"),
            std::string::npos);
  EXPECT_NE(checkError(edited("\"initializer\": \"val_7\"",
                              "\"initializer\": \"wte.weight\""),
                       model)
                .find("already holds 'wte.weight'"),
            std::string::npos);
  EXPECT_NE(
      checkError(edited("\"name\": \"ln.weight\"", "\"name\": \"head.weight\""),
                 model)
          .find("'head.weight' is listed more than once"),
      std::string::npos);
  EXPECT_NE(checkError(edited("\"initializer\": \"rot.inv_freq\"",
                              "\"initializer\": \"gone\""),
                       model)
                .find("buffers[0]"),
            std::string::npos);
  // An integer initializer cannot be a trained parameter.
  Model intModel = matchingModel();
  intModel.initializers[1].dtype = DType::Int32;
  EXPECT_NE(checkError(edited("\"shape\": [2, 2], \"dtype\": \"float32\"",
                              "\"shape\": [2, 2], \"dtype\": \"int32\""),
                       intModel)
                .find("only floating-point parameters"),
            std::string::npos);
}

TEST(ParameterManifest, DamagedManifestsNeverCrash) {
  const std::string original = kValid;
  Model model = matchingModel();
  auto tryParse = [&](const std::string &text) {
    std::string error;
    std::optional<ParameterManifest> manifest =
        parseManifest(text, kPath, error);
    if (manifest && !checkManifest(*manifest, model, error))
      manifest.reset();
    if (!manifest)
      EXPECT_EQ(error.rfind(kPath, 0), 0u)
          << "error does not name the manifest: " << error;
  };
  for (size_t cut = 0; cut < original.size(); cut += 7)
    tryParse(original.substr(0, cut));
  std::mt19937 rng(15);
  for (int round = 0; round < 2000; ++round) {
    std::string text = original;
    for (int flips = 1 + rng() % 3; flips > 0; --flips)
      text[rng() % text.size()] = static_cast<char>(rng() % 256);
    tryParse(text);
  }
}

TEST(GraphSignature, ParsesTheInputsSection) {
  std::vector<SignatureInput> inputs = parseGraphSignature(
      "\n# inputs\np_wte_weight: PARAMETER target='wte.weight'\n"
      "b_rot_inv_freq: BUFFER target='rot.inv_freq' persistent=False\n"
      "c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\n"
      "idx: USER_INPUT\nbroken line\np_x: PARAMETER target='unterminated\n"
      "\n# outputs\nloss: USER_OUTPUT\n");
  ASSERT_EQ(inputs.size(), 4u);
  EXPECT_EQ(inputs[0].placeholder, "p_wte_weight");
  EXPECT_EQ(inputs[0].kind, "PARAMETER");
  EXPECT_EQ(inputs[0].target, "wte.weight");
  EXPECT_EQ(inputs[1].kind, "BUFFER");
  EXPECT_EQ(inputs[1].target, "rot.inv_freq");
  EXPECT_EQ(inputs[2].kind, "CONSTANT_TENSOR");
  EXPECT_EQ(inputs[3].kind, "USER_INPUT");
  EXPECT_TRUE(inputs[3].target.empty());
}

TEST(ParameterProvenance, LegacyTransposedCopyIsReported) {
  Model model;
  model.path = "legacy.onnx";
  Tensor w = floatTensor("wte.weight", {2, 3});
  Tensor copy = floatTensor("onnx::MatMul_5", {3, 2});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float value = static_cast<float>(i * 3 + j + 1);
      std::memcpy(&w.data[(i * 3 + j) * 4], &value, 4);
      std::memcpy(&copy.data[(j * 2 + i) * 4], &value, 4);
    }
  model.initializers = {w, copy};
  std::string error;
  std::optional<ParameterProvenance> decided =
      decideParameters(model, ProvenanceOptions(), error);
  ASSERT_TRUE(decided) << error;
  EXPECT_EQ(decided->parameters.size(), 2u); // today's behaviour: both trained
  ASSERT_EQ(decided->warnings.size(), 1u);
  EXPECT_NE(decided->warnings[0].find(
                "'onnx::MatMul_5' is the transpose of 'wte.weight'"),
            std::string::npos);
  // One element off: not a transpose, no warning.
  model.initializers[1].data[0] ^= 1;
  decided = decideParameters(model, ProvenanceOptions(), error);
  ASSERT_TRUE(decided);
  EXPECT_TRUE(decided->warnings.empty());
}

} // namespace
