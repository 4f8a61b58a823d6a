// The host stream (plan stream 3) of an --offload=cpu step: the scheduled
// step below (fsdp-opt on Inputs/linear_weights.py's model with
// --world-size=2 --offload=cpu --optimizer=sgd --loss=xent:y, stopped after
// the schedule stage) has its update on the host stream. The emitter makes
// it wait for the copy of its gradient to the host and nothing else (no
// compute instruction touched its operands), and no device instruction
// waits for it. Anything reading what the update writes, and an update
// whose result is no in-place host update, is refused at compile time: the
// device cannot wait for the host stream within a step.

// RUN: rm -rf %t && mkdir %t
// RUN: %python %S/Inputs/linear_weights.py %t/linear.onnx
// RUN: grep -v '^//' %s | sed 's|@SOURCE@|%t/linear.onnx|' > %t/step.mlir
// RUN: fsdp-opt %t/step.mlir --world-size=2 --emit=plan -o %t/step.plan
// RUN: fsdp-run %t/step.plan --dump | FileCheck %s
// CHECK: streams 4 events=5
// CHECK: buffer %[[LR:[0-9]+]] f64[] host+{{[0-9]+}} size=8 "lr"
// CHECK-NEXT: buffer %[[P:[0-9]+]] f32[16] host+{{[0-9]+}} size=64 "root"
// CHECK: buffer %[[H:[0-9]+]] f32[16] host+{{[0-9]+}} size=64
// CHECK-NOT: wait=[4]
// CHECK: inst 8 ReduceScatter [{{.*}}] -> [%[[R:[0-9]+]]] {{.*}}stream=1 wait=[2] signal=3
// CHECK-NEXT: inst 9 Copy [%[[R]]] -> [%[[H]]] stream=2 wait=[2, 3] signal=4
// CHECK-NEXT: inst 10 AllReduce {{.*}} stream=1{{$}}
// CHECK-NEXT: inst 11 Sgd [%[[P]], %[[H]], none, %[[LR]]] -> [%[[P]]] {{.*}} stream=3 wait=[4]{{$}}

// A compute op reading the update's result would make the device wait for
// the host stream.
// RUN: sed -e 's|{nn.update = "root"})|{nn.update = "root"}, tensor<16xf32> {nn.output = "p"})|' \
// RUN:     -e 's|return %13, %new_param : tensor<f32>, tensor<16xf32>|%14 = nn.neg %new_param : tensor<16xf32>\n    return %13, %new_param, %14 : tensor<f32>, tensor<16xf32>, tensor<16xf32>|' \
// RUN:     %t/step.mlir > %t/read.mlir
// RUN: not fsdp-opt %t/read.mlir --world-size=2 --emit=plan -o %t/read.plan 2>&1 | FileCheck %s --check-prefix=READ
// READ: error: 'nn.neg' op uses what nn.sgd at {{.*}} writes on the host stream; the device cannot wait for the host stream within a step

// An update returned as an output rather than written in place would write
// device memory from the host.
// RUN: sed 's|{nn.update = "root"})|{nn.output = "p"})|' %t/step.mlir > %t/out.mlir
// RUN: not fsdp-opt %t/out.mlir --world-size=2 --emit=plan -o %t/out.plan 2>&1 | FileCheck %s --check-prefix=OUT
// OUT: error: 'nn.sgd' op runs on the host stream, but result 0 is not in host memory

module attributes {fsdp.world_size = 2 : i64, nn.opset = 17 : i64, nn.source = "@SOURCE@"} {
  func.func @train_step(%arg0: tensor<2x4xf32> {nn.input = "x"}, %arg1: tensor<2xi64> {nn.input = "labels"}, %arg2: tensor<f64> {fsdp.host, nn.lr}, %arg3: tensor<16xf32> {fsdp.host, fsdp.unit = {flat_numel = 19 : i64, group_size = 2 : i64, name = "root", padded_numel = 32 : i64, params = [{name = "fc.weight", offset = 0 : i64, type = tensor<3x4xf32>}, {name = "fc.bias", offset = 16 : i64, type = tensor<3xf32>}]}}) -> (tensor<f32> {nn.output = "loss"}, tensor<16xf32> {nn.update = "root"}) {
    %0 = fsdp.to_device %arg3 {fsdp.stream = 2 : i64} : tensor<16xf32>
    %1 = fsdp.all_gather %0 {fsdp.stream = 1 : i64, group_size = 2 : i64, groups = array<i64: 0, 1>} : tensor<16xf32> -> tensor<32xf32>
    %2 = fsdp.flat_view %1 {offset = 0 : i64} : tensor<32xf32> -> tensor<3x4xf32>
    %3 = fsdp.flat_view %1 {offset = 16 : i64} : tensor<32xf32> -> tensor<3xf32>
    %4 = nn.gemm %arg0, %2, %3 {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %log_prob = nn.softmax_cross_entropy %4, %arg1 {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    %5 = nn.constant dense<1.000000e+00> : tensor<f32>
    %6 = nn.softmax_cross_entropy_grad %5, %log_prob, %arg1 {reduction = "mean"} : (tensor<f32>, tensor<2x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
    %7 = nn.gemm %6, %arg0 {beta = 0.000000e+00 : f32, trans_a = true} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<3x4xf32>
    %8 = nn.reduce_sum %6 {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    %9 = nn.reshape %8 : tensor<1x3xf32> to tensor<3xf32>
    %10 = fsdp.flatten %7, %9 {offsets = array<i64: 0, 16>} : (tensor<3x4xf32>, tensor<3xf32>) -> tensor<32xf32>
    %11 = fsdp.reduce_scatter %10 {fsdp.stream = 1 : i64, group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<32xf32> -> tensor<16xf32>
    %12 = fsdp.to_host %11 {fsdp.stream = 2 : i64} : tensor<16xf32>
    %13 = fsdp.all_reduce %loss {fsdp.stream = 1 : i64, group_size = 2 : i64, groups = array<i64: 0, 1>, reduction = "avg"} : tensor<f32>
    %new_param = nn.sgd %arg3, %12, %arg2 {fsdp.stream = 3 : i64, momentum = 0.000000e+00 : f64, nesterov = false, weight_decay = 0.000000e+00 : f64} : (tensor<16xf32>, tensor<16xf32>, tensor<f64>) -> tensor<16xf32>
    return %13, %new_param : tensor<f32>, tensor<16xf32>
  }
}
