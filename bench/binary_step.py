#!/usr/bin/python3
# Compiled step binaries (fsdp-opt --emit=binary) against fsdp-run on the same
# plan and against torch 2.x eager (PyPI, the venv of scripts/setup-venv.sh),
# side by side in one run, one rank, the same threads for every system
# (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS and torch's intra-op threads).
#
# For each model (the benchmark GPT of train_gpt.py: 4 layers, d 256, T 128,
# batch 8, vocab 512; and gpt-tiny's shape: 2 layers, d 64, T 64, batch 16,
# vocab 256, MLP ratio 2), one AdamW training plan is compiled twice, as a
# plan file and as a binary with the same flags; each system runs W warm-up +
# N timed steps on the same batch from the same weights. Printed per thread
# count: the median step of ./step, fsdp-run and torch eager, ./step's ratio
# to each, and whether ./step's losses equal fsdp-run's bit for bit (they
# must); each system runs --rounds times, interleaved with the others, and
# the medians are over every round's timed steps. Then, from --profile of both at the first thread count, the Fused
# kernels' time per step: generated code (./step) vs the interpreter
# (fsdp-run). Last, the time and size of `--emit=binary` for the seeds' 1B
# Transformer from shapes only (the export cached by plan_transformer_1b.py
# under --workdir; skipped when it is not there).
# Run on demand, not in CI:
#
#   /usr/bin/python3 bench/binary_step.py --build build [--threads 1 2] [--runs 10]

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import gpt_common
from gpu_common import default_torch_python

WARMUP = 2
MODELS = {
    "benchmark GPT": dict(layers=4, d=256, heads=4, T=128, batch=8, vocab=512, mlp_ratio=4),
    "gpt-tiny": dict(layers=2, d=64, heads=4, T=64, batch=16, vocab=256, mlp_ratio=2),
}
# Timed steps per round: gpt-tiny's ~10 ms steps need more of them than
# the benchmark GPT's for a stable median on a shared machine.
STEPS_PER_ROUND = {"benchmark GPT": 1, "gpt-tiny": 5}  # times --runs
TRAIN_FLAGS = ["--optimizer=adamw", "--lr=0.001", "--weight-decay=0.01"]


def torch_worker(args):
    """Runs in the torch 2.x interpreter: times eager training steps as
    train_gpt.py does (AdamW with its settings, from the seeded weights)."""
    import torch
    from train_gpt import torch_step_ms
    model, inputs = gpt_common.build_gpt(args)
    times, _ = torch_step_ms(model, tuple(inputs.values()), args.torch_worker, args.runs)
    print(json.dumps({"times": times, "version": torch.__version__}))


def run_steps(command, threads, tmp, label):
    """One run of W + N steps; the timed steps' step_time_s (ms) and every
    step's loss, exactly as logged."""
    metrics = os.path.join(tmp, f"metrics-{label}-{threads}.jsonl")
    subprocess.run(command + [f"--metrics={metrics}"], check=True,
                   env=gpt_common.thread_env(threads), stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r["step_time_s"] * 1e3 for r in records[WARMUP:]], [r["loss"] for r in records]


def fused_ms(command, threads):
    """The Fused row of --profile (ms per step), or the reason there is none."""
    result = subprocess.run(command + ["--profile"], capture_output=True, text=True,
                            env=gpt_common.thread_env(threads))
    if result.returncode != 0:
        return None, (result.stderr or result.stdout).strip()
    for kernel, ms, _ in gpt_common.profile_table(result.stdout):
        if kernel == "Fused":
            return ms, None
    return None, "no Fused row in --profile"


def torch_eager(args, config, threads):
    if not args.torch_python:
        return None, "no torch 2.x interpreter (scripts/setup-venv.sh, or --torch-python)"
    command = [args.torch_python, os.path.abspath(__file__), f"--torch-worker={threads}",
               f"--runs={args.runs}"] + [f"--{k.replace('_', '-')}={v}" for k, v in config.items()]
    result = subprocess.run(command, env=gpt_common.thread_env(threads), capture_output=True,
                            text=True)
    if result.returncode != 0:
        return None, result.stderr.strip().splitlines()[-1]
    return json.loads(result.stdout.strip().splitlines()[-1]), None


def bench_model(args, name, config, tmp):
    args = argparse.Namespace(**vars(args))
    args.runs *= STEPS_PER_ROUND[name]
    model_args = argparse.Namespace(**config)
    model, inputs = gpt_common.build_gpt(model_args)
    work = os.path.join(tmp, name.replace(" ", "-"))
    os.makedirs(work)
    onnx_path, input_files = gpt_common.export_gpt(model, inputs, work)
    plan, step = os.path.join(work, "gpt.plan"), os.path.join(work, "step")
    gpt_common.compile_plan(args, onnx_path, plan, *TRAIN_FLAGS)
    start = time.perf_counter()
    gpt_common.compile_plan(args, onnx_path, step, *TRAIN_FLAGS, "--emit=binary")
    emit_s = time.perf_counter() - start
    flags = [f"--steps={WARMUP + args.runs}"] + gpt_common.input_flags(input_files)
    run_cmd = [gpt_common.tool(args, "fsdp-run"), plan] + flags
    step_cmd = [step] + flags
    params = sum(p.numel() for p in model.parameters())
    print(f"\n{name}: layers {config['layers']}, d {config['d']}, T {config['T']}, batch "
          f"{config['batch']}, vocab {config['vocab']}, MLP ratio {config['mlp_ratio']}, "
          f"{params / 1e6:.2f}M parameters; --emit=binary {emit_s:.1f} s, "
          f"{os.path.getsize(step) / 2**20:.1f} MiB; median of {args.rounds} rounds x "
          f"{args.runs} steps after {WARMUP} warm-up each")
    print(f"{'threads':>7} | {'./step ms':>9} | {'fsdp-run ms':>11} | {'torch2 ms':>9} | "
          f"{'step/fsdp-run':>13} | {'step/torch2':>11} | same losses")
    for threads in args.threads:
        # Rounds interleave the three systems, so a slow spell of this shared
        # machine falls on all of them alike; the median is over every round.
        step_times, run_times, eager_times, same, problem = [], [], [], True, None
        for _ in range(args.rounds):
            times, step_losses = run_steps(step_cmd, threads, work, "step")
            step_times += times
            times, run_losses = run_steps(run_cmd, threads, work, "run")
            run_times += times
            same = same and step_losses == run_losses
            torch_result, problem = torch_eager(args, config, threads)
            eager_times += torch_result["times"] if torch_result else []
        ours, theirs = statistics.median(step_times), statistics.median(run_times)
        eager = statistics.median(eager_times) if eager_times else float("nan")
        same = "bitwise" if same else "DIFFER"
        print(f"{threads:>7} | {ours:>9.2f} | {theirs:>11.2f} | {eager:>9.2f} | "
              f"{ours / theirs:>12.3f}x | {ours / eager:>10.3f}x | {same}", flush=True)
        if problem:
            print(f"        (torch 2.x: {problem})")
    threads = args.threads[0]
    generated, problem_g = fused_ms(step_cmd, threads)
    interpreted, problem_i = fused_ms(run_cmd, threads)
    if generated is None or interpreted is None:
        print(f"  Fused per step: {problem_g or problem_i}")
    else:
        print(f"  Fused per step at {threads} thread(s): generated {generated:.3f} ms, "
              f"interpreted {interpreted:.3f} ms, ratio {generated / interpreted:.2f}x")


def bench_1b(args):
    model = os.path.join(args.workdir, "transformer-d1024-l32-ff4096-v33278-T35-b1-p0.2",
                         "model.onnx")
    if not os.path.exists(model):
        print(f"\n1B Transformer: skipped (no export at {model}; run "
              f"bench/plan_transformer_1b.py --workdir {args.workdir} once)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        step = os.path.join(tmp, "step")
        command = [gpt_common.tool(args, "fsdp-opt"), model, "-o", step, "--emit=binary",
                   "--world-size=2", "--shard=full", "--wrap=blocks", "--optimizer=adamw",
                   r"--freeze=pos\.pe|tgt_mask"]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        print(f"\n1B Transformer from shapes only, --emit=binary, 2 ranks, full sharding:")
        if result.returncode != 0:
            print(f"  failed after {wall:.1f} s: {result.stderr.strip()}")
            return
        sizes = {f: os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp)}
        print(f"  {wall:.1f} s wall (target <= 20 s); files: "
              + ", ".join(f"{f} {b / 2**20:.1f} MiB" for f, b in sorted(sizes.items())))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build", help="build directory holding bin/")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=10, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of (./step, fsdp-run, torch) per thread count")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--torch-python", default=default_torch_python(),
                        help="interpreter with torch 2.x (default: the venv of setup-venv.sh)")
    parser.add_argument("--workdir", default="/tmp/fsdp-1b",
                        help="plan_transformer_1b.py's export cache")
    parser.add_argument("--no-1b", action="store_true", help="skip the 1B --emit=binary row")
    # Internal: the torch side, run in the torch 2.x interpreter.
    parser.add_argument("--torch-worker", type=int, help=argparse.SUPPRESS)
    for key in MODELS["benchmark GPT"]:
        parser.add_argument(f"--{key.replace('_', '-')}", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        torch_worker(args)
        return
    print("Compiled step (./step) vs fsdp-run vs torch 2.x eager, one rank, same threads")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            bench_model(args, name, MODELS[name], tmp)
    if not args.no_1b:
        bench_1b(args)


if __name__ == "__main__":
    main()
