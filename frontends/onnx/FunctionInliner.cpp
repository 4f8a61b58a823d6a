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
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace fsdp::onnx {
namespace {

/// Most nodes (calls included) inlining may produce, and deepest nesting of
/// calls: a hostile file of a few kilobytes could otherwise expand
/// exponentially or recurse past the stack. 2^18 is some 30 times the node
/// count of the largest transformer exports after inlining. The count is
/// taken before anything is copied, so a bomb is refused at once; a file
/// that expands to just under the budget is real work (about 0.3 s, several
/// seconds under ASan).
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
    for (const Function &function : model.functions) {
      if (!function.domain.empty())
        functionDomains.insert(function.domain);
      byKey.try_emplace({function.domain, function.name, function.overload}, &function);
    }
  }

  std::string run() {
    // The node count is known before anything is copied: a few kilobytes of
    // functions calling each other twice per level are refused at once
    // instead of after a quarter of a million copies.
    size_t total = 0;
    for (const Node &node : model.nodes)
      if ((total = saturatingAdd(total, expandedSize(node))) > kMaxInlinedNodes) {
        failWith(node, "inlining functions makes more than " + std::to_string(kMaxInlinedNodes) +
                           " nodes");
        return error;
      }
    std::vector<Node> nodes;
    nodes.reserve(total);
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

  /// The function a node calls, if any; the first of duplicates wins.
  const Function *find(const Node &node) const {
    auto it = byKey.find({node.domain, node.opType, node.overload});
    return it == byKey.end() ? nullptr : it->second;
  }

  /// `base`, or `base_N` with the smallest N not yet used. The next N to try
  /// is remembered per base: a function called 2^k times under one call name
  /// would otherwise rescan every earlier suffix, quadratic in the calls.
  std::string fresh(const std::string &base) {
    if (used.insert(base).second)
      return base;
    size_t &suffix = nextSuffix[base];
    std::string name;
    do
      name = base + "_" + std::to_string(++suffix);
    while (!used.insert(name).second);
    return name;
  }

  static size_t saturatingAdd(size_t a, size_t b) {
    return a + b < a || a + b > kMaxInlinedNodes ? kMaxInlinedNodes + 1 : a + b;
  }

  /// Nodes `node` stands for once inlined: itself plus, for a call, every
  /// node its function expands to, saturating just above the budget.
  size_t expandedSize(const Node &node) {
    const Function *function = find(node);
    return function ? functionSize(function) : 1;
  }

  /// The call node plus everything `root` expands to. Depth-first over the
  /// call graph with an explicit stack (a hostile chain of thousands of
  /// functions must not overflow this one), memoized per function, so each
  /// function body is walked once. A call back into a function still being
  /// walked counts as one node: expand() refuses recursion with its own
  /// message.
  size_t functionSize(const Function *root) {
    struct Frame {
      const Function *function;
      size_t next;
      size_t size;
    };
    constexpr size_t kWalking = 0; // every finished size is at least 1
    if (auto known = sizes.find(root); known != sizes.end() && known->second != kWalking)
      return known->second;
    std::vector<Frame> frames{{root, 0, 1}};
    sizes[root] = kWalking;
    while (!frames.empty()) {
      Frame &frame = frames.back();
      if (frame.next == frame.function->nodes.size()) {
        size_t size = sizes[frame.function] = frame.size;
        frames.pop_back();
        if (!frames.empty())
          frames.back().size = saturatingAdd(frames.back().size, size);
        continue;
      }
      const Function *callee = find(frame.function->nodes[frame.next++]);
      auto known = callee ? sizes.find(callee) : sizes.end();
      if (!callee || (known != sizes.end() && known->second == kWalking)) {
        frame.size = saturatingAdd(frame.size, 1);
      } else if (known != sizes.end()) {
        frame.size = saturatingAdd(frame.size, known->second);
      } else {
        sizes[callee] = kWalking;
        frames.push_back({callee, 0, 1}); // `frame` is not used past here
      }
    }
    return sizes[root];
  }

  /// Appends `node` to `out`, or the expansion of the function it calls.
  bool expand(const Node &node, std::vector<Node> &out) {
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
  std::unordered_set<std::string> used;
  std::unordered_map<std::string, size_t> nextSuffix;
  std::set<std::string> functionDomains;
  std::vector<const Function *> stack;
  std::map<std::tuple<std::string, std::string, std::string>, const Function *> byKey;
  std::map<const Function *, size_t> sizes;
  std::string error;
};

} // namespace

std::string inlineFunctions(Model &model) {
  if (model.functions.empty())
    return "";
  return Inliner(model).run();
}

} // namespace fsdp::onnx
