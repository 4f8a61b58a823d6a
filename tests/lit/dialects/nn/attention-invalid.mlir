// RUN: fsdp-opt %s --split-input-file --verify-diagnostics

// Verifier failures of nn.attention and nn.attention_grad
// (dialects/nn/AttentionOps.cpp).

func.func @heads(%q: tensor<1x3x4x4xf32>, %k: tensor<1x2x4x4xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'nn.attention' op}}
  %o, %l = nn.attention %q, %k, %k {is_causal = false, scale = 1.0 : f32} : (tensor<1x3x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x3x4x4xf32>, tensor<1x3x4xf32>)
  return %o : tensor<1x3x4x4xf32>
}

// -----

func.func @dropout(%q: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'nn.attention' op dropout_p must be in [0, 1), got 1}}
  %o, %l = nn.attention %q, %q, %q {dropout_p = 1.0 : f32, is_causal = false, scale = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4xf32>)
  return %o : tensor<1x2x4x4xf32>
}

// -----

func.func @dropout_grad(%q: tensor<1x2x4x4xf32>, %l: tensor<1x2x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+1 {{'nn.attention_grad' op dropout_p must be in [0, 1), got -5.000000e-01}}
  %dq, %dk, %dv = nn.attention_grad %q, %q, %q, %q, %l, %q {dropout_p = -0.5 : f32, is_causal = false, scale = 1.0 : f32} : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4xf32>, tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>)
  return %dq : tensor<1x2x4x4xf32>
}
