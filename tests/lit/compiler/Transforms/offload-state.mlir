// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-offload-state)' | FileCheck %s
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=none},fsdp-offload-state)' | FileCheck %s --check-prefix=NONE
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-offload-state)' 2>&1 | FileCheck %s --check-prefix=UNSHARDED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-offload-state,fsdp-schedule-collectives)' | FileCheck %s --check-prefix=STREAMS
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer{optimizer=sgd},fsdp-shard-parameters{world-size=2 shard=full},fsdp-schedule-collectives)' | FileCheck %s --check-prefix=DEVICE

// fsdp-offload-state (compiler/Transforms/OffloadState.cpp) on a two-block
// MLP sharded over two ranks: shards and the lr the optimizer reads are
// host arguments; every gather reads a device copy made right before it,
// every reduced gradient shard is copied to the host right after its
// reduction, and the updates read host values only.

func.func @forward(%w0: tensor<4x4xf32> {nn.param = "layers.0.w"}, %w1: tensor<4x4xf32> {nn.param = "layers.1.w"}, %x: tensor<2x4xf32> {nn.input = "x"}) -> (tensor<f32> {nn.output = "loss"}) {
  %0 = nn.matmul %x, %w0 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %1 = nn.relu %0 : tensor<2x4xf32>
  %2 = nn.matmul %1, %w1 : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %3 = nn.reduce_sum %2 {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// CHECK-LABEL: func.func @train_step(
// CHECK-SAME: %[[X:[a-z0-9]+]]: tensor<2x4xf32> {nn.input = "x"}
// CHECK-SAME: %[[LR:[a-z0-9]+]]: tensor<f64> {fsdp.host, nn.lr}
// CHECK-SAME: %[[L0:[a-z0-9]+]]: tensor<8xf32> {fsdp.host, fsdp.unit = {{.*}}name = "layers.0"
// CHECK-SAME: %[[L1:[a-z0-9]+]]: tensor<8xf32> {fsdp.host, fsdp.unit = {{.*}}name = "layers.1"
// CHECK: %[[D0:[0-9]+]] = fsdp.to_device %[[L0]] : tensor<8xf32>
// CHECK-NEXT: fsdp.all_gather %[[D0]]
// CHECK: %[[D1:[0-9]+]] = fsdp.to_device %[[L1]] : tensor<8xf32>
// CHECK-NEXT: fsdp.all_gather %[[D1]]
// The backward gather of layers.1 gets a copy of its own.
// CHECK: %[[D1B:[0-9]+]] = fsdp.to_device %[[L1]] : tensor<8xf32>
// CHECK-NEXT: fsdp.all_gather %[[D1B]]
// CHECK: %[[R1:[0-9]+]] = fsdp.reduce_scatter
// CHECK-NEXT: %[[H1:[0-9]+]] = fsdp.to_host %[[R1]] : tensor<8xf32>
// CHECK: %[[R0:[0-9]+]] = fsdp.reduce_scatter
// CHECK-NEXT: %[[H0:[0-9]+]] = fsdp.to_host %[[R0]] : tensor<8xf32>
// CHECK: nn.sgd %[[L0]], %[[H0]], %[[LR]]
// CHECK-NEXT: nn.sgd %[[L1]], %[[H1]], %[[LR]]

// --shard=none: each replicated flat buffer's parameter views (forward
// and backward) share one device copy; all-reduced gradients go to the host.
// NONE-LABEL: func.func @train_step(
// NONE: %[[D:[0-9]+]] = fsdp.to_device %{{.+}} : tensor<16xf32>
// NONE-NEXT: fsdp.flat_view %[[D]]
// NONE: fsdp.to_device
// NONE-NOT: fsdp.to_device
// NONE: fsdp.all_reduce
// NONE-NEXT: fsdp.to_host

// UNSHARDED: error: --offload=cpu keeps shard units in host memory, but the step is not sharded (give --world-size or --shard)

// Scheduled: offload copies run on the copy stream (2), collectives on the
// communication stream (1); a prefetched gather takes its device copy along.
// STREAMS-LABEL: func.func @train_step(
// STREAMS: %[[D0:[0-9]+]] = fsdp.to_device %{{.+}} {fsdp.stream = 2 : i64} : tensor<8xf32>
// STREAMS-NEXT: fsdp.all_gather %[[D0]] {{.*}}fsdp.stream = 1 : i64
// The updates read host memory only, so they run on the host stream (3);
// layers.1's moves up behind the next reduction (during layers.0's
// backward), reading its gradient's copy to the host.
// STREAMS: %[[R:[0-9]+]] = fsdp.reduce_scatter {{.*}}fsdp.stream = 1 : i64
// STREAMS-NEXT: %[[H1:[0-9]+]] = fsdp.to_host %[[R]] {fsdp.stream = 2 : i64} : tensor<8xf32>
// STREAMS: %[[R0:[0-9]+]] = fsdp.reduce_scatter {{.*}}fsdp.stream = 1 : i64
// STREAMS-NEXT: nn.sgd %{{.+}}, %[[H1]], %{{.+}} {fsdp.stream = 3 : i64,
// STREAMS-NEXT: %[[H0:[0-9]+]] = fsdp.to_host %[[R0]] {fsdp.stream = 2 : i64}
// STREAMS: nn.sgd %{{.+}}, %[[H0]], %{{.+}} {fsdp.stream = 3 : i64,

// Without offload the updates read device memory: the compute stream.
// DEVICE-LABEL: func.func @train_step(
// DEVICE-NOT: fsdp.stream = 3
// DEVICE: nn.sgd
// DEVICE-NOT: fsdp.stream = 3
// DEVICE: nn.sgd
// DEVICE-NOT: fsdp.stream = 3
