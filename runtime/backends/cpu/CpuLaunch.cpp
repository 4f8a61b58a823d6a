//===- CpuLaunch.cpp - plan kernels to CPU kernel calls -------------------===//
//
// The CPU backend's decoding of a planned instruction: one switch maps each
// plan kernel, with the operand and attribute layout its Kernels.def row
// documents, to its implementation in CpuKernels.h. Kept apart from the
// device (CpuDevice.cpp), which owns memory, streams and events, so the
// device's execution order and the kernel contract change independently.
//
// A kernel without a case is a build error: the switch has no `default:`
// and -Wswitch is an error in this file (the pragma below), so appending a
// value to plan.fbs's enum (and its row to Kernels.def) breaks this file
// until the CPU kernel exists. A plain switch rather than an X-macro over
// the table because the decodings differ per kernel (optional operands,
// attribute positions, kinds sharing one implementation) and read best
// side by side; the pragma rather than a CMake flag so the rule is visible
// where it applies. Codes beyond the enum (a plan from a newer compiler)
// fall out of the switch and are refused at run time.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuLaunch.h"

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/plan/plan_generated.h"

#include <optional>

#pragma GCC diagnostic error "-Wswitch"

namespace fsdp::rt {
namespace {

using plan::Kernel;

const TensorRef *optionalInput(const Launch &l, int i) {
  return i < l.numInputs && l.inputs[i].data ? &l.inputs[i] : nullptr;
}

cpu::Reduction reductionOf(int64_t code) {
  return code == 0 ? cpu::Reduction::None : code == 1 ? cpu::Reduction::Sum : cpu::Reduction::Mean;
}

std::optional<int64_t> ignoreIndexOf(const Launch &l) {
  return l.ints[1] ? std::optional<int64_t>(l.ints[2]) : std::nullopt;
}

} // namespace

Status launchCpuKernel(const Launch &l, uint64_t step) {
  const TensorRef *in = l.inputs, *out = l.outputs;
  switch (static_cast<Kernel>(l.kernel)) {
  case Kernel::Add: return cpu::binary(cpu::BinaryKind::Add, in[0], in[1], out[0]);
  case Kernel::Sub: return cpu::binary(cpu::BinaryKind::Sub, in[0], in[1], out[0]);
  case Kernel::Mul: return cpu::binary(cpu::BinaryKind::Mul, in[0], in[1], out[0]);
  case Kernel::Div: return cpu::binary(cpu::BinaryKind::Div, in[0], in[1], out[0]);
  case Kernel::Pow: return cpu::binary(cpu::BinaryKind::Pow, in[0], in[1], out[0]);
  case Kernel::Where: return cpu::where(in[0], in[1], in[2], out[0]);
  case Kernel::Neg: return cpu::unary(cpu::UnaryKind::Neg, in[0], out[0]);
  case Kernel::Relu: return cpu::unary(cpu::UnaryKind::Relu, in[0], out[0]);
  case Kernel::Exp: return cpu::unary(cpu::UnaryKind::Exp, in[0], out[0]);
  case Kernel::Log: return cpu::unary(cpu::UnaryKind::Log, in[0], out[0]);
  case Kernel::Sqrt: return cpu::unary(cpu::UnaryKind::Sqrt, in[0], out[0]);
  case Kernel::Erf: return cpu::unary(cpu::UnaryKind::Erf, in[0], out[0]);
  case Kernel::Tanh: return cpu::unary(cpu::UnaryKind::Tanh, in[0], out[0]);
  case Kernel::Sigmoid: return cpu::unary(cpu::UnaryKind::Sigmoid, in[0], out[0]);
  case Kernel::Not: return cpu::unary(cpu::UnaryKind::Not, in[0], out[0]);
  case Kernel::Cast: return cpu::cast(in[0], out[0]);
  case Kernel::MatMul:
    return cpu::matmul(in[0], in[1], out[0], l.numInts == 2 && l.ints[0] != 0,
                       l.numInts == 2 && l.ints[1] != 0);
  case Kernel::Gemm:
    return cpu::gemm(in[0], in[1], optionalInput(l, 2), l.floats[0], l.floats[1], l.ints[0] != 0,
                     l.ints[1] != 0, out[0]);
  case Kernel::Softmax: return cpu::softmax(in[0], l.ints[0], false, out[0]);
  case Kernel::LogSoftmax: return cpu::softmax(in[0], l.ints[0], true, out[0]);
  case Kernel::LayerNorm:
    return cpu::layerNorm(in[0], in[1], optionalInput(l, 2), l.ints[0], l.floats[0], out[0], out[1],
                          out[2]);
  case Kernel::ReduceSum: return cpu::reduce(cpu::ReduceKind::Sum, in[0], l.ints, l.numInts, out[0]);
  case Kernel::ReduceMax: return cpu::reduce(cpu::ReduceKind::Max, in[0], l.ints, l.numInts, out[0]);
  case Kernel::ReduceMean: return cpu::reduce(cpu::ReduceKind::Mean, in[0], l.ints, l.numInts, out[0]);
  case Kernel::SoftmaxCrossEntropy:
    return cpu::softmaxCrossEntropy(in[0], in[1], optionalInput(l, 2), reductionOf(l.ints[0]),
                                    ignoreIndexOf(l), out[0], out[1]);
  case Kernel::NllLoss:
    return cpu::nllLoss(in[0], in[1], optionalInput(l, 2), reductionOf(l.ints[0]), ignoreIndexOf(l),
                        out[0]);
  case Kernel::Copy: return cpu::copy(in[0], out[0]);
  case Kernel::Transpose: return cpu::transpose(in[0], l.ints, out[0]);
  case Kernel::Concat: return cpu::concat(in, l.numInputs, l.ints[0], out[0]);
  case Kernel::Split: return cpu::split(in[0], l.ints[0], out, l.numOutputs);
  case Kernel::Fused:
    return cpu::fusedElementwise(in, l.numInputs, l.ints, l.numInts, out, l.numOutputs);
  case Kernel::Flatten: return cpu::flatten(in, l.ints, l.numInputs, out[0]);
  case Kernel::Compare:
    if (l.ints[0] < 0 || l.ints[0] > 4)
      return Status::error(cat("compare: predicate code ", l.ints[0], " is not 0..4"));
    return cpu::compare(static_cast<cpu::ComparePredicate>(l.ints[0]), in[0], in[1], out[0]);
  case Kernel::Logical:
    if (l.ints[0] < 0 || l.ints[0] > 2)
      return Status::error(cat("logical: op code ", l.ints[0], " is not 0..2"));
    return cpu::logical(static_cast<cpu::LogicalKind>(l.ints[0]), in[0], in[1], out[0]);
  case Kernel::IsNaN: return cpu::isNaN(in[0], out[0]);
  case Kernel::IsInf: return cpu::isInf(in[0], l.ints[0] != 0, l.ints[1] != 0, out[0]);
  case Kernel::Max: return cpu::binary(cpu::BinaryKind::Max, in[0], in[1], out[0]);
  case Kernel::Min: return cpu::binary(cpu::BinaryKind::Min, in[0], in[1], out[0]);
  case Kernel::Slice: return cpu::slice(in[0], l.ints, l.ints + in[0].rank, out[0]);
  case Kernel::Expand: return cpu::expand(in[0], out[0]);
  case Kernel::Gather: return cpu::gather(in[0], in[1], l.ints[0], out[0]);
  case Kernel::Trilu: return cpu::trilu(in[0], l.ints[0] != 0, l.ints[1], out[0]);
  case Kernel::Dropout:
    return cpu::dropout(in[0], l.floats[0], l.ints[0] != 0, static_cast<uint64_t>(l.ints[1]), step,
                        out[0], out[1]);
  case Kernel::ReluGrad:
    return cpu::activationGrad(cpu::ActivationGradKind::Relu, in[0], in[1], out[0]);
  case Kernel::ErfGrad:
    return cpu::activationGrad(cpu::ActivationGradKind::Erf, in[0], in[1], out[0]);
  case Kernel::TanhGrad:
    return cpu::activationGrad(cpu::ActivationGradKind::Tanh, in[0], in[1], out[0]);
  case Kernel::SigmoidGrad:
    return cpu::activationGrad(cpu::ActivationGradKind::Sigmoid, in[0], in[1], out[0]);
  case Kernel::SoftmaxGrad: return cpu::softmaxGrad(in[0], in[1], l.ints[0], false, out[0]);
  case Kernel::LogSoftmaxGrad: return cpu::softmaxGrad(in[0], in[1], l.ints[0], true, out[0]);
  case Kernel::LayerNormGrad:
    return cpu::layerNormGrad(in[0], in[1], in[2], in[3], in[4], l.ints[0], out[0], out[1],
                              out[2]);
  case Kernel::GatherGrad: return cpu::gatherGrad(in[0], in[1], l.ints[0], out[0]);
  case Kernel::SliceGrad: return cpu::sliceGrad(in[0], l.ints, l.ints + out[0].rank, out[0]);
  case Kernel::SoftmaxCrossEntropyGrad:
    return cpu::softmaxCrossEntropyGrad(in[0], in[1], optionalInput(l, 2), in[3],
                                        reductionOf(l.ints[0]), ignoreIndexOf(l), out[0]);
  case Kernel::NllLossGrad:
    return cpu::nllLossGrad(in[0], optionalInput(l, 1), in[2], reductionOf(l.ints[0]),
                            ignoreIndexOf(l), out[0]);
  case Kernel::ReduceMaxGrad:
    return cpu::reduceMaxGrad(in[0], in[1], in[2], l.ints, l.numInts, out[0]);
  case Kernel::DropoutGrad: return cpu::dropoutGrad(in[0], in[1], l.floats[0], out[0]);
  case Kernel::AdamW:
    return cpu::adamw(in[0], in[1], in[2], in[3], in[4], in[5],
                      {l.floats[0], l.floats[1], l.floats[2], l.floats[3]}, out[0], out[1],
                      out[2]);
  case Kernel::Sgd: {
    const TensorRef *buffer = optionalInput(l, 2);
    return cpu::sgd(in[0], in[1], buffer, in[3], {l.floats[0], l.floats[1], l.ints[0] != 0},
                    out[0], buffer && l.numOutputs > 1 ? &out[1] : nullptr);
  }
  // ops of torch 2.x exports.
  case Kernel::Gelu:
    return cpu::math(l.ints[0] ? cpu::MathKind::GeluTanh : cpu::MathKind::Gelu, in[0], out[0]);
  case Kernel::Reciprocal: return cpu::math(cpu::MathKind::Reciprocal, in[0], out[0]);
  case Kernel::Cos: return cpu::math(cpu::MathKind::Cos, in[0], out[0]);
  case Kernel::Sin: return cpu::math(cpu::MathKind::Sin, in[0], out[0]);
  case Kernel::Softplus: return cpu::math(cpu::MathKind::Softplus, in[0], out[0]);
  case Kernel::GeluGrad: return cpu::geluGrad(l.ints[0] != 0, in[0], in[1], out[0]);
  case Kernel::Pad: return cpu::pad(in[0], in[1], l.ints, out[0]);
  case Kernel::Tile: return cpu::tile(in[0], out[0]);
  case Kernel::CumSum:
    return cpu::cumsum(in[0], l.ints[0], l.ints[1] != 0, l.ints[2] != 0, out[0]);
  case Kernel::AllGather:
  case Kernel::ReduceScatter:
  case Kernel::AllReduce:
    // The executor runs collectives through its communicator.
    return Status::error("collectives run through a communicator, not on the device");
  }
  return Status::error(cat("cpu: kernel ", l.kernel, " is not implemented"));
}

} // namespace fsdp::rt
