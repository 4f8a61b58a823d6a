//===- FunctionInliner.cpp - expand calls to model-local functions --------===//
//
// Recursive expansion over the plain structs of OnnxModel.h. Renaming keeps
// a set of every name the graph uses, so an inlined value can never capture
// or shadow a graph value; the call stack detects recursion, and a node
// budget and a depth limit bound what a hostile file can expand into.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/FunctionInliner.h"

#include <map>
#include <set>

namespace fsdp::onnx {
namespace {

/// Most nodes (calls included) inlining may visit, and deepest nesting of
/// calls: a hostile file of a few kilobytes could otherwise expand
/// exponentially or recurse past the stack. 2^18 is some 30 times the node
/// count of the largest transformer exports after inlining, and keeps the
/// worst file's refusal under a second even under ASan (at 2^20 a 3.5 KiB
/// file found by fuzzing took 25 s there).
constexpr size_t kMaxInlinedNodes = size_t(1) << 18;
constexpr size_t kMaxCallDepth = 64;

class Inliner {
public:
  explicit Inliner(Model &model) : model(model) {
    for (const Tensor &init : model.initializers)
      used.insert(init.name);
    for (const ValueInfo &input : model.inputs)
      used.insert(input.name);
    for (const Node &node : model.nodes) {
      used.insert(node.inputs.begin(), node.inputs.end());
      used.insert(node.outputs.begin(), node.outputs.end());
    }
    for (const Function &function : model.functions)
      if (!function.domain.empty())
        functionDomains.insert(function.domain);
  }

  std::string run() {
    std::vector<Node> nodes;
    for (const Node &node : model.nodes)
      if (!expand(node, nodes))
        return error;
    model.nodes = std::move(nodes);
    return "";
  }

private:
  static std::string qualified(const std::string &domain, const std::string &name,
                               const std::string &overload) {
    std::string text = (domain.empty() ? "" : domain + ".") + name;
    return overload.empty() ? text : text + " (overload '" + overload + "')";
  }

  bool failWith(const Node &node, const std::string &message) {
    error = model.path + ": node '" + node.name + "' (" + node.opType + ", domain " +
            (node.domain.empty() ? "ai.onnx" : node.domain) + "): " + message;
    return false;
  }

  const Function *find(const Node &node) const {
    for (const Function &function : model.functions)
      if (function.domain == node.domain && function.name == node.opType &&
          function.overload == node.overload)
        return &function;
    return nullptr;
  }

  std::string fresh(const std::string &base) {
    std::string name = base;
    for (int suffix = 1; !used.insert(name).second; ++suffix)
      name = base + "_" + std::to_string(suffix);
    return name;
  }

  /// Appends `node` to `out`, or the expansion of the function it calls.
  bool expand(const Node &node, std::vector<Node> &out) {
    if (++visited > kMaxInlinedNodes)
      return failWith(node, "inlining functions visits more than " +
                                std::to_string(kMaxInlinedNodes) + " nodes");
    const Function *function = find(node);
    if (!function) {
      if (!node.overload.empty() || functionDomains.count(node.domain))
        return failWith(node, "calls " + qualified(node.domain, node.opType, node.overload) +
                                  ", which no model-local function defines");
      out.push_back(node);
      return true;
    }
    if (stack.size() >= kMaxCallDepth)
      return failWith(node, "function calls nest more than " + std::to_string(kMaxCallDepth) +
                                " deep");
    for (const Function *active : stack)
      if (active == function)
        return failWith(node, "function " + qualified(function->domain, function->name,
                                                      function->overload) +
                                  " calls itself; recursive functions are not supported");
    if (node.inputs.size() > function->inputs.size() ||
        node.outputs.size() > function->outputs.size())
      return failWith(node, "passes " + std::to_string(node.inputs.size()) + " inputs and " +
                                std::to_string(node.outputs.size()) + " outputs to function '" +
                                function->name + "', which declares " +
                                std::to_string(function->inputs.size()) + " and " +
                                std::to_string(function->outputs.size()));

    // Formal parameters map to the call's values; every other inner name
    // gets a graph-unique one on first sight.
    std::map<std::string, std::string> rename;
    for (size_t i = 0; i < function->inputs.size(); ++i)
      rename[function->inputs[i]] = i < node.inputs.size() ? node.inputs[i] : "";
    std::string callName = node.name.empty() ? function->name : node.name;
    for (size_t i = 0; i < function->outputs.size(); ++i)
      rename[function->outputs[i]] = i < node.outputs.size() && !node.outputs[i].empty()
                                         ? node.outputs[i]
                                         : fresh(callName + "/" + function->outputs[i]);
    auto mapName = [&](const std::string &name) -> std::string {
      if (name.empty())
        return name;
      auto it = rename.find(name);
      if (it != rename.end())
        return it->second;
      return rename[name] = fresh(callName + "/" + name);
    };

    stack.push_back(function);
    for (const Node &inner : function->nodes) {
      Node copy;
      copy.name = callName + "/" + (inner.name.empty() ? inner.opType : inner.name);
      copy.opType = inner.opType;
      copy.domain = inner.domain;
      copy.overload = inner.overload;
      auto opset = function->opsets.find(inner.domain);
      copy.opset = opset != function->opsets.end() ? opset->second : inner.opset;
      for (const std::string &name : inner.inputs)
        copy.inputs.push_back(mapName(name));
      for (const std::string &name : inner.outputs)
        copy.outputs.push_back(mapName(name));
      for (const Attribute &attr : inner.attributes) {
        if (attr.refAttrName.empty()) {
          copy.attributes.push_back(attr);
          continue;
        }
        // A reference the call does not set takes the function's default,
        // or leaves the attribute unset (the operator's own default).
        const Attribute *value = node.attribute(attr.refAttrName);
        if (!value)
          for (const Attribute &def : function->attributeDefaults)
            if (def.name == attr.refAttrName)
              value = &def;
        if (!value)
          continue;
        Attribute resolved = *value;
        resolved.name = attr.name;
        copy.attributes.push_back(std::move(resolved));
      }
      if (!expand(copy, out)) {
        stack.pop_back();
        return false;
      }
    }
    stack.pop_back();
    return true;
  }

  Model &model;
  std::set<std::string> used;
  std::set<std::string> functionDomains;
  std::vector<const Function *> stack;
  size_t visited = 0;
  std::string error;
};

} // namespace

std::string inlineFunctions(Model &model) {
  if (model.functions.empty())
    return "";
  return Inliner(model).run();
}

} // namespace fsdp::onnx
