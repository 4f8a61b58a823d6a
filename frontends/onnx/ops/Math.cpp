//===- Math.cpp - import of the unary math ops torch 2.x exports ----------===//
//
// Gelu (opset 20, both approximations torch has: F.gelu and Gemma's
// gelu_pytorch_tanh), Reciprocal (every decomposed RMSNorm), Cos and Sin
// (rotary tables computed in the graph from inv_freq), Softplus. Each is
// one nn op; legacy exports' Erf-based GELU still imports as Erf, Mul and
// Add through Elementwise.cpp.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

template <typename OpTy> LogicalResult importFloatUnary(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  if (!isa<FloatType>(input->element()))
    return ctx.error("input must be a float tensor");
  return ctx.setOutput(0, ctx.builder().create<OpTy>(ctx.loc(), input->type, input->value));
}

} // namespace

LogicalResult importGelu(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"approximate"})))
    return failure();
  std::string approximate = ctx.stringAttr("approximate", "none");
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input) || ctx.failed())
    return failure();
  if (approximate != "none" && approximate != "tanh")
    return ctx.error("approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  if (!isa<FloatType>(input->element()))
    return ctx.error("input must be a float tensor");
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::GeluOp>(ctx.loc(), input->type, input->value,
                                               b.getStringAttr(approximate)));
}

LogicalResult importReciprocal(ImportContext &ctx) {
  return importFloatUnary<nn::ReciprocalOp>(ctx);
}
LogicalResult importCos(ImportContext &ctx) { return importFloatUnary<nn::CosOp>(ctx); }
LogicalResult importSin(ImportContext &ctx) { return importFloatUnary<nn::SinOp>(ctx); }
LogicalResult importSoftplus(ImportContext &ctx) { return importFloatUnary<nn::SoftplusOp>(ctx); }

} // namespace fsdp::onnx
