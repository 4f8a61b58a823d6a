// RUN: fsdp-opt %s -split-input-file --pass-pipeline='builtin.module(fsdp-schedule-collectives)' | FileCheck %s

// fsdp-schedule-collectives puts an optimizer update on the host stream (3)
// only when it reads host memory alone (fsdp.host arguments, fsdp.to_host
// results) and its results are the step's in-place updates, read by
// nothing else: the device never waits for the host stream within a step.

// Host operands, updated in place: the host stream.
// CHECK-LABEL: func.func @train_step(
// CHECK: fsdp.to_host %{{.+}} {fsdp.stream = 2 : i64}
// CHECK-NEXT: nn.sgd {{.*}}{fsdp.stream = 3 : i64,
func.func @train_step(%p: tensor<8xf32> {fsdp.host}, %g: tensor<8xf32>, %lr: tensor<f64> {fsdp.host, nn.lr}) -> (tensor<8xf32> {nn.update = "w"}) {
  %h = fsdp.to_host %g : tensor<8xf32>
  %new = nn.sgd %p, %h, %lr {momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  return %new : tensor<8xf32>
}

// -----

// The gradient is still in device memory: the compute stream.
// CHECK-LABEL: func.func @train_step(
// CHECK: nn.sgd
// CHECK-NOT: fsdp.stream
// CHECK-SAME: -> tensor<8xf32>
func.func @train_step(%p: tensor<8xf32> {fsdp.host}, %g: tensor<8xf32>, %lr: tensor<f64> {fsdp.host, nn.lr}) -> (tensor<8xf32> {nn.update = "w"}) {
  %new = nn.sgd %p, %g, %lr {momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  return %new : tensor<8xf32>
}

// -----

// The new parameter is also read in the step: the compute stream.
// CHECK-LABEL: func.func @train_step(
// CHECK: nn.sgd
// CHECK-NOT: fsdp.stream
// CHECK-SAME: -> tensor<8xf32>
// CHECK-NEXT: nn.neg
func.func @train_step(%p: tensor<8xf32> {fsdp.host}, %g: tensor<8xf32>, %lr: tensor<f64> {fsdp.host, nn.lr}) -> (tensor<8xf32> {nn.update = "w"}, tensor<8xf32> {nn.output = "y"}) {
  %h = fsdp.to_host %g : tensor<8xf32>
  %new = nn.sgd %p, %h, %lr {momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  %y = nn.neg %new : tensor<8xf32>
  return %new, %y : tensor<8xf32>, tensor<8xf32>
}

// -----

// Returned as an output, not an in-place update: the compute stream.
// CHECK-LABEL: func.func @train_step(
// CHECK: nn.sgd
// CHECK-NOT: fsdp.stream
// CHECK-SAME: -> tensor<8xf32>
func.func @train_step(%p: tensor<8xf32> {fsdp.host}, %g: tensor<8xf32>, %lr: tensor<f64> {fsdp.host, nn.lr}) -> (tensor<8xf32> {nn.output = "w"}) {
  %h = fsdp.to_host %g : tensor<8xf32>
  %new = nn.sgd %p, %h, %lr {momentum = 0.0 : f64, nesterov = false, weight_decay = 0.0 : f64} : (tensor<8xf32>, tensor<8xf32>, tensor<f64>) -> tensor<8xf32>
  return %new : tensor<8xf32>
}
