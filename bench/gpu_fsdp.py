#!/usr/bin/python3
# FSDP on N GPUs of one node (issue 17), run on demand on a machine with
# NVIDIA GPUs: fsdp-run --device=cuda with NCCL against torch's FSDP2
# (fully_shard on NCCL) on the same GPUs, model, seed, data and optimizer,
# measured side by side in one run. Models (bench/gpu_common.py):
#   - gpt: the benchmark GPT (layers 4, d 256, heads 4, T 128, batch 8 per
#     rank, vocab 512; --layers/--d/... change it);
#   - 1b: the seeds' 1B Transformer (nn.Transformer d_model 1024, 64 heads,
#     32 + 32 layers, ff 4096, vocab 33,278, dropout 0.2; 1 x 35 tokens per
#     rank; --depth N builds it with N + N layers).
# Weak scaling: each rank trains its own batch (the per-rank batch above),
# rank r the rows [r*b, (r+1)*b) of one fixed global batch, every step the
# same batch. fp32, TF32 off, AdamW lr 1e-3, betas 0.9/0.999, eps 1e-8,
# weight decay 0.01 on both sides.
#
# Rows per model and strategy (full, grad-op, and hybrid:G with G = N/2
# from N = 4 on), each without and with block checkpointing:
#   fsdp-run   fsdp-opt --world-size=N --shard=S [--ckpt=blocks], then
#              fsdp-run --device=cuda (N in-process ranks on GPUs 0..N-1,
#              or --launch=mpirun / torchrun: one process per GPU), CUDA
#              graphs on; step time is rank 0's step_time_s (--metrics).
#              A second, short run with --profile (eager steps) gives the
#              measured exposed communication, printed beside the cost
#              model's prediction (fsdp-opt --emit=report for the GPU's
#              profile).
#   FSDP2      torchrun --nproc-per-node=N of this file's worker: fully_shard
#              on every block and the root over a 1-D mesh (full:
#              reshard_after_forward=True; grad-op: False) or a 2-D (N/G, G)
#              mesh (hybrid: HSDP), torch.distributed._composable.checkpoint
#              on every block for the ckpt rows; CUDA events around
#              zero_grad/forward/backward/step on rank 0.
# Columns: median step ms over --runs steps after the warm-up, global
# tokens/s, TFLOP/s per GPU and MFU (fp32 peak), exposed communication
# measured / predicted (ms and % of the step), planned peak bytes per rank
# (the report's peak_bytes) against what nvidia-smi saw on the busiest GPU
# less fsdp-run's device_context_bytes (CUDA context, cuBLAS and NCCL
# buffers: measured, not planned), and fsdp-run's tokens/s over FSDP2's.
# Targets for the day this runs (issue 17): measured peak within 2% of
# planned; exposed communication <= 5% of the step on one NVLink node;
# >= 1.2x FSDP2's tokens/s.
#
# No GPU: a "no GPU" line and exit 2, no numbers. This file has not yet run
# on a GPU.
#
#   /usr/bin/python3 bench/gpu_fsdp.py --build build [--gpus 8] [--models gpt 1b]
#   /usr/bin/python3 bench/gpu_fsdp.py --models 1b --depth 8 --strategies full --runs 5

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

from gpu_common import (ADAMW, BUFFERS, GPT_DEFAULT, NO_GPU_EXIT, build, compile_plan,
                        default_torch_python, export, flops_per_step, mib, model_config, peak_of,
                        run_sampled, tool, torch_timed_steps)
import gpu_probe  # noqa: E402  (tests/gpu, on gpu_common's path)

WARMUP = 3  # step 2 captures the CUDA graph
PROFILE_STEPS = 3
TIMEOUT_S = 1800


# --------------------------------------------------------------------------
# torch FSDP2 (a torchrun worker of this file)
# --------------------------------------------------------------------------

def fsdp2_worker(cfg, strategy, ckpt, runs, result_path):
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    import export_models as em

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    b = cfg["batch"]
    model, rows = build(cfg, batch=b * world)
    batch = [t[rank * b:(rank + 1) * b].cuda() for t in rows.values()]
    model = model.cuda()
    if strategy.startswith("hybrid:"):
        group = int(strategy.split(":")[1])
        mesh = init_device_mesh("cuda", (world // group, group),
                                mesh_dim_names=("replicate", "shard"))
    else:
        mesh = init_device_mesh("cuda", (world,))
    reshard = strategy != "grad-op"
    kinds = (em.GPTBlock, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
    blocks = [m for m in model.modules() if isinstance(m, kinds)]
    if ckpt:
        from torch.distributed._composable import checkpoint
        for block in blocks:
            checkpoint(block)
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=reshard)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard)
    times = torch_timed_steps(model, batch, WARMUP + runs)
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump({"times": times[WARMUP:], "peak_bytes": torch.cuda.max_memory_allocated(),
                       "torch": torch.__version__}, f)
    dist.barrier()
    dist.destroy_process_group()


def run_fsdp2(args, cfg, strategy, ckpt, work):
    if not args.torch_python:
        return {"error": "no torch 2.x interpreter (scripts/setup-venv.sh, or --torch-python)"}
    torchrun = os.path.join(os.path.dirname(args.torch_python), "torchrun")
    result_path = os.path.join(work, f"fsdp2-{strategy.replace(':', '')}-{int(ckpt)}.json")
    command = [torchrun, "--standalone", f"--nproc-per-node={args.gpus}",
               os.path.abspath(__file__), "--fsdp2-worker", f"--strategy={strategy}",
               "--worker-config", json.dumps(cfg), f"--runs={args.runs}",
               f"--result={result_path}"] + (["--worker-ckpt"] if ckpt else [])
    code, _, err, busiest, _ = run_sampled(command, TIMEOUT_S)
    if code is None:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    if code != 0 or not os.path.exists(result_path):
        tail = (err.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {code}: {tail}"}
    with open(result_path) as f:
        result = json.load(f)
    result["smi_bytes"] = busiest
    return result


# --------------------------------------------------------------------------
# fsdp-opt + fsdp-run
# --------------------------------------------------------------------------

def launch_command(args, run):
    if args.launch == "mpirun":
        return ["mpirun", "--bind-to", "none", "-np", str(args.gpus)] + run
    if args.launch == "torchrun":
        torchrun = shutil.which("torchrun") or os.path.join(
            os.path.dirname(args.torch_python or ""), "torchrun")
        return [torchrun, "--standalone", f"--nproc-per-node={args.gpus}", "--no-python"] + run
    return run  # the plan's N ranks in-process, GPUs 0..N-1


def run_fsdp(args, plan, inputs, work, profile=False):
    tag = "profile" if profile else "time"
    metrics = os.path.join(work, f"metrics-{os.path.basename(plan)}-{tag}.jsonl")
    steps = PROFILE_STEPS if profile else WARMUP + args.runs
    run = [tool(args, "fsdp-run"), plan, "--device=cuda", f"--steps={steps}",
           f"--metrics={metrics}", *inputs] + (["--profile"] if profile else [])
    code, out, err, busiest, _ = run_sampled(launch_command(args, run), TIMEOUT_S)
    if code is None:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    if code != 0:
        return {"error": f"exit {code}: {err.strip()}"}
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    last = records[-1]
    result = {"times": [r["step_time_s"] for r in records[WARMUP:]] if not profile else None,
              "peak_bytes": last.get("peak_bytes"),
              "context_bytes": last.get("device_context_bytes"),
              "smi_bytes": busiest}
    if profile:
        result["exposed_s"] = parse_exposed(out)
    return result


def parse_exposed(profile_output):
    """The measured exposed communication (seconds per step) from fsdp-run
    --profile's overlap section (runtime/run/ProfileReport.cpp): the
    largest over the ranks when it has that line, else rank 0's; None
    when it has neither."""
    for pattern in (r"largest over \d+ ranks: .*exposed communication ([0-9.]+) ms",
                    r"measured: .*exposed communication ([0-9.]+) ms"):
        match = re.search(pattern, profile_output)
        if match:
            return float(match.group(1)) / 1e3
    return None


# --------------------------------------------------------------------------
# Table
# --------------------------------------------------------------------------

HEADER = (f"  {'run':<30} | {'step ms':>8} | {'tok/s':>9} | {'TFLOP/s':>7} | {'MFU f32':>7} | "
          f"{'exposed ms (meas/pred)':>22} | {'plan MiB':>8} | {'meas MiB':>8} | {'diff':>6} | "
          f"{'vs FSDP2':>8}")


def share(seconds, step):
    return "-" if seconds is None else f"{seconds * 1e3:.2f} ({seconds / step * 100:.1f}%)"


def print_row(label, result, tokens, flops, peak, planned=None, predicted=None, exposed=None,
              versus=None):
    if "error" in result:
        print(f"  {label:<30} | {result['error']}", flush=True)
        return None
    step = statistics.median(result["times"])
    tflops = flops / step / 1e12
    mfu = f"{tflops / peak[1] * 100:.1f}%" if peak else "-"
    measured = None
    if result.get("smi_bytes") is not None:
        measured = result["smi_bytes"] - (result.get("context_bytes") or 0)
    diff = (f"{(measured - planned) / planned * 100:+.1f}%" if measured is not None and planned
            else "-")
    ratio = f"{tokens / step / versus:.2f}x" if versus else "-"
    overlap = f"{share(exposed, step)} / {share(predicted, step)}"
    print(f"  {label:<30} | {step * 1e3:>8.2f} | {tokens / step:>9.0f} | {tflops:>7.2f} | "
          f"{mfu:>7} | {overlap:>22} | {mib(planned):>8} | {mib(measured):>8} | {diff:>6} | "
          f"{ratio:>8}", flush=True)
    return tokens / step


def strategies(args):
    chosen = []
    for strategy in args.strategies:
        if strategy == "hybrid":
            if args.gpus < 4:
                print(f"  (hybrid needs 4 GPUs or more; {args.gpus} here)")
                continue
            strategy = f"hybrid:{args.gpus // 2}"
        chosen.append(strategy)
    return chosen


def bench_model(args, which, peak, tmp):
    cfg = model_config(args, which)
    work = os.path.join(tmp, which)
    os.makedirs(work)
    onnx_path, inputs, model = export(cfg, work, rows=cfg["batch"] * args.gpus)
    params = sum(p.numel() for p in model.parameters())
    flops = flops_per_step(cfg, model)  # per rank
    tokens = cfg["batch"] * cfg["T"] * args.gpus
    del model
    shape = ", ".join(f"{k} {v}" for k, v in cfg.items() if k != "family")
    print(f"\n{which}: {cfg['family']}, {shape} per rank; {params / 1e6:.1f}M parameters; "
          f"{args.gpus} GPUs ({args.launch}); median of {args.runs} steps after {WARMUP}")
    print(HEADER)
    base = ADAMW + ([f"--freeze={BUFFERS}"] if cfg["family"] == "transformer" else [])
    for strategy in strategies(args):
        for ckpt in args.ckpt:
            flags = base + [f"--world-size={args.gpus}", f"--shard={strategy}"] + (
                ["--ckpt=blocks"] if ckpt else [])
            name = f"{strategy}{' ckpt' if ckpt else ''}"
            plan = os.path.join(work, name.replace(" ", "-").replace(":", "") + ".plan")
            report = compile_plan(args, onnx_path, plan, flags, peak[2] if peak else None)
            rank0 = report["ranks"][0] if "ranks" in report else report
            torch_result = run_fsdp2(args, cfg, strategy, ckpt, work)
            torch_speed = print_row(f"FSDP2 {name}" + (f" ({torch_result['torch']})"
                                                        if "torch" in torch_result else ""),
                                    torch_result, tokens, flops, peak,
                                    planned=None)
            ours = run_fsdp(args, plan, inputs, work)
            profiled = run_fsdp(args, plan, inputs, work, profile=True)
            print_row(f"fsdp-run {name}", ours, tokens, flops, peak,
                      planned=rank0.get("peak_bytes"),
                      predicted=rank0.get("predicted_exposed_communication_s"),
                      exposed=profiled.get("exposed_s"), versus=torch_speed)
            if "error" in profiled:
                print(f"  {'  (profile run)':<30} | {profiled['error']}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build", help="build directory holding bin/")
    parser.add_argument("--gpus", type=int, help="GPUs to use (default: all)")
    parser.add_argument("--models", nargs="+", default=["gpt", "1b"], choices=["gpt", "1b"])
    parser.add_argument("--strategies", nargs="+", default=["full", "grad-op", "hybrid"],
                        choices=["full", "grad-op", "hybrid"])
    parser.add_argument("--ckpt", nargs="+", type=int, default=[0, 1], choices=[0, 1],
                        help="rows without (0) and with (1) --ckpt=blocks")
    parser.add_argument("--launch", default="in-process",
                        choices=["in-process", "mpirun", "torchrun"])
    parser.add_argument("--runs", type=int, default=10, help="timed steps (median)")
    parser.add_argument("--depth", type=int, help="1b: encoder and decoder layers (default 32)")
    parser.add_argument("--torch-python", default=default_torch_python(),
                        help="interpreter with torch 2.x + CUDA for the FSDP2 rows")
    for name, value in GPT_DEFAULT.items():
        parser.add_argument(f"--{name}", type=int, default=value, help=f"gpt: {name}")
    # Internal: one torchrun rank of the FSDP2 rows.
    parser.add_argument("--fsdp2-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--strategy", help=argparse.SUPPRESS)
    parser.add_argument("--worker-config", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--worker-ckpt", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.fsdp2_worker:
        fsdp2_worker(json.loads(args.worker_config), args.strategy, args.worker_ckpt, args.runs,
                     args.result)
        return 0
    found, why = gpu_probe.gpus()
    if not found:
        print(f"no GPU: {why}; bench/gpu_fsdp.py measures nothing without one")
        return NO_GPU_EXIT
    args.gpus = args.gpus or len(found)
    if args.gpus > len(found):
        print(f"--gpus={args.gpus}: this machine has {len(found)} GPUs")
        return 1
    name, total = found[0]
    peak = peak_of(name)
    print(f"{args.gpus} x {name}, {total / 2**30:.1f} GiB each; fp32, TF32 off; "
          f"torch from {args.torch_python or 'nowhere'}")
    with tempfile.TemporaryDirectory(prefix="gpu-fsdp-") as tmp:
        for which in args.models:
            bench_model(args, which, peak, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
