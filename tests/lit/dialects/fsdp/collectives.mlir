// RUN: fsdp-opt %s | fsdp-opt - | FileCheck %s

// The fsdp dialect's collectives round-trip (the sharding pass creates
// them; see dialects/fsdp/FSDPCollectiveOps.td). `groups` lists every rank,
// group after group; `group_size` splits it.

// CHECK-LABEL: func.func @collectives
// CHECK: fsdp.all_gather %arg0 {group_size = 4 : i64, groups = array<i64: 0, 1, 2, 3>} : tensor<8xf32> -> tensor<32xf32>
// CHECK: fsdp.reduce_scatter %{{.+}} {group_size = 4 : i64, groups = array<i64: 0, 1, 2, 3>, reduction = "avg"} : tensor<32xf32> -> tensor<8xf32>
// CHECK: fsdp.all_reduce %{{.+}} {group_size = 2 : i64, groups = array<i64: 0, 2, 1, 3>, reduction = "sum"} : tensor<8xbf16>
func.func @collectives(%shard: tensor<8xf32>, %g: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>) {
  %full = fsdp.all_gather %shard {groups = array<i64: 0, 1, 2, 3>, group_size = 4} : tensor<8xf32> -> tensor<32xf32>
  %grad = fsdp.reduce_scatter %full {groups = array<i64: 0, 1, 2, 3>, group_size = 4, reduction = "avg"} : tensor<32xf32> -> tensor<8xf32>
  %r = fsdp.all_reduce %g {groups = array<i64: 0, 2, 1, 3>, group_size = 2, reduction = "sum"} : tensor<8xbf16>
  return %grad, %r : tensor<8xf32>, tensor<8xbf16>
}

// Hybrid sharding's shard groups {0,1} and {2,3} in one op.
// CHECK-LABEL: func.func @gather_2d
// CHECK: fsdp.all_gather %arg0 {group_size = 2 : i64, groups = array<i64: 0, 1, 2, 3>} : tensor<2x5xf64> -> tensor<4x5xf64>
func.func @gather_2d(%x: tensor<2x5xf64>) -> tensor<4x5xf64> {
  %0 = fsdp.all_gather %x {groups = array<i64: 0, 1, 2, 3>, group_size = 2} : tensor<2x5xf64> -> tensor<4x5xf64>
  return %0 : tensor<4x5xf64>
}

// A unit's flat buffer: parameters viewed out of it, gradients packed in.
// CHECK-LABEL: func.func @flat_param
// CHECK: fsdp.flat_view %arg0 {offset = 16 : i64} : tensor<40xf32> -> tensor<4x3xf32>
// CHECK: fsdp.flatten %arg1, %arg2 {offsets = array<i64: 0, 16>} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<40xf32>
func.func @flat_param(%flat: tensor<40xf32>, %db: tensor<3xf32>, %dw: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<40xf32>) {
  %w = fsdp.flat_view %flat {offset = 16} : tensor<40xf32> -> tensor<4x3xf32>
  %g = fsdp.flatten %db, %dw {offsets = array<i64: 0, 16>} : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<40xf32>
  return %w, %g : tensor<4x3xf32>, tensor<40xf32>
}
