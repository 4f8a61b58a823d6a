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
// KernelOpInterface: how an op lowers to a plan instruction. The plan
// emitter (compiler/Target/PlanEmitter.cpp) asks each op for its kernel and
// that kernel's operands and attributes in the layout of the kernel's row
// in runtime/plan/Kernels.def; the encodings live beside each dialect
// (dialects/nn/KernelEncoding.cpp, dialects/fsdp/KernelEncoding.cpp), so
// the emitter knows no op by name either, and a test checks that every row
// of the table has an op that produces it.
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

def NN_KernelOpInterface : OpInterface<"KernelOpInterface"> {
  let cppNamespace = "::fsdp::nn";
  let description = [{
    An op that runs as one plan kernel. `getKernel` names the kernel (each op
    lowers to exactly one); `encodeKernel` gives the instruction as that
    kernel's row in runtime/plan/Kernels.def lays it out: the operands in
    kernel order, with a null Value where an optional operand is absent (the
    plan writes kNoBuffer there), and the `ints` and `floats` attributes.
    The results are always the op's results in order. By default the
    operands are the op's own in order and there are no attributes; ops
    with attributes, absent operands or another order implement it.

    MatMul's transpose flags are the one attribute the op cannot know: a
    transpose folded into the matmul is the emitter's decision (its buffer
    view analysis), so the emitter adds them to MatMul's encoding.
  }];
  let methods = [
    StaticInterfaceMethod<"The plan kernel this op lowers to.",
      "::fsdp::plan::Kernel", "getKernel", (ins)>,
    InterfaceMethod<
      "This op's instruction in the layout of its kernel's Kernels.def row.",
      "::fsdp::nn::KernelEncoding", "encodeKernel", (ins), [{}], [{
        ::fsdp::nn::KernelEncoding encoding;
        encoding.kernel = ConcreteOp::getKernel();
        encoding.operands.assign($_op->operand_begin(), $_op->operand_end());
        return encoding;
      }]>,
  ];
}

/// Ops that run as one kernel on their operands in order, without
/// attributes, and ops whose encodeKernel says otherwise.
def NN_Kernel : DeclareOpInterfaceMethods<NN_KernelOpInterface>;
def NN_EncodedKernel : DeclareOpInterfaceMethods<NN_KernelOpInterface, ["encodeKernel"]>;

#endif // FSDP_NN_INTERFACES_TD
