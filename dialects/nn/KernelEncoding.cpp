//===- KernelEncoding.cpp - nn ops as plan kernels ------------------------===//
//
// KernelOpInterface for the nn dialect: which plan kernel each op runs as
// and, for ops with attributes, absent optional operands or operands in
// another order than the kernel's, the instruction in the layout of that
// kernel's row in runtime/plan/Kernels.def. Ops without attributes whose
// operands are the kernel's in order take the interface's default
// encoding, so they only name their kernel here.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/NNDialect.h"

#include "runtime/plan/plan_generated.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace fsdp::nn {
namespace {

using plan::Kernel;

/// An encoding of `op`'s operands in order, padded to `arity` with null
/// Values: an absent optional operand, which ODS leaves out, is last in
/// every nn op that has one, as in its kernel.
KernelEncoding operandsInOrder(Operation *op, Kernel kernel, size_t arity = 0) {
  KernelEncoding encoding;
  encoding.kernel = kernel;
  encoding.operands.assign(op->operand_begin(), op->operand_end());
  encoding.operands.resize(std::max(arity, encoding.operands.size()), Value());
  return encoding;
}

/// A loss's [reduction (0 none, 1 sum, 2 mean), has_ignore_index,
/// ignore_index].
std::vector<int64_t> lossInts(StringRef reduction, std::optional<int64_t> ignore) {
  int64_t code = reduction == "none" ? 0 : reduction == "sum" ? 1 : 2;
  return {code, ignore.has_value(), ignore.value_or(0)};
}

/// An op with one integer attribute (an axis).
template <typename Op> KernelEncoding withAxis(Op op, int64_t axis) {
  KernelEncoding encoding = operandsInOrder(op, Op::getKernel());
  encoding.ints = {axis};
  return encoding;
}

/// Reductions and ReduceMaxGrad: the axes (keepdims is in the result's
/// shape).
template <typename Op> KernelEncoding withAxes(Op op) {
  KernelEncoding encoding = operandsInOrder(op, Op::getKernel());
  encoding.ints.assign(op.getAxes().begin(), op.getAxes().end());
  return encoding;
}

/// Slice and SliceGrad: starts ++ steps.
std::vector<int64_t> startsAndSteps(ArrayRef<int64_t> starts, ArrayRef<int64_t> steps) {
  std::vector<int64_t> ints(starts.begin(), starts.end());
  ints.insert(ints.end(), steps.begin(), steps.end());
  return ints;
}

} // namespace

// Elementwise, their gradients, MatMul (its transpose flags are the
// emitter's, see NNInterfaces.td), reshape (a copy where it is no view)
// and expand: operands in order, no attributes.
Kernel AddOp::getKernel() { return Kernel::Add; }
Kernel SubOp::getKernel() { return Kernel::Sub; }
Kernel MulOp::getKernel() { return Kernel::Mul; }
Kernel DivOp::getKernel() { return Kernel::Div; }
Kernel PowOp::getKernel() { return Kernel::Pow; }
Kernel WhereOp::getKernel() { return Kernel::Where; }
Kernel NegOp::getKernel() { return Kernel::Neg; }
Kernel ReluOp::getKernel() { return Kernel::Relu; }
Kernel ExpOp::getKernel() { return Kernel::Exp; }
Kernel LogOp::getKernel() { return Kernel::Log; }
Kernel SqrtOp::getKernel() { return Kernel::Sqrt; }
Kernel ErfOp::getKernel() { return Kernel::Erf; }
Kernel TanhOp::getKernel() { return Kernel::Tanh; }
Kernel SigmoidOp::getKernel() { return Kernel::Sigmoid; }
Kernel NotOp::getKernel() { return Kernel::Not; }
Kernel CastOp::getKernel() { return Kernel::Cast; }
Kernel MatMulOp::getKernel() { return Kernel::MatMul; }
Kernel ReshapeOp::getKernel() { return Kernel::Copy; }
Kernel ExpandOp::getKernel() { return Kernel::Expand; }
Kernel ReluGradOp::getKernel() { return Kernel::ReluGrad; }
Kernel ErfGradOp::getKernel() { return Kernel::ErfGrad; }
Kernel TanhGradOp::getKernel() { return Kernel::TanhGrad; }
Kernel SigmoidGradOp::getKernel() { return Kernel::SigmoidGrad; }

// Linear algebra and normalization.
Kernel GemmOp::getKernel() { return Kernel::Gemm; }
KernelEncoding GemmOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel(), 3);
  encoding.ints = {getTransA(), getTransB()};
  encoding.floats = {getAlpha().convertToFloat(), getBeta().convertToFloat()};
  return encoding;
}

Kernel SoftmaxOp::getKernel() { return Kernel::Softmax; }
KernelEncoding SoftmaxOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel LogSoftmaxOp::getKernel() { return Kernel::LogSoftmax; }
KernelEncoding LogSoftmaxOp::encodeKernel() { return withAxis(*this, getAxis()); }

Kernel LayerNormOp::getKernel() { return Kernel::LayerNorm; }
KernelEncoding LayerNormOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel(), 3);
  encoding.ints = {static_cast<int64_t>(getAxis())};
  encoding.floats = {getEpsilon().convertToFloat()};
  return encoding;
}

// Attention: the mask is the optional operand (kNoBuffer when absent).
Kernel AttentionOp::getKernel() { return Kernel::Attention; }
KernelEncoding AttentionOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands = {getQuery(), getKey(), getValue(), getMask()};
  encoding.ints = {getIsCausal() ? 1 : 0, static_cast<int64_t>(getSeed().value_or(0))};
  encoding.floats = {getScale().convertToFloat(), getDropoutP().convertToFloat()};
  return encoding;
}
Kernel AttentionGradOp::getKernel() { return Kernel::AttentionGrad; }
KernelEncoding AttentionGradOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands = {getQuery(),         getKey(), getValue(), getMask(),
                       getForwardResult(), getLse(), getGrad()};
  encoding.ints = {getIsCausal() ? 1 : 0, static_cast<int64_t>(getSeed().value_or(0))};
  encoding.floats = {getScale().convertToFloat(), getDropoutP().convertToFloat()};
  return encoding;
}

// Reductions.
Kernel ReduceSumOp::getKernel() { return Kernel::ReduceSum; }
KernelEncoding ReduceSumOp::encodeKernel() { return withAxes(*this); }
Kernel ReduceMaxOp::getKernel() { return Kernel::ReduceMax; }
KernelEncoding ReduceMaxOp::encodeKernel() { return withAxes(*this); }
Kernel ReduceMeanOp::getKernel() { return Kernel::ReduceMean; }
KernelEncoding ReduceMeanOp::encodeKernel() { return withAxes(*this); }

// Losses: an absent weight operand is kNoBuffer.
Kernel SoftmaxCrossEntropyOp::getKernel() { return Kernel::SoftmaxCrossEntropy; }
KernelEncoding SoftmaxCrossEntropyOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel(), 3);
  encoding.ints = lossInts(getReduction(), getIgnoreIndex());
  return encoding;
}

Kernel NllLossOp::getKernel() { return Kernel::NllLoss; }
KernelEncoding NllLossOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel(), 3);
  encoding.ints = lossInts(getReduction(), getIgnoreIndex());
  return encoding;
}

// Data movement.
Kernel TransposeOp::getKernel() { return Kernel::Transpose; }
KernelEncoding TransposeOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints.assign(getPerm().begin(), getPerm().end());
  return encoding;
}

Kernel ConcatOp::getKernel() { return Kernel::Concat; }
KernelEncoding ConcatOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel SplitOp::getKernel() { return Kernel::Split; }
KernelEncoding SplitOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel GatherOp::getKernel() { return Kernel::Gather; }
KernelEncoding GatherOp::encodeKernel() { return withAxis(*this, getAxis()); }

Kernel SliceOp::getKernel() { return Kernel::Slice; }
KernelEncoding SliceOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = startsAndSteps(getStarts(), getSteps());
  return encoding;
}

Kernel TriluOp::getKernel() { return Kernel::Trilu; }
KernelEncoding TriluOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {getUpper(), static_cast<int64_t>(getK())};
  return encoding;
}

Kernel DropoutOp::getKernel() { return Kernel::Dropout; }
KernelEncoding DropoutOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {getTraining(), static_cast<int64_t>(getSeed().value_or(0))};
  encoding.floats = {getRatio().convertToFloat()};
  return encoding;
}

// Gradients with attributes.
Kernel SoftmaxGradOp::getKernel() { return Kernel::SoftmaxGrad; }
KernelEncoding SoftmaxGradOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel LogSoftmaxGradOp::getKernel() { return Kernel::LogSoftmaxGrad; }
KernelEncoding LogSoftmaxGradOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel LayerNormGradOp::getKernel() { return Kernel::LayerNormGrad; }
KernelEncoding LayerNormGradOp::encodeKernel() { return withAxis(*this, getAxis()); }
Kernel GatherGradOp::getKernel() { return Kernel::GatherGrad; }
KernelEncoding GatherGradOp::encodeKernel() { return withAxis(*this, getAxis()); }

Kernel SliceGradOp::getKernel() { return Kernel::SliceGrad; }
KernelEncoding SliceGradOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = startsAndSteps(getStarts(), getSteps());
  return encoding;
}

// The loss gradients take loss_grad first; their kernels take it last.
Kernel SoftmaxCrossEntropyGradOp::getKernel() { return Kernel::SoftmaxCrossEntropyGrad; }
KernelEncoding SoftmaxCrossEntropyGradOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands = {getLogProb(), getLabels(), getWeights(), getLossGrad()};
  encoding.ints = lossInts(getReduction(), getIgnoreIndex());
  return encoding;
}

Kernel NllLossGradOp::getKernel() { return Kernel::NllLossGrad; }
KernelEncoding NllLossGradOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands = {getTarget(), getWeight(), getLossGrad()};
  encoding.ints = lossInts(getReduction(), getIgnoreIndex());
  return encoding;
}

Kernel ReduceMaxGradOp::getKernel() { return Kernel::ReduceMaxGrad; }
KernelEncoding ReduceMaxGradOp::encodeKernel() { return withAxes(*this); }

Kernel DropoutGradOp::getKernel() { return Kernel::DropoutGrad; }
KernelEncoding DropoutGradOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.floats = {getRatio().convertToFloat()};
  return encoding;
}

// Optimizers: f64 hyperparameters travel as f32 attributes; skip_if's
// flag, when present, is the last operand (Kernels.def).
Kernel AdamWOp::getKernel() { return Kernel::AdamW; }
KernelEncoding AdamWOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.floats = {static_cast<float>(getBeta1().convertToDouble()),
                     static_cast<float>(getBeta2().convertToDouble()),
                     static_cast<float>(getEps().convertToDouble()),
                     static_cast<float>(getWeightDecay().convertToDouble())};
  return encoding;
}

// The op takes lr before its optional momentum buffer; the kernel takes
// the buffer third (kNoBuffer without momentum) and lr last.
Kernel SgdOp::getKernel() { return Kernel::Sgd; }
KernelEncoding SgdOp::encodeKernel() {
  KernelEncoding encoding;
  encoding.kernel = getKernel();
  encoding.operands = {getParam(), getGrad(), getMomentumBuffer(), getLr()};
  if (Value foundInf = getFoundInf())
    encoding.operands.push_back(foundInf);
  encoding.ints = {getNesterov()};
  encoding.floats = {static_cast<float>(getMomentum().convertToDouble()),
                     static_cast<float>(getWeightDecay().convertToDouble())};
  return encoding;
}

// Fused: [n, program..., result value ids...].
Kernel FusedOp::getKernel() { return Kernel::Fused; }
KernelEncoding FusedOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {static_cast<int64_t>(getProgram().size() / 3)};
  encoding.ints.insert(encoding.ints.end(), getProgram().begin(), getProgram().end());
  encoding.ints.insert(encoding.ints.end(), getResultsOf().begin(), getResultsOf().end());
  return encoding;
}

// Comparisons and logic: the predicate as its code in Kernels.def's rows
// (the verifiers admit only these names).
Kernel CompareOp::getKernel() { return Kernel::Compare; }
KernelEncoding CompareOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {llvm::StringSwitch<int64_t>(getPredicate())
                       .Case("eq", 0)
                       .Case("lt", 1)
                       .Case("le", 2)
                       .Case("gt", 3)
                       .Default(4)};
  return encoding;
}
Kernel LogicalOp::getKernel() { return Kernel::Logical; }
KernelEncoding LogicalOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {llvm::StringSwitch<int64_t>(getOp()).Case("and", 0).Case("or", 1).Default(2)};
  return encoding;
}
Kernel IsNaNOp::getKernel() { return Kernel::IsNaN; }
Kernel IsInfOp::getKernel() { return Kernel::IsInf; }
KernelEncoding IsInfOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {getDetectNegative(), getDetectPositive()};
  return encoding;
}
Kernel MaxOp::getKernel() { return Kernel::Max; }
Kernel MinOp::getKernel() { return Kernel::Min; }

} // namespace fsdp::nn

// --- Ops of torch 2.x exports ------------------------
// Gelu and GeluGrad carry the approximation as 0 (none) or 1 (tanh); Pad
// its non-negative pads (leading counts, then trailing); Tile its repeats;
// CumSum [axis, exclusive, reverse].

namespace fsdp::nn {
namespace {
int64_t approximateCode(StringRef approximate) { return approximate == "tanh" ? 1 : 0; }
} // namespace

Kernel ReciprocalOp::getKernel() { return Kernel::Reciprocal; }
Kernel CosOp::getKernel() { return Kernel::Cos; }
Kernel SinOp::getKernel() { return Kernel::Sin; }
Kernel SoftplusOp::getKernel() { return Kernel::Softplus; }

Kernel GeluOp::getKernel() { return Kernel::Gelu; }
KernelEncoding GeluOp::encodeKernel() { return withAxis(*this, approximateCode(getApproximate())); }
Kernel GeluGradOp::getKernel() { return Kernel::GeluGrad; }
KernelEncoding GeluGradOp::encodeKernel() {
  return withAxis(*this, approximateCode(getApproximate()));
}

Kernel PadOp::getKernel() { return Kernel::Pad; }
KernelEncoding PadOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints.assign(getPads().begin(), getPads().end());
  return encoding;
}

Kernel TileOp::getKernel() { return Kernel::Tile; }
KernelEncoding TileOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints.assign(getRepeats().begin(), getRepeats().end());
  return encoding;
}

Kernel CumSumOp::getKernel() { return Kernel::CumSum; }
KernelEncoding CumSumOp::encodeKernel() {
  KernelEncoding encoding = operandsInOrder(*this, getKernel());
  encoding.ints = {static_cast<int64_t>(getAxis()), getExclusive(), getReverse()};
  return encoding;
}

} // namespace fsdp::nn
