// RUN: fsdp-opt %s --pass-pipeline='builtin.module(fsdp-schedule-collectives{prefetch=-1})' -split-input-file -verify-diagnostics

// A negative prefetch depth is refused on the module.
// expected-error @+1 {{prefetch must be >= 0, not -1}}
module {
  func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
