//===- NNInterfaces.td - interfaces of nn ops ------------------*- tablegen -*-===//
//
// GradientOpInterface: how an op differentiates itself. Reverse-mode
// autodiff (compiler/Autodiff/BuildTrainStep.cpp) walks the forward
// function backwards and asks each op, through this interface, for the
// gradients of its operands given the gradients of its results. Keeping the
// rule on the op (implemented in dialects/nn/gradients/, one file per op
// family) means a new op is differentiable the moment it says how, and the
// pass itself knows no op by name.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_INTERFACES_TD
#define FSDP_NN_INTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::fsdp::nn";
  let description = [{
    An op that can build the gradients of its operands. `resultGrads` has one
    entry per result: the gradient of the loss with respect to that result,
    or a null Value when the result does not reach the loss. The op appends
    one entry per operand to `operandGrads`: a value of the operand's exact
    type (broadcasting already summed out), or a null Value when the operand
    is not differentiable (integers, masks, indices) or gets no gradient.
    New ops are created with `builder` at its insertion point; failure means
    an error was emitted on the op (a form the rule does not support).
  }];
  let methods = [
    InterfaceMethod<
      "Builds the gradients of this op's operands from its results' gradients.",
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // FSDP_NN_INTERFACES_TD
