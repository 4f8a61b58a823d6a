//===- FunctionInliner.h - expand calls to model-local functions ----------===//
//
// The dynamo exporter may keep some operators as ModelProto.functions and
// call them from the graph like operators of a custom domain. The importer
// knows only primitive operators, so after reading, every call is replaced
// by the function's body: formal inputs and outputs become the call's
// values, inner values get names unique in the graph, attribute references
// (ref_attr_name) take the caller's attribute or the function's default,
// and nested calls are expanded the same way. Each inlined node keeps the
// opset its function imports for its domain.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_FUNCTIONINLINER_H
#define FSDP_FRONTENDS_ONNX_FUNCTIONINLINER_H

#include "frontends/onnx/OnnxModel.h"

#include <string>

namespace fsdp::onnx {

/// Rewrites model.nodes with every call to a model-local function inlined.
/// Returns an empty string on success, else a message starting with the
/// model's path (recursion, a call to a function the model does not define,
/// calls nested too deep or expanding to too many nodes).
std::string inlineFunctions(Model &model);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_FUNCTIONINLINER_H
