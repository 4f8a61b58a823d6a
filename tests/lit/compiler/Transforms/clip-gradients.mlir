// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full align-shards},fsdp-clip-gradients{max-norm=1.0})' | FileCheck %s
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=none align-shards},fsdp-clip-gradients{max-norm=1.0})' | FileCheck %s --check-prefix=NONE
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=grad-op align-shards},fsdp-clip-gradients{max-norm=0.5 norm-type=inf})' | FileCheck %s --check-prefix=INF
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=4 shard=hybrid:2 align-shards},fsdp-clip-gradients{max-norm=1.0})' | FileCheck %s --check-prefix=HYBRID
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-clip-gradients)' | FileCheck %s --check-prefix=LOG
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full align-shards},fsdp-offload-state,fsdp-clip-gradients{max-norm=1.0})' | FileCheck %s --check-prefix=OFFLOAD

// fsdp-clip-gradients (compiler/Transforms/ClipGradients.cpp) on a two-block
// MLP whose 8x8 weights are one unit each (64 elements: a 32-element shard
// per rank at world size 2).

func.func @forward(%w0: tensor<8x8xf32> {nn.param = "layers.0.w"}, %w1: tensor<8x8xf32> {nn.param = "layers.1.w"}, %x: tensor<2x8xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %1 = nn.relu %0 : tensor<2x8xf32>
  %2 = nn.matmul %1, %w1 : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %3 = nn.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x8xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// --shard=full: each rank's sum of squares over its two gradient shards,
// in update order, one sum all-reduce over the world, the square root,
// then min(1, 1.0 / (norm + 1e-6)) scales both shards; the norm is the
// output grad_norm.
// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: -> (tensor<f32> {nn.output = "loss"}, tensor<32xf32> {nn.update = "layers.0"}, tensor<32xf32> {nn.update = "layers.1"}, tensor<f32> {nn.output = "grad_norm"})
// CHECK-DAG: %[[R1:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<64xf32> -> tensor<32xf32>
// CHECK-DAG: %[[R0:[0-9]+]] = fsdp.reduce_scatter {{.*}} : tensor<64xf32> -> tensor<32xf32>
// CHECK: %[[S0:[0-9]+]] = nn.mul %[[R0]], %[[R0]]
// CHECK-NEXT: %[[P0:[0-9]+]] = nn.reduce_sum %[[S0]] {axes = array<i64: 0>, keepdims = false} : (tensor<32xf32>) -> tensor<f32>
// CHECK-NEXT: %[[S1:[0-9]+]] = nn.mul %[[R1]], %[[R1]]
// CHECK-NEXT: %[[P1:[0-9]+]] = nn.reduce_sum %[[S1]]
// CHECK-NEXT: %[[P:[0-9]+]] = nn.add %[[P0]], %[[P1]]
// CHECK-NEXT: %[[T:[0-9]+]] = fsdp.all_reduce %[[P]] {group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "sum"} : tensor<f32>
// CHECK-NEXT: %[[N:[0-9]+]] = nn.sqrt %[[T]] : tensor<f32>
// CHECK-NEXT: %[[MAX:[a-z0-9_]+]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[EPS:[a-z0-9_]+]] = nn.constant dense<9.99999997E-7> : tensor<f32>
// CHECK-NEXT: %[[D:[0-9]+]] = nn.add %[[N]], %[[EPS]]
// CHECK-NEXT: %[[C:[0-9]+]] = nn.div %[[MAX]], %[[D]]
// CHECK-NEXT: %[[ONE:[a-z0-9_]+]] = nn.constant dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT: %[[K:[0-9]+]] = nn.min %[[C]], %[[ONE]]
// CHECK-NEXT: %[[G0:[0-9]+]] = nn.mul %[[R0]], %[[K]] : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
// CHECK-NEXT: %[[G1:[0-9]+]] = nn.mul %[[R1]], %[[K]]
// CHECK-NEXT: nn.sgd %{{.+}}, %[[G0]], %{{.+}}
// CHECK-NEXT: nn.sgd %{{.+}}, %[[G1]], %{{.+}}
// CHECK: return {{.*}}, %[[N]] :

// --shard=none: no all-reduce of the norm; rank r's chunk of each
// replicated gradient ([32r, 32r + 32), the shard --shard=full gives rank r)
// is summed, rank 0's partial first.
// NONE-LABEL: func.func @train_step(
// NONE-DAG: %[[R1:[0-9]+]] = fsdp.all_reduce {{.*}} : tensor<64xf32>
// NONE-DAG: %[[R0:[0-9]+]] = fsdp.all_reduce {{.*}} : tensor<64xf32>
// NONE: nn.slice %[[R0]] {ends = array<i64: 32>, starts = array<i64: 0>, steps = array<i64: 1>} : tensor<64xf32> to tensor<32xf32>
// NONE: nn.slice %[[R1]] {ends = array<i64: 32>, starts = array<i64: 0>
// NONE: %[[RANK0:[0-9]+]] = nn.add
// NONE: nn.slice %[[R0]] {ends = array<i64: 64>, starts = array<i64: 32>
// NONE: nn.slice %[[R1]] {ends = array<i64: 64>, starts = array<i64: 32>
// NONE: %[[RANK1:[0-9]+]] = nn.add
// NONE-NEXT: %[[T:[0-9]+]] = nn.add %[[RANK0]], %[[RANK1]]
// NONE-NEXT: nn.sqrt %[[T]]
// NONE-NOT: fsdp.all_reduce
// NONE: return

// norm-type=inf: the largest |g| (max of g and -g), a max all-reduce, no
// square root.
// INF-LABEL: func.func @train_step(
// INF: %[[NEG:[0-9]+]] = nn.neg %[[R:[0-9]+]] : tensor<32xf32>
// INF-NEXT: %[[ABS:[0-9]+]] = nn.max %[[R]], %[[NEG]]
// INF-NEXT: nn.reduce_max %[[ABS]] {axes = array<i64: 0>, keepdims = false}
// INF: %[[M:[0-9]+]] = nn.max %{{.+}}, %{{.+}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// INF-NEXT: %[[T:[0-9]+]] = fsdp.all_reduce %[[M]] {{{.*}}reduction = "max"} : tensor<f32>
// INF-NOT: nn.sqrt
// INF: nn.constant dense<5.000000e-01>
// INF: return {{.*}}, %[[T]] :

// hybrid:2 at world size 4: the norm is reduced within the shard groups
// {0,1} and {2,3} only (the replicas already agree on the gradients).
// HYBRID-LABEL: func.func @train_step(
// HYBRID: fsdp.all_reduce %{{.+}} {group_size = 2 : i64, groups = array<i64: 0, 1, 2, 3>, reduction = "sum"} : tensor<f32>

// max-norm=0 (--log-grad-norm) on a single-rank step: the norm of the
// whole gradients is output and nothing is scaled.
// LOG-LABEL: func.func @train_step(
// LOG-SAME: tensor<f32> {nn.output = "grad_norm"})
// LOG: %[[N:[0-9]+]] = nn.sqrt
// LOG-NOT: fsdp.all_reduce
// LOG-NOT: nn.min
// LOG: return {{.*}}, %[[N]] :

// --offload=cpu: the shards are scaled on the device, then copied to the
// host for the update.
// OFFLOAD-LABEL: func.func @train_step(
// OFFLOAD: %[[K:[0-9]+]] = nn.min
// OFFLOAD-NEXT: %[[G0:[0-9]+]] = nn.mul %{{.+}}, %[[K]]
// OFFLOAD-NEXT: %[[G1:[0-9]+]] = nn.mul %{{.+}}, %[[K]]
// OFFLOAD-NEXT: %[[H0:[0-9]+]] = fsdp.to_host %[[G0]]
// OFFLOAD-NEXT: nn.sgd %{{.+}}, %[[H0]]
// OFFLOAD-NEXT: %[[H1:[0-9]+]] = fsdp.to_host %[[G1]]
// OFFLOAD-NEXT: nn.sgd %{{.+}}, %[[H1]]
