// A mask computed from a parameter would need a gradient, which nn.attention
// does not give its mask: unfused, unless the parameter is frozen (a
// buffer, as --freeze makes the seeds' Transformer's tgt_mask) or the plan
// has no backward (--mode=forward).
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-fuse-attention)' | FileCheck %s --check-prefix=TRAINED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-fuse-attention{freeze=pos|other})' | FileCheck %s --check-prefix=TRAINED
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-fuse-attention{freeze=tgt_mask})' | FileCheck %s --check-prefix=FROZEN
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-fuse-attention{gradients=false})' | FileCheck %s --check-prefix=FROZEN

// TRAINED: unfused = ["{{.*}}the mask is computed from a parameter or float input (it would need a gradient; --freeze the parameter if it is a buffer)"]
// TRAINED-NOT: nn.attention

// FROZEN: fused = 1 : i64, unfused = []
// FROZEN: nn.attention %arg0, %arg1, %arg2 mask %arg3
// FROZEN-NOT: nn.softmax
module {
func.func @forward(%q: tensor<1x1x4x4xf32>, %k: tensor<1x1x4x4xf32>, %v: tensor<1x1x4x4xf32>, %mask: tensor<4x4xf32> {nn.param = "tgt_mask"}) -> tensor<1x1x4x4xf32> {
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>} : tensor<1x1x4x4xf32> to tensor<1x1x4x4xf32>
  %s = nn.matmul %q, %kt : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %a = nn.add %s, %mask : (tensor<1x1x4x4xf32>, tensor<4x4xf32>) -> tensor<1x1x4x4xf32>
  %p = nn.softmax %a {axis = 3 : i64} : tensor<1x1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}
}
