//===- NNBase.td - nn dialect definition and shared constraints -*- tablegen -*-===//
//
// The `nn` dialect: value-semantic tensor compute at ONNX granularity with
// static shapes. This file declares the dialect and the type constraints the
// op families share; each family lives in its own NN<Family>Ops.td.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_BASE_TD
#define FSDP_NN_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "dialects/nn/NNInterfaces.td"

def NN_Dialect : Dialect {
  let name = "nn";
  let cppNamespace = "::fsdp::nn";
  let summary = "Static-shape tensor compute at ONNX granularity";
  let description = [{
    The `nn` dialect is what the frontends import into and what autodiff,
    sharding and memory planning reason about. Ops are value-semantic and
    statically shaped; each one corresponds to an ONNX operator (or to a
    canonical form of one: Squeeze, Unsqueeze, Flatten and Reshape all become
    `nn.reshape` once their shapes are known). Shape computations in the
    source graph are folded at import, so no op here computes a shape.

    Why an own dialect rather than `tosa` or `linalg`: ONNX semantics
    (numpy broadcasting, Gemm's alpha/beta, LayerNormalization's stash
    outputs, SoftmaxCrossEntropyLoss with ignore_index and weights) map onto
    these ops one to one, so gradients can be written per op against the
    source model's meaning, and the runtime executes each op with one kernel.

    Element types follow ONNX: `iN` is a signed integer, `uiN` an unsigned
    one, `i1` is bool; floats are f16, bf16, f32 and f64.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

class NN_Op<string mnemonic, list<Trait> traits = []>
    : Op<NN_Dialect, mnemonic, !listconcat(traits, [Pure])>;

/// Ops that can differentiate themselves (dialects/nn/gradients/).
def NN_Differentiable : DeclareOpInterfaceMethods<NN_GradientOpInterface>;

// Statically shaped tensors of the element types ONNX uses.
def NN_Float : AnyTypeOf<[F16, BF16, F32, F64]>;
def NN_SignedInt : AnyTypeOf<[I8, I16, I32, I64]>;
def NN_UnsignedInt : AnyTypeOf<[UI8, UI16, UI32, UI64]>;
def NN_Bool : I<1>;
def NN_Index : AnyTypeOf<[I32, I64]>;

def NN_AnyTensor : StaticShapeTensorOf<[NN_Float, NN_SignedInt, NN_UnsignedInt, NN_Bool]>;
def NN_NumericTensor : StaticShapeTensorOf<[NN_Float, NN_SignedInt, NN_UnsignedInt]>;
def NN_SignedTensor : StaticShapeTensorOf<[NN_Float, NN_SignedInt]>;
def NN_FloatTensor : StaticShapeTensorOf<[NN_Float]>;
def NN_BoolTensor : StaticShapeTensorOf<[NN_Bool]>;
def NN_IndexTensor : StaticShapeTensorOf<[NN_Index]>;

#endif // FSDP_NN_BASE_TD
