//===- NNOps.td - all nn ops -----------------------------------*- tablegen -*-===//
//
// The single TableGen root of the nn dialect: it includes each op family so
// one generated header declares every op.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_NN_OPS_TD
#define FSDP_NN_OPS_TD

include "dialects/nn/NNBase.td"
include "dialects/nn/NNElementwiseOps.td"
include "dialects/nn/NNLinearAlgebraOps.td"
include "dialects/nn/NNNormalizationOps.td"
include "dialects/nn/NNAttentionOps.td"
include "dialects/nn/NNReductionOps.td"
include "dialects/nn/NNLossOps.td"
include "dialects/nn/NNShapeOps.td"
include "dialects/nn/NNMiscOps.td"
include "dialects/nn/NNGradientOps.td"
include "dialects/nn/NNOptimizerOps.td"
include "dialects/nn/NNFusedOps.td"
// ops of torch 2.x exports.
include "dialects/nn/NNTorchExportOps.td"

#endif // FSDP_NN_OPS_TD
