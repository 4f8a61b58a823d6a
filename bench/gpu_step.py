#!/usr/bin/python3
# Training-step benchmark on one GPU (issue 16), run on demand on a machine
# with an NVIDIA GPU. Two models, each a whole training step (forward,
# backward, AdamW: lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01),
# in fp32 with TF32 off (fsdp-run's default; torch is told the same) and in
# bf16 (issue 31):
#   - gpt: the benchmark GPT of bench/gpt_common.py (layers 4, d 256, heads
#     4, T 128, batch 8, vocab 512; the --layers/--d/... flags change it);
#   - 1b: the seeds' 1B Transformer of bench/plan_transformer_1b.py
#     (nn.Transformer d_model 1024, 64 heads, 32 + 32 layers, ff 4096,
#     vocab 33,278, dropout 0.2; batch 1 x 35 tokens), at world size 1:
#     plain (fp32 AdamW state is ~16 GB, which fits an 80 GB GPU) and with
#     --offload=cpu; --depth N builds it with N + N layers instead.
# Rows per model: fsdp-run --device=cuda with --cuda-graphs=on and off, in
# fp32 (also with --offload=cpu for the 1b, and for the gpt with --offload)
# and, for the gpt (BF16_FAMILIES), with fsdp-opt --param-dtype=bf16
# (FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=f32): f32
# master parameters and AdamW, forward and backward in bf16); then torch
# on the same architecture, seed and batch (TORCH_ROWS): eager and
# torch.compile in fp32 and, for the gpt, the same under torch.autocast
# (bf16) with the f32 model, and eager with the model cast to bf16. Each
# precision ends with fsdp-run's tokens/s (graphs on) over torch eager's
# in it (bf16: under autocast). The gpt's fsdp-run rows also run with
# --fuse-attention=off (fused attention is the default: its CUDA kernels
# are the flash-style twin, the unfused plan's products cuBLAS GEMMs), so
# at --T 2048 the two attention paths sit side by side.
# Columns: the median step time over --runs steps after the warm-up steps (fsdp-run's step_time_s from --metrics;
# CUDA events around zero_grad/forward/backward/step for torch), tokens/s,
# model TFLOP/s and MFU, the planned device bytes (fsdp-opt --emit=report
# peak_bytes), fsdp-run's own peak_bytes and device_context_bytes, and the
# process's device memory as nvidia-smi saw it (max over the run).
#
# Model FLOPs, MFU peaks and the memory sampler: bench/gpu_common.py.
#
# torch runs in another interpreter (--torch-python; default: the venv of
# scripts/setup-venv.sh, $FSDP_VENV or .venv, torch 2.x); without CUDA
# there its rows say so. No GPU: a "no GPU" line and exit 2, no numbers.
#
#   /usr/bin/python3 bench/gpu_step.py --build build [--models gpt 1b] [--runs 20]
#   /usr/bin/python3 bench/gpu_step.py --models gpt --T 2048 --batch 2   # attention at T 2048
#   /usr/bin/python3 bench/gpu_step.py --models 1b --depth 8 --runs 5

import argparse
import json
import os
import statistics
import sys
import tempfile

from gpu_common import (ADAMW, BUFFERS, GPT_DEFAULT, NO_GPU_EXIT, build, compile_plan,
                        default_torch_python, export, flops_per_step, mib, model_config, peak_of,
                        run_sampled, tool, torch_timed_steps)
import gpu_probe  # noqa: E402  (the GPUs the driver sees; tests/gpu, on gpu_common's path)

WARMUP = 3  # the first step captures the CUDA graph; torch.compile compiles
LABEL = 42  # the run column: "torch.compile autocast bf16 (torch version)"

# The torch peers: (label, --torch-worker mode, precision). autocast keeps
# the f32 model (parameters, gradients and AdamW state, as fsdp-run's
# masters) and runs the forward under torch.autocast("cuda", bfloat16):
# its GEMMs in bf16, but softmax, layer norm and the loss in f32, where
# --param-dtype=bf16 (like FSDP2's policy) gives them bf16 tensors. bf16
# casts the model (model.to(bfloat16)): parameters, gradients and AdamW
# state in bf16, no f32 master, so less memory and traffic than ours.
TORCH_ROWS = [
    ("torch eager", "eager", "f32"),
    ("torch.compile", "compile", "f32"),
    ("torch eager autocast bf16", "eager", "autocast"),
    ("torch.compile autocast bf16", "compile", "autocast"),
    ("torch eager, model in bf16", "eager", "bf16"),
]
# The model families with bf16 rows. --param-dtype=bf16 casts parameters,
# not buffers, as FSDP2's policy does, and the 1b's Transformer adds its
# f32 positional-encoding buffer to the bf16 embedding: the f32 sum then
# meets bf16 weights in attention's products, which fsdp-opt refuses as
# torch does ("mat1 and mat2 must have the same dtype").
BF16_FAMILIES = ("gpt",)
# The tokens/s ratios printed per model: (precision, the fsdp-run row
# whose graphs-on speed is over, that of the torch row, target). issue 16
# set the fp32 target; bf16 has none yet.
RATIOS = [("fp32", "fsdp-run", "torch eager", " (target >= 1.2x on the GPT)"),
          ("bf16", "fsdp-run --param-dtype=bf16", "torch eager autocast bf16", "")]

# --------------------------------------------------------------------------
# torch side (run in the --torch-python interpreter)
# --------------------------------------------------------------------------

def torch_worker(cfg, runs, mode, precision):
    import torch

    if not torch.cuda.is_available():
        return {"error": f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU"}
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model, inputs = build(cfg)
    model = model.cuda()
    if precision == "bf16":
        model = model.to(torch.bfloat16)
    batch = [t.cuda() for t in inputs.values()]
    step_model = torch.compile(model) if mode == "compile" else model
    times = torch_timed_steps(step_model, batch, WARMUP + runs,
                              autocast=torch.bfloat16 if precision == "autocast" else None)
    return {"times": times[WARMUP:], "peak_bytes": torch.cuda.max_memory_allocated(),
            "torch": torch.__version__}


def run_torch(args, cfg, mode, precision):
    if not args.torch_python:
        return {"error": "no torch 2.x interpreter (scripts/setup-venv.sh, or --torch-python)"}
    command = [args.torch_python, os.path.abspath(__file__), "--torch-worker", mode,
               "--torch-precision", precision, "--worker-config", json.dumps(cfg),
               f"--runs={args.runs}"]
    code, out, err, _, smi = run_sampled(command, None)
    if code != 0:
        return {"error": f"exit {code}: {err.strip().splitlines()[-1] if err else ''}"}
    result = json.loads(out.strip().splitlines()[-1])
    result["smi_bytes"] = smi
    return result


# --------------------------------------------------------------------------
# fsdp side
# --------------------------------------------------------------------------

def run_fsdp(args, plan, inputs, graphs, tmp):
    metrics = os.path.join(tmp, f"metrics-{os.path.basename(plan)}-{graphs}.jsonl")
    command = [tool(args, "fsdp-run"), plan, "--device=cuda", f"--cuda-graphs={graphs}",
               f"--steps={WARMUP + args.runs}", f"--metrics={metrics}", *inputs]
    code, _, err, _, smi = run_sampled(command, None)
    if code != 0:
        return {"error": f"exit {code}: {err.strip()}"}
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    last = records[-1]
    return {"times": [r["step_time_s"] for r in records[WARMUP:]],
            "peak_bytes": last.get("peak_bytes"),
            "context_bytes": last.get("device_context_bytes"), "smi_bytes": smi}


# --------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------

def print_header():
    print(f"  {'run':<{LABEL}} | {'step ms':>8} | {'tok/s':>9} | {'TFLOP/s':>7} | {'MFU f32':>7} | "
          f"{'MFU bf16':>8} | {'plan MiB':>8} | {'peak MiB':>8} | {'ctx MiB':>7} | "
          f"{'smi MiB':>7}")


def print_row(label, result, tokens, flops, peak, planned=None):
    if "error" in result:
        print(f"  {label:<{LABEL}} | {result['error']}")
        return None
    step = statistics.median(result["times"])
    tflops = flops / step / 1e12
    mfu32 = f"{tflops / peak[1] * 100:.1f}%" if peak else "-"
    mfu16 = f"{tflops / peak[0] * 100:.1f}%" if peak else "-"
    print(f"  {label:<{LABEL}} | {step * 1e3:>8.2f} | {tokens / step:>9.0f} | {tflops:>7.2f} | "
          f"{mfu32:>7} | {mfu16:>8} | {mib(planned):>8} | {mib(result.get('peak_bytes')):>8} | "
          f"{mib(result.get('context_bytes')):>7} | {mib(result.get('smi_bytes')):>7}", flush=True)
    return tokens / step


def bench_model(args, which, peak, tmp):
    cfg = model_config(args, which)
    work = os.path.join(tmp, which)
    os.makedirs(work)
    onnx_path, inputs, model = export(cfg, work)
    params = sum(p.numel() for p in model.parameters())
    flops = flops_per_step(cfg, model)
    tokens = cfg["batch"] * cfg["T"]
    del model
    shape = ", ".join(f"{k} {v}" for k, v in cfg.items() if k != "family")
    print(f"\n{which}: {cfg['family']}, {shape}; {params / 1e6:.1f}M parameters, "
          f"{flops / 1e9:.1f} GFLOP per step; median of {args.runs} steps after {WARMUP}")
    print_header()
    base = ADAMW + ([f"--freeze={BUFFERS}"] if cfg["family"] == "transformer" else [])
    configs = [("fsdp-run", base)]
    if which == "1b" or args.offload:
        configs.append(("fsdp-run --offload=cpu", base + ["--offload=cpu"]))
    bf16 = cfg["family"] in BF16_FAMILIES
    if bf16:
        configs.append(("fsdp-run --param-dtype=bf16", base + ["--param-dtype=bf16"]))
    if cfg["family"] == "gpt":
        # Attention is fused by default (nn.attention: the CUDA flash-style
        # twin); the unfused plan runs its products as cuBLAS GEMMs.
        configs += [(label + " --fuse-attention=off", flags + ["--fuse-attention=off"])
                    for label, flags in list(configs) if "offload" not in label]
    speeds = {}
    for label, flags in configs:
        plan = os.path.join(work, label.replace(" ", "_").replace("=", "-") + ".plan")
        report = compile_plan(args, onnx_path, plan, flags, peak[2] if peak else None)
        for graphs in ("on", "off"):
            result = run_fsdp(args, plan, inputs, graphs, work)
            speeds[(label, graphs)] = print_row(f"{label} graphs {graphs}", result, tokens,
                                                flops, peak, report.get("peak_bytes"))
            smi, context = result.get("smi_bytes"), result.get("context_bytes")
            if smi is not None and context is not None and report.get("peak_bytes"):
                expected = report["peak_bytes"] + context
                print(f"  {'    memory check':<{LABEL}} | nvidia-smi {mib(smi)} MiB vs planned + "
                      f"context {mib(expected)} MiB ({(smi - expected) / 2**20:+.1f} MiB)")
        predicted = report.get("predicted_step_s")
        if predicted:
            print(f"  {'  cost model':<{LABEL}} | {predicted * 1e3:>8.2f} | the planned step "
                  f"(fsdp-opt --emit=report --device={peak[2] if peak else 'default'})")
    for label, mode, precision in TORCH_ROWS:
        if precision != "f32" and not bf16:
            continue
        result = run_torch(args, cfg, mode, precision)
        version = f" ({result['torch']})" if "torch" in result else ""
        speeds[label] = print_row(label + version, result, tokens, flops, peak)
    for precision, ours, theirs, target in RATIOS:
        if speeds.get((ours, "on")) and speeds.get(theirs):
            print(f"  {precision}: {ours} (graphs on) / {theirs} tokens/s: "
                  f"{speeds[(ours, 'on')] / speeds[theirs]:.2f}x{target}")
    if not bf16:
        print("  no bf16 rows: its f32 buffers meet bf16 weights (BF16_FAMILIES)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build", help="build directory holding bin/")
    parser.add_argument("--models", nargs="+", default=["gpt", "1b"], choices=["gpt", "1b"])
    parser.add_argument("--runs", type=int, default=20, help="timed steps (median)")
    parser.add_argument("--depth", type=int, help="1b: encoder and decoder layers (default 32)")
    parser.add_argument("--offload", action="store_true", help="gpt: add --offload=cpu rows")
    parser.add_argument("--torch-python", default=default_torch_python(),
                        help="interpreter with torch 2.x + CUDA for the torch rows")
    for name, value in GPT_DEFAULT.items():
        parser.add_argument(f"--{name}", type=int, default=value, help=f"gpt: {name}")
    # Internal: run torch's side of one model in this interpreter, print JSON.
    parser.add_argument("--torch-worker", choices=["eager", "compile"], help=argparse.SUPPRESS)
    parser.add_argument("--torch-precision", choices=sorted({p for _, _, p in TORCH_ROWS}),
                        default="f32", help=argparse.SUPPRESS)
    parser.add_argument("--worker-config", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.torch_worker:
        print(json.dumps(torch_worker(json.loads(args.worker_config), args.runs,
                                      args.torch_worker, args.torch_precision)))
        return 0
    found, why = gpu_probe.gpus()
    if not found:
        print(f"no GPU: {why}; bench/gpu_step.py measures nothing without one")
        return NO_GPU_EXIT
    name, total = found[0]
    peak = peak_of(name)
    print(f"GPU 0: {name}, {total / 2**30:.1f} GiB; peak "
          + (f"{peak[0]:g} TFLOP/s bf16, {peak[1]:g} fp32 (dense, NVIDIA data sheet)" if peak
             else "unknown (not in bench/gpu_common.py's table): no MFU"))
    print(f"fp32 rows with TF32 off; bf16 rows: fsdp-opt --param-dtype=bf16 (f32 masters and "
          f"AdamW, bf16 compute), torch under autocast(bf16) or with the model in bf16; "
          f"torch from {args.torch_python or 'nowhere'}")
    with tempfile.TemporaryDirectory(prefix="gpu-step-") as tmp:
        for which in args.models:
            bench_model(args, which, peak, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
