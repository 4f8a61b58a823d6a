// The passes' options are typed (compiler/Transforms/Passes.td,
// compiler/Transforms/PassOptions.h): a choice outside its enum, or a shard
// or wrap value fsdp-opt's flags would refuse, is an error when the
// pipeline is parsed, before any pass runs, naming the option and what it
// accepts.
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-shard-parameters{param-dtype=fp16})' 2>&1 | FileCheck %s --check-prefix=DTYPE
// DTYPE: error: param-dtype must be f32, bf16 or f16, not 'fp16'
// DTYPE: failed to add `fsdp-shard-parameters` with options `param-dtype=fp16`
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-recompute-activations{device=tpu})' 2>&1 | FileCheck %s --check-prefix=DEVICE
// DEVICE: error: device must be h100, a100 or cpu, not 'tpu'
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-recompute-activations{ckpt=none})' 2>&1 | FileCheck %s --check-prefix=CKPT
// CKPT: error: ckpt must be blocks or selective, not 'none'
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-shard-parameters{shard=hybrid})' 2>&1 | FileCheck %s --check-prefix=SHARD
// SHARD: error: shard: invalid value 'hybrid'; valid: full, grad-op, none, hybrid:G
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-shard-parameters{wrap=size:0})' 2>&1 | FileCheck %s --check-prefix=WRAP
// WRAP: error: wrap: invalid value 'size:0'; N must be >= 1
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-schedule-collectives{prefetch=two})' 2>&1 | FileCheck %s --check-prefix=INT
// INT: 'two' value invalid for long argument
// RUN: not fsdp-opt %s --pass-pipeline='builtin.module(fsdp-train-pipeline{optimizer=lamb})' 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: error: optimizer must be adamw or sgd, not 'lamb'

// Typed values print back as they were written, so a printed pipeline (and
// a crash reproducer) reads the same options again. (The passes then run on
// the empty module below and fail: only the printed pipeline matters.)
// RUN: not fsdp-opt %s --dump-pass-pipeline -o /dev/null --pass-pipeline='builtin.module(fsdp-apply-optimizer{optimizer=sgd momentum=0.9},fsdp-recompute-activations{ckpt=selective blocks=0,2 device=cpu},fsdp-shard-parameters{world-size=4 shard=hybrid:2 wrap=regex:layers\.[0-9] param-dtype=bf16})' 2>&1 | FileCheck %s --check-prefix=PRINT
// PRINT: fsdp-apply-optimizer{{{.*}}momentum=9.000000e-01{{.*}} optimizer=sgd
// PRINT-SAME: fsdp-recompute-activations{blocks=0,2 ckpt=selective device=cpu}
// PRINT-SAME: fsdp-shard-parameters{align-shards=false param-dtype=bf16 reduce-dtype=f32 shard=hybrid:2 world-size=4 wrap=regex:layers\.[0-9]}
// RUN: not fsdp-opt %s --dump-pass-pipeline -o /dev/null --pass-pipeline='builtin.module(fsdp-shard-parameters{wrap=size:20 shard=grad-op})' 2>&1 | FileCheck %s --check-prefix=DEFAULTS
// DEFAULTS: fsdp-shard-parameters{align-shards=false param-dtype=f32 reduce-dtype=f32 shard=grad-op world-size=1 wrap=size:20}

module {
}
