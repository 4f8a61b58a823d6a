//===- OpHandlers.h - per-operator import functions -----------------------===//
//
// One function per ONNX operator, defined in the op-family files under ops/
// and listed with their opset ranges in OpTable.cpp. Each reads the current
// node through the ImportContext, builds nn ops and binds the node outputs.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_OPHANDLERS_H
#define FSDP_FRONTENDS_ONNX_OPHANDLERS_H

#include "frontends/onnx/ImportContext.h"

namespace fsdp::onnx {

using OpHandler = mlir::LogicalResult (*)(ImportContext &);

/// The handler for (domain, opType) at `opset`, or null. `knownOp` is set
/// when the operator exists in the table at some other opset.
OpHandler findOpHandler(llvm::StringRef domain, llvm::StringRef opType,
                        int64_t opset, bool &knownOp);

// ops/Elementwise.cpp
mlir::LogicalResult importAdd(ImportContext &ctx);
mlir::LogicalResult importSub(ImportContext &ctx);
mlir::LogicalResult importMul(ImportContext &ctx);
mlir::LogicalResult importDiv(ImportContext &ctx);
mlir::LogicalResult importPow(ImportContext &ctx);
mlir::LogicalResult importWhere(ImportContext &ctx);
mlir::LogicalResult importNeg(ImportContext &ctx);
mlir::LogicalResult importRelu(ImportContext &ctx);
mlir::LogicalResult importExp(ImportContext &ctx);
mlir::LogicalResult importLog(ImportContext &ctx);
mlir::LogicalResult importSqrt(ImportContext &ctx);
mlir::LogicalResult importErf(ImportContext &ctx);
mlir::LogicalResult importTanh(ImportContext &ctx);
mlir::LogicalResult importSigmoid(ImportContext &ctx);
mlir::LogicalResult importNot(ImportContext &ctx);
mlir::LogicalResult importCast(ImportContext &ctx);
mlir::LogicalResult importIdentity(ImportContext &ctx);

// ops/LinearAlgebra.cpp
mlir::LogicalResult importMatMul(ImportContext &ctx);
mlir::LogicalResult importGemm(ImportContext &ctx);

// ops/Normalization.cpp
mlir::LogicalResult importSoftmax(ImportContext &ctx);
mlir::LogicalResult importLogSoftmax(ImportContext &ctx);
mlir::LogicalResult importLayerNormalization(ImportContext &ctx);

// ops/Reduction.cpp
mlir::LogicalResult importReduceSum(ImportContext &ctx);
mlir::LogicalResult importReduceMax(ImportContext &ctx);
mlir::LogicalResult importReduceMean(ImportContext &ctx);

// ops/Loss.cpp
mlir::LogicalResult importSoftmaxCrossEntropyLoss(ImportContext &ctx);
mlir::LogicalResult importNegativeLogLikelihoodLoss(ImportContext &ctx);

// ops/Shape.cpp
mlir::LogicalResult importShape(ImportContext &ctx);
mlir::LogicalResult importReshape(ImportContext &ctx);
mlir::LogicalResult importUnsqueeze(ImportContext &ctx);
mlir::LogicalResult importSqueeze(ImportContext &ctx);
mlir::LogicalResult importTranspose(ImportContext &ctx);
mlir::LogicalResult importConcat(ImportContext &ctx);
mlir::LogicalResult importSplit(ImportContext &ctx);
mlir::LogicalResult importSlice(ImportContext &ctx);
mlir::LogicalResult importExpand(ImportContext &ctx);
mlir::LogicalResult importGather(ImportContext &ctx);
mlir::LogicalResult importTrilu(ImportContext &ctx);

// ops/Misc.cpp
mlir::LogicalResult importConstant(ImportContext &ctx);
mlir::LogicalResult importDropout(ImportContext &ctx);

// Structural and import-time ops of the dynamo exporter.
mlir::LogicalResult importCastLike(ImportContext &ctx);          // ops/Elementwise.cpp
mlir::LogicalResult importSplitToSequence(ImportContext &ctx);   // ops/Shape.cpp
mlir::LogicalResult importSequenceAt(ImportContext &ctx);        // ops/Shape.cpp
mlir::LogicalResult importGatherND(ImportContext &ctx);          // ops/Shape.cpp
mlir::LogicalResult importRange(ImportContext &ctx);             // ops/Misc.cpp
mlir::LogicalResult importConstantOfShape(ImportContext &ctx);   // ops/Misc.cpp

// ops of torch 2.x exports.
// ops/Math.cpp
mlir::LogicalResult importGelu(ImportContext &ctx);
mlir::LogicalResult importReciprocal(ImportContext &ctx);
mlir::LogicalResult importCos(ImportContext &ctx);
mlir::LogicalResult importSin(ImportContext &ctx);
mlir::LogicalResult importSoftplus(ImportContext &ctx);
// ops/DataMovement.cpp
mlir::LogicalResult importPad(ImportContext &ctx);
mlir::LogicalResult importTile(ImportContext &ctx);
mlir::LogicalResult importCumSum(ImportContext &ctx);
// ops/RmsNormalization.cpp
mlir::LogicalResult importRMSNormalization(ImportContext &ctx);
// ops/Attention.cpp
mlir::LogicalResult importAttention(ImportContext &ctx);

// ops/Comparison.cpp
mlir::LogicalResult importEqual(ImportContext &ctx);
mlir::LogicalResult importLess(ImportContext &ctx);
mlir::LogicalResult importLessOrEqual(ImportContext &ctx);
mlir::LogicalResult importGreater(ImportContext &ctx);
mlir::LogicalResult importGreaterOrEqual(ImportContext &ctx);
mlir::LogicalResult importAnd(ImportContext &ctx);
mlir::LogicalResult importOr(ImportContext &ctx);
mlir::LogicalResult importXor(ImportContext &ctx);
mlir::LogicalResult importIsNaN(ImportContext &ctx);
mlir::LogicalResult importIsInf(ImportContext &ctx);
mlir::LogicalResult importMax(ImportContext &ctx);
mlir::LogicalResult importMin(ImportContext &ctx);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_OPHANDLERS_H
