// RUN: fsdp-opt %s | fsdp-opt - | FileCheck %s

// The fsdp dialect's attributes where the passes put them verify and
// round-trip (dialects/fsdp/Attributes.cpp; FSDPBase.td documents them):
// the module records the world size the step was sharded for and what
// --ckpt=auto chose; a flat-parameter shard argument carries its unit's
// description (two ranks: padded_numel 40 / group_size 2 = 20 elements
// per shard, the second parameter at the 64-byte aligned offset 16);
// offloaded arguments are marked host; a collective, an offload copy and
// an update of host memory name their streams, and a recomputed op its
// block.

// CHECK: module attributes {fsdp.checkpoint_choice = "--ckpt=auto: checkpointing 1 of 2 blocks", fsdp.world_size = 2 : i64}
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: %arg0: tensor<20xf32> {fsdp.host, fsdp.unit = {flat_numel = 28 : i64, group_size = 2 : i64, name = "layers.0", padded_numel = 40 : i64, params = [{name = "layers.0.bias", offset = 0 : i64, type = tensor<4xf32>}, {name = "layers.0.w", offset = 16 : i64, type = tensor<3x4xf32>}]}}
// CHECK-SAME: %arg1: tensor<f64> {fsdp.host, nn.lr}
// CHECK: fsdp.all_gather %{{.+}} {fsdp.stream = 1 : i64, group_size = 2 : i64
// CHECK: fsdp.flat_view %{{.+}} {fsdp.recompute = "layers.0", offset = 16 : i64}
// CHECK: fsdp.reduce_scatter %{{.+}} {fsdp.stream = 0 : i64, group_size = 2 : i64
// CHECK: fsdp.to_host %{{.+}} {fsdp.stream = 2 : i64}
// CHECK: nn.sgd %arg0, %{{.+}}, %arg1 {fsdp.stream = 3 : i64,
module attributes {fsdp.world_size = 2 : i64, fsdp.checkpoint_choice = "--ckpt=auto: checkpointing 1 of 2 blocks"} {
  func.func @train_step(%shard: tensor<20xf32> {fsdp.host, fsdp.unit = {name = "layers.0", flat_numel = 28 : i64, padded_numel = 40 : i64, group_size = 2 : i64, params = [{name = "layers.0.bias", offset = 0 : i64, type = tensor<4xf32>}, {name = "layers.0.w", offset = 16 : i64, type = tensor<3x4xf32>}]}},
                        %lr: tensor<f64> {fsdp.host, nn.lr}) -> (tensor<3x4xf32> {nn.output = "w"}, tensor<20xf32>) {
    %dev = fsdp.to_device %shard : tensor<20xf32>
    %full = fsdp.all_gather %dev {groups = array<i64: 0, 1>, group_size = 2, fsdp.stream = 1} : tensor<20xf32> -> tensor<40xf32>
    %w = fsdp.flat_view %full {offset = 16, fsdp.recompute = "layers.0"} : tensor<40xf32> -> tensor<3x4xf32>
    %g = fsdp.reduce_scatter %full {groups = array<i64: 0, 1>, group_size = 2, reduction = "avg", fsdp.stream = 0} : tensor<40xf32> -> tensor<20xf32>
    %h = fsdp.to_host %g {fsdp.stream = 2} : tensor<20xf32>
    %new = nn.sgd %shard, %h, %lr {fsdp.stream = 3, momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<20xf32>, tensor<20xf32>, tensor<f64>) -> tensor<20xf32>
    return %w, %new : tensor<3x4xf32>, tensor<20xf32>
  }
}
