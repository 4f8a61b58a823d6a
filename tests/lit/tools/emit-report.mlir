// --emit=report compiles the plan --emit=plan would write, in memory (no
// plan or weights file, so this module needs no nn.source weights), and
// reports each rank's bytes read from that plan. The linear model below,
// trained with AdamW, works out on paper (every buffer takes a multiple of
// 64 bytes): parameters fc.weight and fc.bias, 128 B; optimizer state, two
// moments each, 256 B; io x, labels, loss, lr, step, 320 B; persistent 704
// B. The arena peaks (192 B) at the bias gradient's ReduceSum, while both
// gradients (128 B) and the logits' gradient (an activation, 64 B) are live.

// RUN: rm -rf %t && mkdir %t && cd %t
// RUN: fsdp-opt %s --emit=report | FileCheck %s --check-prefix=TEXT
// TEXT: memory report: (unnamed model)
// TEXT-NEXT: mode train (adamw), world size 1, strategy unsharded, param dtype f32, reduce dtype f32
// TEXT: per rank (every rank runs the same plan, so the rows are equal):
// TEXT-NEXT: rank  parameters  gradients  optimizer state  activations  communication     io  fragmentation   peak
// TEXT-NEXT:    0       128 B      128 B            256 B         64 B            0 B  320 B            0 B  896 B
// TEXT: parameters        128
// TEXT-NEXT: optimizer state   256
// TEXT-NEXT: io                320
// TEXT-NEXT: gradients         128
// TEXT-NEXT: activations        64
// TEXT-NEXT: communication       0
// TEXT-NEXT: fragmentation       0
// TEXT-NEXT: peak              896       896 B  persistent 704 + arena 192
// TEXT: units (1):
// TEXT-NEXT: unit  params  flat_numel  padded_numel  shard_numel  group  dtype  per rank  bytes
// TEXT-NEXT: root       2          15            15           15      1    f32      60 B     60

// The same numbers as JSON, to -o FILE; nothing else is written.
// RUN: fsdp-opt %s --emit=report --report-format=json -o %t/report.json
// RUN: FileCheck %s --check-prefix=JSON < %t/report.json
// RUN: ls %t | FileCheck %s --check-prefix=FILES
// JSON: "world_size": 1,
// JSON: "strategy": "unsharded",
// JSON: "peak_bytes": 896,
// JSON-NEXT: "activations_bytes": 128,
// JSON-NEXT: "persistent_bytes": 704,
// JSON-NEXT: "arena_bytes": 192,
// JSON: "ranks": [
// JSON-NEXT: {"rank": 0, "parameters": 128, "gradients": 128, "optimizer_state": 256, "activations": 64, "communication": 0, "io": 320, "fragmentation": 0, "peak": 896, "activations_peak": 128}
// JSON-NEXT: ],
// JSON: "units": [
// JSON-NEXT: {"name": "root", "parameters": 2, "flat_numel": 15, "padded_numel": 15, "shard_numel": 15, "group_size": 1, "dtype": "f32", "bytes_per_rank": 60, "gathered_in_place": false}
// FILES: report.json
// FILES-NOT: {{.}}

// Plain SGD keeps no optimizer state; `-o -` is stdout.
// RUN: fsdp-opt %s --emit=report --report-format=json --optimizer=sgd -o - | FileCheck %s --check-prefix=SGD
// SGD: "optimizer": "sgd",
// SGD: {"rank": 0, "parameters": 128, {{.*}} "optimizer_state": 0,

// Sharded over two ranks (one root unit: 19 elements with fc.bias 64-byte
// aligned, padded to 32 so each rank's 16-element shard is a 64-byte
// aligned chunk of the gathered buffer): one row per rank, each holding
// the root unit gathered in place (128 B, its shard inside) and two
// 64-byte moments.
// RUN: fsdp-opt %s --emit=report --report-format=json --world-size=2 --shard=full | FileCheck %s --check-prefix=SHARDED
// SHARDED: "world_size": 2,
// SHARDED-NEXT: "strategy": "full",
// SHARDED: {"rank": 0, "parameters": 128, {{.*}} "optimizer_state": 128,
// SHARDED-NEXT: {"rank": 1, "parameters": 128, {{.*}} "optimizer_state": 128,
// SHARDED: {"name": "root", "parameters": 2, "flat_numel": 19, "padded_numel": 32, "shard_numel": 16, "group_size": 2, "dtype": "f32", "bytes_per_rank": 64, "gathered_in_place": true}

// A real model: the report is valid JSON, every row adds up to its peak,
// and the peak is the persistent + arena bytes --emit=plan prints.
// RUN: fsdp-opt %fsdp_src/examples/gpt-tiny.onnx -o %t/gpt.plan > %t/gpt.txt
// RUN: fsdp-opt %fsdp_src/examples/gpt-tiny.onnx --emit=report --report-format=json | %python -c "import json, sys; r = json.load(sys.stdin); k = r['ranks'][0]; assert r['peak_bytes'] == r['persistent_bytes'] + r['arena_bytes'] == k['peak'] == sum(k[c] for c in ('parameters', 'gradients', 'optimizer_state', 'activations', 'communication', 'io', 'fragmentation')); print('persistent', r['persistent_bytes'], 'arena', r['arena_bytes'], 'ranks', len(r['ranks']))" >> %t/gpt.txt
// RUN: FileCheck %s --check-prefix=GPT < %t/gpt.txt
// GPT: persistent [[P:[0-9]+]] B, arena [[A:[0-9]+]] B
// GPT: persistent [[P]] arena [[A]] ranks 1

// The report predicts the step's time on --device (h100 by default) from
// the plan, and compares configurations at the same world size, each
// planned from the model: none (DDP), grad-op, full, full + --ckpt=blocks;
// full + offload's peak is device memory (its state is in host memory). An
// unsharded plan (world size 1, no --shard) is a row of its own.
// RUN: fsdp-opt %s --emit=report --device=a100 | FileCheck %s --check-prefix=TIME
// TIME: predicted step on a100 (a cost-model prediction, not a measurement; NVIDIA A100
// TIME-NEXT: step {{[0-9.]+}} us: compute {{[0-9.]+}} us, communication 0 us (0 us not hidden under compute; one stream, serial)
// TIME: configurations at world size 1 (each planned from the model; * the one reported above):
// TIME-NEXT: configuration{{ +}}peak per rank{{ +}}predicted step{{ +}}flags
// TIME-NEXT: none (DDP){{ +[0-9.]+ [KMG]?i?B +[0-9.]+ us +}}--shard=none
// TIME-NEXT: grad-op{{ +[0-9.]+ [KMG]?i?B +[0-9.]+ us +}}--shard=grad-op
// TIME-NEXT: full{{ +[0-9.]+ [KMG]?i?B +[0-9.]+ us +}}--shard=full
// TIME-NEXT: full + ckpt{{ +}}
// TIME-NEXT: full + offload{{ +[0-9.]+ [KMG]?i?B +[0-9.]+ us +}}--shard=full --offload=cpu
// TIME-NEXT: * chosen{{ +}}896 B{{ +[0-9.]+ us +}}unsharded (no --shard, world size 1)
// TIME: full + offload: device memory; shards, gradient shards and optimizer state are in host memory

// The JSON report has the device, the predicted step and its split, and one entry per
// configuration; the chosen one (here grad-op over two ranks) is the
// reported plan.
// RUN: fsdp-opt %s --emit=report --report-format=json --world-size=2 --shard=grad-op --device=cpu | %python -c "import json, sys; r = json.load(sys.stdin); c = r['configurations']; assert r['device'] == 'cpu' and r['predicted_step_s'] > 0 and abs(r['predicted_step_s'] - r['predicted_compute_s'] - r['predicted_exposed_communication_s']) < 1e-9, r; assert [x['name'] for x in c] == ['none (DDP)', 'grad-op', 'full', 'full + ckpt', 'full + offload'], c; k = [x for x in c if x['chosen']]; assert len(k) == 1 and k[0]['name'] == 'grad-op' and k[0]['peak_bytes'] == r['peak_bytes'] and k[0]['predicted_step_s'] == r['predicted_step_s'], k; assert 'host memory' in c[4]['note']; assert all(x['peak_bytes'] > 0 and x['predicted_step_s'] > 0 for x in c[:3] + c[4:]); print('configurations', len(c))" | FileCheck %s --check-prefix=CONFIGS
// CONFIGS: configurations 5

// --device means nothing to outputs that predict no time (a plan carries
// its predicted step, so --emit=plan takes it).
// RUN: not fsdp-opt %s --emit=mlir --stop-after=train --device=cpu 2>&1 | FileCheck %s --check-prefix=NODEVICE
// NODEVICE: fsdp-opt: error: --device requires --emit=plan, --emit=report or --emit=trace

// --report-format means nothing without --emit=report.
// RUN: not fsdp-opt %s --emit=plan --report-format=json -o %t/x.plan 2>&1 | FileCheck %s --check-prefix=NOREPORT
// NOREPORT: fsdp-opt: error: --report-format requires --emit=report

module {
  func.func @forward(%w: tensor<3x4xf32> {nn.param = "fc.weight"}, %b: tensor<3xf32> {nn.param = "fc.bias"},
                     %x: tensor<2x4xf32> {nn.input = "x"}, %l: tensor<2xi64> {nn.input = "labels"})
      -> (tensor<f32> {nn.output = "loss"}) {
    %y = nn.gemm %x, %w, %b {trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %loss, %lp = nn.softmax_cross_entropy %y, %l {reduction = "mean"} : (tensor<2x3xf32>, tensor<2xi64>) -> (tensor<f32>, tensor<2x3xf32>)
    return %loss : tensor<f32>
  }
}
