//===- Importer.cpp - ONNX model to nn dialect ----------------------------===//
//
// Builds `func.func @forward` from a parsed model: parameters and inputs
// become arguments, nodes are imported in graph order through the op table,
// and each node's ops are verified as soon as they are built so a shape or
// type error is reported at the node that caused it, not somewhere in the
// module. Graph outputs are checked against their declared types.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"

#include "frontends/onnx/ImportContext.h"
#include "frontends/onnx/OpHandlers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <set>

using namespace mlir;

namespace fsdp::onnx {
namespace {

/// Collects the first diagnostic emitted while alive, instead of printing.
class FirstDiagnostic {
public:
  explicit FirstDiagnostic(MLIRContext &context)
      : handler(&context, [this](Diagnostic &diag) {
          if (message.empty())
            message = diag.str();
          return success();
        }) {}
  std::string message;

private:
  ScopedDiagnosticHandler handler;
};

class ModelImporter {
public:
  ModelImporter(MLIRContext &context, const Model &model,
                const ImportOptions &options)
      : context(context), model(model), options(options), builder(&context),
        ctx(builder, model, options.inputValues) {}

  OwningOpRef<ModuleOp> run(std::string &error);

private:
  LogicalResult declareArguments(SmallVectorImpl<Type> &types);
  LogicalResult importNode(const Node &node, size_t index);
  LogicalResult checkNodeOutputs(const Node &node);
  LogicalResult importOutputs(func::FuncOp func);
  LogicalResult fail(const Twine &message) {
    if (firstError.empty())
      firstError = model.path + ": " + message.str();
    return failure();
  }

  MLIRContext &context;
  const Model &model;
  const ImportOptions &options;
  OpBuilder builder;
  ImportContext ctx;
  std::string firstError;
  /// Argument order: (name, is parameter, type); parameters also carry
  /// the initializer they come from and whether they are frozen.
  struct Argument {
    std::string name;
    bool isParam;
    RankedTensorType type;
    std::string initializer;
    bool frozen = false;
  };
  std::vector<Argument> arguments;
};

LogicalResult ModelImporter::declareArguments(SmallVectorImpl<Type> &types) {
  std::set<std::string> initializerNames;
  // ParameterProvenance decides which initializers are parameters; the
  // rest (masks, index buffers, torch buffers, exporter constants) are
  // constants.
  std::optional<ParameterProvenance> decided;
  const ParameterProvenance *provenance = options.provenance;
  if (!provenance) {
    std::string error;
    decided = decideParameters(model, ProvenanceOptions(), error);
    if (!decided)
      return fail(error);
    provenance = &*decided;
  }
  for (const Tensor &init : model.initializers) {
    if (!initializerNames.insert(init.name).second)
      return fail("initializer '" + init.name + "' is defined more than once");
    FailureOr<Type> element = ctx.elementType(init.dtype);
    if (failed(element))
      return fail("initializer '" + init.name + "': element type " +
                  dtypeName(init.dtype) + " is not supported");
    RankedTensorType type = ctx.tensorType(init.dims, *element);
    auto binding = provenance->parameters.find(init.name);
    if (binding != provenance->parameters.end()) {
      arguments.push_back({binding->second.name, true, type, init.name, binding->second.frozen});
      continue;
    }
    if (failed(ctx.define(init.name, Slot{nullptr, std::make_shared<Tensor>(init), type})))
      return fail(ctx.errorMessage());
  }
  for (const ValueInfo &input : model.inputs) {
    if (initializerNames.count(input.name))
      continue; // IR < 4 lists initializers as inputs too
    if (!input.isTensor)
      return fail("input '" + input.name + "' is not a tensor (sequence, map "
                  "and optional inputs are not supported)");
    if (!input.hasShape)
      return fail("input '" + input.name + "' has no shape; export with static shapes");
    int64_t elements = 1;
    for (size_t d = 0; d < input.dims.size(); ++d) {
      if (input.dims[d] < 0)
        return fail("input '" + input.name + "': dimension " + Twine(d) +
                    " is symbolic; export with static shapes (no dynamic_axes)");
      // Bound every static size so later shape arithmetic cannot overflow.
      if (input.dims[d] != 0 && elements > (int64_t(1) << 48) / input.dims[d])
        return fail("input '" + input.name + "' has more than 2^48 elements");
      elements *= input.dims[d];
    }
    FailureOr<Type> element = ctx.elementType(input.dtype);
    if (failed(element))
      return fail("input '" + input.name + "': element type " +
                  dtypeName(input.dtype) + " is not supported");
    arguments.push_back({input.name, false, ctx.tensorType(input.dims, *element)});
  }
  // Parameters first, then inputs: train_step(params, opt_state, batch).
  std::stable_partition(arguments.begin(), arguments.end(),
                        [](const Argument &a) { return a.isParam; });
  for (const Argument &arg : arguments)
    types.push_back(arg.type);
  return success();
}

LogicalResult ModelImporter::importNode(const Node &node, size_t index) {
  auto opset = model.opsets.find(node.domain);
  int64_t version = opset == model.opsets.end() ? 0 : opset->second;
  if (node.opset > 0) // inlined from a function with its own opset_import
    version = node.opset;
  ctx.beginNode(node, index, version);
  if (version == 0)
    return ctx.error("unsupported operator (the model imports no opset for "
                     "this domain)");
  bool knownOp = false;
  OpHandler handler = findOpHandler(node.domain, node.opType, version, knownOp);
  if (!handler)
    return ctx.error(knownOp ? "unsupported operator at this opset (see "
                               "fsdp-opt --list-ops)"
                             : "unsupported operator");

  Block *block = builder.getInsertionBlock();
  Operation *last = block->empty() ? nullptr : &block->back();
  FirstDiagnostic diag(context);
  if (failed(handler(ctx)) || ctx.failed()) {
    if (!ctx.failed())
      (void)ctx.error(diag.message.empty() ? "import failed" : diag.message);
    return failure();
  }
  if (failed(checkNodeOutputs(node)))
    return failure();
  // Verify what this node built, so errors carry the node's name.
  Operation *op = last ? last->getNextNode() : (block->empty() ? nullptr : &block->front());
  for (; op; op = op->getNextNode())
    if (failed(mlir::verify(op)))
      return ctx.error(diag.message);
  return success();
}

LogicalResult ModelImporter::checkNodeOutputs(const Node &node) {
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i].empty())
      continue;
    Slot *slot = ctx.lookup(node.outputs[i]);
    if (!slot && ctx.sequence(node.outputs[i]))
      continue; // its tensors were checked when built
    if (!slot)
      return ctx.error("output " + Twine(i) + " ('" + node.outputs[i] +
                       "') is not supported");
    // Reshape and Expand take their sizes from the model's constants; bound
    // them as the inputs are bounded, so no later size or stride product
    // can overflow. Zero-sized dimensions count as 1 here: strides still
    // multiply the others. Checked before verification so the message
    // names the output rather than an overflowed element count.
    int64_t elements = 1;
    for (int64_t d : slot->type.getShape()) {
      int64_t factor = std::max<int64_t>(d, 1);
      if (elements > (int64_t(1) << 48) / factor)
        return ctx.error("output " + Twine(i) + " ('" + node.outputs[i] + "') has shape " +
                         nn::formatShape(slot->type.getShape()) +
                         ", more than 2^48 elements");
      elements *= factor;
    }
  }
  return success();
}

LogicalResult ModelImporter::importOutputs(func::FuncOp func) {
  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  for (const ValueInfo &output : model.outputs) {
    Slot *slot = ctx.lookup(output.name);
    if (!slot && ctx.sequence(output.name))
      return fail("graph output '" + output.name + "' is a tensor sequence; sequence "
                  "outputs are not supported");
    if (!slot)
      return fail("graph output '" + output.name + "' is never computed");
    if (!slot->value) {
      // Checked here so the message names the output, not the last node
      // imported (which is what ctx.materialize would report).
      if (!slot->constant->hasData)
        return fail("graph output '" + output.name + "' is a constant whose "
                    "external data file is absent");
      FailureOr<Value> value = ctx.materialize(*slot->constant);
      if (failed(value)) {
        firstError = ctx.errorMessage(); // already starts with the path
        return failure();
      }
      slot->value = *value;
    }
    if (output.isTensor && output.dtype != DType::Undefined) {
      std::optional<DType> actual = dtypeOf(slot->type.getElementType());
      if (actual != output.dtype)
        return fail("graph output '" + output.name + "' is declared " +
                    dtypeName(output.dtype) + " but computes " +
                    (actual ? dtypeName(*actual) : std::string("another type")));
    }
    if (output.isTensor && output.hasShape) {
      ArrayRef<int64_t> shape = slot->type.getShape();
      bool matches = output.dims.size() == shape.size();
      for (size_t d = 0; matches && d < shape.size(); ++d)
        matches = output.dims[d] < 0 || output.dims[d] == shape[d];
      if (!matches)
        return fail("graph output '" + output.name + "' is declared with shape " +
                    nn::formatShape(output.dims) + " but computes " +
                    nn::formatShape(shape));
    }
    results.push_back(slot->value);
    resultTypes.push_back(slot->type);
  }
  builder.create<func::ReturnOp>(func.getLoc(), results);
  func.setFunctionType(builder.getFunctionType(func.getArgumentTypes(), resultTypes));
  for (size_t i = 0; i < model.outputs.size(); ++i)
    func.setResultAttr(i, nn::kOutputAttr, builder.getStringAttr(model.outputs[i].name));
  return success();
}

OwningOpRef<ModuleOp> ModelImporter::run(std::string &error) {
  context.loadDialect<nn::NNDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, model.path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr(nn::kSourceAttr, builder.getStringAttr(model.path));
  if (!model.producerName.empty())
    (*module)->setAttr("nn.producer", builder.getStringAttr(
        model.producerName + (model.producerVersion.empty() ? "" : " " + model.producerVersion)));
  auto defaultOpset = model.opsets.find("");
  if (defaultOpset != model.opsets.end())
    (*module)->setAttr("nn.opset", builder.getI64IntegerAttr(defaultOpset->second));

  SmallVector<Type> argTypes;
  if (failed(declareArguments(argTypes))) {
    error = firstError;
    return nullptr;
  }
  builder.setInsertionPointToEnd(module->getBody());
  auto func = builder.create<func::FuncOp>(fileLoc, "forward",
                                           builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  // All at once: setting one argument's attributes rebuilds the array of
  // every argument's, which made the import quadratic in the parameters.
  SmallVector<DictionaryAttr> argAttrs;
  for (const Argument &arg : arguments) {
    SmallVector<NamedAttribute> attrs{builder.getNamedAttr(
        arg.isParam ? nn::kParamAttr : nn::kInputAttr, builder.getStringAttr(arg.name))};
    if (arg.isParam && arg.initializer != arg.name)
      attrs.push_back(builder.getNamedAttr(kInitializerAttr, builder.getStringAttr(arg.initializer)));
    if (arg.frozen)
      attrs.push_back(builder.getNamedAttr(kFrozenAttr, builder.getUnitAttr()));
    argAttrs.push_back(builder.getDictionaryAttr(attrs));
  }
  func.setAllArgAttrs(argAttrs);
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument &arg = arguments[i];
    // Nodes name the initializer, whatever name the parameter trains under.
    const std::string &valueName = arg.isParam ? arg.initializer : arg.name;
    if (failed(ctx.define(valueName, Slot{entry->getArgument(i), nullptr, arg.type}))) {
      error = ctx.errorMessage();
      return nullptr;
    }
  }
  builder.setInsertionPointToEnd(entry);
  for (size_t i = 0; i < model.nodes.size(); ++i) {
    if (failed(importNode(model.nodes[i], i))) {
      error = ctx.errorMessage();
      return nullptr;
    }
  }
  if (failed(importOutputs(func))) {
    error = firstError.empty() ? ctx.errorMessage() : firstError;
    return nullptr;
  }
  FirstDiagnostic diag(context);
  if (failed(mlir::verify(*module))) {
    error = model.path + ": imported module does not verify: " + diag.message;
    return nullptr;
  }
  return module;
}

} // namespace

OwningOpRef<ModuleOp> importModel(MLIRContext &context, const Model &model,
                                  const ImportOptions &options, std::string &error) {
  ModelImporter importer(context, model, options);
  return importer.run(error);
}

} // namespace fsdp::onnx
