#!/usr/bin/python3
# Forward-pass benchmark: the GPT-style decoder of tests/models (default 4
# layers, d 256, 4 heads, T 128, batch 8, vocab 512) compiled with
# `fsdp-opt --mode=forward` and run by `fsdp-run --steps=N --time`, against
# torch 1.13 on the same weights and batch under torch.no_grad(), both with
# the same thread count (OpenBLAS and torch intra-op threads). Prints one
# table row per thread count with both times and the ratio, and checks the
# two losses agree. Run on demand, not in CI:
#
#   /usr/bin/python3 bench/forward_gpt.py --build build [--threads 1 2] [--runs 20]

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

import numpy
import torch

import gpt_common


def torch_forward_ms(model, inputs, threads, runs):
    torch.set_num_threads(threads)
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            loss = model(*inputs)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times), float(loss)


def fsdp_forward_ms(args, plan, input_files, outputs, threads):
    env = gpt_common.thread_env(threads)
    command = [gpt_common.tool(args, "fsdp-run"), plan, "--time", f"--steps={args.runs}",
               f"--outputs={outputs}"] + gpt_common.input_flags(input_files)
    subprocess.run(command[:2] + command[4:], check=True, env=env, stdout=subprocess.DEVNULL)  # warm-up
    out = subprocess.run(command, check=True, env=env, capture_output=True, text=True).stdout
    ms = float(re.search(r"time per run: ([\d.]+) ms", out).group(1))
    return ms, float(numpy.load(os.path.join(outputs, "loss.npy")))


def main():
    parser = argparse.ArgumentParser()
    gpt_common.add_model_args(parser, runs=20)
    args = parser.parse_args()

    model, inputs = gpt_common.build_gpt(args)
    if args.torch_worker:
        ms, loss = torch_forward_ms(model, tuple(inputs.values()), args.torch_worker, args.runs)
        print(json.dumps({"ms": ms, "loss": loss}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, input_files = gpt_common.export_gpt(model, inputs, tmp)
        plan = os.path.join(tmp, "gpt.plan")
        gpt_common.compile_plan(args, onnx_path, plan, "--mode=forward")
        print(f"GPT forward: {gpt_common.describe(args)}; median of {args.runs} runs")
        print(f"{'threads':>7} | {'fsdp-run ms':>11} | {'torch ms':>9} | {'torch/fsdp':>10} | loss diff")
        for threads in args.threads:
            ours, our_loss = fsdp_forward_ms(args, plan, input_files, os.path.join(tmp, "out"), threads)
            worker = gpt_common.run_torch_worker(os.path.abspath(__file__), args, threads)
            theirs, their_loss = worker["ms"], worker["loss"]
            print(f"{threads:>7} | {ours:>11.2f} | {theirs:>9.2f} | {theirs / ours:>9.2f}x | "
                  f"{abs(our_loss - their_loss) / abs(their_loss):.1e}")


if __name__ == "__main__":
    main()
