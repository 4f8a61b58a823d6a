//===- ParameterProvenance.cpp - which initializers are torch's parameters ===//
//
// The three sources of ParameterProvenance.h, and the checks that turn an
// export torch would not train the same way into one warning each. The
// dynamo checks read node metadata: `pkg.torch.onnx.fx_node` is the torch
// FX node a node came from, whose arguments name the placeholders
// (`%p_blocks_0_ln2_weight`) torch used, and `pkg.torch.onnx.name_scopes`
// the module path. A node fed initializer X whose FX node names another
// parameter's placeholder and not X's own is proof that the exporter
// substituted X for that parameter (the optimizer merges initializers of
// equal value); a tied weight is not flagged, since torch itself gives
// every use of a tied tensor the same placeholder.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ParameterProvenance.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

namespace fsdp::onnx {
namespace {

/// How many names a warning lists before "... and N more".
constexpr size_t kListedNames = 8;

std::string listNames(const std::vector<std::string> &names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < kListedNames; ++i)
    out += (i ? ", " : "") + names[i];
  if (names.size() > kListedNames)
    out += ", ... and " + std::to_string(names.size() - kListedNames) + " more";
  return out;
}

const std::string *
metadataValue(const std::vector<std::pair<std::string, std::string>> &entries,
              const std::string &key) {
  for (const auto &[k, v] : entries)
    if (k == key)
      return &v;
  return nullptr;
}

/// `'...'`-quoted items of a Python list literal: the module path of
/// `['', 'blocks.0', 'blocks.0.ln1', 'layer_norm']`.
std::vector<std::string> quotedItems(const std::string &text) {
  std::vector<std::string> items;
  for (size_t pos = text.find('\''); pos != std::string::npos;) {
    size_t end = text.find('\'', pos + 1);
    if (end == std::string::npos)
      break;
    items.push_back(text.substr(pos + 1, end - pos - 1));
    pos = text.find('\'', end + 1);
  }
  return items;
}

/// The module a node belongs to: the last name scope but the op's own.
std::string moduleOf(const Node &node) {
  const std::string *scopes =
      metadataValue(node.metadata, "pkg.torch.onnx.name_scopes");
  if (!scopes)
    return "";
  std::vector<std::string> items = quotedItems(*scopes);
  return items.size() >= 2 ? items[items.size() - 2] : "";
}

/// `%name` tokens of an FX node's text.
std::set<std::string> fxReferences(const Node &node) {
  std::set<std::string> refs;
  const std::string *fx =
      metadataValue(node.metadata, "pkg.torch.onnx.fx_node");
  if (!fx)
    return refs;
  for (size_t pos = fx->find('%'); pos != std::string::npos;
       pos = fx->find('%', pos)) {
    size_t end = ++pos;
    while (end < fx->size() &&
           (std::isalnum(static_cast<unsigned char>((*fx)[end])) ||
            (*fx)[end] == '_'))
      ++end;
    if (end > pos)
      refs.insert(fx->substr(pos, end - pos));
    pos = end;
  }
  return refs;
}

ParameterProvenance fromManifest(const ParameterManifest &manifest) {
  ParameterProvenance result;
  result.source = ParameterProvenance::Source::Manifest;
  for (const ManifestParameter &p : manifest.parameters)
    result.parameters[p.initializer] = {p.name, false, p.tied};
  for (const ManifestParameter &p : manifest.frozen)
    result.parameters[p.initializer] = {p.name, true, p.tied};
  return result;
}

ParameterProvenance fromSignature(const Model &model,
                                  const std::vector<SignatureInput> &inputs,
                                  const ProvenanceOptions &options) {
  ParameterProvenance result;
  result.source = ParameterProvenance::Source::GraphSignature;
  std::map<std::string, const Tensor *> initializers;
  for (const Tensor &init : model.initializers)
    initializers.emplace(init.name, &init);
  std::set<std::string> named; // initializers the signature accounts for
  std::map<std::string, std::string>
      placeholderOf; // trained initializer -> placeholder
  std::map<std::string, std::string> targetOfPlaceholder;
  std::set<std::string> missing;
  for (const SignatureInput &in : inputs) {
    if (in.kind != "PARAMETER") {
      named.insert(in.target);
      named.insert(in.placeholder);
      continue;
    }
    targetOfPlaceholder[in.placeholder] = in.target;
    // optimize=True names the initializer by the target; other versions
    // of the exporter have used the placeholder.
    const std::string *holder = initializers.count(in.target) ? &in.target
                                : initializers.count(in.placeholder)
                                    ? &in.placeholder
                                    : nullptr;
    if (!holder || !initializers[*holder]->isFloat()) {
      missing.insert(in.placeholder);
      continue;
    }
    named.insert(*holder);
    result.parameters[*holder] = {in.target, false, {}};
    placeholderOf[*holder] = in.placeholder;
  }

  // Parameters lost to the optimizer. A missing parameter no node's FX
  // node names may be the alias of a tied weight (torch gives a tied
  // tensor one placeholder): report it only when the exporter also made
  // float constants of its own, which is where folded parameters go.
  std::set<std::string> referenced;
  for (const Node &node : model.nodes)
    for (const std::string &ref : fxReferences(node))
      referenced.insert(ref);
  bool exporterConstants = false;
  for (const Tensor &init : model.initializers)
    exporterConstants |= init.isFloat() && !named.count(init.name);
  // Parameters some node's FX node names were folded or merged for sure;
  // the others may be a tied alias, or folded with every node using them.
  std::vector<std::string> lost, unused;
  for (const SignatureInput &in : inputs) {
    if (in.kind != "PARAMETER" || !missing.count(in.placeholder) ||
        (options.isFrozen && options.isFrozen(in.target)))
      continue;
    if (referenced.count(in.placeholder))
      lost.push_back(in.target);
    else if (exporterConstants)
      unused.push_back(in.target);
  }
  if (!lost.empty() || !unused.empty()) {
    size_t count = lost.size() + unused.size();
    std::string message =
        model.path + ": " + std::to_string(count) +
        (count == 1 ? " torch parameter is not an initializer"
                    : " torch parameters are not initializers") +
        " of the graph, so they will not be trained as torch would";
    if (!lost.empty())
      message += "; folded into constants or merged with others of equal "
                 "value: " +
                 listNames(lost);
    if (!unused.empty())
      message += "; used by no node left (a tied alias of another, or "
                 "folded with every use): " +
                 listNames(unused);
    result.warnings.push_back(
        message + "; re-export with fsdp_opt.export (or "
                  "torch.onnx.export(..., optimize=False)), or freeze them "
                  "with --freeze=RE if they are not meant to train");
  }

  // Parameters merged into another: a node fed a trained initializer whose
  // FX node names some other, missing parameter and not the initializer's
  // own. Reported by the module that lost its parameter (name scopes), or
  // by the parameter's name when the node has no scope.
  std::map<std::string, std::set<std::string>>
      substitutedFor; // initializer -> modules
  for (const Node &node : model.nodes) {
    std::set<std::string> refs;
    bool refsRead = false;
    for (const std::string &input : node.inputs) {
      auto own = placeholderOf.find(input);
      if (own == placeholderOf.end())
        continue;
      if (!refsRead) {
        refs = fxReferences(node);
        refsRead = true;
      }
      if (refs.count(own->second))
        continue;
      std::string module = moduleOf(node);
      for (const std::string &ref : refs)
        if (missing.count(ref))
          substitutedFor[input].insert(module.empty() ? targetOfPlaceholder[ref]
                                                      : module);
    }
  }
  if (!substitutedFor.empty()) {
    std::vector<std::string> merges;
    for (const auto &[init, users] : substitutedFor)
      merges.push_back(
          "'" + init + "' stands in for the parameters of " +
          listNames(std::vector<std::string>(users.begin(), users.end())));
    result.warnings.push_back(
        model.path +
        ": the exporter merged parameters of equal value into one initializer, "
        "which would train them as one tensor: " +
        listNames(merges) +
        "; re-export with fsdp_opt.export (or torch.onnx.export(..., "
        "optimize=False))");
  }
  return result;
}

/// Whether `b` holds exactly the transpose of the 2-D tensor `a`.
bool isTransposeOf(const Tensor &a, const Tensor &b) {
  if (a.dims.size() != 2 || b.dims.size() != 2 || a.dtype != b.dtype ||
      a.dims[0] != b.dims[1] || a.dims[1] != b.dims[0] || !a.hasData ||
      !b.hasData)
    return false;
  size_t size = dtypeSize(a.dtype);
  int64_t rows = a.dims[0], cols = a.dims[1];
  if (size == 0 || rows * cols == 0)
    return false;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      if (std::memcmp(&a.data[(i * cols + j) * size],
                      &b.data[(j * rows + i) * size], size))
        return false;
  return true;
}

/// A tensor whose elements are all equal (zero-initialized, say) is the
/// transpose of any other such tensor by accident, not by tying.
bool isUniform(const Tensor &t) {
  size_t size = dtypeSize(t.dtype);
  for (size_t off = size; off + size <= t.data.size(); off += size)
    if (std::memcmp(&t.data[0], &t.data[off], size))
      return false;
  return true;
}

ParameterProvenance fromInitializerNames(const Model &model) {
  ParameterProvenance result;
  std::map<std::vector<int64_t>, std::vector<const Tensor *>> byShape;
  for (const Tensor &init : model.initializers) {
    if (!init.isFloat())
      continue;
    result.parameters[init.name] = {init.name, false, {}};
    if (init.dims.size() == 2 && init.hasData)
      byShape[init.dims].push_back(&init);
  }
  // A transposed copy of a parameter: the legacy exporter's constant
  // folding turns `x @ W.T` of a tied W into a new initializer holding W.T.
  std::vector<std::string> pairs;
  for (const auto &[dims, tensors] : byShape) {
    auto transposed = byShape.find({dims[1], dims[0]});
    if (transposed == byShape.end() || dims[0] > dims[1])
      continue; // each pair of shapes once; a square shape pairs with itself
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (isUniform(*tensors[i]))
        continue;
      const std::vector<const Tensor *> &others = transposed->second;
      for (size_t j = dims[0] == dims[1] ? i + 1 : 0; j < others.size(); ++j) {
        if (!isTransposeOf(*tensors[i], *others[j]))
          continue;
        // Name the exporter-made copy (onnx::MatMul_N) first.
        bool firstIsCopy = tensors[i]->name.rfind("onnx::", 0) == 0;
        const Tensor &copy = firstIsCopy ? *tensors[i] : *others[j];
        const Tensor &original = firstIsCopy ? *others[j] : *tensors[i];
        pairs.push_back("'" + copy.name + "' is the transpose of '" +
                        original.name + "'");
      }
    }
  }
  if (!pairs.empty())
    result.warnings.push_back(
        model.path + ": " + listNames(pairs) +
        ": a tied weight split by constant folding; the two will train as "
        "separate tensors "
        "and the saved weights will not load with load_state_dict; re-export "
        "with "
        "torch.onnx.export(..., do_constant_folding=False) or fsdp_opt.export");
  return result;
}

} // namespace

std::vector<SignatureInput> parseGraphSignature(const std::string &text) {
  std::vector<SignatureInput> inputs;
  std::istringstream lines(text);
  std::string line;
  bool inInputs = false;
  while (std::getline(lines, line)) {
    if (line.rfind("# ", 0) == 0) {
      inInputs = line == "# inputs";
      continue;
    }
    size_t colon = line.find(": ");
    if (!inInputs || colon == std::string::npos)
      continue;
    SignatureInput in;
    in.placeholder = line.substr(0, colon);
    size_t kindEnd = line.find(' ', colon + 2);
    in.kind = line.substr(colon + 2, kindEnd == std::string::npos
                                         ? std::string::npos
                                         : kindEnd - colon - 2);
    size_t target = line.find("target='");
    if (target != std::string::npos) {
      size_t start = target + 8, end = line.find('\'', start);
      if (end == std::string::npos)
        continue;
      in.target = line.substr(start, end - start);
    }
    inputs.push_back(in);
  }
  return inputs;
}

namespace {

/// torch's nn.Embedding(padding_idx=N) never updates row N; ONNX's Gather
/// has no such attribute, so the row trains here. The dynamo exporter's FX
/// text still shows it as aten.embedding's third argument.
void warnPaddingIndices(const Model &model, ParameterProvenance &result) {
  static const std::string kCall = "aten.embedding.default](args = (";
  for (const Node &node : model.nodes) {
    const std::string *fx = metadataValue(node.metadata, "pkg.torch.onnx.fx_node");
    size_t at = fx ? fx->find(kCall) : std::string::npos;
    if (at == std::string::npos)
      continue;
    size_t begin = at + kCall.size(), end = fx->find(')', begin);
    std::vector<std::string> args;
    std::istringstream list(fx->substr(begin, end == std::string::npos ? 0 : end - begin));
    // Untrusted text: an all-blank argument must not index past its end.
    for (std::string arg; std::getline(list, arg, ',');) {
      size_t first = arg.find_first_not_of(' ');
      args.push_back(first == std::string::npos ? "" : arg.substr(first));
    }
    if (args.size() < 3 || args[2].empty() || args[2] == "-1" ||
        args[2].find_first_not_of("-0123456789") != std::string::npos)
      continue;
    result.warnings.push_back(
        model.path + ": node '" + node.name + "' is torch's nn.Embedding with padding_idx=" +
        args[2] + ", whose row torch never updates; ONNX's Gather has no padding_idx, so that "
        "row of its weight trains here once token " + args[2] +
        " is in a batch (export without padding_idx, or keep the token out of the data)");
  }
}

} // namespace

std::optional<ParameterProvenance>
decideParameters(const Model &model, const ProvenanceOptions &options,
                 std::string &error) {
  std::optional<ParameterProvenance> result;
  if (options.manifest) {
    if (!checkManifest(*options.manifest, model, error))
      return std::nullopt;
    result = fromManifest(*options.manifest);
  } else if (const std::string *signature =
                 metadataValue(model.graphMetadata, kGraphSignatureKey)) {
    result = fromSignature(model, parseGraphSignature(*signature), options);
  } else {
    result = fromInitializerNames(model);
  }
  warnPaddingIndices(model, *result);
  return result;
}

} // namespace fsdp::onnx
