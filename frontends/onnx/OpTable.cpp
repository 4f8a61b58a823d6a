//===- OpTable.cpp - the supported ONNX operators -------------------------===//
//
// The one list of what the ONNX frontend imports: operator, opset range and
// handler. The importer dispatches through it, `fsdp-opt --list-ops` prints
// it, and the README's table is generated from that output (a test checks
// they agree). Ranges end at 17, the newest opset ONNX 1.12 defines and the
// node tests cover; an operator whose meaning changed before the range
// starts is refused rather than guessed at.
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
    {{"", "Add", 7, 17, "numeric types"}, importAdd},
    {{"", "Sub", 7, 17, "numeric types"}, importSub},
    {{"", "Mul", 7, 17, "numeric types"}, importMul},
    {{"", "Div", 7, 17, "numeric types; integer division truncates"}, importDiv},
    {{"", "Pow", 7, 17, "exponent may have another numeric type"}, importPow},
    {{"", "Where", 9, 17, ""}, importWhere},
    {{"", "Neg", 6, 17, "float and signed integers"}, importNeg},
    {{"", "Relu", 6, 17, "float and signed integers"}, importRelu},
    {{"", "Exp", 6, 17, ""}, importExp},
    {{"", "Log", 6, 17, ""}, importLog},
    {{"", "Sqrt", 6, 17, ""}, importSqrt},
    {{"", "Erf", 9, 17, ""}, importErf},
    {{"", "Tanh", 6, 17, ""}, importTanh},
    {{"", "Sigmoid", 6, 17, ""}, importSigmoid},
    {{"", "Not", 1, 17, ""}, importNot},
    {{"", "Cast", 6, 17, "no string types"}, importCast},
    {{"", "Identity", 1, 17, "tensors only"}, importIdentity},
    // Linear algebra.
    {{"", "MatMul", 1, 17, "numpy semantics, batch broadcasting"}, importMatMul},
    {{"", "Gemm", 7, 17, ""}, importGemm},
    // Normalization.
    {{"", "Softmax", 1, 17, "opset < 13 flattens to 2-D as specified"}, importSoftmax},
    {{"", "LogSoftmax", 1, 17, "opset < 13 flattens to 2-D as specified"}, importLogSoftmax},
    {{"", "LayerNormalization", 17, 17, "stash_type float"}, importLayerNormalization},
    // Reductions.
    {{"", "ReduceSum", 1, 17, "axes constant"}, importReduceSum},
    {{"", "ReduceMax", 1, 17, ""}, importReduceMax},
    {{"", "ReduceMean", 1, 17, ""}, importReduceMean},
    // Losses.
    {{"", "SoftmaxCrossEntropyLoss", 12, 17, "weights, ignore_index, log_prob output"},
     importSoftmaxCrossEntropyLoss},
    {{"", "NegativeLogLikelihoodLoss", 12, 17, "weights, ignore_index"},
     importNegativeLogLikelihoodLoss},
    // Shapes and data movement (shape operands must fold to constants).
    {{"", "Shape", 1, 17, "folds to a constant"}, importShape},
    {{"", "Constant", 1, 17, "no string or sparse values"}, importConstant},
    {{"", "Reshape", 5, 17, "allowzero"}, importReshape},
    {{"", "Unsqueeze", 1, 17, ""}, importUnsqueeze},
    {{"", "Squeeze", 1, 17, ""}, importSqueeze},
    {{"", "Transpose", 1, 17, ""}, importTranspose},
    {{"", "Concat", 4, 17, ""}, importConcat},
    {{"", "Split", 2, 17, ""}, importSplit},
    {{"", "Slice", 1, 17, "negative steps"}, importSlice},
    {{"", "Expand", 8, 17, ""}, importExpand},
    {{"", "Gather", 1, 17, "int32/int64 indices, negative indices"}, importGather},
    {{"", "Trilu", 14, 17, ""}, importTrilu},
    {{"", "Dropout", 7, 17, "ratio and training_mode constant"}, importDropout},
    // issue 15 (helper C): ops of torch 2.x exports, up to onnx 1.23's opset 28.
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
