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

// -----

// Dynamo's SDPA decomposition as transformers exports it: the scale computed
// as sqrt(1 / sqrt(D)), the causal mask built as where(trilu(ones) == 0,
// finfo.min, 0), and the isnan guard between softmax and P·V. The mask is
// proven causal, so the fill of finfo.min (not -inf) is exact here.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %arg0, %arg1, %arg2 {is_causal = true, scale = 0.707106{{[0-9]*}} : f32}
// CHECK-NEXT: return %[[O]]
module {
func.func @forward(%q: tensor<1x2x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32> {
  %d = nn.constant dense<2.0> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %sd = nn.sqrt %d : tensor<f32>
  %inv = nn.div %one, %sd : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %c = nn.sqrt %inv : tensor<f32>
  %ones = nn.constant dense<1.0> : tensor<3x3xf32>
  %tri = nn.trilu %ones {upper = false} : tensor<3x3xf32>
  %zero = nn.constant dense<0.0> : tensor<f32>
  %above = nn.compare "eq" %tri, %zero : (tensor<3x3xf32>, tensor<f32>) -> tensor<3x3xi1>
  %lowest = nn.constant dense<0xFF7FFFFF> : tensor<f32>
  %mask = nn.where %above, %lowest, %zero : (tensor<3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<3x3xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x3x2xf32> to tensor<1x2x2x3xf32>
  %qs = nn.mul %q, %c : (tensor<1x2x3x2xf32>, tensor<f32>) -> tensor<1x2x3x2xf32>
  %ks = nn.mul %kt, %c : (tensor<1x2x2x3xf32>, tensor<f32>) -> tensor<1x2x2x3xf32>
  %s = nn.matmul %qs, %ks : (tensor<1x2x3x2xf32>, tensor<1x2x2x3xf32>) -> tensor<1x2x3x3xf32>
  %sm = nn.add %s, %mask : (tensor<1x2x3x3xf32>, tensor<3x3xf32>) -> tensor<1x2x3x3xf32>
  %p = nn.softmax %sm {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %nan = nn.is_nan %p : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xi1>
  %g = nn.where %nan, %zero, %p : (tensor<1x2x3x3xi1>, tensor<f32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = nn.matmul %g, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x2xf32>) -> tensor<1x2x3x2xf32>
  return %o : tensor<1x2x3x2xf32>
}
}

// -----

// The legacy exporter's kᵀ: one transpose [0, 2, 3, 1] of keys laid out
// [B, T, H, D]. The fused op reads keys as [B, H, T, D], so the pass puts
// the remaining transpose [0, 2, 1, 3] in front of it.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK-NEXT: %[[K:.+]] = nn.transpose %arg1 {perm = array<i64: 0, 2, 1, 3>} : tensor<1x3x2x4xf32> to tensor<1x2x3x4xf32>
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %arg0, %[[K]], %arg2 {is_causal = false, scale = 5.000000e-01 : f32}
module {
func.func @forward(%q: tensor<1x2x3x4xf32>, %k: tensor<1x3x2x4xf32>, %v: tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 2, 3, 1>} : tensor<1x3x2x4xf32> to tensor<1x2x4x3xf32>
  %s = nn.matmul %q, %kt : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %d = nn.div %s, %c : (tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = nn.softmax %d {axis = 3 : i64} : tensor<1x2x3x3xf32>
  %o = nn.matmul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
}

// -----

// transformers' repeat_kv for grouped-query attention: keys and values of
// two heads, each repeated for two query heads ([B, Hkv, 1, T, D] expanded
// to [B, Hkv, 2, T, D] and merged), so query head h reads key head h / 2.
// The fused op reads the two key heads directly.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %arg0, %arg1, %arg2 {is_causal = false, scale = 0.707106{{[0-9]*}} : f32}
// CHECK-SAME: (tensor<1x4x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>)
module {
func.func @forward(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %c = nn.constant dense<0.707106769> : tensor<f32>
  %k5 = nn.reshape %k : tensor<1x2x3x2xf32> to tensor<1x2x1x3x2xf32>
  %ke = nn.expand %k5 : tensor<1x2x1x3x2xf32> to tensor<1x2x2x3x2xf32>
  %kr = nn.reshape %ke : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %v5 = nn.reshape %v : tensor<1x2x3x2xf32> to tensor<1x2x1x3x2xf32>
  %ve = nn.expand %v5 : tensor<1x2x1x3x2xf32> to tensor<1x2x2x3x2xf32>
  %vr = nn.reshape %ve : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %kt = nn.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x2xf32> to tensor<1x4x2x3xf32>
  %s = nn.matmul %q, %kt : (tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x3x3xf32>
  %m = nn.mul %s, %c : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = nn.softmax %m {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = nn.matmul %p, %vr : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %o : tensor<1x4x3x2xf32>
}
}

// -----

// Near miss: heads repeated as a tile ([B, 1, Hkv, T, D] expanded to
// [B, 2, Hkv, T, D]), so query head h reads key head h % 2, not h / 2. That
// is not grouped-query attention's layout: the repeated keys stay, and the
// fused op reads all four heads of them.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK: %[[KR:.+]] = nn.reshape %{{.+}} : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
// CHECK: nn.attention %arg0, %[[KR]], %{{.+}} {is_causal = false
// CHECK-SAME: (tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>, tensor<1x4x3x2xf32>)
module {
func.func @forward(%q: tensor<1x4x3x2xf32>, %k: tensor<1x2x3x2xf32>, %v: tensor<1x2x3x2xf32>) -> tensor<1x4x3x2xf32> {
  %c = nn.constant dense<0.707106769> : tensor<f32>
  %k5 = nn.reshape %k : tensor<1x2x3x2xf32> to tensor<1x1x2x3x2xf32>
  %ke = nn.expand %k5 : tensor<1x1x2x3x2xf32> to tensor<1x2x2x3x2xf32>
  %kr = nn.reshape %ke : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %v5 = nn.reshape %v : tensor<1x2x3x2xf32> to tensor<1x1x2x3x2xf32>
  %ve = nn.expand %v5 : tensor<1x1x2x3x2xf32> to tensor<1x2x2x3x2xf32>
  %vr = nn.reshape %ve : tensor<1x2x2x3x2xf32> to tensor<1x4x3x2xf32>
  %kt = nn.transpose %kr {perm = array<i64: 0, 1, 3, 2>} : tensor<1x4x3x2xf32> to tensor<1x4x2x3xf32>
  %s = nn.matmul %q, %kt : (tensor<1x4x3x2xf32>, tensor<1x4x2x3xf32>) -> tensor<1x4x3x3xf32>
  %m = nn.mul %s, %c : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = nn.softmax %m {axis = 3 : i64} : tensor<1x4x3x3xf32>
  %o = nn.matmul %p, %vr : (tensor<1x4x3x3xf32>, tensor<1x4x3x2xf32>) -> tensor<1x4x3x2xf32>
  return %o : tensor<1x4x3x2xf32>
}
}

// -----

// Near miss: a fill of finfo.min under a mask that is not proven causal. A
// row whose every key is masked then averages all values in torch, where the
// fused op's -inf semantics would give something else: unfused.
// CHECK: unfused = ["{{.*}}filling with the dtype's lowest value under a mask not proven causal{{.*}}"]
// CHECK-NOT: nn.attention
module {
func.func @forward(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>, %keep: tensor<1x1x1x4xi1>) -> tensor<1x1x4x4xf32> {
  %lowest = nn.constant dense<0xFF7FFFFF> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x4xf32> to tensor<1x1x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %w = nn.where %keep, %s, %lowest : (tensor<1x1x1x4xi1>, tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xf32>
  %p = nn.softmax %w {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}
}

// -----

// A constant mask that is not causal (here the keys after each query, the
// transpose of causal) stays a mask operand: is_causal is only claimed for a
// mask proven equal to torch's top-left causal mask.
// CHECK: fused = 1 : i64
// CHECK: %[[M:.+]] = nn.constant
// CHECK: nn.attention %arg0, %arg1, %arg2 mask %[[M]] {is_causal = false
module {
func.func @forward(%q: tensor<1x1x3x2xf32>, %k: tensor<1x1x3x2xf32>, %v: tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32> {
  %mask = nn.constant dense<[[0.0, 0.0, 0.0], [0xFF800000, 0.0, 0.0], [0xFF800000, 0xFF800000, 0.0]]> : tensor<3x3xf32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x3x2xf32> to tensor<1x1x2x3xf32>
  %s = nn.matmul %q, %kt : (tensor<1x1x3x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x1x3x3xf32>
  %sm = nn.add %s, %mask : (tensor<1x1x3x3xf32>, tensor<3x3xf32>) -> tensor<1x1x3x3xf32>
  %p = nn.softmax %sm {axis = 3 : i64} : tensor<1x1x3x3xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x3x3xf32>, tensor<1x1x3x2xf32>) -> tensor<1x1x3x2xf32>
  return %o : tensor<1x1x3x2xf32>
}
}

// -----

// Single-head attention over rank-3 operands [N, T, D] (torch.bmm or @ on
// 3-D tensors): viewed as [N, 1, T, D] around nn.attention, a rank-3 mask
// as [N, 1, Tq, Tk], and the output back.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK-NEXT: %[[Q:.+]] = nn.reshape %arg0 : tensor<2x3x4xf32> to tensor<2x1x3x4xf32>
// CHECK-NEXT: %[[K:.+]] = nn.reshape %arg1 : tensor<2x5x4xf32> to tensor<2x1x5x4xf32>
// CHECK-NEXT: %[[V:.+]] = nn.reshape %arg2 : tensor<2x5x4xf32> to tensor<2x1x5x4xf32>
// CHECK-NEXT: %[[M:.+]] = nn.reshape %arg3 : tensor<2x3x5xi1> to tensor<2x1x3x5xi1>
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] {is_causal = false, scale = 5.000000e-01 : f32}
// CHECK-NEXT: %[[R:.+]] = nn.reshape %[[O]] : tensor<2x1x3x4xf32> to tensor<2x3x4xf32>
// CHECK-NEXT: return %[[R]]
module {
func.func @forward(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>, %v: tensor<2x5x4xf32>, %m: tensor<2x3x5xi1>) -> tensor<2x3x4xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %ninf = nn.constant dense<0xFF800000> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 2, 1>} : tensor<2x5x4xf32> to tensor<2x4x5xf32>
  %s = nn.matmul %q, %kt : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  %d = nn.div %s, %c : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %w = nn.where %m, %d, %ninf : (tensor<2x3x5xi1>, tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %p = nn.softmax %w {axis = 2 : i64} : tensor<2x3x5xf32>
  %o = nn.matmul %p, %v : (tensor<2x3x5xf32>, tensor<2x5x4xf32>) -> tensor<2x3x4xf32>
  return %o : tensor<2x3x4xf32>
}
}

// -----

// Near miss: rank-2 scores (no batch at all) are not recognized.
// CHECK: unfused = ["{{.*}}scores of rank 2, not 3 or 4"]
// CHECK-NOT: nn.attention
module {
func.func @forward(%q: tensor<3x4xf32>, %k: tensor<5x4xf32>, %v: tensor<5x4xf32>) -> tensor<3x4xf32> {
  %kt = nn.transpose %k {perm = array<i64: 1, 0>} : tensor<5x4xf32> to tensor<4x5xf32>
  %s = nn.matmul %q, %kt : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %p = nn.softmax %s {axis = 1 : i64} : tensor<3x5xf32>
  %o = nn.matmul %p, %v : (tensor<3x5xf32>, tensor<5x4xf32>) -> tensor<3x4xf32>
  return %o : tensor<3x4xf32>
}
}

// -----

// Dropout on the probabilities (nn.dropout in training, its mask unused)
// becomes the fused op's dropout_p and seed: the kernel draws the same keep
// bits at the same indices of the [B, H, Tq, Tk] probabilities.
// CHECK: fused = 1 : i64
// CHECK: func.func @forward
// CHECK-NEXT: %[[O:.+]], %{{.+}} = nn.attention %arg0, %arg1, %arg2 {dropout_p = 1.000000e-01 : f32, is_causal = false, scale = 5.000000e-01 : f32, seed = 5 : i64}
// CHECK-NEXT: return %[[O]]
module {
func.func @forward(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x4xf32> to tensor<1x2x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.div %s, %c : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %d {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %pd, %mask = nn.dropout %p {ratio = 0.1 : f32, training = true, seed = 5} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>)
  %o = nn.matmul %pd, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o : tensor<1x2x4x4xf32>
}
}

// -----

// Near miss: the dropout's mask is also returned, and the fused op stores
// none.
// CHECK: unfused = ["{{.*}}the dropout's mask is read elsewhere"]
// CHECK-NOT: nn.attention
module {
func.func @forward(%q: tensor<1x2x4x4xf32>, %k: tensor<1x2x4x4xf32>, %v: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>) {
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x2x4x4xf32> to tensor<1x2x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %s {axis = 3 : i64} : tensor<1x2x4x4xf32>
  %pd, %mask = nn.dropout %p {ratio = 0.1 : f32, training = true} : (tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>)
  %o = nn.matmul %pd, %v : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %o, %mask : tensor<1x2x4x4xf32>, tensor<1x2x4x4xi1>
}
}
