// RUN: fsdp-opt %s --split-input-file --pass-pipeline='builtin.module(fsdp-fuse-attention)' | FileCheck %s

// Attention fusion (compiler/Transforms/FuseAttention.cpp): the exporters'
// decompositions become one nn.attention; near misses stay as they are,
// with the reason in the module's fsdp.attention_fusion attribute.

// torch's dynamo decomposition: q and kᵀ each scaled by √scale, kᵀ made by
// reshape, transpose, reshape, a constant causal mask added.
// CHECK-LABEL: module attributes {fsdp.attention_fusion = {fused = 1 : i64, unfused = []}}
// CHECK: func.func @forward
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %arg0, %arg1, %arg2 {is_causal = true, scale = 0.707106{{[0-9]*}} : f32}
// CHECK-NEXT: return %[[O]]
module {
func.func @forward(%q: tensor<1x2x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32> {
  %c = nn.constant dense<0.840896428> : tensor<f32>
  %mask = nn.constant dense<[[0.0, 0xFF800000, 0xFF800000], [0.0, 0.0, 0xFF800000], [0.0, 0.0, 0.0]]> : tensor<3x3xf32>
  %r = nn.reshape %k : tensor<1x2x3x2xf32> to tensor<2x3x2xf32>
  %t = nn.transpose %r {perm = array<i64: 0, 2, 1>} : tensor<2x3x2xf32> to tensor<2x2x3xf32>
  %kt = nn.reshape %t : tensor<2x2x3xf32> to tensor<1x2x2x3xf32>
  %qs = nn.mul %q, %c : (tensor<1x2x3x2xf32>, tensor<f32>) -> tensor<1x2x3x2xf32>
  %ks = nn.mul %kt, %c : (tensor<1x2x2x3xf32>, tensor<f32>) -> tensor<1x2x2x3xf32>
  %s = nn.matmul %qs, %ks : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
  %sm = nn.add %s, %mask : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = nn.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = nn.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  return %o : tensor<1x2x3x2xf32>
}
}

// -----

// The hand-written form: (q @ kᵀ) / √d, masked_fill(~mask, -inf) as a where
// over a bool mask input, softmax, @ v.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK: nn.attention %arg0, %arg1, %arg2 mask %arg3 {is_causal = false, scale = 5.000000e-01 : f32}
module {
func.func @forward(%q: tensor<2x1x4x4xf32>, %k: tensor<2x1x4x4xf32>, %v: tensor<2x1x4x4xf32>, %m: tensor<2x1x1x4xi1>) -> tensor<2x1x4x4xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<2x1x4x4xf32> to tensor<2x1x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  %d = nn.div %s, %c : (tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %w = nn.where %m, %d, %ninf : (tensor<2x1x1x4xi1>, tensor<2x1x4x4xf32>, tensor<f32>) -> tensor<2x1x4x4xf32>
  %p = nn.softmax %w {axis = 3 : i64} : tensor<2x1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>) -> tensor<2x1x4x4xf32>
  return %o : tensor<2x1x4x4xf32>
}
}

// -----

// Near misses stay unfused: a softmax over the queries' axis, and
// probabilities that are also returned.
// CHECK: unfused = ["{{.*}}softmax over axis 2, not the keys", "{{.*}}the probabilities are read elsewhere too"]
// CHECK-NOT: nn.attention
module {
func.func @forward(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) {
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x4xf32> to tensor<1x1x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = nn.softmax %s {axis = 2 : i64} : tensor<1x1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %p2 = nn.softmax %s {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o2 = nn.matmul %p2, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o, %o2, %p2 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
}
}

// -----

// A mask computed from a float input would need a gradient: unfused.
// CHECK: unfused = ["{{.*}}the mask is computed from a parameter or float input
module {
func.func @forward(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>, %bias: tensor<4x4xf32>) -> tensor<1x1x4x4xf32> {
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x4xf32> to tensor<1x1x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %a = nn.add %s, %bias : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = nn.softmax %a {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}
}
