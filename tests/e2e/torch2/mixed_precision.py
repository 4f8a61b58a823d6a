#!/usr/bin/env python3
"""Mixed precision against torch 2.x FSDP2 (issue 31's proof).

For each MODEL/DTYPE/WORLD, the model of models.py is exported with
fsdp_opt.export, compiled with `--param-dtype=DTYPE` (world size 2 adds
--shard=full --ckpt=blocks) and trained 5 AdamW steps by fsdp-run from a
uint16 token file. torch trains the same initial weights on the same
windows with FSDP2: `fully_shard(block)` for each block and the root with
MixedPrecisionPolicy(param_dtype=DTYPE, reduce_dtype=float32), on gloo
with WORLD processes (f16 steps through ShardedGradScaler, whose defaults
are fsdp-opt's loss scaling). Every step's loss must agree within
LOSS_TOLERANCE and the final parameters within PARAM_TOLERANCE relative L2
(the per-dtype reasoning is beside the numbers).

Then evidence that the compute really is in DTYPE and not f32 on rounded
parameters: the model's step-1 logits from a forward plan
(`--mode=forward --param-dtype=DTYPE --output-dtype=f32`, the same
kernels) against torch's logits with the model in DTYPE, and against
torch in f32 on the parameters rounded to DTYPE. For plain-gpt, whose
ops torch computes one by one (Linear as addmm, attention written out,
ReLU), compiled with --fuse-attention=off so that the plan runs those ops
one by one too, the share of elements equal bit for bit must be at least
90% and 1.5x the second (measured: 100% against 36% in bf16, 99.9% against
35% in f16; fused, its scores stay in f32 and the share is 53%). For the
SDPA models it is printed, not asserted: torch runs SDPA as one fused
kernel keeping the scores in f32, as the default fsdp-fuse-attention's
nn.attention does (measured there: nanogpt 74% against 36%). RMSNorm and
SiLU, which torch also computes in f32, are recomputed in f32 by
fsdp-upcast-composites (llama-style bf16: 26.5% -> 46.5%, torch f32
37.2%).

  .venv/bin/python tests/e2e/torch2/mixed_precision.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--cases nanogpt/bf16/2 ...] [--keep DIR]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import exports  # noqa: E402
import models  # noqa: E402
import parity  # noqa: E402

STEPS = 5
FSDP2_ATTEMPTS = 3  # torch FSDP2 reference runs whose rank died by a signal (gloo)
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
# Losses (relative, every step) and final parameters (relative L2). A loss
# is a value of DTYPE (ulp 2^-8 relative for bf16, 2^-11 for f16) and the
# GEMMs, rounded once from another summation order than torch's, differ
# from torch's by an ulp on a few percent of elements; Adam's first steps
# move every parameter by about lr whatever the gradient's rounding, so
# parameter differences stay a small fraction of one step. Measured on
# this suite: see the note of issue 31.
LOSS_TOLERANCE = {"bf16": 2e-2, "f16": 5e-3}
PARAM_TOLERANCE = {"bf16": 2e-3, "f16": 1e-3}
CASES = [f"{m}/{d}/{w}" for m in ("plain-gpt", "nanogpt", "llama-style") for d in DTYPES
         for w in (1, 2)]
# Models whose logits must equal torch's bit for bit on most elements.
EXACT_LOGITS = ("plain-gpt",)


class Failure(Exception):
    pass


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"{os.path.basename(command[0])}: {parity.first_error(result)}")
    return result


# --------------------------------------------------------------------------
# torch FSDP2
# --------------------------------------------------------------------------

def blocks_of(model):
    return list(getattr(model, "h", None) or getattr(model, "layers"))


def fsdp2_worker(rank, world, name, dtype, initial, idx, targets, port, out):
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        model = models.build(name)
        model.load_state_dict(initial)
        policy = MixedPrecisionPolicy(param_dtype=DTYPES[dtype], reduce_dtype=torch.float32)
        for block in blocks_of(model):
            fully_shard(block, mp_policy=policy)
        fully_shard(model, mp_policy=policy)
        optim = torch.optim.AdamW(model.parameters(), **parity.ADAMW)
        scaler = None
        if dtype == "f16":
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
            scaler = ShardedGradScaler("cpu")
        b = models.BATCH
        batch = b * world
        losses = []
        for s in range(STEPS):
            rows = slice(s * batch + rank * b, s * batch + (rank + 1) * b)
            optim.zero_grad(set_to_none=True)
            loss = model(torch.from_numpy(idx[rows]), torch.from_numpy(targets[rows]))
            (scaler.scale(loss) if scaler else loss).backward()
            if scaler:
                scaler.step(optim)
                scaler.update()
            else:
                optim.step()
            total = loss.detach().float().clone()
            dist.all_reduce(total)
            losses.append(float(total) / world)
        final = {n: p.full_tensor().detach().float().numpy() for n, p in model.named_parameters()}
        if rank == 0:
            torch.save({"losses": losses, "final": final}, out)
    finally:
        dist.destroy_process_group()


def torch_fsdp2(name, dtype, initial, tokens, world, workdir):
    idx, targets = parity.token_windows(tokens, STEPS, models.BATCH * world, models.SEQ)
    out = os.path.join(workdir, "fsdp2.pt")
    # gloo itself sometimes aborts a rank (SIGABRT, "terminate called without
    # an active exception") on this loaded machine: that is the oracle's
    # transport failing, not a result, so a rank killed by a signal reruns
    # the reference (at most FSDP2_ATTEMPTS times); an exception in the
    # workers' Python still fails at once.
    for attempt in range(1, FSDP2_ATTEMPTS + 1):
        # A port no earlier case still holds (a reused one can still be in
        # TIME_WAIT, and gloo aborts on it).
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        try:
            mp.start_processes(fsdp2_worker,
                               args=(world, name, dtype, initial, idx, targets, port, out),
                               nprocs=world, join=True, start_method="spawn")
            break
        except mp.ProcessExitedException as e:
            if e.signal_name is None or attempt == FSDP2_ATTEMPTS:
                raise
            print(f"  torch FSDP2 reference: {e}; rerunning it ({attempt}/{FSDP2_ATTEMPTS})",
                  file=sys.stderr, flush=True)
    result = torch.load(out, weights_only=False)
    return numpy.array(result["losses"]), result["final"]


# --------------------------------------------------------------------------
# Logits: the compute dtype is real
# --------------------------------------------------------------------------

class Logits(torch.nn.Module):
    """models.py's model up to its logits (its forward without the loss)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, idx):
        m = self.model
        captured = {}
        hook = m.lm_head.register_forward_hook(lambda mod, i, o: captured.setdefault("y", o))
        try:
            m(idx, torch.zeros_like(idx))
        finally:
            hook.remove()
        return captured["y"]


def logits_shares(args, name, dtype, initial, idx, workdir):
    """(share of our logits equal to torch's in dtype, share equal to torch
    f32 on dtype-rounded parameters)."""
    model = models.build(name)
    model.load_state_dict(initial)
    model.train(False)
    wrapper = Logits(model)
    onnx_path = os.path.join(workdir, "logits.onnx")
    exports.export(wrapper, (torch.from_numpy(idx),), "helper", onnx_path)
    plan = os.path.join(workdir, "logits.plan")
    # plain-gpt's attention is written out and torch runs it op by op,
    # rounding each op: its plan keeps the ops (fused, the scores stay f32).
    fuse = "off" if name in EXACT_LOGITS else "on"
    run([args.fsdp_opt, onnx_path, "--mode=forward", f"--param-dtype={dtype}",
         "--output-dtype=f32", f"--fuse-attention={fuse}", "-o", plan])
    numpy.save(os.path.join(workdir, "idx.npy"), idx)
    outdir = os.path.join(workdir, "logits-out")
    run([args.fsdp_run, plan, f"--input=idx={os.path.join(workdir, 'idx.npy')}",
         f"--outputs={outdir}"])
    outputs = [f for f in os.listdir(outdir) if f.endswith(".npy")]
    ours = numpy.load(os.path.join(outdir, outputs[0])).astype(numpy.float32)
    with torch.no_grad():
        low = Logits(models.build(name))
        low.model.load_state_dict(initial)
        low.train(False)
        low = low.to(DTYPES[dtype])
        theirs_low = low(torch.from_numpy(idx)).float().numpy()
        rounded = Logits(models.build(name))
        rounded.model.load_state_dict({k: v.to(DTYPES[dtype]).float() if v.is_floating_point()
                                       else v for k, v in initial.items()})
        rounded.train(False)
        theirs_f32 = rounded(torch.from_numpy(idx)).to(DTYPES[dtype]).float().numpy()
    ours = ours.reshape(theirs_low.shape)
    return float(numpy.mean(ours == theirs_low)), float(numpy.mean(ours == theirs_f32))


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

def run_case(args, case, tmp):
    name, dtype, world = case.split("/")
    world = int(world)
    workdir = os.path.join(tmp, case.replace("/", "-"))
    os.makedirs(workdir)
    model = models.build(name)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    onnx_path = exports.export(model, models.example_inputs(), "helper",
                               os.path.join(workdir, "model.onnx"))
    rng = numpy.random.default_rng(1)
    tokens = rng.integers(0, models.VOCAB, 4096).astype(numpy.uint16)
    tokens_file = os.path.join(workdir, "tokens.bin")
    tokens.tofile(tokens_file)
    plan = os.path.join(workdir, "step.plan")
    flags = parity.compile_flags(world) + [f"--param-dtype={dtype}"]
    run([args.fsdp_opt, onnx_path, "-o", plan] + flags)
    metrics = os.path.join(workdir, "metrics.jsonl")
    weights = os.path.join(workdir, "weights.safetensors")
    run([args.fsdp_run, plan, f"--world-size={world}", f"--steps={STEPS}", f"--data={tokens_file}",
         f"--metrics={metrics}", f"--save-weights={weights}"])
    with open(metrics) as f:
        ours = numpy.array([json.loads(line)["loss"] for line in f if line.strip()])
    saved = load_file(weights)
    theirs, final = torch_fsdp2(name, dtype, initial, tokens, world, workdir)
    loss_rel = float(numpy.max(numpy.abs(ours - theirs) / numpy.abs(theirs)))
    diffs, refs = [], []
    for n, value in final.items():
        if n in saved:
            diffs.append((saved[n].astype(numpy.float64) - value).ravel())
            refs.append(value.astype(numpy.float64).ravel())
    param_rel = float(numpy.linalg.norm(numpy.concatenate(diffs)) /
                      numpy.linalg.norm(numpy.concatenate(refs)))
    problems = []
    if len(diffs) != len(final):
        problems.append(f"--save-weights lacks {sorted(set(final) - set(saved))}")
    if not loss_rel <= LOSS_TOLERANCE[dtype]:
        problems.append(f"losses {ours.tolist()} vs FSDP2 {theirs.tolist()}")
    if not param_rel <= PARAM_TOLERANCE[dtype]:
        problems.append(f"parameters rel L2 {param_rel:.2e} > {PARAM_TOLERANCE[dtype]:g}")
    shares = ""
    if world == 1:
        idx, _ = parity.token_windows(tokens, 1, models.BATCH, models.SEQ)
        low, f32 = logits_shares(args, name, dtype, initial, idx, workdir)
        shares = f"  logits == torch {dtype} {low:.1%}, == torch f32 {f32:.1%}"
        if name in EXACT_LOGITS and not (low >= 0.9 and low >= 1.5 * f32):
            problems.append(f"logits equal torch {dtype} on {low:.1%}, f32 on {f32:.1%}")
    return loss_rel, param_rel, shares, problems


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fsdp-opt", required=True)
    p.add_argument("--fsdp-run", required=True)
    p.add_argument("--cases", nargs="*", default=CASES)
    p.add_argument("--keep")
    args = p.parse_args()
    torch.set_num_threads(1)
    tmp = args.keep or tempfile.mkdtemp(prefix="fsdp-mixed-")
    failed = 0
    print(f"{'case':24} {'max loss rel':>12} {'param rel L2':>12}  result")
    try:
        for case in args.cases:
            try:
                loss_rel, param_rel, shares, problems = run_case(args, case, tmp)
            except Failure as e:
                loss_rel, param_rel, shares, problems = float("nan"), float("nan"), "", [str(e)]
            failed += bool(problems)
            print(f"{case:24} {loss_rel:12.2e} {param_rel:12.2e}  "
                  f"{'FAIL' if problems else 'PASS'}{shares}", flush=True)
            for problem in problems:
                print(f"    {problem}")
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(args.cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
