#!/usr/bin/env python3
# Mixed-precision training-step benchmark (issue 31): the benchmark GPT of
# bench/train_gpt.py (4 layers, d 256, T 128, batch 8, vocab 512; --d 1024
# for the wider model) trained with AdamW, side by side in one run at each
# thread count:
#   fsdp bf16     fsdp-opt --param-dtype=bf16, fsdp-run (one rank)
#   fsdp f32      the same plan in f32
#   torch bf16    torch 2.x eager with the model in bf16 (model.to(bf16))
#   autocast      torch 2.x eager f32 model under torch.autocast(bfloat16)
#   torch f32     torch 2.x eager f32
# and, with --ranks 2 (one thread per rank), fsdp-run --world-size=2
# --shard=full bf16 against torch FSDP2 fully_shard(MixedPrecisionPolicy(
# bf16, f32)) on gloo over 2 processes. Step times are medians over the
# timed steps after WARMUP; every system gets the same threads (torch in a
# fresh process with the same OPENBLAS/OMP environment as fsdp-run). Prints
# the CPU model and its bf16/AMX ISA flags first, since sessions land on
# different CPUs. Run on demand with the venv's python (torch 2.x):
#
#   .venv/bin/python bench/train_gpt_mixed.py --build build [--threads 1 2] [--d 1024]

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import gpt_common

WARMUP = 2


def cpu_line():
    model, flags = "unknown CPU", set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and model == "unknown CPU":
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_tile")
    return f"{model}; {' '.join(f for f in wanted if f in flags) or 'no AVX2'}"


def torch_steps(args, mode):
    """The timed step times (ms) of torch in `mode` (bf16, autocast, f32)."""
    model, inputs = gpt_common.build_gpt(args)
    batch = tuple(inputs.values())
    if mode == "bf16":
        model = model.to(torch.bfloat16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    times = []
    for _ in range(WARMUP + args.runs):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        if mode == "autocast":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(*batch)
        else:
            loss = model(*batch)
        loss.backward()
        optimizer.step()
        times.append((time.perf_counter() - start) * 1e3)
    return times[WARMUP:]


def fsdp2_worker(rank, args, port, out):
    import torch.distributed as dist
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model, inputs = gpt_common.build_gpt(args)
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    batch = tuple(inputs.values())
    times = []
    for _ in range(WARMUP + args.runs):
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        model(*batch).backward()
        optimizer.step()
        times.append((time.perf_counter() - start) * 1e3)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(times[WARMUP:], f)
    dist.destroy_process_group()


def fsdp_steps(args, plan, files, tmp, threads, world=1):
    metrics = os.path.join(tmp, f"m-{os.path.basename(plan)}-{threads}.jsonl")
    command = [gpt_common.tool(args, "fsdp-run"), plan, f"--steps={WARMUP + args.runs}",
               f"--metrics={metrics}", f"--world-size={world}"] + gpt_common.input_flags(files)
    subprocess.run(command, check=True, env=gpt_common.thread_env(threads),
                   stdout=subprocess.DEVNULL)
    with open(metrics) as f:
        return [json.loads(line)["step_time_s"] * 1e3 for line in f if line.strip()][WARMUP:]


def worker_main(args):
    if args.worker == "fsdp2":
        import torch.multiprocessing as mp
        out = os.path.join(tempfile.mkdtemp(), "t.json")
        mp.start_processes(fsdp2_worker, args=(args, 29600 + os.getpid() % 300, out), nprocs=2,
                           join=True, start_method="spawn")
        with open(out) as f:
            print(json.dumps(json.load(f)))
    else:
        torch.set_num_threads(args.worker_threads)
        print(json.dumps(torch_steps(args, args.worker)))


def run_worker(args, mode, threads):
    command = [sys.executable, os.path.abspath(__file__), f"--worker={mode}",
               f"--worker-threads={threads}", f"--build={args.build}"]
    command += [f"--{name}={getattr(args, name)}" for name in gpt_common.MODEL_FLAGS]
    result = subprocess.run(command, env=gpt_common.thread_env(threads), capture_output=True,
                            text=True)
    if result.returncode != 0:
        sys.exit(f"{mode} worker failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    gpt_common.add_model_args(parser, runs=6)
    parser.add_argument("--ranks", type=int, default=2, help="2: also the 2-rank FSDP2 row")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--worker-threads", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_main(args)
    print(f"CPU: {cpu_line()}; torch {torch.__version__}")
    model, inputs = gpt_common.build_gpt(args)
    params = sum(p.numel() for p in model.parameters())
    print(f"GPT training step (AdamW): {gpt_common.describe(args)}, {params / 1e6:.2f}M "
          f"parameters; median of {args.runs} steps after {WARMUP} warm-up, ms")
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path, files = gpt_common.export_gpt(model, inputs, tmp)
        plans = {}
        for dtype in ("bf16", "f32"):
            plans[dtype] = os.path.join(tmp, f"{dtype}.plan")
            gpt_common.compile_plan(args, onnx_path, plans[dtype], "--optimizer=adamw",
                                    "--lr=0.001", "--weight-decay=0.01", f"--param-dtype={dtype}")
        columns = ("fsdp bf16", "fsdp f32", "torch bf16", "autocast", "torch f32")
        print(f"{'threads':>7} | " + " | ".join(f"{c:>10}" for c in columns) +
              " | torch bf16 / fsdp bf16 | fsdp f32 / fsdp bf16")
        for threads in args.threads:
            row = {"fsdp bf16": fsdp_steps(args, plans["bf16"], files, tmp, threads),
                   "fsdp f32": fsdp_steps(args, plans["f32"], files, tmp, threads)}
            for mode, column in (("bf16", "torch bf16"), ("autocast", "autocast"),
                                 ("f32", "torch f32")):
                row[column] = run_worker(args, mode, threads)
            med = {c: statistics.median(row[c]) for c in columns}
            print(f"{threads:>7} | " + " | ".join(f"{med[c]:>10.1f}" for c in columns) +
                  f" | {med['torch bf16'] / med['fsdp bf16']:>21.2f}x | "
                  f"{med['fsdp f32'] / med['fsdp bf16']:>19.2f}x", flush=True)
        if args.ranks == 2:
            sharded = os.path.join(tmp, "bf16-2.plan")
            gpt_common.compile_plan(args, onnx_path, sharded, "--optimizer=adamw", "--lr=0.001",
                                    "--weight-decay=0.01", "--param-dtype=bf16",
                                    "--world-size=2", "--shard=full")
            ours = statistics.median(fsdp_steps(args, sharded, files, tmp, 1, world=2))
            theirs = statistics.median(run_worker(args, "fsdp2", 1))
            print(f"2 ranks x 1 thread, bf16: fsdp-run {ours:.1f} ms, torch FSDP2 {theirs:.1f} ms "
                  f"(FSDP2 / fsdp-run {theirs / ours:.2f}x)")


if __name__ == "__main__":
    main()
