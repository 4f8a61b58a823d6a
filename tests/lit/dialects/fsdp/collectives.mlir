// RUN: fsdp-opt %s | fsdp-opt - | FileCheck %s

// The fsdp dialect's collectives round-trip (the FSDP issue's passes create
// them; see dialects/fsdp/FSDPCollectiveOps.td).

// CHECK-LABEL: func.func @collectives
// CHECK: fsdp.all_gather %arg0 {group = array<i64: 0, 1, 2, 3>} : tensor<8xf32> -> tensor<32xf32>
// CHECK: fsdp.reduce_scatter %{{.+}} {group = array<i64: 0, 1, 2, 3>, reduction = "avg"} : tensor<32xf32> -> tensor<8xf32>
// CHECK: fsdp.all_reduce %{{.+}} {group = array<i64: 0, 2>, reduction = "sum"} : tensor<8xbf16>
func.func @collectives(%shard: tensor<8xf32>, %g: tensor<8xbf16>) -> (tensor<8xf32>, tensor<8xbf16>) {
  %full = fsdp.all_gather %shard {group = array<i64: 0, 1, 2, 3>} : tensor<8xf32> -> tensor<32xf32>
  %grad = fsdp.reduce_scatter %full {group = array<i64: 0, 1, 2, 3>, reduction = "avg"} : tensor<32xf32> -> tensor<8xf32>
  %r = fsdp.all_reduce %g {group = array<i64: 0, 2>, reduction = "sum"} : tensor<8xbf16>
  return %grad, %r : tensor<8xf32>, tensor<8xbf16>
}

// CHECK-LABEL: func.func @gather_2d
// CHECK: fsdp.all_gather %arg0 {group = array<i64: 0, 1, 2>} : tensor<2x5xf64> -> tensor<6x5xf64>
func.func @gather_2d(%x: tensor<2x5xf64>) -> tensor<6x5xf64> {
  %0 = fsdp.all_gather %x {group = array<i64: 0, 1, 2>} : tensor<2x5xf64> -> tensor<6x5xf64>
  return %0 : tensor<6x5xf64>
}
