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
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import export_models  # noqa: E402  (the test models' definitions and exporter)


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
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    command = [os.path.join(args.build, "bin", "fsdp-run"), plan, "--time", f"--steps={args.runs}",
               f"--outputs={outputs}"] + [f"--input={n}={f}" for n, f in input_files.items()]
    subprocess.run(command[:2] + command[4:], check=True, env=env, stdout=subprocess.DEVNULL)  # warm-up
    out = subprocess.run(command, check=True, env=env, capture_output=True, text=True).stdout
    ms = float(re.search(r"time per run: ([\d.]+) ms", out).group(1))
    return ms, float(numpy.load(os.path.join(outputs, "loss.npy")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--T", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=512)
    args = parser.parse_args()

    torch.manual_seed(export_models.SEED)
    model = export_models.GPT(vocab=args.vocab, T=args.T, d=args.d, heads=args.heads,
                              layers=args.layers)
    model.train()  # as exported; the model has no dropout
    gen = torch.Generator().manual_seed(export_models.SEED)
    inputs = export_models.gpt_inputs(gen, vocab=args.vocab, T=args.T, batch=args.batch)
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = os.path.join(tmp, "gpt.onnx")
        export_models.export(model, inputs, onnx_path, 17, "train")
        plan = os.path.join(tmp, "gpt.plan")
        subprocess.run([os.path.join(args.build, "bin", "fsdp-opt"), onnx_path, "--mode=forward",
                        "-o", plan], check=True)
        input_files = {}
        for name, tensor in inputs.items():
            input_files[name] = os.path.join(tmp, name + ".npy")
            numpy.save(input_files[name], tensor.numpy())
        print(f"GPT forward: layers {args.layers}, d {args.d}, heads {args.heads}, T {args.T}, "
              f"batch {args.batch}, vocab {args.vocab}; median of {args.runs} runs")
        print(f"{'threads':>7} | {'fsdp-run ms':>11} | {'torch ms':>9} | {'torch/fsdp':>10} | loss diff")
        for threads in args.threads:
            ours, our_loss = fsdp_forward_ms(args, plan, input_files, os.path.join(tmp, "out"), threads)
            theirs, their_loss = torch_forward_ms(model, tuple(inputs.values()), threads, args.runs)
            print(f"{threads:>7} | {ours:>11.2f} | {theirs:>9.2f} | {theirs / ours:>9.2f}x | "
                  f"{abs(our_loss - their_loss) / abs(their_loss):.1e}")


if __name__ == "__main__":
    main()
