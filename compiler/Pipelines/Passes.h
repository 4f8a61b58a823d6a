//===- Passes.h - the compiler's stages as MLIR passes --------------------===//
//
// Each stage fsdp-opt runs on ONNX input is also a module pass, so .mlir
// input can run one stage alone under --pass-pipeline and lit tests can
// check exactly what it produced:
//   fsdp-attach-loss{xent=OUTPUT labels=LABELS}
//   fsdp-build-train-step{freeze=RE}
//   fsdp-apply-optimizer{optimizer=adamw|sgd beta1= beta2= eps= weight-decay=
//                        momentum= nesterov= no-decay=RE}
//   fsdp-recompute-activations{ckpt=blocks|selective}
//   fsdp-schedule-collectives{prefetch=K limit-all-gathers=L}
//   fsdp-fuse-elementwise (on func.func; run before a plan is emitted)
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_PASSES_H
#define FSDP_COMPILER_PIPELINES_PASSES_H

namespace fsdp {

/// Registers the passes above with MLIR's global pass registry.
void registerFsdpPasses();

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_PASSES_H
