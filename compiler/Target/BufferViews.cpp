//===- BufferViews.cpp - values that share another value's memory ---------===//
//
// Views are found in op order (a view's input is defined before it, so its
// root is already known), then last uses are taken over the ops that run,
// with every operand counted as a use of its root.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/BufferViews.h"

#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

using namespace mlir;

namespace fsdp {
namespace {

/// A transpose swapping the last two dimensions and keeping the rest.
bool swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2)
    return false;
  for (int64_t i = 0; i < rank - 2; ++i)
    if (perm[i] != i)
      return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

bool onlyMatmulOperands(Operation *op) {
  return !op->use_empty() && llvm::all_of(op->getUses(), [](OpOperand &use) {
    return isa<nn::MatMulOp>(use.getOwner());
  });
}

} // namespace

BufferViews findBufferViews(Block &body, const llvm::DenseSet<Value> &ownBuffer) {
  BufferViews views;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumResults() != 1 || ownBuffer.count(op.getResult(0)))
      continue;
    Value result = op.getResult(0);
    if (auto view = dyn_cast<dist::FlatViewOp>(op)) {
      views.flatViews.insert(&op);
      views.root[result] = views.rootOf(view.getFlat());
    } else if (auto reshape = dyn_cast<nn::ReshapeOp>(op)) {
      views.aliasedReshapes.insert(&op);
      views.root[result] = views.rootOf(reshape.getInput());
    } else if (auto transpose = dyn_cast<nn::TransposeOp>(op)) {
      if (swapsLastTwo(transpose.getPerm()) && onlyMatmulOperands(&op)) {
        views.foldedTransposes.insert(&op);
        views.root[result] = views.rootOf(transpose.getInput());
      }
    }
  }
  for (Operation &op : body.without_terminator()) {
    if (views.isView(&op))
      continue;
    for (Value operand : op.getOperands())
      views.lastUse[views.rootOf(operand)] = &op;
  }
  return views;
}

} // namespace fsdp
