#!/usr/bin/python3
# Data-parallel scaling benchmark: the GPT-style decoder of tests/models
# trained (forward, backward, AdamW lr 1e-3, weight decay 0.01, fp32) at
# world sizes N in --worlds (default 1 2 4) with a fixed per-rank batch b
# (weak scaling: the global batch is b*N), fsdp-opt/fsdp-run against torch
# 1.13 on the CPU with the gloo backend, measured side by side in one run:
#
#   fsdp-run  --shard=full   every N, in-process ranks (threads of one fsdp-run)
#   fsdp-run  --shard=none   N=2 (DDP-equivalent: replicated, all-reduce)
#   fsdp-run  --shard=full   N=2 under mpirun (one process per rank)
#   torch DDP                every N (DistributedDataParallel, gloo, one process per rank)
#   torch FSDP               every N (FullyShardedDataParallel, transformer-block
#                            auto-wrap), or one row saying why it cannot run here
#
# Every run starts from the same weights (the exported model's) and trains
# on the same data: the global batch is the first b*N rows of one fixed set
# of random token rows, rank r takes rows [r*b, (r+1)*b) (docs/design.md's data
# contract; torch's ranks slice the same rows), and every step sees the same
# batch. The step time is rank 0's median over --steps steps after 2 warm-up
# steps (fsdp-run's step_time_s from --metrics; perf_counter around
# zero_grad, forward, backward, optimizer step and the loss all-reduce for
# torch). Global samples/s is b*N / median. "vs N=1" is a row's global
# samples/s over the same system's N=1 row (with the cores fixed, 1.00 is
# perfect weak scaling: adding ranks costs nothing); "torch/this" is torch
# DDP's median step over the row's at the same N (above 1: faster than
# torch DDP). Per-rank memory: fsdp-opt's compile-time report
# (--emit=report --report-format=json: parameters, optimizer_state, peak),
# and for torch the bytes of its parameters and optimizer state tensors as
# they live on rank 0 after the first step. The first-step loss of every
# row is printed with its relative difference from torch DDP's at the same N.
#
# Threads: the machine's cores are shared out between the ranks the same
# way on both sides. fsdp-run's in-process ranks share one process-wide
# OpenBLAS pool that fsdp-run sizes itself to max(1, cores/N) when neither
# OPENBLAS_NUM_THREADS nor OMP_NUM_THREADS is set (shareBlasThreads in
# runtime/run/Launch.cpp), so the benchmark unsets both for them. Every
# process-per-rank run (mpirun ranks, torch ranks) gets
# OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = max(1, cores/N), and torch ranks
# also torch.set_num_threads of the same; nothing is pinned (mpirun
# --bind-to none). With more ranks than cores (N=4 on a 2-core VM) every
# system oversubscribes the machine.
#
# Run on demand, not in CI:
#
#   /usr/bin/python3 bench/fsdp_ranks.py --build build [--sizes small] [--worlds 1 2 4]
#                                        [--steps 6] [--quick] [--no-mpi]

import argparse
import functools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback

import numpy
import torch

import gpt_common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "models"))
import export_models  # noqa: E402

WARMUP = 2
LR, WEIGHT_DECAY = 1e-3, 0.01
TIMEOUT_S = 600

# Model presets: (layers, d, heads, T, per-rank batch, vocab). "small" is
# the default: about 100-300 ms per training step at one rank on 2 cores.
SIZES = {
    "tiny": dict(layers=2, d=128, heads=4, T=64, batch=4, vocab=256),
    "small": dict(layers=4, d=256, heads=4, T=64, batch=4, vocab=512),
    "base": dict(layers=4, d=256, heads=4, T=128, batch=8, vocab=512),
}

MIB = 1024.0 * 1024.0


def cores():
    return os.cpu_count() or 1


def load():
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def rank_threads(world):
    return max(1, cores() // world)


def env_without_threads():
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    env.pop("OMP_NUM_THREADS", None)
    return env


def describe(size):
    return (f"layers {size['layers']}, d {size['d']}, heads {size['heads']}, T {size['T']}, "
            f"per-rank batch {size['batch']}, vocab {size['vocab']}")


def build_model(size):
    torch.manual_seed(export_models.SEED)
    model = export_models.GPT(vocab=size["vocab"], T=size["T"], d=size["d"],
                              heads=size["heads"], layers=size["layers"])
    model.train()
    return model


def global_rows(size, max_world):
    """b*max_world fixed sample rows; world N uses the first b*N."""
    gen = torch.Generator().manual_seed(export_models.SEED)
    return export_models.gpt_inputs(gen, vocab=size["vocab"], T=size["T"],
                                    batch=size["batch"] * max_world)


# --------------------------------------------------------------------------
# torch side: `--torch-worker` runs in a child process started with the
# per-rank thread environment; it starts N ranks with torch.multiprocessing.
# --------------------------------------------------------------------------

def torch_state_bytes(model, optimizer):
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    opt = 0
    for state in optimizer.state.values():
        for value in state.values():
            if torch.is_tensor(value):
                opt += value.numel() * value.element_size()
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters()
                if p.grad is not None)
    return params, opt, grads


def torch_rank(rank, world, max_world, kind, size_json, steps, port, threads, result_path):
    import torch.distributed as dist
    torch.set_num_threads(threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    result = {}
    try:
        size = json.loads(size_json)
        model = build_model(size)
        rows = global_rows(size, max_world)  # the rows fsdp-run's .npy files hold
        b = size["batch"]
        batch = tuple(t[rank * b:(rank + 1) * b] for t in rows.values())
        if kind == "ddp":
            from torch.nn.parallel import DistributedDataParallel
            # The model's one buffer is the causal mask, a bool tensor gloo
            # cannot broadcast ("Invalid scalar type" when DDP syncs module
            # state); it is the same constant on every rank, so DDP leaves
            # it alone.
            DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
                model, ["causal_mask"])
            wrapped = DistributedDataParallel(model)
        else:
            from torch.distributed.fsdp import FullyShardedDataParallel
            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
            policy = functools.partial(transformer_auto_wrap_policy,
                                       transformer_layer_cls={export_models.GPTBlock})
            wrapped = FullyShardedDataParallel(model, auto_wrap_policy=policy,
                                               device_id=torch.device("cpu"))
        optimizer = torch.optim.AdamW(wrapped.parameters(), lr=LR, betas=(0.9, 0.999), eps=1e-8,
                                      weight_decay=WEIGHT_DECAY)
        times, losses, memory = [], [], None
        for step in range(WARMUP + steps):
            start = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = wrapped(*batch)
            loss.backward()
            optimizer.step()
            total = loss.detach().clone()
            dist.all_reduce(total)  # the global mean, as fsdp-run reports it
            times.append((time.perf_counter() - start) * 1e3)
            losses.append(total.item() / world)
            if step == 0:
                memory = torch_state_bytes(wrapped, optimizer)
        result = {"times": times[WARMUP:], "losses": losses, "params": memory[0],
                  "opt": memory[1], "grads": memory[2]}
    except Exception as e:  # noqa: BLE001  (reported as the row's reason)
        result = {"error": f"{type(e).__name__}: {e}".splitlines()[0],
                  "trace": traceback.format_exc()}
    if rank == 0:
        with open(result_path, "w") as f:
            json.dump(result, f)
    if "error" not in result:
        dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torch_worker(args):
    world, kind = args.torch_worker, args.torch_kind
    if kind == "fsdp":
        try:
            from torch.distributed.fsdp import FullyShardedDataParallel  # noqa: F401
        except Exception as e:  # noqa: BLE001
            python = ".".join(str(v) for v in sys.version_info[:2])
            reason = f"{type(e).__name__}: {e}".splitlines()[0]
            print(json.dumps({"error": f"import torch.distributed.fsdp fails under Python "
                                       f"{python}: {reason}"}))
            return
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        result_path = os.path.join(tmp, "result.json")
        mp.spawn(torch_rank, args=(world, args.max_world, kind, args.size_json, args.steps, free_port(),
                                   rank_threads(world), result_path), nprocs=world)
        with open(result_path) as f:
            print(json.dumps(json.load(f)))


def run_torch(args, size, world, kind):
    command = [sys.executable, os.path.abspath(__file__), f"--torch-worker={world}",
               f"--torch-kind={kind}", f"--size-json={json.dumps(size)}", f"--steps={args.steps}",
               f"--max-world={max(args.worlds)}"]
    threads = rank_threads(world)
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True,
                                timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        tail = (result.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"worker exited {result.returncode}: {tail}"}
    return json.loads(lines[-1])


# --------------------------------------------------------------------------
# fsdp side
# --------------------------------------------------------------------------

def train_flags(world, shard):
    return [f"--world-size={world}", f"--shard={shard}", "--optimizer=adamw", f"--lr={LR}",
            f"--weight-decay={WEIGHT_DECAY}"]


def compile_plan(args, onnx_path, tmp, world, shard):
    plan = os.path.join(tmp, f"gpt-{world}-{shard}.plan")
    report = os.path.join(tmp, f"gpt-{world}-{shard}.json")
    opt = gpt_common.tool(args, "fsdp-opt")
    subprocess.run([opt, onnx_path, "-o", plan, *train_flags(world, shard)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([opt, onnx_path, "-o", report, *train_flags(world, shard), "--emit=report",
                    "--report-format=json"], check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        rank0 = json.load(f)["ranks"][0]
    return plan, rank0


def write_inputs(rows, world, b, tmp):
    files = {}
    for name, tensor in rows.items():
        files[name] = os.path.join(tmp, f"{name}-{world}.npy")
        numpy.save(files[name], tensor[:b * world].numpy())
    return files


def run_fsdp(args, plan, files, world, launch, tmp):
    metrics = os.path.join(tmp, f"metrics-{os.path.basename(plan)}-{launch}.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    run = [gpt_common.tool(args, "fsdp-run"), plan, f"--steps={WARMUP + args.steps}",
           f"--metrics={metrics}"] + gpt_common.input_flags(files)
    if launch == "threads":
        command, env = run, env_without_threads()
    else:
        threads = str(rank_threads(world))
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OPENBLAS_NUM_THREADS=threads, OMP_NUM_THREADS=threads)
        command = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(world),
                   "-x", "OPENBLAS_NUM_THREADS", "-x", "OMP_NUM_THREADS"] + run
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True,
                                timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {TIMEOUT_S} s"}
    if result.returncode != 0:
        tail = ((result.stderr or result.stdout).strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit {result.returncode}: {tail}"}
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    return {"times": [r["step_time_s"] * 1e3 for r in records[WARMUP:]],
            "losses": [r["loss"] for r in records]}


# --------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------

HEADER = (f"{'N':>2} | {'system':<22} | {'ranks as':<9} | {'median ms':>9} | {'min ms':>7} | "
          f"{'samples/s':>9} | {'vs N=1':>6} | {'torch/this':>10} | "
          f"{'params+opt MiB/rank':>19} | {'peak MiB/rank':>13} | {'first loss':>10} | "
          f"{'loss rel diff':>13}")


def print_row(world, system, launch, result, b, reference, torch_ms, torch_loss, params, opt,
              peak):
    if "error" in result:
        print(f"{world:>2} | {system:<22} | {launch:<9} | failed: {result['error']}", flush=True)
        return None
    median = statistics.median(result["times"])
    throughput = b * world / median * 1e3
    scale = f"{throughput / reference:.2f}" if reference else "-"
    versus = f"{torch_ms / median:.2f}x" if torch_ms else "-"
    memory = f"{params / MIB:.2f}+{opt / MIB:.2f}"
    peak_text = f"{peak / MIB:.1f}" if peak is not None else "-"
    loss = result["losses"][0]
    diff = f"{abs(loss - torch_loss) / abs(torch_loss):.1e}" if torch_loss else "-"
    print(f"{world:>2} | {system:<22} | {launch:<9} | {median:>9.1f} | {min(result['times']):>7.1f} | "
          f"{throughput:>9.1f} | {scale:>6} | {versus:>10} | {memory:>19} | {peak_text:>13} | "
          f"{loss:>10.6f} | {diff:>13}", flush=True)
    return throughput


def bench_size(args, name, size):
    b = size["batch"]
    worlds = sorted(set(args.worlds))
    model = build_model(size)
    params = sum(p.numel() for p in model.parameters())
    rows = global_rows(size, max(worlds))
    print(f"\nsize {name}: {describe(size)}; {params / 1e6:.2f}M parameters; "
          f"median of {args.steps} steps after {WARMUP} warm-up")
    print(HEADER)
    print("-" * len(HEADER))
    fsdp_ref, torch_ref, fsdp_torch_ref = {}, None, None
    fsdp_unavailable = None
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = os.path.join(tmp, "gpt.onnx")
        first = {k: v[:b] for k, v in rows.items()}
        export_models.export(model, first, onnx_path, 17, "train")
        for world in worlds:
            files = write_inputs(rows, world, b, tmp)
            ddp = run_torch(args, size, world, "ddp")
            torch_ms = statistics.median(ddp["times"]) if "error" not in ddp else None
            torch_loss = ddp["losses"][0] if "error" not in ddp else None
            configs = [("full", "threads")]
            if world == 2:
                configs.append(("none", "threads"))
                if not args.no_mpi:
                    configs.append(("full", "mpirun"))
            for shard, launch in configs:
                plan, report = compile_plan(args, onnx_path, tmp, world, shard)
                result = run_fsdp(args, plan, files, world, launch, tmp)
                system = f"fsdp-run --shard={shard}"
                throughput = print_row(world, system, launch, result, b, fsdp_ref.get(shard),
                                       torch_ms, torch_loss, report["parameters"],
                                       report["optimizer_state"], report["peak"])
                if world == 1 and throughput:
                    fsdp_ref[shard] = throughput
                    fsdp_ref.setdefault("none", throughput)  # none = full at N=1
            if "error" in ddp:
                print(f"{world:>2} | {'torch DDP':<22} | {'processes':<9} | failed: {ddp['error']}")
            else:
                throughput = print_row(world, "torch DDP (gloo)", "processes", ddp, b, torch_ref,
                                       torch_ms, torch_loss, ddp["params"], ddp["opt"], None)
                if world == 1:
                    torch_ref = throughput
            if fsdp_unavailable is None and not args.no_torch_fsdp:
                fsdp = run_torch(args, size, world, "fsdp")
                if "error" in fsdp:
                    fsdp_unavailable = fsdp["error"]
                    print(f"   | torch FSDP: unavailable on CPU in torch {torch.__version__}: "
                          f"{fsdp_unavailable}", flush=True)
                else:
                    throughput = print_row(world, "torch FSDP (gloo)", "processes", fsdp, b,
                                           fsdp_torch_ref, torch_ms, torch_loss, fsdp["params"],
                                           fsdp["opt"], None)
                    if world == 1:
                        fsdp_torch_ref = throughput


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", default="build", help="build directory holding bin/")
    parser.add_argument("--steps", type=int, default=6, help="timed steps (after 2 warm-up)")
    parser.add_argument("--sizes", nargs="+", default=["small"], choices=sorted(SIZES),
                        help="model presets")
    parser.add_argument("--worlds", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--quick", action="store_true",
                        help="tiny model, 3 steps, worlds 1 2 (a smoke run)")
    parser.add_argument("--no-mpi", action="store_true", help="skip the mpirun row")
    parser.add_argument("--no-torch-fsdp", action="store_true", help="skip torch FSDP")
    # Internal: one torch run (N ranks), prints JSON.
    parser.add_argument("--torch-worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--torch-kind", choices=["ddp", "fsdp"], help=argparse.SUPPRESS)
    parser.add_argument("--size-json", help=argparse.SUPPRESS)
    parser.add_argument("--max-world", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_worker:
        torch_worker(args)
        return
    if args.quick:
        args.sizes, args.steps, args.worlds = ["tiny"], 3, [1, 2]
    if any(w < 1 for w in args.worlds):
        sys.exit("--worlds: world sizes are >= 1")
    for name in ("fsdp-opt", "fsdp-run"):
        if not os.access(gpt_common.tool(args, name), os.X_OK):
            sys.exit(f"{gpt_common.tool(args, name)} not found (build it, or pass --build)")
    if not args.no_mpi and 2 in args.worlds and shutil.which("mpirun") is None:
        print("mpirun not found: skipping the mpirun row")
        args.no_mpi = True
    n = cores()
    print(f"Data-parallel weak scaling, GPT training step (forward + backward + AdamW lr {LR}, "
          f"weight decay {WEIGHT_DECAY}, fp32), torch {torch.__version__} gloo on CPU")
    print(f"machine: {n} cores; per-rank BLAS threads max(1, {n}/N) on both sides "
          f"(fsdp-run in-process: one shared OpenBLAS pool sized by fsdp-run)")
    if any(w > n for w in args.worlds):
        over = ", ".join(str(w) for w in args.worlds if w > n)
        print(f"note: N={over} oversubscribes this {n}-core machine "
              f"(more ranks than cores; every system shares the same cores)")
    print(f"load average before: {load()} (other work on the machine inflates every row)")
    started = time.time()
    for name in args.sizes:
        bench_size(args, name, SIZES[name])
    print(f"\n(total {time.time() - started:.0f} s; load average after: {load()})")


if __name__ == "__main__":
    main()
