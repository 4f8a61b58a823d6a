// --ckpt=auto on unequal blocks (compiler/Pipelines/AutoCheckpoint.h): ten
// residual blocks y = x + tanh(x A) B of width 16, except blocks 5 and 7,
// four times wider. The backward reads each block's tanh output, so a
// wide block holds four times the activations of a narrow one, and every
// block costs the same to recompute on h100 (a matmul and a tanh at the
// kernel floor, 3 us each). Under a budget of 560000 B the cheapest set
// is block 5 alone (6 us); the rule it replaces, the first k blocks, needs
// blocks 0-3 (24 us) for the same peak, as the real plans below show.

// RUN: rm -rf %t && mkdir %t
// RUN: fsdp-opt %s --emit=report --report-format=json --ckpt=auto --mem-budget=560000 2>&1 | FileCheck %s --check-prefix=AUTO
// AUTO: fsdp-opt: note: --ckpt=auto: recomputing block 5 of the 10 blocks (+524 kFLOP in matmuls, 6 us on h100 by the cost model): planned peak 543.44 KiB (556480 B) (without recomputation 607.44 KiB (622016 B))
// AUTO: "peak_bytes": 556480,

// The same sets through the recompute pass alone (blocks= selects them),
// then planned: block 5 is the plan auto chose; the first three blocks
// still miss the budget, the first four meet it at the same peak.
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer,fsdp-recompute-activations{blocks=5})' -o %t/dp.mlir
// RUN: fsdp-opt %t/dp.mlir --emit=report --report-format=json | FileCheck %s --check-prefix=DP
// DP: "peak_bytes": 556480,
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer,fsdp-recompute-activations{blocks=0,1,2})' -o %t/first3.mlir
// RUN: fsdp-opt %t/first3.mlir --emit=report --report-format=json | FileCheck %s --check-prefix=FIRST3
// FIRST3: "peak_bytes": 572864,
// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-attach-loss,fsdp-build-train-step,fsdp-apply-optimizer,fsdp-recompute-activations{blocks=0,1,2,3})' -o %t/first4.mlir
// RUN: fsdp-opt %t/first4.mlir --emit=report --report-format=json | FileCheck %s --check-prefix=FIRST4
// FIRST4: "peak_bytes": 556480,

// A looser budget needs nothing; a tighter one takes the wide blocks and
// then the first narrow ones.
// RUN: fsdp-opt %s --emit=report --ckpt=auto --mem-budget=700000 2>&1 | FileCheck %s --check-prefix=LOOSE
// LOOSE: fsdp-opt: note: --ckpt=auto: no recomputation needed (planned peak 607.44 KiB (622016 B) fits)
// RUN: fsdp-opt %s --emit=report --ckpt=auto --mem-budget=500000 2>&1 | FileCheck %s --check-prefix=TIGHT
// TIGHT: fsdp-opt: note: --ckpt=auto: recomputing blocks 0-3,5,7 of the 10 blocks (+1.57 MFLOP in matmuls, 36 us on h100 by the cost model): planned peak 479.44 KiB (490944 B)

module {
  func.func @forward(%w0a: tensor<16x16xf32> {nn.param = "layers.0.fc1.weight"},
      %w0b: tensor<16x16xf32> {nn.param = "layers.0.fc2.weight"},
      %w1a: tensor<16x16xf32> {nn.param = "layers.1.fc1.weight"},
      %w1b: tensor<16x16xf32> {nn.param = "layers.1.fc2.weight"},
      %w2a: tensor<16x16xf32> {nn.param = "layers.2.fc1.weight"},
      %w2b: tensor<16x16xf32> {nn.param = "layers.2.fc2.weight"},
      %w3a: tensor<16x16xf32> {nn.param = "layers.3.fc1.weight"},
      %w3b: tensor<16x16xf32> {nn.param = "layers.3.fc2.weight"},
      %w4a: tensor<16x16xf32> {nn.param = "layers.4.fc1.weight"},
      %w4b: tensor<16x16xf32> {nn.param = "layers.4.fc2.weight"},
      %w5a: tensor<16x64xf32> {nn.param = "layers.5.fc1.weight"},
      %w5b: tensor<64x16xf32> {nn.param = "layers.5.fc2.weight"},
      %w6a: tensor<16x16xf32> {nn.param = "layers.6.fc1.weight"},
      %w6b: tensor<16x16xf32> {nn.param = "layers.6.fc2.weight"},
      %w7a: tensor<16x64xf32> {nn.param = "layers.7.fc1.weight"},
      %w7b: tensor<64x16xf32> {nn.param = "layers.7.fc2.weight"},
      %w8a: tensor<16x16xf32> {nn.param = "layers.8.fc1.weight"},
      %w8b: tensor<16x16xf32> {nn.param = "layers.8.fc2.weight"},
      %w9a: tensor<16x16xf32> {nn.param = "layers.9.fc1.weight"},
      %w9b: tensor<16x16xf32> {nn.param = "layers.9.fc2.weight"},
      %wh: tensor<4x16xf32> {nn.param = "head.weight"},
      %bh: tensor<4xf32> {nn.param = "head.bias"},
      %x: tensor<256x16xf32> {nn.input = "x"},
      %l: tensor<256xi64> {nn.input = "labels"})
      -> (tensor<f32> {nn.output = "loss"}) {
    %m0 = nn.matmul %x, %w0a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t0 = nn.tanh %m0 : tensor<256x16xf32>
    %p0 = nn.matmul %t0, %w0b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y0 = nn.add %x, %p0 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m1 = nn.matmul %y0, %w1a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t1 = nn.tanh %m1 : tensor<256x16xf32>
    %p1 = nn.matmul %t1, %w1b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y1 = nn.add %y0, %p1 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m2 = nn.matmul %y1, %w2a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t2 = nn.tanh %m2 : tensor<256x16xf32>
    %p2 = nn.matmul %t2, %w2b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y2 = nn.add %y1, %p2 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m3 = nn.matmul %y2, %w3a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t3 = nn.tanh %m3 : tensor<256x16xf32>
    %p3 = nn.matmul %t3, %w3b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y3 = nn.add %y2, %p3 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m4 = nn.matmul %y3, %w4a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t4 = nn.tanh %m4 : tensor<256x16xf32>
    %p4 = nn.matmul %t4, %w4b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y4 = nn.add %y3, %p4 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m5 = nn.matmul %y4, %w5a : (tensor<256x16xf32>, tensor<16x64xf32>) -> tensor<256x64xf32>
    %t5 = nn.tanh %m5 : tensor<256x64xf32>
    %p5 = nn.matmul %t5, %w5b : (tensor<256x64xf32>, tensor<64x16xf32>) -> tensor<256x16xf32>
    %y5 = nn.add %y4, %p5 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m6 = nn.matmul %y5, %w6a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t6 = nn.tanh %m6 : tensor<256x16xf32>
    %p6 = nn.matmul %t6, %w6b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y6 = nn.add %y5, %p6 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m7 = nn.matmul %y6, %w7a : (tensor<256x16xf32>, tensor<16x64xf32>) -> tensor<256x64xf32>
    %t7 = nn.tanh %m7 : tensor<256x64xf32>
    %p7 = nn.matmul %t7, %w7b : (tensor<256x64xf32>, tensor<64x16xf32>) -> tensor<256x16xf32>
    %y7 = nn.add %y6, %p7 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m8 = nn.matmul %y7, %w8a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t8 = nn.tanh %m8 : tensor<256x16xf32>
    %p8 = nn.matmul %t8, %w8b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y8 = nn.add %y7, %p8 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %m9 = nn.matmul %y8, %w9a : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %t9 = nn.tanh %m9 : tensor<256x16xf32>
    %p9 = nn.matmul %t9, %w9b : (tensor<256x16xf32>, tensor<16x16xf32>) -> tensor<256x16xf32>
    %y9 = nn.add %y8, %p9 : (tensor<256x16xf32>, tensor<256x16xf32>) -> tensor<256x16xf32>
    %logits = nn.gemm %y9, %wh, %bh {trans_b = true} : (tensor<256x16xf32>, tensor<4x16xf32>, tensor<4xf32>) -> tensor<256x4xf32>
    %loss, %lp = nn.softmax_cross_entropy %logits, %l {reduction = "mean"} : (tensor<256x4xf32>, tensor<256xi64>) -> (tensor<f32>, tensor<256x4xf32>)
    return %loss : tensor<f32>
  }
}
