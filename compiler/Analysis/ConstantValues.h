//===- ConstantValues.h - reading values computed from constants ----------===//
//
// The exporters compute some operands of a pattern in the graph instead of
// storing them: torch's dynamo decomposition of scaled_dot_product_attention
// writes its scale as sqrt(1 / sqrt(D)) on one-element tensors and its
// causal mask as where(trilu(expand(1)) == 0, finfo.min, 0). A pass that
// recognizes such a pattern must know those values to prove the rewrite
// exact, but the graph keeps float compute on constants as ops (the
// importer folds integer shape arithmetic only, ConstantFolding.h). This
// evaluator reads the element at one index of a value built from
// nn.constant through elementwise, broadcasting and data-movement ops,
// each result rounded to its own element type as the kernel would round
// it, without materializing any tensor: proving a T x T mask causal reads
// each element once and allocates nothing. A value that depends on a
// block argument, or on an op it does not know, is not constant.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_CONSTANTVALUES_H
#define FSDP_COMPILER_ANALYSIS_CONSTANTVALUES_H

#include "mlir/IR/Value.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>

namespace fsdp {

class ConstantValues {
public:
  /// Whether `v` is computed from nn.constant ops alone, through ops this
  /// evaluator implements, by an expression of at most kMaxOps ops.
  bool isConstant(mlir::Value v);

  /// The element of `v` at `index` (one coordinate per dimension), as a
  /// double: bools read 0 or 1, integers exactly up to 2^53, floats as
  /// rounded to their type. Requires isConstant(v).
  double at(mlir::Value v, llvm::ArrayRef<int64_t> index);

  /// The value of a constant `v` with one element, or nullopt.
  std::optional<double> scalar(mlir::Value v);

  /// Expressions larger than this are not evaluated (a bound on the work
  /// per element, which grows with the expression's size).
  static constexpr int kMaxOps = 32;

private:
  llvm::DenseMap<mlir::Value, bool> known;
};

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_CONSTANTVALUES_H
