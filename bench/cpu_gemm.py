#!/usr/bin/python3
# The CPU GEMM libraries at the benchmark GPT's shapes (gpt_common's model
# defaults: d 256, T 128, batch 8, so 1024 rows, MLP 4d, vocab 512; and
# d 1024): per linear layer its forward product (x @ W^T, NT), input
# gradient (dy @ W, NN) and weight gradient (dy^T @ x, TN), timed through
# OpenBLAS's sgemm (the f32 kernel), oneDNN's f32 and bf16 matmul
# (runtime/backends/cpu/OneDnnMatmul.h), bf16 widened to f32 for sgemm (the
# fallback where oneDNN refuses bf16), and torch 2.x's f32 and bf16 matmul
# (MKL and its own oneDNN), each with the same thread count
# (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS and torch's intra-op threads, in
# a fresh process per count). Prints the CPU model, its ISA flags and
# oneDNN's ISA, then one table of median milliseconds per thread count.
# It decided the f32 library (issue 31): oneDNN's f32 would replace
# OpenBLAS's only if more than 5% faster at these shapes. On demand, not
# in CI:
#
#   ninja -C build fsdp-bench-cpu-gemm
#   .venv/bin/python bench/cpu_gemm.py --build build [--threads 1 2] [--d 256 1024]

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import gpt_common

LIBRARIES = ("openblas-f32", "onednn-f32", "torch-f32", "onednn-bf16", "torch-bf16",
             "widened-bf16")
FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16")


def shapes(args, d):
    """{name: 'MxNxK:TT'} for every layer's three products at width d."""
    rows = args.batch * args.T
    layers = {"qkv": (d, 3 * d), "proj": (d, d), "mlp-up": (d, 4 * d),
              "mlp-down": (4 * d, d), "head": (d, args.vocab)}
    out = {}
    for name, (fan_in, fan_out) in layers.items():
        out[f"d{d} {name} fwd"] = f"{rows}x{fan_out}x{fan_in}:NT"
        out[f"d{d} {name} dgrad"] = f"{rows}x{fan_in}x{fan_out}:NN"
        out[f"d{d} {name} wgrad"] = f"{fan_out}x{fan_in}x{rows}:TN"
    return out


def parse(spec):
    dims, trans = spec.split(":")
    m, n, k = (int(x) for x in dims.split("x"))
    return m, n, k, trans[0] == "T", trans[1] == "T"


def torch_worker(specs, threads):
    """Median ms of torch.matmul per spec and dtype, as JSON lines."""
    import torch
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    for spec in specs:
        m, n, k, ta, tb = parse(spec)
        for dtype, name in ((torch.float32, "torch-f32"), (torch.bfloat16, "torch-bf16")):
            a = torch.rand(k, m, generator=gen).to(dtype).t() if ta else \
                torch.rand(m, k, generator=gen).to(dtype)
            b = torch.rand(n, k, generator=gen).to(dtype).t() if tb else \
                torch.rand(k, n, generator=gen).to(dtype)
            out = torch.empty(m, n, dtype=dtype)
            for _ in range(2):
                torch.matmul(a, b, out=out)
            times, total = [], 0.0
            while len(times) < 5 or (total < 1000 and len(times) < 50):
                t0 = time.perf_counter()
                torch.matmul(a, b, out=out)
                times.append((time.perf_counter() - t0) * 1e3)
                total += times[-1]
            print(json.dumps({"shape": spec, "library": name, "threads": threads,
                              "ms": statistics.median(times)}), flush=True)


def run_lines(command, threads):
    result = subprocess.run(command, env=gpt_common.thread_env(threads), capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed:\n{result.stderr}")
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def cpu_description():
    model, flags = "unknown", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
    have = " ".join(f for f in FLAGS if f in flags)
    return f"{model}, {os.cpu_count()} cores; flags: {have or 'none of ' + ' '.join(FLAGS)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    gpt_common.add_model_args(parser, runs=0)
    parser.add_argument("--dims", type=int, nargs="+", default=[256, 1024],
                        help="model widths d whose layers' products are timed")
    parser.add_argument("--specs", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        torch_worker(args.specs, args.torch_worker)
        return
    bench = os.path.join(args.build, "bin", "fsdp-bench-cpu-gemm")
    if not os.path.exists(bench):
        sys.exit(f"{bench} is missing: build it with `ninja -C {args.build} fsdp-bench-cpu-gemm`")
    named = {}
    for d in args.dims:
        named.update(shapes(args, d))
    specs = list(named.values())
    print(f"CPU: {cpu_description()}")
    times, isa, impls = {}, "", {}
    for threads in args.threads:
        for row in run_lines([bench, *specs], threads):
            if "isa" in row:
                isa = row["isa"]
                continue
            times[(row["shape"], row["library"], threads)] = row["ms"]
            if row.get("impl"):
                impls[(row["shape"], row["library"])] = row["impl"]
        worker = [sys.executable, os.path.abspath(__file__), f"--torch-worker={threads}",
                  "--specs", *specs]
        for row in run_lines(worker, threads):
            times[(row["shape"], row["library"], threads)] = row["ms"]
    print(f"oneDNN ISA: {isa}; oneDNN implementations: "
          f"{', '.join(sorted(set(impls.values())))}")
    print("Median ms per product (MxNxK:TT, the transposes of a and b); "
          "f32 ratio = oneDNN f32 / OpenBLAS f32")
    for threads in args.threads:
        print(f"\n{threads} thread{'s' if threads > 1 else ''}")
        header = f"{'product':<20} {'MxNxK:TT':<18}" + "".join(f"{lib:>13}" for lib in LIBRARIES)
        print(header + f"{'f32 ratio':>11}")
        total = {lib: 0.0 for lib in LIBRARIES}
        for name, spec in named.items():
            cells = ""
            for lib in LIBRARIES:
                ms = times.get((spec, lib, threads))
                cells += f"{ms:>13.3f}" if ms is not None else f"{'-':>13}"
                total[lib] += ms or 0.0
            blas, dnnl = times.get((spec, "openblas-f32", threads)), times.get(
                (spec, "onednn-f32", threads))
            ratio = f"{dnnl / blas:>11.3f}" if blas and dnnl else f"{'-':>11}"
            print(f"{name:<20} {spec:<18}{cells}{ratio}")
        cells = "".join(f"{total[lib]:>13.3f}" for lib in LIBRARIES)
        ratio = total["onednn-f32"] / total["openblas-f32"] if total["openblas-f32"] else 0
        print(f"{'sum':<20} {'':<18}{cells}{ratio:>11.3f}")


if __name__ == "__main__":
    main()
