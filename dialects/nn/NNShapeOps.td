//===- NNShapeOps.td - data movement ---------------------------*- tablegen -*-===//
//
// Ops that move or select data without arithmetic: reshape (which also
// stands for Squeeze, Unsqueeze and Flatten), transpose, concat, split,
// slice, expand, gather and the triangular mask. All shape arguments are
// static attributes (or the result type): the importer folds ONNX's shape
// tensors, so nothing here depends on run-time values for its shape.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_SHAPE_OPS_TD
#define FSDP_NN_SHAPE_OPS_TD

include "dialects/nn/NNBase.td"

def NN_ReshapeOp : NN_Op<"reshape", [SameOperandsAndResultElementType, NN_Differentiable,
                                     NN_Kernel]> {
  let summary = "row-major reshape (ONNX Reshape, Squeeze, Unsqueeze, Flatten)";
  let description = [{
    Reinterprets `input` in row-major order with the result's shape; the
    element count is unchanged.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_TransposeOp : NN_Op<"transpose", [SameOperandsAndResultElementType, NN_Differentiable,
                                         NN_EncodedKernel]> {
  let summary = "permute dimensions (ONNX Transpose)";
  let description = [{
    Result dimension `i` is input dimension `perm[i]`.
  }];
  let arguments = (ins NN_AnyTensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_ConcatOp : NN_Op<"concat", [SameOperandsAndResultElementType, NN_Differentiable,
                                   NN_EncodedKernel]> {
  let summary = "concatenate along an axis (ONNX Concat)";
  let arguments = (ins Variadic<NN_AnyTensor>:$inputs, I64Attr:$axis);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_SplitOp : NN_Op<"split", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "split along an axis (ONNX Split)";
  let description = [{
    Result `i` takes the next `result(i).shape[axis]` slices of `input`
    along `axis`; the sizes add up to the input's.
  }];
  let arguments = (ins NN_AnyTensor:$input, I64Attr:$axis);
  let results = (outs Variadic<NN_AnyTensor>:$results);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_SliceOp : NN_Op<"slice", [SameOperandsAndResultElementType, NN_Differentiable,
                                 NN_EncodedKernel]> {
  let summary = "strided slice of every dimension (ONNX Slice)";
  let description = [{
    One `start`, `end` and nonzero `step` per dimension, already clamped as
    ONNX specifies: for a positive step `0 <= start, end <= dim`; for a
    negative one `0 <= start <= dim - 1` and `-1 <= end <= dim - 1`, where
    `end = -1` means "through index 0". Result dimension `i` has
    `max(0, ceil((end - start) / step))` elements.
  }];
  let arguments = (ins NN_AnyTensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$ends, DenseI64ArrayAttr:$steps);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_ExpandOp : NN_Op<"expand", [SameOperandsAndResultElementType, NN_Differentiable,
                                   NN_Kernel]> {
  let summary = "broadcast to a larger shape (ONNX Expand)";
  let description = [{
    Broadcasts `input` to the result shape, which must be the numpy
    broadcast of the input shape with itself.
  }];
  let arguments = (ins NN_AnyTensor:$input);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
  let hasVerifier = 1;
}

def NN_GatherOp : NN_Op<"gather", [NN_Differentiable, NN_EncodedKernel]> {
  let summary = "gather slices along an axis (ONNX Gather; embeddings)";
  let description = [{
    Result shape is `data[:axis] + indices + data[axis+1:]`. Negative
    indices count from the end of `axis`; out-of-range indices are a
    run-time error in the runtime, not undefined behaviour.
  }];
  let arguments = (ins NN_AnyTensor:$data, NN_IndexTensor:$indices, I64Attr:$axis);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$data `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def NN_TriluOp : NN_Op<"trilu", [AllTypesMatch<["input", "result"]>, NN_Differentiable,
                                 NN_EncodedKernel]> {
  let summary = "keep the upper or lower triangle (ONNX Trilu)";
  let description = [{
    Over the last two dimensions, keeps elements with `j - i >= k` (upper)
    or `j - i <= k` (lower) and zeroes the rest.
  }];
  let arguments = (ins NN_AnyTensor:$input, BoolAttr:$upper,
                       DefaultValuedAttr<I64Attr, "0">:$k);
  let results = (outs NN_AnyTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

#endif // FSDP_NN_SHAPE_OPS_TD
