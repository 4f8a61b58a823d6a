// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full})' | FileCheck %s --check-prefix=FULL
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=grad-op})' | FileCheck %s --check-prefix=GRADOP
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=none})' | FileCheck %s --check-prefix=NONE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=4 shard=hybrid:2})' | FileCheck %s --check-prefix=HYBRID
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 param-dtype=bf16 reduce-dtype=bf16})' | FileCheck %s --check-prefix=BF16
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{weight-decay=0.1 no-decay=bias$},fsdp-shard-parameters{world-size=3})' | FileCheck %s --check-prefix=ADAMW
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 wrap=size:20})' | FileCheck %s --check-prefix=SIZE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 wrap=regex:layers\.[0-9]})' | FileCheck %s --check-prefix=REGEX

// fsdp-shard-parameters (compiler/Transforms/ShardParameters.cpp) on a
// two-block MLP whose head bias is outside every block (the root unit).
// Each unit becomes one flat shard argument (fsdp.unit describes the
// layout); collectives sit where the strategy puts them.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %b0: tensor<4xf32> {nn.param = "layers.0.bias"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %b: tensor<4xf32> {nn.param = "head.bias"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.add %0, %b0 : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %2 = nn.relu %1 : tensor<2x4xf32>
  %3 = nn.matmul %2, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %4 = nn.add %3, %b : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %5 = nn.reduce_sum %4 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %5 : tensor<f32>
}

// Shards of 1/2 of each padded flat buffer; layers.0's bias starts at a
// 64-byte boundary (element 16) after its weight.
// FULL-LABEL: func.func @train_step(
// FULL-SAME: %[[ROOT:[a-z0-9]+]]: tensor<16xf32> {fsdp.unit = {flat_numel = 4 : i64, group_size = 2 : i64, name = "root", padded_numel = 32 : i64, params = [{name = "head.bias", offset = 0 : i64, type = tensor<4xf32>}]}}
// FULL-SAME: %[[L0:[a-z0-9]+]]: tensor<10xf32> {fsdp.unit = {flat_numel = 20 : i64, group_size = 2 : i64, name = "layers.0", padded_numel = 20 : i64, params = [{name = "layers.0.w", offset = 0 : i64, type = tensor<4x4xf32>}, {name = "layers.0.bias", offset = 16 : i64, type = tensor<4xf32>}]}}
// FULL-SAME: %[[L1:[a-z0-9]+]]: tensor<8xf32> {fsdp.unit = {{.*}} name = "layers.1"
// FULL-SAME: -> (tensor<f32> {nn.output = "loss"}, tensor<16xf32> {nn.update = "root"}, tensor<10xf32> {nn.update = "layers.0"}, tensor<8xf32> {nn.update = "layers.1"})
// Forward: each unit gathered right before its first use.
// FULL: %[[G0:[0-9]+]] = fsdp.all_gather %[[L0]] {group_size = 2 : i64, groups = array<i64: 0, 1>} : tensor<10xf32> -> tensor<20xf32>
// FULL-NEXT: fsdp.flat_view %[[G0]] {offset = 0 : i64} : tensor<20xf32> -> tensor<4x4xf32>
// FULL-NEXT: fsdp.flat_view %[[G0]] {offset = 16 : i64} : tensor<20xf32> -> tensor<4xf32>
// FULL-NEXT: nn.matmul
// FULL: %[[G1:[0-9]+]] = fsdp.all_gather %[[L1]]
// FULL-NEXT: %[[W1F:[0-9]+]] = fsdp.flat_view %[[G1]]
// FULL-NEXT: nn.matmul %{{[0-9]+}}, %[[W1F]]
// The root unit, gathered once, is gathered in place (its shard padded to
// 64 bytes so every rank's chunk of the persistent buffer is aligned).
// FULL: fsdp.all_gather %[[ROOT]] {group_size = 2 : i64, groups = array<i64: 0, 1>, persistent} : tensor<16xf32> -> tensor<32xf32>
// FULL: nn.reduce_sum
// Backward: the root unit's gradient is reduced first; layers.1 is
// gathered again (its backward reads W1^T); its forward copy is not read
// after the forward.
// FULL: fsdp.flatten
// FULL-NEXT: fsdp.reduce_scatter %{{[0-9]+}} {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<32xf32> -> tensor<16xf32>
// FULL: %[[G1B:[0-9]+]] = fsdp.all_gather %[[L1]]
// FULL-NEXT: %[[W1B:[0-9]+]] = fsdp.flat_view %[[G1B]]
// FULL-NEXT: nn.transpose %[[W1B]]
// FULL: fsdp.flatten
// FULL-NEXT: fsdp.reduce_scatter %{{[0-9]+}} {{.*}} : tensor<16xf32> -> tensor<8xf32>
// layers.0's backward reads no parameter: no second gather; both of its
// gradients are packed at their offsets.
// FULL-NOT: fsdp.all_gather
// FULL: fsdp.flatten %{{[0-9]+}}, %{{[0-9a-z_]+}} {offsets = array<i64: 0, 16>} : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<20xf32>
// FULL-NEXT: fsdp.reduce_scatter {{.*}} : tensor<20xf32> -> tensor<10xf32>
// The loss is the mean over ranks; one SGD update per flat shard.
// FULL: %[[LOSS:[0-9]+]] = fsdp.all_reduce %{{[0-9]+}} {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<f32>
// FULL-NEXT: nn.sgd %[[ROOT]]
// FULL-NEXT: nn.sgd %[[L0]]
// FULL-NEXT: nn.sgd %[[L1]]
// FULL-NEXT: return %[[LOSS]]

// grad-op: one gather per unit, its copy read by forward and backward.
// GRADOP-LABEL: func.func @train_step(
// GRADOP-COUNT-3: fsdp.all_gather
// GRADOP-NOT: fsdp.all_gather
// GRADOP: return

// none: replicated flat buffers read in place, gradients all-reduced.
// NONE-LABEL: func.func @train_step(
// NONE-SAME: tensor<4xf32> {fsdp.unit = {flat_numel = 4 : i64, group_size = 1 : i64, name = "root"
// NONE-SAME: tensor<20xf32> {fsdp.unit = {flat_numel = 20 : i64, group_size = 1 : i64, name = "layers.0"
// NONE-NOT: fsdp.all_gather
// NONE-NOT: fsdp.reduce_scatter
// NONE: fsdp.all_reduce %{{[0-9]+}} {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<4xf32>
// NONE: fsdp.all_reduce %{{[0-9]+}} {{.*}} : tensor<16xf32>
// NONE: fsdp.all_reduce %{{[0-9]+}} {{.*}} : tensor<20xf32>
// NONE: fsdp.all_reduce %{{[0-9]+}} {{.*}} : tensor<f32>

// hybrid:2 at world size 4: gathers and reduce-scatters inside {0,1} and
// {2,3}, then an all-reduce across the replicas {0,2} and {1,3}.
// HYBRID-LABEL: func.func @train_step(
// HYBRID: fsdp.all_gather %{{.+}} {group_size = 2 : i64, groups = array<i64: 0, 1, 2, 3>} : tensor<10xf32> -> tensor<20xf32>
// HYBRID: fsdp.reduce_scatter %{{[0-9]+}} {group_size = 2 : i64, groups = array<i64: 0, 1, 2, 3>, reduction = "avg"} : tensor<32xf32> -> tensor<16xf32>
// HYBRID-NEXT: fsdp.all_reduce %{{[0-9]+}} {group_size = 2 : i64, groups = array<i64: 0, 2, 1, 3>, reduction = "avg"} : tensor<16xf32>
// HYBRID: fsdp.all_reduce %{{[0-9]+}} {group_size = 4 : i64, groups = array<i64: 0, 1, 2, 3>, reduction = "avg"} : tensor<f32>

// Mixed precision: bf16 copies are gathered and widened for compute;
// gradients are narrowed to bf16 for the reduction and widened for the
// fp32 master update.
// BF16-LABEL: func.func @train_step(
// BF16: %[[LOW:[0-9]+]] = nn.cast %{{.+}} : tensor<10xf32> to tensor<10xbf16>
// BF16-NEXT: %[[GATHERED:[0-9]+]] = fsdp.all_gather %[[LOW]] {{.*}} : tensor<10xbf16> -> tensor<20xbf16>
// BF16-NEXT: nn.cast %[[GATHERED]] : tensor<20xbf16> to tensor<20xf32>
// BF16: %[[NARROW:[0-9]+]] = nn.cast %{{[0-9]+}} : tensor<4xf32> to tensor<4xbf16>
// BF16-NEXT: %[[REDUCED:[0-9]+]] = fsdp.reduce_scatter %[[NARROW]] {{.*}} : tensor<4xbf16> -> tensor<2xbf16>
// BF16-NEXT: nn.cast %[[REDUCED]] : tensor<2xbf16> to tensor<2xf32>

// AdamW with decay-exempt biases at world size 3: layers.0 splits into two
// flat buffers (one optimizer setting each, as a FlatParameter needs),
// padded to a multiple of 3, with sharded moments named after the unit.
// The root unit, gathered in place, pads its shards to 64 bytes.
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: tensor<16xf32> {fsdp.unit = {flat_numel = 4 : i64, group_size = 3 : i64, name = "root", padded_numel = 48 : i64
// ADAMW-SAME: tensor<16xf32> {nn.state = "root.exp_avg"}
// ADAMW-SAME: tensor<6xf32> {fsdp.unit = {flat_numel = 16 : i64, group_size = 3 : i64, name = "layers.0", padded_numel = 18 : i64
// ADAMW-SAME: tensor<2xf32> {fsdp.unit = {flat_numel = 4 : i64, group_size = 3 : i64, name = "layers.0.group1", padded_numel = 6 : i64, params = [{name = "layers.0.bias"
// ADAMW-SAME: tensor<2xf32> {nn.state = "layers.0.group1.exp_avg_sq"}
// ADAMW: nn.adamw {{.*}} weight_decay = 0.000000e+00 {{.*}} : tensor<16xf32>
// ADAMW: nn.adamw {{.*}} weight_decay = 1.000000e-01 {{.*}} : tensor<6xf32>
// ADAMW: nn.adamw {{.*}} weight_decay = 0.000000e+00 {{.*}} : tensor<2xf32>

// --wrap=size:20: consecutive parameters until a unit holds 20 elements;
// nothing is left for the root unit, which then has no flat buffer.
// SIZE-LABEL: func.func @train_step(
// SIZE-NOT: name = "root"
// SIZE-SAME: name = "unit0", padded_numel = 20 : i64, params = [{name = "layers.0.w"{{.*}}{name = "layers.0.bias"
// SIZE-SAME: name = "unit1", padded_numel = 20 : i64, params = [{name = "layers.1.w"{{.*}}{name = "head.bias"

// --wrap=regex:RE: a unit per distinct matched text; the rest is the root.
// REGEX-LABEL: func.func @train_step(
// REGEX-SAME: name = "root", padded_numel = 32 : i64
// REGEX-SAME: name = "layers.0", padded_numel = 20 : i64
// REGEX-SAME: name = "layers.1", padded_numel = 16 : i64
