#!/usr/bin/python3
# Training-step benchmark: the GPT-style decoder of tests/models (default 4
# layers, d 256, 4 heads, T 128, batch 8, vocab 512) compiled with `fsdp-opt`
# into a whole training step (forward, backward, AdamW with torch's defaults:
# lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01) and run by
# `fsdp-run --steps=W+N --metrics=...`, against torch 1.13 running the same
# model from the same weights on the same batch with torch.optim.AdamW, fp32,
# both with the same thread count (OpenBLAS and torch intra-op threads). The
# step time is the median over N timed steps after W warm-up steps (fsdp-run's
# per-step step_time_s from --metrics; perf_counter around zero_grad, forward,
# backward and optimizer.step for torch). Prints one row per thread count with
# both medians, the ratio torch/fsdp, both fastest steps (a busy machine
# inflates medians more than minimums) and how far the two runs' losses
# drifted apart, then fsdp-run --profile's time per kernel for the first
# thread count.
# Run on demand, not in CI:
#
#   /usr/bin/python3 bench/train_gpt.py --build build [--threads 1 2] [--runs 10]

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

import torch

import gpt_common

WARMUP = 2


def torch_step_ms(model, inputs, threads, steps):
    """The timed steps' times (ms) and every step's loss, from a fresh copy
    of the weights (each thread count starts from the same state)."""
    torch.set_num_threads(threads)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=0.01)
    times, losses = [], []
    for _ in range(WARMUP + steps):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = model(*inputs)
        loss.backward()
        optimizer.step()
        times.append((time.perf_counter() - start) * 1e3)
        losses.append(loss.item())
    model.load_state_dict(state)
    return times[WARMUP:], losses


def fsdp_step_ms(args, plan, input_files, tmp, threads):
    """The timed steps' step_time_s (ms) from one fsdp-run, and the losses it
    logged."""
    metrics = os.path.join(tmp, f"metrics-{threads}.jsonl")
    command = [gpt_common.tool(args, "fsdp-run"), plan, f"--steps={WARMUP + args.runs}",
               f"--metrics={metrics}"] + gpt_common.input_flags(input_files)
    subprocess.run(command, check=True, env=gpt_common.thread_env(threads),
                   stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return [r["step_time_s"] * 1e3 for r in records[WARMUP:]], [r["loss"] for r in records]


def fsdp_profile(args, plan, input_files, threads):
    command = [gpt_common.tool(args, "fsdp-run"), plan, f"--steps={args.runs}", "--profile"]
    result = subprocess.run(command + gpt_common.input_flags(input_files), capture_output=True,
                            text=True, env=gpt_common.thread_env(threads))
    if result.returncode != 0:
        return None, (result.stderr or result.stdout).strip()
    return gpt_common.profile_table(result.stdout), None


def main():
    parser = argparse.ArgumentParser()
    gpt_common.add_model_args(parser, runs=10)
    parser.add_argument("--no-profile", action="store_true", help="skip the per-kernel table")
    args = parser.parse_args()

    model, inputs = gpt_common.build_gpt(args)
    batch = tuple(inputs.values())
    if args.torch_worker:
        times, losses = torch_step_ms(model, batch, args.torch_worker, args.runs)
        print(json.dumps({"times": times, "losses": losses}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, input_files = gpt_common.export_gpt(model, inputs, tmp)
        plan = os.path.join(tmp, "gpt.plan")
        gpt_common.compile_plan(args, onnx_path, plan, "--optimizer=adamw", "--lr=0.001",
                                "--weight-decay=0.01")
        params = sum(p.numel() for p in model.parameters())
        print(f"GPT training step (forward + backward + AdamW): {gpt_common.describe(args)}, "
              f"{params / 1e6:.2f}M parameters; median of {args.runs} steps after {WARMUP} warm-up")
        print(f"{'threads':>7} | {'fsdp-run ms':>11} | {'torch ms':>9} | {'torch/fsdp':>10} | "
              f"{'min fsdp/torch':>15} | {'tok/s fsdp':>10} | max loss rel diff")
        tokens = args.batch * args.T
        for threads in args.threads:
            our_times, our_losses = fsdp_step_ms(args, plan, input_files, tmp, threads)
            worker = gpt_common.run_torch_worker(os.path.abspath(__file__), args, threads)
            their_times, their_losses = worker["times"], worker["losses"]
            ours, theirs = statistics.median(our_times), statistics.median(their_times)
            drift = max(abs(a - b) / abs(b) for a, b in zip(our_losses, their_losses))
            fastest = f"{min(our_times):.0f}/{min(their_times):.0f}"
            print(f"{threads:>7} | {ours:>11.2f} | {theirs:>9.2f} | {theirs / ours:>9.2f}x | "
                  f"{fastest:>15} | {tokens / ours * 1e3:>10.0f} | {drift:.1e}", flush=True)
        if args.no_profile:
            return
        rows, problem = fsdp_profile(args, plan, input_files, args.threads[0])
        print(f"\nfsdp-run --profile, {args.threads[0]} thread(s), time per step by kernel:")
        if problem is not None:
            print(f"  (no profile: {problem})")
            return
        print(f"  {'kernel':<28} {'ms/step':>8} {'share':>7}")
        for kernel, ms, share in rows:
            print(f"  {kernel:<28} {ms:>8.3f} {share:>6.1f}%")


if __name__ == "__main__":
    main()
