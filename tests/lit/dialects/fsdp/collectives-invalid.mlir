// RUN: fsdp-opt %s --split-input-file --verify-diagnostics

// One case per rule of dialects/fsdp/CollectiveOps.cpp and FlatParamOps.cpp.

func.func @zero_group_size(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{group_size must be at least 1}}
  %0 = fsdp.all_gather %x {groups = array<i64: 0>, group_size = 0} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @empty_groups(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{groups must list the world's ranks in groups of group_size (1), not 0 ranks}}
  %0 = fsdp.all_gather %x {groups = array<i64>, group_size = 1} : tensor<8xf32> -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @ragged_groups(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{groups must list the world's ranks in groups of group_size (2), not 3 ranks}}
  %0 = fsdp.all_gather %x {groups = array<i64: 0, 1, 2>, group_size = 2} : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @unsorted_group(%x: tensor<8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{each group must list its ranks in ascending order}}
  %0 = fsdp.all_gather %x {groups = array<i64: 1, 0>, group_size = 2} : tensor<8xf32> -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// -----

func.func @repeated_rank(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{groups must hold each rank 0..1 once}}
  %0 = fsdp.all_reduce %x {groups = array<i64: 0, 0>, group_size = 1, reduction = "sum"} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @rank_outside_world(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{groups must hold each rank 0..1 once}}
  %0 = fsdp.all_reduce %x {groups = array<i64: 0, 2>, group_size = 2, reduction = "sum"} : tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @gather_size(%x: tensor<8xf32>) -> tensor<24xf32> {
  // expected-error @+1 {{the full tensor's dim 0 must be the shard's times the group size (2)}}
  %0 = fsdp.all_gather %x {groups = array<i64: 0, 1>, group_size = 2} : tensor<8xf32> -> tensor<24xf32>
  return %0 : tensor<24xf32>
}

// -----

func.func @gather_element_type(%x: tensor<8xf32>) -> tensor<16xbf16> {
  // expected-error @+1 {{input and result must have the same element type}}
  %0 = fsdp.all_gather %x {groups = array<i64: 0, 1>, group_size = 2} : tensor<8xf32> -> tensor<16xbf16>
  return %0 : tensor<16xbf16>
}

// -----

func.func @scatter_uneven(%x: tensor<10xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{the full tensor's dim 0 must be the shard's times the group size (3)}}
  %0 = fsdp.reduce_scatter %x {groups = array<i64: 0, 1, 2>, group_size = 3, reduction = "sum"} : tensor<10xf32> -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @bad_reduction(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduction must be "sum", "avg" or "max", not "min"}}
  %0 = fsdp.reduce_scatter %x {groups = array<i64: 0, 1>, group_size = 2, reduction = "min"} : tensor<8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @view_not_flat(%x: tensor<2x8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{flat buffer must be 1-D, not rank 2}}
  %0 = fsdp.flat_view %x {offset = 0} : tensor<2x8xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @view_type(%x: tensor<8xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{flat buffer and view must have the same element type}}
  %0 = fsdp.flat_view %x {offset = 0} : tensor<8xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

func.func @view_outside(%x: tensor<8xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{view [4, 10) lies outside the flat buffer of 8 elements}}
  %0 = fsdp.flat_view %x {offset = 4} : tensor<8xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @flatten_offsets(%a: tensor<3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{needs one offset per input (1), not 2}}
  %0 = fsdp.flatten %a {offsets = array<i64: 0, 4>} : (tensor<3xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @flatten_overlap(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{input 1 at offset 2 overlaps the previous input (ranges must ascend)}}
  %0 = fsdp.flatten %a, %b {offsets = array<i64: 0, 2>} : (tensor<3xf32>, tensor<3xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @flatten_past_end(%a: tensor<3xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{input 0 ends at 9, past the flat buffer of 8 elements}}
  %0 = fsdp.flatten %a {offsets = array<i64: 6>} : (tensor<3xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

func.func @flatten_type(%a: tensor<3xbf16>) -> tensor<8xf32> {
  // expected-error @+1 {{input 0 must have the flat buffer's element type}}
  %0 = fsdp.flatten %a {offsets = array<i64: 0>} : (tensor<3xbf16>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
