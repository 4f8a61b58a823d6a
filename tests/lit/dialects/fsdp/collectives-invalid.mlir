// RUN: fsdp-opt %s --split-input-file --verify-diagnostics

// One case per rule of dialects/fsdp/CollectiveOps.cpp.

func.func @empty_group(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{group must list at least one rank}}
  %0 = fsdp.all_gather %x {group = array<i64>} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @unsorted_group(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{group must be sorted, distinct, non-negative ranks}}
  %0 = fsdp.all_gather %x {group = array<i64: 1, 0>} : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @negative_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{group must be sorted, distinct, non-negative ranks}}
  %0 = fsdp.all_reduce %x {group = array<i64: -1, 0>, reduction = "sum"} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @gather_size(%x: tensor<8xf32>) -> tensor<24xf32> {
  // expected-error @+1 {{the full tensor's dim 0 must be the shard's times the group size (2)}}
  %0 = fsdp.all_gather %x {group = array<i64: 0, 1>} : tensor<8xf32> -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

func.func @gather_element_type(%x: tensor<8xf32>) -> tensor<16xbf16> {
  // expected-error @+1 {{input and result must have the same element type}}
  %0 = fsdp.all_gather %x {group = array<i64: 0, 1>} : tensor<8xf32> -> tensor<16xbf16>
  return %0 : tensor<16xbf16>
}

// -----

func.func @scatter_uneven(%x: tensor<10xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{the full tensor's dim 0 must be the shard's times the group size (3)}}
  %0 = fsdp.reduce_scatter %x {group = array<i64: 0, 1, 2>, reduction = "sum"} : tensor<10xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bad_reduction(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be "sum" or "avg", not "max"}}
  %0 = fsdp.reduce_scatter %x {group = array<i64: 0, 1>, reduction = "max"} : tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
