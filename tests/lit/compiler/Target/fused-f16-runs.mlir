// An f16 chain (GELU-like pieces, a tanh gradient, exp and div) computes
// the same bytes fused as one op at a time (--fusion=none), through
// fsdp-run, on inputs holding every f16 bit pattern (NaN, infinities,
// subnormals). bf16 has no NumPy dtype to feed fsdp-run with, and compiled
// steps' generated code is linked only by the e2e tests, so those proofs
// are the unit tests (FusedLowPrecisionTest, FusedCodegenLowPrecisionTest).

// RUN: rm -rf %t && mkdir -p %t/fused %t/unfused
// RUN: %python -c "import numpy as n; n.save('%t/x.npy', n.arange(65536, dtype=n.uint16).view(n.float16).reshape(256, 256)); r = n.random.default_rng(1); n.save('%t/g.npy', r.uniform(-3, 3, (256, 256)).astype(n.float16))"
// RUN: fsdp-opt %s --emit=plan --mode=forward -o %t/fused.plan
// RUN: fsdp-opt %s --emit=plan --mode=forward --fusion=none -o %t/unfused.plan
// RUN: fsdp-run %t/fused.plan --dump | FileCheck %s
// CHECK: buffer %0 f16[256, 256]
// CHECK: inst 0 Fused
// CHECK-NOT: inst 2
// RUN: fsdp-run %t/fused.plan --input=x=%t/x.npy --input=g=%t/g.npy --outputs=%t/fused
// RUN: fsdp-run %t/unfused.plan --input=x=%t/x.npy --input=g=%t/g.npy --outputs=%t/unfused
// RUN: cmp %t/fused/y.npy %t/unfused/y.npy
// RUN: cmp %t/fused/dx.npy %t/unfused/dx.npy

module {
  func.func @forward(%x: tensor<256x256xf16> {nn.input = "x"}, %g: tensor<256x256xf16> {nn.input = "g"})
      -> (tensor<256x256xf16> {nn.output = "y"}, tensor<256x256xf16> {nn.output = "dx"}) {
    %c = nn.constant dense<0.70710678> : tensor<f16>
    %one = nn.constant dense<1.0> : tensor<f16>
    %half = nn.constant dense<0.5> : tensor<f16>
    %0 = nn.mul %x, %c : (tensor<256x256xf16>, tensor<f16>) -> tensor<256x256xf16>
    %1 = nn.erf %0 : tensor<256x256xf16>
    %2 = nn.add %1, %one : (tensor<256x256xf16>, tensor<f16>) -> tensor<256x256xf16>
    %3 = nn.mul %x, %half : (tensor<256x256xf16>, tensor<f16>) -> tensor<256x256xf16>
    %4 = nn.mul %3, %2 : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16>
    %5 = nn.tanh %4 : tensor<256x256xf16>
    %6 = nn.tanh_grad %5, %g : tensor<256x256xf16>
    %7 = nn.exp %6 : tensor<256x256xf16>
    %8 = nn.div %7, %x : (tensor<256x256xf16>, tensor<256x256xf16>) -> tensor<256x256xf16>
    return %5, %8 : tensor<256x256xf16>, tensor<256x256xf16>
  }
}
