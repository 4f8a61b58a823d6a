#!/usr/bin/env python3
# Fused attention benchmark (issue 32): the nanoGPT-style model of
# tests/e2e/torch2/models.py with F.scaled_dot_product_attention(is_causal)
# (default 4 layers, d 256, 4 heads, batch 4, vocab 64, SGD lr 0.1) at
# several sequence lengths, exported once per T with fsdp_opt.export and
# compiled twice, --fuse-attention=on (one nn.attention per layer, the
# flash-style kernels) and =off (matmul, mask, softmax, matmul: the B·H·T²
# scores materialized and saved). Each plan trains W warm-up + N timed steps
# under fsdp-run from one token file; torch 2.x eager trains the same
# weights on the same windows with torch.optim.SGD (its SDPA is its fused
# CPU flash kernel), in a child process with the same thread environment.
# Prints per T: the median step time of each (fsdp-run's step_time_s;
# perf_counter around zero_grad, forward, backward and step for torch), the
# ratios, the planned peak of each plan (--emit=report, which fsdp-run's
# measured peak_bytes must equal), torch's peak RSS and its growth over the
# steps (the RSS before them is torch itself and the weights), and the largest loss
# difference of the fused run from the unfused one and from torch; then the
# CPU model, its ISA flags and the threads. Run on demand, not in CI, with
# the torch 2.x virtual environment (scripts/setup.sh):
#
#   .venv/bin/python bench/attention.py --build build [--T 512 1024 2048] [--runs 3]
#                                       [--dtype bf16]
#
# --dtype bf16 compiles both plans with --param-dtype=bf16 (bf16 compute,
# f32 master weights) and trains torch's model cast to bf16 (its SDPA then
# runs its bf16 flash kernel).

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e", "torch2"))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import models  # noqa: E402
import fsdp_opt  # noqa: E402
import cpu_gemm  # noqa: E402  (the CPU model and ISA flags line)

WARMUP = 1
LR = 0.1


def parser():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build", help="build directory holding bin/")
    p.add_argument("--T", type=int, nargs="+", default=[512, 1024, 2048])
    p.add_argument("--runs", type=int, default=3, help="timed steps (median)")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--dtype", choices=("f32", "bf16"), default="f32",
                   help="compute dtype of both sides")
    # Internal: train torch's side for one T in this process, print JSON.
    p.add_argument("--torch-worker", type=int, help=argparse.SUPPRESS)
    p.add_argument("--workdir", help=argparse.SUPPRESS)
    return p


def build(args, T):
    torch.manual_seed(0)
    return models.NanoGPT(vocab=args.vocab, d=args.d, heads=args.heads, layers=args.layers,
                          seq=T).train()


def windows(tokens, steps, batch, T):
    """fsdp-run's windows of a token file (docs/design.md's data contract):
    sample j of step s starts at ((s*B + j) * T) mod (n - T - 1)."""
    n = len(tokens)
    starts = [((s * batch + j) * T) % (n - T - 1) for s in range(steps) for j in range(batch)]
    idx = numpy.stack([tokens[a:a + T] for a in starts]).astype(numpy.int64)
    return idx, numpy.stack([tokens[a + 1:a + T + 1] for a in starts]).astype(numpy.int64)


def thread_env(threads):
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))


def torch_worker(args):
    """torch's steps for T = args.torch_worker from the exported weights."""
    T = args.torch_worker
    torch.set_num_threads(args.threads)
    model = build(args, T)
    model.load_state_dict(torch.load(os.path.join(args.workdir, f"init-{T}.pt")))
    if args.dtype == "bf16":
        model = model.to(torch.bfloat16)
    tokens = numpy.fromfile(os.path.join(args.workdir, "tokens.bin"), dtype="<u2")
    steps = WARMUP + args.runs
    idx, tgt = windows(tokens, steps, args.batch, T)
    optim = torch.optim.SGD(model.parameters(), lr=LR)
    # torch's own footprint (the library, the weights) before the steps.
    with open("/proc/self/statm") as f:
        before = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    times, losses = [], []
    for s in range(steps):
        rows = slice(s * args.batch, (s + 1) * args.batch)
        start = time.perf_counter()
        optim.zero_grad(set_to_none=True)
        loss = model(torch.from_numpy(idx[rows]), torch.from_numpy(tgt[rows]))
        loss.backward()
        optim.step()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"times": times[WARMUP:], "losses": losses, "rss": rss,
                      "rss_growth": rss - before}))


def fsdp_side(args, onnx_path, tmp, T, fuse):
    """(step times, losses, planned peak, measured peak) of one plan."""
    tool = lambda name: os.path.join(args.build, "bin", name)  # noqa: E731
    plan = os.path.join(tmp, f"{fuse}-{T}.plan")
    flags = ["--optimizer=sgd", f"--lr={LR}", f"--fuse-attention={fuse}"]
    if args.dtype == "bf16":
        flags.append("--param-dtype=bf16")
    subprocess.run([tool("fsdp-opt"), onnx_path, "-o", plan] + flags, check=True,
                   stdout=subprocess.DEVNULL)
    report = subprocess.run([tool("fsdp-opt"), onnx_path, "--emit=report",
                             "--report-format=json"] + flags, check=True, capture_output=True,
                            text=True)
    planned = json.loads(report.stdout)["peak_bytes"]
    metrics = os.path.join(tmp, f"{fuse}-{T}.jsonl")
    subprocess.run([tool("fsdp-run"), plan, f"--steps={WARMUP + args.runs}",
                    f"--data={os.path.join(tmp, 'tokens.bin')}", f"--metrics={metrics}"],
                   check=True, env=thread_env(args.threads), stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return ([r["step_time_s"] for r in records[WARMUP:]], [r["loss"] for r in records],
            planned, max(r["peak_bytes"] for r in records))


def main():
    args = parser().parse_args()
    if args.torch_worker:
        return torch_worker(args)
    mib = lambda b: f"{b / 2**20:,.0f}"  # noqa: E731
    with tempfile.TemporaryDirectory(prefix="bench-attention-") as tmp:
        rng = numpy.random.default_rng(1234)
        # Enough tokens that the windows of every step differ.
        tokens = rng.integers(0, args.vocab, max(args.T) * args.batch * 4 + 7)
        tokens.astype("<u2").tofile(os.path.join(tmp, "tokens.bin"))
        print(f"nanoGPT with SDPA(is_causal): layers {args.layers}, d {args.d}, heads "
              f"{args.heads}, batch {args.batch}, SGD, {args.dtype}; median of {args.runs} steps after "
              f"{WARMUP}; {args.threads} thread(s)")
        print(f"{'T':>5} {'fused ms':>9} {'unfused ms':>10} {'torch ms':>9} {'unf/fused':>9} "
              f"{'torch/fused':>11} {'fused MiB':>9} {'unfused MiB':>11} {'torch RSS MiB':>13} "
              f"{'torch +RSS':>10} "
              f"{'loss vs unf':>11} {'loss vs torch':>13}")
        for T in args.T:
            model = build(args, T)
            torch.save(model.state_dict(), os.path.join(tmp, f"init-{T}.pt"))
            onnx_path = os.path.join(tmp, f"gpt-{T}.onnx")
            # Two distinct tensors: the exporter merges an input passed twice.
            inputs = tuple(torch.randint(0, args.vocab, (args.batch, T)) for _ in range(2))
            fsdp_opt.export(model, inputs, onnx_path)
            fused = fsdp_side(args, onnx_path, tmp, T, "on")
            unfused = fsdp_side(args, onnx_path, tmp, T, "off")
            worker = subprocess.run([sys.executable, __file__, f"--torch-worker={T}",
                                     f"--workdir={tmp}"] +
                                    [f"--{k}={getattr(args, k)}" for k in
                                     ("runs", "threads", "layers", "d", "heads", "batch",
                                      "vocab", "dtype")],
                                    env=thread_env(args.threads), capture_output=True, text=True)
            if worker.returncode != 0:
                sys.exit(f"torch worker failed:\n{worker.stderr}")
            theirs = json.loads(worker.stdout.strip().splitlines()[-1])
            f_ms, u_ms, t_ms = (1e3 * statistics.median(x) for x in
                                (fused[0], unfused[0], theirs["times"]))
            rel = lambda a, b: max(abs(x - y) / abs(y) for x, y in zip(a, b))  # noqa: E731
            for side, name in ((fused, "fused"), (unfused, "unfused")):
                if side[2] != side[3]:
                    print(f"  note: {name} planned peak {side[2]} != measured {side[3]}")
            print(f"{T:>5} {f_ms:>9.0f} {u_ms:>10.0f} {t_ms:>9.0f} {u_ms / f_ms:>9.2f} "
                  f"{t_ms / f_ms:>11.2f} {mib(fused[2]):>9} {mib(unfused[2]):>11} "
                  f"{mib(theirs['rss']):>13} {mib(theirs['rss_growth']):>10} "
                  f"{rel(fused[1], unfused[1]):>11.1e} "
                  f"{rel(fused[1], theirs['losses']):>13.1e}")
    print(f"CPU: {cpu_gemm.cpu_description()}; torch {torch.__version__}")


if __name__ == "__main__":
    main()
