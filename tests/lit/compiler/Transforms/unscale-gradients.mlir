// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-build-train-step{loss-scale=true},fsdp-apply-optimizer,fsdp-shard-parameters{world-size=2 param-dtype=f16 reduce-dtype=f16},fsdp-unscale-gradients)' | FileCheck %s --check-prefix=FULL
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-build-train-step{loss-scale=true},fsdp-apply-optimizer{optimizer=sgd momentum=0.9},fsdp-shard-parameters{world-size=1 param-dtype=f16})' | FileCheck %s --check-prefix=NOUNSCALE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-build-train-step{loss-scale=true},fsdp-apply-optimizer{optimizer=sgd momentum=0.9},fsdp-shard-parameters{world-size=1 param-dtype=f16},fsdp-unscale-gradients)' | FileCheck %s --check-prefix=ONE

// fsdp-unscale-gradients (compiler/Transforms/UnscaleGradients.cpp) on a
// two-block MLP trained in fp16 with dynamic loss scaling. The backward
// pass starts from the nn.loss_scale argument (fsdp-build-train-step's
// loss-scale); the parameters are rounded through f16 before the compute;
// each unit's reduced (f16) gradient shard, back in f32, is multiplied by
// the new nn.inv_loss_scale argument; its non-finite elements (u - u is
// NaN) make the unit's flag, the flags combine with nn.max and, at world
// size 2, one fsdp.all_reduce sum; every update skips on the flag, which
// the step returns as output "found_inf". Without the pass (NOUNSCALE) the
// updates read the scaled gradients and have no skip_if; at world size one
// (ONE) there is no all-reduce of the flag, and SGD's momentum buffer
// stays the operand before skip_if.

// FULL-LABEL: func.func @train_step(
// FULL-SAME: %[[SCALE:[a-z0-9]+]]: tensor<f32> {nn.loss_scale}
// FULL-SAME: %[[INV:[a-z0-9]+]]: tensor<f32> {nn.inv_loss_scale})
// FULL-SAME: tensor<f32> {nn.found_inf, nn.output = "found_inf"})
// FULL: nn.cast %{{.+}} : tensor<{{[0-9]+}}xf32> to tensor<{{[0-9]+}}xf16>
// FULL: fsdp.reduce_scatter %{{.+}} : tensor<{{[0-9]+}}xf16> -> tensor<{{[0-9]+}}xf16>
// FULL: %[[G0:[0-9]+]] = nn.cast %{{.+}} : tensor<2xf16> to tensor<2xf32>
// FULL-NEXT: %[[U0:[0-9]+]] = nn.mul %[[G0]], %[[INV]]
// FULL-NEXT: %[[D0:[0-9]+]] = nn.sub %[[U0]], %[[U0]]
// FULL-NEXT: %[[N0:[0-9]+]] = nn.is_nan %[[D0]]
// FULL-NEXT: %[[C0:[0-9]+]] = nn.cast %[[N0]]
// FULL-NEXT: %[[F0:[0-9]+]] = nn.reduce_max %[[C0]] {axes = array<i64: 0>, keepdims = false}
// FULL: nn.mul %{{.+}}, %[[INV]] : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// FULL: nn.mul %{{.+}}, %[[INV]] : (tensor<10xf32>, tensor<f32>) -> tensor<10xf32>
// FULL: %[[MAX0:[0-9]+]] = nn.max %{{[0-9]+}}, %{{[0-9]+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FULL-NEXT: %[[MAX:[0-9]+]] = nn.max %[[MAX0]], %{{[0-9]+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// FULL-NEXT: %[[FOUND:[0-9]+]] = fsdp.all_reduce %[[MAX]] {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "sum"} : tensor<f32>
// FULL-NEXT: nn.adamw %{{.+}}, %[[U0]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} skip_if(%[[FOUND]] : tensor<f32>)
// FULL-NEXT: nn.adamw {{.+}} skip_if(%[[FOUND]] : tensor<f32>)
// FULL-NEXT: nn.adamw {{.+}} skip_if(%[[FOUND]] : tensor<f32>)
// FULL: return {{.+}}, %[[FOUND]] :

// NOUNSCALE-LABEL: func.func @train_step(
// NOUNSCALE-SAME: tensor<f32> {nn.loss_scale}
// NOUNSCALE-NOT: nn.inv_loss_scale
// NOUNSCALE-NOT: skip_if
// NOUNSCALE: return

// ONE-LABEL: func.func @train_step(
// ONE-NOT: fsdp.all_reduce
// ONE: nn.sgd %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} skip_if(%{{.+}} : tensor<f32>)
// ONE-SAME: -> (tensor<{{[0-9]+}}xf32>, tensor<{{[0-9]+}}xf32>)
// ONE: return
func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %b0: tensor<4xf32> {nn.param = "layers.0.bias"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %b: tensor<4xf32> {nn.param = "head.bias"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %b0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = nn.relu %1 : tensor<2x4xf32>
  %3 = nn.matmul %2, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = nn.add %3, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %5 = nn.reduce_sum %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}
