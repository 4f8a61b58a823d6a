//===- ImportContext.h - what an op handler sees while importing a node ---===//
//
// The ONNX importer walks nodes in order and hands each to the handler its
// (op type, opset) maps to in OpTable.cpp. A handler reads its inputs and
// attributes through an ImportContext, builds nn ops, and binds its outputs.
// Errors are sticky: the first one is kept, formatted with the file and node
// (`m.onnx: node 'n' (Op, domain ai.onnx, opset 17): reason`), and the
// handler returns failure(). Values may carry a compile-time constant (from
// Constant nodes, integer initializers, Shape, folded shape arithmetic, or
// bound inputs); the nn.constant op is only materialized if some op uses the
// value as a tensor, so folded shape chains leave nothing in the IR.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_IMPORTCONTEXT_H
#define FSDP_FRONTENDS_ONNX_IMPORTCONTEXT_H

#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"
#include "frontends/onnx/OnnxModel.h"

#include "mlir/IR/Builders.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::onnx {

/// An ONNX value during import: an SSA value, a known constant, or both.
struct Slot {
  mlir::Value value;
  std::shared_ptr<const Tensor> constant;
  mlir::RankedTensorType type;
};

class ImportContext {
public:
  ImportContext(mlir::OpBuilder &builder, const Model &model,
                const std::map<std::string, Tensor> &inputValues);

  // --- the node being imported ---------------------------------------------
  void beginNode(const Node &node, size_t index, int64_t opset);
  const Node &node() const { return *node_; }
  int64_t opset() const { return opset_; }
  mlir::Location loc() const { return loc_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::MLIRContext *context() { return builder_.getContext(); }

  // --- errors ----------------------------------------------------------------
  /// Records `message` for the current node (first error wins); returns failure.
  mlir::LogicalResult error(const llvm::Twine &message);
  bool failed() const { return !error_.empty(); }
  const std::string &errorMessage() const { return error_; }
  /// `where` prefix of node errors: "m.onnx: node 'n' (Op, domain d, opset v)".
  std::string nodeDescription() const;
  /// An ErrorFn for the nn shape rules that reports on the current node.
  nn::ErrorFn errorFn() { return errorFn_; }

  // --- inputs ------------------------------------------------------------------
  size_t numInputs() const;
  /// True if input `i` is present (not omitted with "").
  bool hasInput(size_t i) const;
  /// The input as an SSA value (materializing a constant if needed).
  mlir::FailureOr<mlir::Value> input(size_t i);
  mlir::FailureOr<mlir::RankedTensorType> inputType(size_t i);
  /// The input's constant value if it has one (for opportunistic folding).
  const Tensor *constantInput(size_t i);
  /// The input's constant value, falling back to a bound graph input;
  /// an error naming `what` if neither exists.
  mlir::FailureOr<const Tensor *> requireConstantInput(size_t i, llvm::StringRef what);
  /// A constant integer input as a list of int64 (e.g. a shape).
  mlir::FailureOr<std::vector<int64_t>> requireIntsInput(size_t i, llvm::StringRef what);
  /// Slot lookup by name for the importer and the folder.
  Slot *lookup(const std::string &name);

  // --- attributes (wrong kinds are errors) -------------------------------
  const Attribute *attribute(llvm::StringRef name) const;
  int64_t intAttr(llvm::StringRef name, int64_t defaultValue);
  float floatAttr(llvm::StringRef name, float defaultValue);
  std::string stringAttr(llvm::StringRef name, llvm::StringRef defaultValue);
  std::optional<std::vector<int64_t>> intsAttr(llvm::StringRef name);
  /// Error unless every attribute the node has is in `known`.
  mlir::LogicalResult checkAttributes(llvm::ArrayRef<llvm::StringRef> known);

  // --- outputs -----------------------------------------------------------------
  size_t numOutputs() const;
  bool hasOutput(size_t i) const;
  mlir::LogicalResult setOutput(size_t i, mlir::Value value);
  mlir::LogicalResult setConstantOutput(size_t i, Tensor tensor);
  /// Binds a name that is not a node output (graph inputs, initializers).
  mlir::LogicalResult define(const std::string &name, Slot slot);

  // --- tensor sequences ------------------------------------------------------
  // Only as SplitToSequence -> SequenceAt(constant position): the sequence's
  // tensors are known at import, so SequenceAt just picks one. Any other
  // use of a sequence name is refused by requireSlot's message.
  mlir::LogicalResult setSequenceOutput(size_t i, std::vector<Slot> elements);
  /// The elements of sequence `name`, or null if it is not a sequence.
  const std::vector<Slot> *sequence(const std::string &name) const;

  // --- model-wide budgets -------------------------------------------------------
  // What a few bytes of model can multiply: the elements Range generates on
  // the host and the parts SplitToSequence makes. Each is counted over the
  // whole model, so many small nodes cannot add up to gigabytes or hours.
  enum class Budget { RangeElements, SequenceParts };
  static int64_t budgetLimit(Budget budget);
  /// Spends `amount` of `budget`; an error ("`what`; ...") once the model's
  /// total would pass the limit.
  mlir::LogicalResult charge(Budget budget, int64_t amount, const llvm::Twine &what);

  // --- types -------------------------------------------------------------------
  /// MLIR element type of an ONNX dtype, or an error for unsupported ones.
  mlir::FailureOr<mlir::Type> elementType(DType dtype);
  mlir::RankedTensorType tensorType(llvm::ArrayRef<int64_t> shape, mlir::Type element);
  /// An nn.constant holding `tensor`.
  mlir::FailureOr<mlir::Value> materialize(const Tensor &tensor);

private:
  mlir::OpBuilder &builder_;
  const Model &model_;
  const std::map<std::string, Tensor> &inputValues_;
  std::map<std::string, Slot> slots_;
  std::map<std::string, std::vector<Slot>> sequences_;
  const Node *node_ = nullptr;
  size_t nodeIndex_ = 0;
  int64_t opset_ = 0;
  mlir::Location loc_;
  std::string error_;
  int64_t spent_[2] = {0, 0}; // indexed by Budget
  std::function<void(const llvm::Twine &)> errorCallback_;
  nn::ErrorFn errorFn_;
};

/// DType of an MLIR element type (inverse of elementType()).
std::optional<DType> dtypeOf(mlir::Type element);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_IMPORTCONTEXT_H
