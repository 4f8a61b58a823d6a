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
#include "runtime/plan/PlanFile.h"

#include <optional>

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

/// The element offset at which a slice's result lies in its input, when
/// the result is one run of the input's row-major elements starting on the
/// runtime's buffer alignment: the dimensions inside the one it narrows are
/// whole and those outside it have a single index (nn.MultiheadAttention's
/// `in_proj_weight[E:]`, a row range of any weight). Such a slice moves no
/// bytes, and kept as a copy it would hold its own buffer from the forward
/// pass to the backward.
std::optional<int64_t> contiguousSliceOffset(nn::SliceOp slice) {
  auto in = cast<RankedTensorType>(slice.getInput().getType());
  auto out = cast<RankedTensorType>(slice.getResult().getType());
  unsigned bits = in.getElementTypeBitWidth();
  if (bits % 8 != 0 || out.getNumElements() == 0)
    return std::nullopt;
  ArrayRef<int64_t> inShape = in.getShape(), outShape = out.getShape();
  ArrayRef<int64_t> starts = slice.getStarts(), steps = slice.getSteps();
  const int64_t rank = inShape.size();
  // The innermost dimension the slice narrows: everything inside is whole.
  int64_t narrowed = rank - 1;
  while (narrowed >= 0 && outShape[narrowed] == inShape[narrowed] && starts[narrowed] == 0 &&
         steps[narrowed] == 1)
    --narrowed;
  if (narrowed >= 0 && outShape[narrowed] > 1 && steps[narrowed] != 1)
    return std::nullopt;
  for (int64_t i = 0; i < narrowed; ++i)
    if (outShape[i] != 1)
      return std::nullopt;
  int64_t offset = 0, stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    offset += starts[i] * stride;
    stride *= inShape[i];
  }
  if (offset * (bits / 8) % rt::kBufferAlignment != 0)
    return std::nullopt;
  return offset;
}

/// Every use is a product's factor, which reads it transposed by a flag:
/// a matmul's operand, or a gemm's a or b (not its addend c).
bool onlyMatmulOperands(Operation *op) {
  return !op->use_empty() && llvm::all_of(op->getUses(), [](OpOperand &use) {
    return isa<nn::MatMulOp>(use.getOwner()) ||
           (isa<nn::GemmOp>(use.getOwner()) && use.getOperandNumber() < 2);
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
    } else if (auto slice = dyn_cast<nn::SliceOp>(op)) {
      if (std::optional<int64_t> offset = contiguousSliceOffset(slice)) {
        views.contiguousSlices[&op] = *offset;
        views.root[result] = views.rootOf(slice.getInput());
      }
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
