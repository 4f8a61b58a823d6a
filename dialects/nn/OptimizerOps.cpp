//===- OptimizerOps.cpp - verifiers of the optimizer updates --------------===//
//
// A parameter, its gradient, its state and the new values all share one
// type; hyperparameters must be in the ranges torch.optim accepts, so a
// typo'd plan is caught at compile time, not as NaNs at step 1.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;

static LogicalResult requireSameTypes(Operation *op, ValueRange values, Type type) {
  for (Value v : values)
    if (v.getType() != type)
      return op->emitOpError("parameter, gradient, state and results must all have type ")
             << type;
  return success();
}

LogicalResult AdamWOp::verify() {
  Type type = getParam().getType();
  // ODS checks found_inf's type (an f32 scalar); nothing else to relate.
  if (failed(requireSameTypes(*this, {getGrad(), getExpAvg(), getExpAvgSq()}, type)) ||
      failed(requireSameTypes(*this, getResults(), type)))
    return failure();
  double beta1 = getBeta1().convertToDouble(), beta2 = getBeta2().convertToDouble();
  if (!(beta1 >= 0.0 && beta1 < 1.0) || !(beta2 >= 0.0 && beta2 < 1.0))
    return emitOpError("betas must be in [0, 1)");
  if (!(getEps().convertToDouble() >= 0.0) || !(getWeightDecay().convertToDouble() >= 0.0))
    return emitOpError("eps and weight_decay must be non-negative");
  return success();
}

LogicalResult SgdOp::verify() {
  Type type = getParam().getType();
  if (failed(requireSameTypes(*this, {getGrad()}, type)) ||
      failed(requireSameTypes(*this, getResults(), type)))
    return failure();
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer && failed(requireSameTypes(*this, {getMomentumBuffer()}, type)))
    return failure();
  if (hasBuffer != static_cast<bool>(getNewMomentumBuffer()))
    return emitOpError("a momentum buffer operand needs a momentum buffer result and vice versa");
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0.0) || !(getWeightDecay().convertToDouble() >= 0.0))
    return emitOpError("momentum and weight_decay must be non-negative");
  if (hasBuffer != (momentum > 0.0))
    return emitOpError("a momentum buffer is needed exactly when momentum > 0");
  if (getNesterov() && !hasBuffer)
    return emitOpError("nesterov needs momentum");
  return success();
}

llvm::SmallVector<Value> fsdp::nn::updatedOperands(Operation *op) {
  if (auto adam = dyn_cast<AdamWOp>(op))
    return {adam.getParam(), adam.getExpAvg(), adam.getExpAvgSq()};
  if (auto sgd = dyn_cast<SgdOp>(op)) {
    if (Value buffer = sgd.getMomentumBuffer())
      return {sgd.getParam(), buffer};
    return {sgd.getParam()};
  }
  return {};
}

// nn.sgd's types as one function type, `(param, grad, lr[, buffer]) ->
// new_param` or `-> (new_param, new_buffer)`: the spelling it had before
// its second optional operand (skip_if) made the operand list need
// segment sizes, so existing IR reads and prints unchanged.
namespace fsdp::nn {

ParseResult parseSgdTypes(OpAsmParser &parser, Type &param, Type &grad, Type &lr, Type &buffer,
                          Type &newParam, Type &newBuffer) {
  llvm::SMLoc loc = parser.getCurrentLocation();
  FunctionType type;
  if (parser.parseType(type))
    return failure();
  if (type.getNumInputs() < 3 || type.getNumInputs() > 4 || type.getNumResults() < 1 ||
      type.getNumResults() > 2)
    return parser.emitError(loc, "expected (param, grad, lr[, momentum_buffer]) -> "
                                 "(new_param[, new_momentum_buffer])");
  param = type.getInput(0);
  grad = type.getInput(1);
  lr = type.getInput(2);
  buffer = type.getNumInputs() == 4 ? type.getInput(3) : Type();
  newParam = type.getResult(0);
  newBuffer = type.getNumResults() == 2 ? type.getResult(1) : Type();
  return success();
}

void printSgdTypes(OpAsmPrinter &printer, Operation *op, Type param, Type grad, Type lr,
                   Type buffer, Type newParam, Type newBuffer) {
  SmallVector<Type> inputs{param, grad, lr}, results{newParam};
  if (buffer)
    inputs.push_back(buffer);
  if (newBuffer)
    results.push_back(newBuffer);
  printer << FunctionType::get(op->getContext(), inputs, results);
}

} // namespace fsdp::nn
