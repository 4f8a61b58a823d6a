#!/usr/bin/python3
# What the GPT benchmarks share: the model-size flags, building the GPT-style
# decoder of tests/models with a fixed seed and a batch of random tokens,
# exporting it to ONNX, the tool paths and thread environment for fsdp-opt and
# fsdp-run, running torch's side in a child process with the same thread
# environment, and reading fsdp-run's --profile table. forward_gpt.py times
# the forward pass, train_gpt.py the whole training step; both against torch
# with the same threads, on the same weights and batch.

import argparse
import json
import os
import re
import subprocess
import sys

import numpy
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "models"))
import export_models  # noqa: E402  (the test models' definitions and exporter)


def add_model_args(parser, runs):
    """The flags both benchmarks take; the defaults are the benchmark model."""
    parser.add_argument("--build", default="build", help="build directory holding bin/")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--runs", type=int, default=runs, help="timed runs (median)")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--d", type=int, default=256)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--T", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--vocab", type=int, default=512)
    # Internal: run only torch's side with this many threads, print JSON.
    parser.add_argument("--torch-worker", type=int, help=argparse.SUPPRESS)


MODEL_FLAGS = ("runs", "layers", "d", "heads", "T", "batch", "vocab")


def run_torch_worker(script, args, threads):
    """Runs `script --torch-worker=THREADS` and returns the JSON it prints.

    torch's BLAS here is OpenBLAS, which sizes its thread pool once, when it
    loads, from OPENBLAS_NUM_THREADS; torch.set_num_threads does not limit
    it. Timing torch in this process would give its matrix products every
    core whatever the row says, so each thread count runs torch in a fresh
    process started with exactly the environment fsdp-run gets."""
    command = [sys.executable, script, f"--torch-worker={threads}"]
    command += [f"--{name}={getattr(args, name)}" for name in MODEL_FLAGS]
    result = subprocess.run(command, env=thread_env(threads), capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"torch worker failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def describe(args):
    return (f"layers {args.layers}, d {args.d}, heads {args.heads}, T {args.T}, "
            f"batch {args.batch}, vocab {args.vocab}")


def build_gpt(args):
    """The model (training mode, as exported; it has no dropout) and its
    batch, the same on every run."""
    torch.manual_seed(export_models.SEED)
    model = export_models.GPT(vocab=args.vocab, T=args.T, d=args.d, heads=args.heads,
                              layers=args.layers, mlp_ratio=getattr(args, "mlp_ratio", 4))
    model.train()
    gen = torch.Generator().manual_seed(export_models.SEED)
    inputs = export_models.gpt_inputs(gen, vocab=args.vocab, T=args.T, batch=args.batch)
    return model, inputs


def export_gpt(model, inputs, tmp):
    """Writes the ONNX model and one .npy per input; returns the model path
    and {input name: file}."""
    onnx_path = os.path.join(tmp, "gpt.onnx")
    export_models.export(model, inputs, onnx_path, 17, "train")
    files = {}
    for name, tensor in inputs.items():
        files[name] = os.path.join(tmp, name + ".npy")
        numpy.save(files[name], tensor.numpy())
    return onnx_path, files


def tool(args, name):
    return os.path.join(args.build, "bin", name)


def thread_env(threads):
    """fsdp-run's BLAS and OpenMP thread count, matched to torch's."""
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def input_flags(files):
    return [f"--input={name}={path}" for name, path in files.items()]


def compile_plan(args, onnx_path, plan, *flags):
    subprocess.run([tool(args, "fsdp-opt"), onnx_path, "-o", plan, *flags], check=True,
                   stdout=subprocess.DEVNULL)


PROFILE_ROW = re.compile(r"^(\S+)\s+([\d.]+)\s+([\d.]+)%$")


def profile_table(text):
    """The rows of fsdp-run --profile: [(kernel, ms per run, share %)]."""
    rows = []
    for line in text.splitlines():
        match = PROFILE_ROW.match(line.strip())
        if match:
            rows.append((match.group(1), float(match.group(2)), float(match.group(3))))
    return rows
