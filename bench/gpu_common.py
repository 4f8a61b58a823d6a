#!/usr/bin/python3
# What the GPU benchmarks (gpu_step.py: one GPU; gpu_fsdp.py: N GPUs with
# NCCL) share, so both measure and print the same way: the models (the
# benchmark GPT and the seeds' 1B Transformer of tests/models, built with
# one seed in whichever interpreter asks), their model FLOPs, the GPUs'
# dense peaks for MFU, the venv interpreter that holds torch 2.x with CUDA,
# fsdp-opt's plan + JSON report for one set of flags, and a sampler of the
# device memory nvidia-smi sees per process and GPU.
#
# Model FLOPs per step (PaLM's appendix B way, recompute not counted):
# 6 x (parameters outside the embeddings) x tokens, plus 12 x T x d x
# tokens per attention block (GPT: one per layer; the Transformer: encoder
# self, decoder self and cross). Peaks (dense, no sparsity) from NVIDIA's
# data sheets: H100 SXM / H200 989 TFLOP/s bf16, 67 fp32; H100 PCIe 756 /
# 51; A100 312 / 19.5. A GPU not in the table has no MFU.

import contextlib
import json
import os
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))

NO_GPU_EXIT = 2
ADAMW = ["--optimizer=adamw", "--lr=0.001", "--weight-decay=0.01"]
BUFFERS = r"pos\.pe|tgt_mask"  # the Transformer's float buffers (not parameters)

# Dense peak TFLOP/s by GPU name (NVIDIA data sheets), and the cost-model
# profile of fsdp-opt --device for the planned step time.
PEAKS = [  # (name contains, bf16, fp32, fsdp-opt --device)
    ("H100 PCIe", 756.0, 51.0, "h100"),
    ("H100", 989.0, 67.0, "h100"),
    ("H200", 989.0, 67.0, "h100"),
    ("A100", 312.0, 19.5, "a100"),
]

GPT_DEFAULT = dict(layers=4, d=256, heads=4, T=128, batch=8, vocab=512)
TRANSFORMER_1B = dict(vocab=33278, d=1024, heads=64, layers=32, ff=4096, T=35, batch=1,
                      dropout=0.2)


def peak_of(name):
    """(bf16, fp32, fsdp-opt --device) for a GPU name, or None."""
    return next(((bf16, fp32, profile) for key, bf16, fp32, profile in PEAKS if key in name),
                None)


def model_config(args, which):
    if which == "gpt":
        return dict(family="gpt", layers=args.layers, d=args.d, heads=args.heads, T=args.T,
                    batch=args.batch, vocab=args.vocab)
    cfg = dict(TRANSFORMER_1B, family="transformer")
    if args.depth:
        cfg["layers"] = args.depth
    return cfg


def build(cfg, batch=None):
    """(model, {input name: tensor}) in training mode; `batch` rows of
    inputs (default: the config's batch)."""
    import torch
    import export_models as em

    torch.manual_seed(em.SEED)
    gen = torch.Generator().manual_seed(em.SEED)
    rows = batch or cfg["batch"]
    if cfg["family"] == "gpt":
        model = em.GPT(vocab=cfg["vocab"], T=cfg["T"], d=cfg["d"], heads=cfg["heads"],
                       layers=cfg["layers"])
        inputs = em.gpt_inputs(gen, vocab=cfg["vocab"], T=cfg["T"], batch=rows)
    else:
        with torch.no_grad():
            model = em.Seq2SeqTransformer(vocab=cfg["vocab"], T=cfg["T"], d=cfg["d"],
                                          heads=cfg["heads"], layers=cfg["layers"],
                                          ff=cfg["ff"], dropout=cfg["dropout"])
        inputs = em.transformer_inputs(gen, vocab=cfg["vocab"], T=cfg["T"], batch=rows)
    model.train()
    return model, inputs


def flops_per_step(cfg, model):
    """Model FLOPs of one training step of one rank's batch (see the header)."""
    embeddings = {"tok_emb.weight", "pos_emb.weight", "embedding.weight"}
    dense = sum(p.numel() for n, p in model.named_parameters() if n not in embeddings)
    tokens = cfg["batch"] * cfg["T"]
    blocks = cfg["layers"] * (1 if cfg["family"] == "gpt" else 3)
    return 6 * dense * tokens + 12 * blocks * cfg["T"] * cfg["d"] * tokens


def default_torch_python():
    for candidate in (os.environ.get("FSDP_VENV"), os.path.join(ROOT, ".venv")):
        if candidate and os.path.exists(os.path.join(candidate, "bin", "python")):
            return os.path.join(candidate, "bin", "python")
    return None


def tool(args, name):
    return os.path.join(args.build, "bin", name)


def export(cfg, tmp, rows=None):
    """ONNX model (one rank's batch) and one .npy per input holding `rows`
    samples (default: one batch); returns (path, input flags, model)."""
    import numpy
    import export_models as em

    model, inputs = build(cfg)
    path = os.path.join(tmp, f"{cfg['family']}.onnx")
    em.export(model, inputs, path, 17, "train")
    if rows and rows != cfg["batch"]:
        _, inputs = build(cfg, batch=rows)
    flags = []
    for name, tensor in inputs.items():
        npy = os.path.join(tmp, f"{name}.npy")
        numpy.save(npy, tensor.numpy())
        flags.append(f"--input={name}={npy}")
    return path, flags, model


def compile_plan(args, onnx_path, plan, flags, profile):
    """Compiles `plan` and returns fsdp-opt's JSON report for the same
    flags (with --device=profile for the cost model's predictions)."""
    command = [tool(args, "fsdp-opt"), onnx_path, *flags]
    subprocess.run(command + ["-o", plan], check=True, stdout=subprocess.DEVNULL)
    report = plan + ".report.json"
    subprocess.run(command + ["--emit=report", "--report-format=json", "-o", report]
                   + ([f"--device={profile}"] if profile else []),
                   check=True, stdout=subprocess.DEVNULL)
    with open(report) as f:
        return json.load(f)


def mib(value):
    return "-" if value is None else f"{value / 2**20:.1f}"


class MemorySampler:
    """The largest device memory nvidia-smi reports for one process while
    it runs, in all (peak) and per GPU (per_gpu: {uuid: bytes}); None
    without nvidia-smi. With several processes (a launcher's ranks), give
    the launcher's pid: its descendants are counted too."""

    def __init__(self):
        self.peak, self.per_gpu, self.done = None, {}, threading.Event()

    def start(self, pid):
        self.pid = pid
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def pids(self):
        """The process and its descendants (ranks started by a launcher)."""
        found, frontier = {self.pid}, [self.pid]
        while frontier:
            pid = frontier.pop()
            try:
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            found.update(children)
            frontier.extend(children)
        return {str(p) for p in found}

    def loop(self):
        while not self.done.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                                      "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=10).stdout
            except (OSError, subprocess.TimeoutExpired):
                return
            ours, total = self.pids(), 0
            for line in out.splitlines():
                fields = [f.strip() for f in line.split(",")]
                if len(fields) == 3 and fields[0] in ours and fields[2].isdigit():
                    used = int(fields[2]) * 2**20
                    self.per_gpu[fields[1]] = max(self.per_gpu.get(fields[1], 0), used)
                    total += used
            if total:
                self.peak = max(self.peak or 0, total)
            self.done.wait(0.2)

    def stop(self):
        self.done.set()
        self.thread.join()

    def max_per_gpu(self):
        return max(self.per_gpu.values()) if self.per_gpu else None


def torch_timed_steps(model, batch, steps, autocast=None):
    """Trains `model` (on the GPU) for `steps` AdamW steps on `batch` (the
    benchmarks' optimizer: lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay
    0.01) and returns each step's time, measured by CUDA events around
    zero_grad, forward, backward and the optimizer step. The peak memory
    counter is reset first. `autocast` (a torch dtype) runs the forward
    under torch.autocast("cuda", dtype=autocast)."""
    import torch

    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=0.01)
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        optimizer.zero_grad(set_to_none=True)
        with (torch.autocast("cuda", dtype=autocast) if autocast else contextlib.nullcontext()):
            loss = model(*batch)
        loss.backward()
        optimizer.step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    return times


def run_sampled(command, timeout, env=None):
    """Runs `command` while sampling its GPU memory: (return code or None
    on timeout, stdout, stderr, the busiest GPU's peak bytes, all GPUs'
    peak bytes)."""
    sampler = MemorySampler()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    sampler.start(process.pid)
    try:
        out, err = process.communicate(timeout=timeout)
        code = process.returncode
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        code = None
    finally:
        sampler.stop()
    return code, out, err, sampler.max_per_gpu(), sampler.peak
