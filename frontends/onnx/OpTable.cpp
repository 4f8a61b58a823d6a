//===- OpTable.cpp - the supported ONNX operators -------------------------===//
//
// The one list of what the ONNX frontend imports: operator, opset range and
// handler. The importer dispatches through it, `fsdp-opt --list-ops` prints
// it, and docs/ops.md's table is generated from that output (a test checks
// they agree). An operator whose meaning changed before the range starts is
// refused rather than guessed at.
//
// How ranges end: every version of each operator up to opset 28 (the newest
// ONNX 1.23 defines) was read from onnx.defs' schema history. Versions
// 18-28 that only add element types (float8, int4, float4, int2, float6:
// Cast, Identity, Shape, Constant, Reshape, Squeeze, Unsqueeze, Transpose,
// Dropout; bfloat16 for NegativeLogLikelihoodLoss) keep the handler, since
// unsupported element types are refused where they appear. Versions that
// changed meaning are implemented in the handlers: Split-18 num_outputs,
// ReduceMax/ReduceMean-18 axes as an input, ReduceMax-20 on bool,
// Cast-19/24 saturate and round_mode (float 8 only, so ignored). A range
// stops before the first version a handler does not implement. Of the
// exporter ops below, CastLike-19/24 add Cast's attributes, GatherND-12
// batch_dims, Range-27 float16/bfloat16 with stash_type (refused: Range
// folds int16-64, float and double), SplitToSequence-24 and
// ConstantOfShape-20+ only types.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/Importer.h"
#include "frontends/onnx/OpHandlers.h"

namespace fsdp::onnx {
namespace {

struct OpEntry {
  SupportedOp info;
  OpHandler handler;
};

const OpEntry kOpTable[] = {
    // Elementwise (numpy broadcasting).
    {{"", "Add", 7, 28, "numeric types"}, importAdd},
    {{"", "Sub", 7, 28, "numeric types"}, importSub},
    {{"", "Mul", 7, 28, "numeric types"}, importMul},
    {{"", "Div", 7, 28, "numeric types; integer division truncates"}, importDiv},
    {{"", "Pow", 7, 28, "exponent may have another numeric type"}, importPow},
    {{"", "Where", 9, 28, ""}, importWhere},
    {{"", "Neg", 6, 28, "float and signed integers"}, importNeg},
    {{"", "Relu", 6, 28, "float and signed integers"}, importRelu},
    {{"", "Exp", 6, 28, ""}, importExp},
    {{"", "Log", 6, 28, ""}, importLog},
    {{"", "Sqrt", 6, 28, ""}, importSqrt},
    {{"", "Erf", 9, 28, ""}, importErf},
    {{"", "Tanh", 6, 28, ""}, importTanh},
    {{"", "Sigmoid", 6, 28, ""}, importSigmoid},
    {{"", "Not", 1, 28, ""}, importNot},
    {{"", "Cast", 6, 28, "no string or float 8/4/6 types"}, importCast},
    {{"", "Identity", 1, 28, "tensors only"}, importIdentity},
    // Linear algebra.
    {{"", "MatMul", 1, 28, "numpy semantics, batch broadcasting"}, importMatMul},
    {{"", "Gemm", 7, 28, ""}, importGemm},
    // Normalization.
    {{"", "Softmax", 1, 28, "opset < 13 flattens to 2-D as specified"}, importSoftmax},
    {{"", "LogSoftmax", 1, 28, "opset < 13 flattens to 2-D as specified"}, importLogSoftmax},
    {{"", "LayerNormalization", 17, 28, "stash_type float"}, importLayerNormalization},
    // Reductions.
    {{"", "ReduceSum", 1, 28, "axes constant"}, importReduceSum},
    {{"", "ReduceMax", 1, 28, "bool from opset 20"}, importReduceMax},
    {{"", "ReduceMean", 1, 28, ""}, importReduceMean},
    // Losses.
    {{"", "SoftmaxCrossEntropyLoss", 12, 28, "weights, ignore_index, log_prob output"},
     importSoftmaxCrossEntropyLoss},
    {{"", "NegativeLogLikelihoodLoss", 12, 28, "weights, ignore_index"},
     importNegativeLogLikelihoodLoss},
    // Shapes and data movement (shape operands must fold to constants).
    {{"", "Shape", 1, 28, "folds to a constant"}, importShape},
    {{"", "Constant", 1, 28, "no string or sparse values"}, importConstant},
    {{"", "Reshape", 5, 28, "allowzero"}, importReshape},
    {{"", "Unsqueeze", 1, 28, ""}, importUnsqueeze},
    {{"", "Squeeze", 1, 28, ""}, importSqueeze},
    {{"", "Transpose", 1, 28, ""}, importTranspose},
    {{"", "Concat", 4, 28, ""}, importConcat},
    {{"", "Split", 2, 28, "num_outputs (opset 18)"}, importSplit},
    {{"", "Slice", 1, 28, "negative steps"}, importSlice},
    {{"", "Expand", 8, 28, ""}, importExpand},
    {{"", "Gather", 1, 28, "int32/int64 indices, negative indices"}, importGather},
    {{"", "Trilu", 14, 28, ""}, importTrilu},
    {{"", "Dropout", 7, 28, "ratio and training_mode constant"}, importDropout},
    // Structural and import-time ops of the dynamo exporter's graphs.
    // Sequences exist only between SplitToSequence and SequenceAt;
    // generators and GatherND fold on the host.
    {{"", "CastLike", 15, 28, "as Cast"}, importCastLike},
    {{"", "SplitToSequence", 11, 28, "read only by SequenceAt; at most 2^16 parts in a model"},
     importSplitToSequence},
    {{"", "SequenceAt", 11, 28, "constant position"}, importSequenceAt},
    {{"", "Range", 11, 28, "constant operands; folds; at most 2^24 elements in a model"},
     importRange},
    {{"", "ConstantOfShape", 9, 28, "constant shape"}, importConstantOfShape},
    {{"", "GatherND", 11, 28, "constant operands; folds"}, importGatherND},
    // ops of torch 2.x exports, up to onnx 1.23's opset 28.
    {{"", "Gelu", 20, 28, "approximate none and tanh"}, importGelu},
    {{"", "Reciprocal", 6, 28, ""}, importReciprocal},
    {{"", "Cos", 7, 28, ""}, importCos},
    {{"", "Sin", 7, 28, ""}, importSin},
    {{"", "Softplus", 1, 28, "ln(exp(x) + 1), no threshold"}, importSoftplus},
    {{"", "Pad", 2, 28, "constant mode; pads and axes constant; negative pads crop"}, importPad},
    {{"", "Tile", 6, 28, "repeats constant"}, importTile},
    {{"", "CumSum", 11, 28, "axis constant; exclusive, reverse"}, importCumSum},
    {{"", "RMSNormalization", 23, 28, "stash_type float; imported as its function body"},
     importRMSNormalization},
    // Attention-25 adds sliding windows; 23 and 24 map to nn.attention.
    {{"", "Attention", 23, 24,
      "as nn.attention; 3-D with head counts, GQA, bool/float mask, is_causal, past_key, "
      "nonpad_kv_seqlen; softcap and qk_matmul_output through the function body"},
     importAttention},
    // Comparisons, logic, float classes, max and min (torch 2.x masks and
    // SDPA's NaN guard): constant operands fold. Equal-19 adds strings
    // (refused as an element type); Max/Min-6 lacked broadcasting.
    {{"", "Equal", 7, 28, "bool result; constants fold"}, importEqual},
    {{"", "Less", 7, 28, "bool result; constants fold"}, importLess},
    {{"", "LessOrEqual", 12, 28, "bool result; constants fold"}, importLessOrEqual},
    {{"", "Greater", 7, 28, "bool result; constants fold"}, importGreater},
    {{"", "GreaterOrEqual", 12, 28, "bool result; constants fold"}, importGreaterOrEqual},
    {{"", "And", 7, 28, "bool; constants fold"}, importAnd},
    {{"", "Or", 7, 28, "bool; constants fold"}, importOr},
    {{"", "Xor", 7, 28, "bool; constants fold"}, importXor},
    {{"", "IsNaN", 9, 28, "float input"}, importIsNaN},
    {{"", "IsInf", 10, 28, "float input"}, importIsInf},
    {{"", "Max", 8, 28, "variadic; NaN propagates; ties split the gradient"}, importMax},
    {{"", "Min", 8, 28, "variadic; NaN propagates; ties split the gradient"}, importMin},
};

} // namespace

OpHandler findOpHandler(llvm::StringRef domain, llvm::StringRef opType,
                        int64_t opset, bool &knownOp) {
  knownOp = false;
  for (const OpEntry &entry : kOpTable) {
    if (domain != entry.info.domain || opType != entry.info.opType)
      continue;
    knownOp = true;
    if (opset >= entry.info.minOpset && opset <= entry.info.maxOpset)
      return entry.handler;
  }
  return nullptr;
}

std::vector<SupportedOp> supportedOps() {
  std::vector<SupportedOp> ops;
  for (const OpEntry &entry : kOpTable)
    ops.push_back(entry.info);
  return ops;
}

} // namespace fsdp::onnx
