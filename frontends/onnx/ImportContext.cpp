//===- ImportContext.cpp - value table, attributes and errors of import ---===//
//
// Implements ImportContext: the name -> value table with lazily
// materialized constants, typed attribute access that turns a wrong
// attribute kind into an error at the node, and conversion between ONNX
// dtypes and MLIR element types.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ImportContext.h"

#include "mlir/IR/BuiltinAttributes.h"

#include <cstring>
#include <iterator>

using namespace mlir;

namespace fsdp::onnx {

ImportContext::ImportContext(OpBuilder &builder, const Model &model,
                             const std::map<std::string, Tensor> &inputValues)
    : builder_(builder), model_(model), inputValues_(inputValues),
      loc_(builder.getUnknownLoc()),
      errorCallback_([this](const llvm::Twine &message) { (void)error(message); }),
      errorFn_(errorCallback_) {}

void ImportContext::beginNode(const Node &node, size_t index, int64_t opset) {
  node_ = &node;
  nodeIndex_ = index;
  opset_ = opset;
  std::string name = node.name.empty() ? "#" + std::to_string(index) : node.name;
  loc_ = NameLoc::get(builder_.getStringAttr(name),
                      FileLineColLoc::get(context(), model_.path, 0, 0));
}

std::string ImportContext::nodeDescription() const {
  std::string name = node_->name.empty() ? "#" + std::to_string(nodeIndex_) : node_->name;
  return model_.path + ": node '" + name + "' (" + node_->opType + ", domain " +
         (node_->domain.empty() ? "ai.onnx" : node_->domain) + ", opset " +
         (opset_ > 0 ? std::to_string(opset_) : std::string("none")) + ")";
}

LogicalResult ImportContext::error(const llvm::Twine &message) {
  if (error_.empty())
    error_ = (node_ ? nodeDescription() : model_.path) + ": " + message.str();
  return failure();
}

// --- inputs ------------------------------------------------------------------

size_t ImportContext::numInputs() const { return node_->inputs.size(); }

bool ImportContext::hasInput(size_t i) const {
  return i < node_->inputs.size() && !node_->inputs[i].empty();
}

Slot *ImportContext::lookup(const std::string &name) {
  auto it = slots_.find(name);
  return it == slots_.end() ? nullptr : &it->second;
}

static Slot *requireSlot(ImportContext &ctx, size_t i) {
  if (!ctx.hasInput(i)) {
    (void)ctx.error("input " + llvm::Twine(i) + " is required");
    return nullptr;
  }
  const std::string &name = ctx.node().inputs[i];
  Slot *slot = ctx.lookup(name);
  if (!slot && ctx.sequence(name))
    (void)ctx.error("input '" + name + "' is a tensor sequence; sequences are supported "
                    "only as SplitToSequence results read by SequenceAt at a constant "
                    "position");
  else if (!slot)
    (void)ctx.error("input '" + name +
              "' is not defined before this node (missing, or the graph is "
              "not topologically sorted)");
  return slot;
}

FailureOr<Value> ImportContext::input(size_t i) {
  Slot *slot = requireSlot(*this, i);
  if (!slot)
    return failure();
  if (!slot->value) {
    FailureOr<Value> value = materialize(*slot->constant);
    if (mlir::failed(value))
      return failure();
    slot->value = *value;
  }
  return slot->value;
}

FailureOr<RankedTensorType> ImportContext::inputType(size_t i) {
  Slot *slot = requireSlot(*this, i);
  if (!slot)
    return failure();
  return slot->type;
}

const Tensor *ImportContext::constantInput(size_t i) {
  if (!hasInput(i))
    return nullptr;
  Slot *slot = lookup(node_->inputs[i]);
  return slot && slot->constant ? slot->constant.get() : nullptr;
}

/// A bound graph input's value, adopted as the slot's constant; only where
/// an operator requires a constant, so bound inputs never fold compute away.
static const Tensor *boundInput(ImportContext &ctx, Slot *slot, const std::string &name,
                                const std::map<std::string, Tensor> &inputValues) {
  auto bound = inputValues.find(name);
  if (bound == inputValues.end() || !slot)
    return nullptr;
  const Tensor &tensor = bound->second;
  FailureOr<Type> element = ctx.elementType(tensor.dtype);
  if (mlir::failed(element) || slot->type != ctx.tensorType(tensor.dims, *element)) {
    (void)ctx.error("bound value of input '" + name + "' does not match its declared type");
    return nullptr;
  }
  slot->constant = std::make_shared<Tensor>(tensor);
  return slot->constant.get();
}

FailureOr<const Tensor *> ImportContext::requireConstantInput(size_t i,
                                                              llvm::StringRef what) {
  if (!hasInput(i)) {
    (void)error(what + " (input " + llvm::Twine(i) + ") is required");
    return failure();
  }
  const Tensor *tensor = constantInput(i);
  if (!tensor)
    tensor = boundInput(*this, lookup(node_->inputs[i]), node_->inputs[i], inputValues_);
  if (failed())
    return failure();
  if (tensor && !tensor->hasData) {
    // A constant after all, but read with allowMissingExternalData.
    (void)error(what + " '" + node_->inputs[i] +
                "' is an initializer whose external data file is absent; its "
                "value is needed at import time");
    return failure();
  }
  if (!tensor) {
    (void)error(what + " '" + node_->inputs[i] +
          "' must be a compile-time constant (static shapes only)");
    return failure();
  }
  return tensor;
}

FailureOr<std::vector<int64_t>> ImportContext::requireIntsInput(size_t i,
                                                                llvm::StringRef what) {
  FailureOr<const Tensor *> tensor = requireConstantInput(i, what);
  if (mlir::failed(tensor))
    return failure();
  if (!(*tensor)->isInteger()) {
    (void)error(what + " must be an integer tensor, got " + dtypeName((*tensor)->dtype));
    return failure();
  }
  std::vector<int64_t> values;
  for (int64_t k = 0, n = (*tensor)->numElements(); k < n; ++k)
    values.push_back((*tensor)->intAt(k));
  return values;
}

// --- attributes ------------------------------------------------------------------

const Attribute *ImportContext::attribute(llvm::StringRef name) const {
  return node_->attribute(name.str());
}

static const char *kindName(Attribute::Kind kind) {
  switch (kind) {
  case Attribute::Kind::Float: return "a float";
  case Attribute::Kind::Int: return "an int";
  case Attribute::Kind::String: return "a string";
  case Attribute::Kind::Tensor: return "a tensor";
  case Attribute::Kind::Floats: return "a float list";
  case Attribute::Kind::Ints: return "an int list";
  case Attribute::Kind::Strings: return "a string list";
  case Attribute::Kind::Other: return "a graph or other";
  }
  return "unknown";
}

static const Attribute *attributeOfKind(ImportContext &ctx, llvm::StringRef name,
                                        Attribute::Kind kind) {
  const Attribute *attr = ctx.attribute(name);
  if (attr && attr->kind != kind) {
    (void)ctx.error("attribute '" + name + "' must be " + kindName(kind) + ", got " +
              kindName(attr->kind));
    return nullptr;
  }
  return attr;
}

int64_t ImportContext::intAttr(llvm::StringRef name, int64_t defaultValue) {
  const Attribute *attr = attributeOfKind(*this, name, Attribute::Kind::Int);
  return attr ? attr->i : defaultValue;
}

float ImportContext::floatAttr(llvm::StringRef name, float defaultValue) {
  const Attribute *attr = attributeOfKind(*this, name, Attribute::Kind::Float);
  return attr ? attr->f : defaultValue;
}

std::string ImportContext::stringAttr(llvm::StringRef name,
                                      llvm::StringRef defaultValue) {
  const Attribute *attr = attributeOfKind(*this, name, Attribute::Kind::String);
  return attr ? attr->s : defaultValue.str();
}

std::optional<std::vector<int64_t>> ImportContext::intsAttr(llvm::StringRef name) {
  const Attribute *attr = attributeOfKind(*this, name, Attribute::Kind::Ints);
  if (!attr)
    return std::nullopt;
  return attr->ints;
}

LogicalResult ImportContext::checkAttributes(llvm::ArrayRef<llvm::StringRef> known) {
  for (const Attribute &attr : node_->attributes)
    if (!llvm::is_contained(known, attr.name))
      return error("unsupported attribute '" + attr.name + "'");
  return success();
}

// --- outputs -----------------------------------------------------------------------

size_t ImportContext::numOutputs() const { return node_->outputs.size(); }

bool ImportContext::hasOutput(size_t i) const {
  return i < node_->outputs.size() && !node_->outputs[i].empty();
}

LogicalResult ImportContext::define(const std::string &name, Slot slot) {
  if (sequences_.count(name) || !slots_.emplace(name, std::move(slot)).second)
    return error("value '" + name + "' is defined more than once");
  return success();
}

LogicalResult ImportContext::setSequenceOutput(size_t i, std::vector<Slot> elements) {
  if (!hasOutput(i))
    return success();
  const std::string &name = node_->outputs[i];
  if (slots_.count(name) || !sequences_.emplace(name, std::move(elements)).second)
    return error("value '" + name + "' is defined more than once");
  return success();
}

const std::vector<Slot> *ImportContext::sequence(const std::string &name) const {
  auto it = sequences_.find(name);
  return it == sequences_.end() ? nullptr : &it->second;
}

LogicalResult ImportContext::setOutput(size_t i, Value value) {
  if (!hasOutput(i))
    return success(); // an unused optional output
  return define(node_->outputs[i],
                Slot{value, nullptr, llvm::cast<RankedTensorType>(value.getType())});
}

LogicalResult ImportContext::setConstantOutput(size_t i, Tensor tensor) {
  if (!hasOutput(i))
    return success();
  FailureOr<Type> element = elementType(tensor.dtype);
  if (mlir::failed(element))
    return failure();
  RankedTensorType type = tensorType(tensor.dims, *element);
  return define(node_->outputs[i],
                Slot{nullptr, std::make_shared<Tensor>(std::move(tensor)), type});
}

// --- model-wide budgets -------------------------------------------------------------

namespace {
struct BudgetSpec {
  int64_t limit;
  const char *nodes; // the op that spends it
  const char *unit;
};
// Indexed by ImportContext::Budget. 2^24 int64 positions are 128 MiB, far
// past any context length; 2^16 parts are far more heads or chunks than a
// real split makes.
constexpr BudgetSpec kBudgets[] = {
    {int64_t(1) << 24, "Range", "elements"},
    {int64_t(1) << 16, "SplitToSequence", "parts"},
};
} // namespace

int64_t ImportContext::budgetLimit(Budget budget) {
  return kBudgets[static_cast<int>(budget)].limit;
}

LogicalResult ImportContext::charge(Budget budget, int64_t amount, const llvm::Twine &what) {
  static_assert(std::size(kBudgets) == sizeof(spent_) / sizeof(spent_[0]), "one entry per Budget");
  const BudgetSpec &spec = kBudgets[static_cast<int>(budget)];
  int64_t &spent = spent_[static_cast<int>(budget)];
  if (amount > spec.limit - spent)
    return error(what + "; " + spec.nodes + " nodes may make at most " + llvm::Twine(spec.limit) +
                 " " + spec.unit + " in a model");
  spent += amount;
  return success();
}

// --- types -------------------------------------------------------------------------

FailureOr<Type> ImportContext::elementType(DType dtype) {
  MLIRContext *ctx = context();
  switch (dtype) {
  case DType::Float: return Type(Float32Type::get(ctx));
  case DType::Double: return Type(Float64Type::get(ctx));
  case DType::Float16: return Type(Float16Type::get(ctx));
  case DType::BFloat16: return Type(BFloat16Type::get(ctx));
  case DType::Bool: return Type(IntegerType::get(ctx, 1));
  case DType::Int8: return Type(IntegerType::get(ctx, 8));
  case DType::Int16: return Type(IntegerType::get(ctx, 16));
  case DType::Int32: return Type(IntegerType::get(ctx, 32));
  case DType::Int64: return Type(IntegerType::get(ctx, 64));
  case DType::UInt8: return Type(IntegerType::get(ctx, 8, IntegerType::Unsigned));
  case DType::UInt16: return Type(IntegerType::get(ctx, 16, IntegerType::Unsigned));
  case DType::UInt32: return Type(IntegerType::get(ctx, 32, IntegerType::Unsigned));
  case DType::UInt64: return Type(IntegerType::get(ctx, 64, IntegerType::Unsigned));
  default:
    (void)error("element type " + dtypeName(dtype) + " is not supported");
    return failure();
  }
}

std::optional<DType> dtypeOf(Type element) {
  if (element.isF32()) return DType::Float;
  if (element.isF64()) return DType::Double;
  if (element.isF16()) return DType::Float16;
  if (element.isBF16()) return DType::BFloat16;
  if (auto integer = llvm::dyn_cast<IntegerType>(element)) {
    bool isUnsigned = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return DType::Bool;
    case 8: return isUnsigned ? DType::UInt8 : DType::Int8;
    case 16: return isUnsigned ? DType::UInt16 : DType::Int16;
    case 32: return isUnsigned ? DType::UInt32 : DType::Int32;
    case 64: return isUnsigned ? DType::UInt64 : DType::Int64;
    }
  }
  return std::nullopt;
}

RankedTensorType ImportContext::tensorType(llvm::ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

FailureOr<Value> ImportContext::materialize(const Tensor &tensor) {
  if (!tensor.hasData)
    return error("constant '" + tensor.name + "' has no data (its external file is absent)");
  FailureOr<Type> element = elementType(tensor.dtype);
  if (mlir::failed(element))
    return failure();
  RankedTensorType type = tensorType(tensor.dims, *element);
  DenseElementsAttr attr;
  if (tensor.dtype == DType::Bool) {
    llvm::SmallVector<bool> bits;
    for (char c : tensor.data)
      bits.push_back(c != 0);
    attr = DenseElementsAttr::get(type, bits);
  } else {
    attr = DenseElementsAttr::getFromRawBuffer(
        type, llvm::ArrayRef<char>(tensor.data.data(), tensor.data.size()));
  }
  return builder_.create<nn::ConstantOp>(loc_, attr).getResult();
}

} // namespace fsdp::onnx
