#!/usr/bin/python3
# Checkpoint save and load benchmark: the GPT-style decoder of tests/models
# (default 8 layers, d 768, vocab 8192: about 70M parameters, so AdamW's
# checkpoint is about 0.85 GB) trained one step by fsdp-run at world size 2
# and by torch 1.13 (AdamW, the same model and batch), then each side's
# state saved and loaded:
#
#   fsdp sharded save     fsdp-run --save (each rank its file, fsynced, COMMIT)
#   fsdp full save        fsdp-run --save-format=full (gathered, rank 0 writes)
#   fsdp load, same plan  fsdp-run --resume at the saved step (trains nothing)
#   fsdp load, resharded  the sharded checkpoint resumed by a world-size-4 plan
#   fsdp-ckpt convert     sharded -> full, as a separate process
#   torch.save            model and optimizer state_dict, plus an fsync so it
#                         is as durable as fsdp's saves (both columns shown)
#   torch.load            torch.load + load_state_dict of both
#
# fsdp's times are the runtime's own (--metrics checkpoint_s; the "resumed
# ... in X s" line), so process start-up and planning are not counted; the
# convert row is the whole process. torch runs in a child process with the
# same thread count. Prints one table, median of --runs for each row, with
# the bytes written and the rate. Run on demand, not in CI:
#
#   /usr/bin/python3 bench/checkpoint_io.py --build build [--runs 3]

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import gpt_common


def fsdp_rows(args, tmp, onnx_path, files):
    env = gpt_common.thread_env(args.threads)
    plan2, plan4 = os.path.join(tmp, "p2", "step.plan"), os.path.join(tmp, "p4", "step.plan")
    for plan, world in ((plan2, 2), (plan4, 4)):
        os.makedirs(os.path.dirname(plan))
        gpt_common.compile_plan(args, onnx_path, plan, f"--world-size={world}")
    run_tool = gpt_common.tool(args, "fsdp-run")
    inputs = gpt_common.input_flags(files)

    def fsdp_run(plan, *flags):
        out = subprocess.run([run_tool, plan, *inputs, *flags], env=env, capture_output=True,
                             text=True)
        if out.returncode != 0:
            sys.exit(f"fsdp-run failed:\n{out.stderr}")
        return out.stdout

    def saved(fmt):
        ckpt, metrics = os.path.join(tmp, f"ckpt-{fmt}"), os.path.join(tmp, "m.jsonl")
        shutil.rmtree(ckpt, ignore_errors=True)
        fsdp_run(plan2, "--steps=1", f"--save={ckpt}", f"--save-format={fmt}",
                 f"--metrics={metrics}")
        with open(metrics) as f:
            record = json.loads(f.readline())
        return ckpt, record["checkpoint_s"], record["checkpoint_bytes"]

    def load_seconds(plan, ckpt):
        text = fsdp_run(plan, "--steps=1", f"--resume={ckpt}")
        return float(re.search(r"resumed from step 1 \(.* in ([\d.]+) s\)", text).group(1))

    times = {key: [] for key in ("sharded", "full", "load", "reshard", "convert")}
    nbytes = {}
    for _ in range(args.runs):
        ckpt, seconds, nbytes["sharded"] = saved("sharded")
        times["sharded"].append(seconds)
        _, seconds, nbytes["full"] = saved("full")
        times["full"].append(seconds)
        times["load"].append(load_seconds(plan2, ckpt))
        times["reshard"].append(load_seconds(plan4, ckpt))
        dest = os.path.join(tmp, "converted")
        shutil.rmtree(dest, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run([gpt_common.tool(args, "fsdp-ckpt"), "convert", ckpt, dest,
                        "--format=full"], check=True, stdout=subprocess.DEVNULL, env=env)
        times["convert"].append(time.perf_counter() - start)
    return {key: statistics.median(v) for key, v in times.items()}, nbytes


def torch_worker(args):
    """One AdamW step, then save (with and without fsync) and load; prints JSON."""
    torch.set_num_threads(args.torch_worker)
    model, inputs = gpt_common.build_gpt(args)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    model(**inputs).backward()
    opt.step()
    out = {"save": [], "save_fsync": [], "load": []}
    with tempfile.TemporaryDirectory(prefix="ckpt-torch-") as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        for _ in range(args.runs):
            start = time.perf_counter()
            torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, path)
            out["save"].append(time.perf_counter() - start)
            with open(path, "rb+") as f:
                os.fsync(f.fileno())
            out["save_fsync"].append(time.perf_counter() - start)
            start = time.perf_counter()
            state = torch.load(path)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optim"])
            out["load"].append(time.perf_counter() - start)
        out["bytes"] = os.path.getsize(path)
    print(json.dumps({k: (statistics.median(v) if isinstance(v, list) else v)
                      for k, v in out.items()}))


def main():
    ap = argparse.ArgumentParser(description="checkpoint save/load: fsdp-run vs torch.save")
    gpt_common.add_model_args(ap, runs=3)
    ap.set_defaults(layers=8, d=768, heads=12, T=64, batch=2, vocab=8192, threads=[2])
    args = ap.parse_args()
    args.threads = args.threads[0] if isinstance(args.threads, list) else args.threads
    if args.torch_worker:
        return torch_worker(args)
    model, inputs = gpt_common.build_gpt(args)
    params = sum(p.numel() for p in model.parameters())
    with tempfile.TemporaryDirectory(prefix="ckpt-bench-") as tmp:
        onnx_path, files = gpt_common.export_gpt(model, inputs, tmp)
        fsdp, nbytes = fsdp_rows(args, tmp, onnx_path, files)
    theirs = gpt_common.run_torch_worker(os.path.abspath(__file__), args, args.threads)
    gb = 1e9
    print(f"GPT {gpt_common.describe(args)}: {params / 1e6:.1f}M parameters, AdamW, "
          f"{args.threads} threads, median of {args.runs}")
    print(f"{'operation':<34} {'bytes':>14} {'seconds':>8} {'GB/s':>6}   torch alike"
          f"{'':>16}")
    rows = [
        ("save, sharded (2 ranks)", nbytes["sharded"], fsdp["sharded"],
         f"torch.save+fsync {theirs['save_fsync']:.3f} s ({theirs['save_fsync'] / fsdp['sharded']:.2f}x)"),
        ("save, full (gathered, one file)", nbytes["full"], fsdp["full"],
         f"torch.save+fsync {theirs['save_fsync']:.3f} s ({theirs['save_fsync'] / fsdp['full']:.2f}x)"),
        ("load, same plan", nbytes["sharded"], fsdp["load"],
         f"torch.load {theirs['load']:.3f} s ({theirs['load'] / fsdp['load']:.2f}x)"),
        ("load, resharded 2 -> 4", nbytes["sharded"], fsdp["reshard"], "(no torch 1.13 analogue)"),
        ("fsdp-ckpt convert sharded -> full", nbytes["full"], fsdp["convert"],
         "(whole process)"),
    ]
    for label, size, seconds, note in rows:
        print(f"{label:<34} {size:>14,} {seconds:>8.3f} {size / seconds / gb:>6.2f}   {note}")
    print(f"torch: {theirs['bytes']:,} bytes; torch.save without fsync {theirs['save']:.3f} s")


if __name__ == "__main__":
    sys.exit(main())
