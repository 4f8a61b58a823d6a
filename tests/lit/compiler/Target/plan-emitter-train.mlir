// Training plans (--mode=train, the default): the plan emitter gives each
// optimizer result its operand's buffer, so AdamW and SGD update the
// parameters and their state in place; parameters, optimizer state and the
// f64 learning-rate / i64 step scalars (written by the runtime before each
// step) live in the persistent region; the loss is an output binding.
// Initial weights of .mlir input come from the ONNX model named by the
// module's nn.source attribute (here a small model written by
// Inputs/linear_weights.py, substituted for @SOURCE@).

// RUN: rm -rf %t && mkdir %t
// RUN: %python %S/Inputs/linear_weights.py %t/linear.onnx
// RUN: sed 's|@SOURCE@|%t/linear.onnx|' %s > %t/train.mlir

// AdamW with weight decay, biases exempt: two AdamW kernels, each writing
// the parameter and its two moments back into their own buffers.
// RUN: fsdp-opt %t/train.mlir --emit=plan --optimizer=adamw --weight-decay=0.1 --no-decay='bias$' -o %t/adamw.plan | FileCheck %s --check-prefix=SUMMARY
// RUN: fsdp-run %t/adamw.plan --dump | FileCheck %s --check-prefix=ADAMW
// SUMMARY: wrote {{.+}}adamw.plan: 7 instructions, 18 buffers; {{.+}}; weights {{.+}}adamw.safetensors
// ADAMW: plan version=4 mode=train world_size=1
// ADAMW: weights adamw.safetensors hash=
// ADAMW: buffer %[[W:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight"
// ADAMW-NEXT: buffer %[[B:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias"
// ADAMW-NEXT: buffer %[[X:[0-9]+]] f32[2, 4] persistent+{{[0-9]+}} size=32 "x"
// ADAMW-NEXT: buffer %[[L:[0-9]+]] i64[2] persistent+{{[0-9]+}} size=16 "labels"
// ADAMW-NEXT: buffer %[[WM:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight.exp_avg"
// ADAMW-NEXT: buffer %[[WV:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight.exp_avg_sq"
// ADAMW-NEXT: buffer %[[BM:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias.exp_avg"
// ADAMW-NEXT: buffer %[[BV:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias.exp_avg_sq"
// ADAMW-NEXT: buffer %[[LR:[0-9]+]] f64[] persistent+{{[0-9]+}} size=8 "lr"
// ADAMW-NEXT: buffer %[[STEP:[0-9]+]] i64[] persistent+{{[0-9]+}} size=8 "step"
// ADAMW: buffer %[[LOSS:[0-9]+]] f32[] persistent+{{[0-9]+}} size=4 "loss"
// ADAMW: inst 0 Gemm [%[[X]], %[[W]], %[[B]]] -> [%[[LOGITS:[0-9]+]]] ints=[0, 1] floats=[1, 1]
// ADAMW-NEXT: inst 1 SoftmaxCrossEntropy [%[[LOGITS]], %[[L]], none] -> [%[[LOSS]], %[[LOGP:[0-9]+]]]
// ADAMW-NEXT: inst 2 SoftmaxCrossEntropyGrad [%[[LOGP]], %[[L]], none, %{{[0-9]+}}] -> [%[[DLOGITS:[0-9]+]]]
// ADAMW-NEXT: inst 3 Gemm [%[[DLOGITS]], %[[X]], none] -> [%[[DW:[0-9]+]]] ints=[1, 0] floats=[1, 0]
// ADAMW-NEXT: inst 4 ReduceSum [%[[DLOGITS]]] -> [%{{[0-9]+}}] ints=[0]
// ADAMW-NEXT: inst 5 AdamW [%[[W]], %[[DW]], %[[WM]], %[[WV]], %[[LR]], %[[STEP]]] -> [%[[W]], %[[WM]], %[[WV]]] floats=[0.9, 0.999, 1e-08, 0.1]
// ADAMW-NEXT: inst 6 AdamW [%[[B]], %{{[0-9]+}}, %[[BM]], %[[BV]], %[[LR]], %[[STEP]]] -> [%[[B]], %[[BM]], %[[BV]]] floats=[0.9, 0.999, 1e-08, 0]
// ADAMW-NEXT: unit 0 "root" f32 flat=15 padded=15 shard=15 group_size=1 shard_buffer=none
// ADAMW-NEXT: param "fc.weight" %[[W]]
// ADAMW-NEXT: param "fc.bias" %[[B]]
// ADAMW-NEXT: input "x" %[[X]]
// ADAMW-NEXT: input "labels" %[[L]]
// ADAMW-NEXT: output "loss" %[[LOSS]]
// ADAMW-NEXT: state "fc.weight.exp_avg" %[[WM]]
// ADAMW-NEXT: state "fc.weight.exp_avg_sq" %[[WV]]
// ADAMW-NEXT: state "fc.bias.exp_avg" %[[BM]]
// ADAMW-NEXT: state "fc.bias.exp_avg_sq" %[[BV]]
// ADAMW-NEXT: train optimizer=adamw base_lr=0.001 loss="loss" lr=%[[LR]] step=%[[STEP]]
// The evaluation prefix (fsdp-run --eval-data) ends with the loss
// instruction, which writes the output binding directly.
// ADAMW-NEXT: eval end=2 loss=%[[LOSS]]

// SGD with Nesterov momentum: one momentum buffer per parameter, updated in
// place with the parameter; no step buffer.
// RUN: fsdp-opt %t/train.mlir --emit=plan --optimizer=sgd --momentum=0.9 --nesterov --lr=0.05 -o %t/sgd.plan
// RUN: fsdp-run %t/sgd.plan --dump | FileCheck %s --check-prefix=MOMENTUM
// MOMENTUM: buffer %[[W:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight"
// MOMENTUM-NEXT: buffer %[[B:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias"
// MOMENTUM: buffer %[[WB:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight.momentum_buffer"
// MOMENTUM-NEXT: buffer %[[BB:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias.momentum_buffer"
// MOMENTUM-NEXT: buffer %[[LR:[0-9]+]] f64[] persistent+{{[0-9]+}} size=8 "lr"
// MOMENTUM-NOT: "step"
// MOMENTUM: inst 5 Sgd [%[[W]], %{{[0-9]+}}, %[[WB]], %[[LR]]] -> [%[[W]], %[[WB]]] ints=[1] floats=[0.9, 0]
// MOMENTUM-NEXT: inst 6 Sgd [%[[B]], %{{[0-9]+}}, %[[BB]], %[[LR]]] -> [%[[B]], %[[BB]]] ints=[1] floats=[0.9, 0]
// MOMENTUM: output "loss"
// MOMENTUM: train optimizer=sgd base_lr=0.05 loss="loss" lr=%[[LR]] step=none

// Plain SGD: no state at all, only the learning rate.
// RUN: fsdp-opt %t/train.mlir --emit=plan --optimizer=sgd -o %t/sgd0.plan
// RUN: fsdp-run %t/sgd0.plan --dump | FileCheck %s --check-prefix=PLAIN
// PLAIN: buffer %[[W:[0-9]+]] f32[3, 4] persistent+{{[0-9]+}} size=48 "fc.weight"
// PLAIN-NEXT: buffer %[[B:[0-9]+]] f32[3] persistent+{{[0-9]+}} size=12 "fc.bias"
// PLAIN-NEXT: buffer %{{[0-9]+}} f32[2, 4] persistent+{{[0-9]+}} size=32 "x"
// PLAIN-NEXT: buffer %{{[0-9]+}} i64[2] persistent+{{[0-9]+}} size=16 "labels"
// PLAIN-NEXT: buffer %[[LR:[0-9]+]] f64[] persistent+{{[0-9]+}} size=8 "lr"
// PLAIN-NOT: momentum_buffer
// PLAIN-NOT: "step"
// PLAIN: inst 5 Sgd [%[[W]], %{{[0-9]+}}, none, %[[LR]]] -> [%[[W]]] ints=[0] floats=[0, 0]
// PLAIN-NEXT: inst 6 Sgd [%[[B]], %{{[0-9]+}}, none, %[[LR]]] -> [%[[B]]] ints=[0] floats=[0, 0]

// Without an nn.source model a .mlir module has no initial weights, and a
// plan cannot be written.
// RUN: sed 's|attributes {nn.source = "@SOURCE@"} ||' %s > %t/nosource.mlir
// RUN: not fsdp-opt %t/nosource.mlir --emit=plan -o %t/nosource.plan 2>&1 | FileCheck %s --check-prefix=NOSOURCE
// NOSOURCE: nosource.mlir:[[@LINE+3]]:3: error: parameter 'fc.weight' has no initial value in the source model

module attributes {nn.source = "@SOURCE@"} {
  func.func @forward(%w: tensor<3x4xf32> {nn.param = "fc.weight"}, %b: tensor<3xf32> {nn.param = "fc.bias"},
                     %x: tensor<2x4xf32> {nn.input = "x"}, %l: tensor<2xi64> {nn.input = "labels"})
      -> (tensor<f32> {nn.output = "loss"}) {
    %y = nn.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %lp = nn.softmax_cross_entropy %y, %l {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    return %loss : tensor<f32>
  }
}
