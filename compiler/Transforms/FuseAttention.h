//===- FuseAttention.h - the exporters' attention as one nn.attention -----===//
//
// fsdp-fuse-attention (Passes.td) rewrites each decomposed attention of
// @forward (softmax(q kᵀ · scale + mask) v, in the forms torch's
// exporters and hand-written models produce) into one nn.attention, and
// leaves every near miss as it is with the reason recorded, so that
// --emit=summary and the report can say how many attentions were fused
// and why the others were not. Running it before autodiff means the
// gradient is nn.attention_grad and no score tensor is ever saved.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_FUSEATTENTION_H
#define FSDP_COMPILER_TRANSFORMS_FUSEATTENTION_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <utility>
#include <vector>

namespace fsdp {

struct AttentionFusion {
  int fused = 0;
  /// A softmax-then-matmul chain left unfused, where it is and why.
  std::vector<std::pair<mlir::Location, std::string>> unfused;
};

/// What a mask may be computed from. nn.attention gives its mask no
/// gradient, so a mask computed from a parameter that gets one is a near
/// miss; a frozen parameter (--freeze), or any value in a plan without a
/// backward (--mode=forward), needs none.
struct AttentionFusionOptions {
  /// The --freeze regex: the parameters it matches get no gradient.
  std::string freeze;
  /// Whether the plan has a backward at all.
  bool gradients = true;
};

/// Fuses in `func`.
AttentionFusion fuseAttention(mlir::func::FuncOp func, const AttentionFusionOptions &options = {});

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_FUSEATTENTION_H
