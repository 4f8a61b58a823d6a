#!/usr/bin/python3
# FSDP training parity with PyTorch (DESIGN.md's numerics and data contracts
# at world size N). Models exported by tests/models/export_models.py are
# compiled with `fsdp-opt --world-size=N --shard=... --wrap=blocks` and
# trained by `fsdp-run` (N in-process ranks, or `mpirun -np N`). The ONNX
# batch dimension is the per-rank micro-batch b; the global batch is B = b*N,
# sample j of step s is row (s*B + j) mod S of each --input file, and rank r
# takes samples [r*b, (r+1)*b).
#
# The torch reference at world size N, every step: for r = 0..N-1 the loss of
# rank r's micro-batch and its gradient (torch.autograd.grad, fp32); the
# reference loss is the mean of the N losses; the gradient is the per-rank
# gradients summed in rank order in fp32, then divided by N; then the torch
# optimizer (AdamW/SGD, test_train_parity.py's settings) steps. Mixed
# precision (--param-dtype=bf16) is emulated exactly as contracted: fp32
# master parameters; forward and backward use the parameters rounded to bf16
# (computing in fp32); --reduce-dtype=bf16 rounds each rank's gradient to
# bf16, sums those in fp32 in rank order, divides by N in fp32 and rounds the
# result once to bf16 before the fp32 optimizer sees it.
#
# Rows (tolerances as test_train_parity.py: loss 1e-5 relative every step,
# parameters 5e-5 relative L2 after the last step):
#   ref     the torch reference itself: at N=1 it is bitwise
#           test_train_parity.py's reference; at N=3 it matches a plain
#           backward on the mean of the three per-rank losses
#   ws1-0   a world-size-1 plan compiled without any FSDP flag
#   wsN     --shard=full --wrap=blocks at N = 1, 2, 3, 4, 8, GPT and
#           nn.Transformer (and the tied GPT at N=4)
#   neg     the N=2 run against torch trained on rank 0's micro-batch only
#           (a different global batch) must FAIL the comparison
#   shard   grad-op and none at N=4 and N=3 (padding) are bitwise the full
#           run: per-step losses and saved weights
#   hybrid  hybrid:2 at N=4
#   bf16    --param-dtype=bf16 with --reduce-dtype=f32 and bf16 at N=2, and
#           the bf16 run against the fp32 reference, and the reduce-bf16 run
#           against the reduce-f32 reference, must FAIL (the casts are there)
#   mpirun  `mpirun -np 2` and `-np 4` give the in-process ranks' bits
#   tokens  --data=tokens.bin at N=3 (the token-file formula with B = b*N)
#
# Prints one table row per check, then "N passed, M failed"; any failure
# (compile, run, timeout, mismatch) fails the test.
#
#   /usr/bin/python3 tests/e2e/test_fsdp_parity.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--mpirun mpirun] [--only ROW ...] [--keep DIR]

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_train_parity as tp  # noqa: E402  (files, data, torch model, compare)

Failure = tp.Failure
STEPS = 5
TIMEOUT = 300  # seconds per fsdp-opt / fsdp-run command: a hung collective fails

GPT = "gpt-op17-train"
TIED = "gpt-tanh-tied-op17-train"
TRANSFORMER = "transformer-op17-train"
# Optimizer and frozen buffers per model, as test_train_parity.py chose them
# (eps 1e-6 for the tied GPT and the Transformer: see its ADAMW_EPS6).
SETUP = {
    GPT: (tp.ADAMW, ""),
    TIED: (tp.ADAMW_EPS6, ""),
    TRANSFORMER: (tp.ADAMW_EPS6, tp.TRANSFORMER_BUFFERS),
}
SHORT = {GPT: "gpt", TIED: "gpt-tied", TRANSFORMER: "transformer"}


def round_bf16(t):
    return t.to(torch.bfloat16).to(torch.float32)


# --------------------------------------------------------------------------
# torch reference at world size N
# --------------------------------------------------------------------------

def torch_reference(entry, onnx_path, data, optim, freeze, steps, world,
                    param_dtype="f32", reduce_dtype="f32", ranks=None):
    """Returns (global losses as float32, {name: final parameter}). `ranks`
    (default all) picks the ranks whose micro-batches count: [0] is the
    negative control's different global batch."""
    model = tp.torch_model(entry, onnx_path)
    named = [(n, p) for n, p in model.named_parameters()
             if not (freeze and re.fullmatch(freeze, n))]
    for n, p in model.named_parameters():
        p.requires_grad_(not (freeze and re.fullmatch(freeze, n)))
    optimizer = optim.build(named)
    params = [p for _, p in named]
    names = [spec["name"] for spec in entry["inputs"]]
    b = entry["inputs"][0]["shape"][0]
    samples = len(data[names[0]])
    ranks = list(range(world)) if ranks is None else list(ranks)
    losses = []
    for step in range(steps):
        rows = tp.batch_rows(step, b * world, samples)
        master = None
        if param_dtype == "bf16":
            master = [p.detach().clone() for p in params]
            with torch.no_grad():
                for p in params:
                    p.copy_(round_bf16(p))
        rank_losses, rank_grads = [], []
        for r in ranks:
            micro = rows[r * b:(r + 1) * b]
            loss = model(*[torch.from_numpy(data[n][micro]) for n in names])
            rank_grads.append(torch.autograd.grad(loss, params))
            rank_losses.append(loss.item())
        if master is not None:
            with torch.no_grad():
                for p, m in zip(params, master):
                    p.copy_(m)
        for i, p in enumerate(params):
            grads = [g[i] for g in rank_grads]
            if reduce_dtype == "bf16":
                grads = [round_bf16(g) for g in grads]
            total = grads[0].clone()
            for g in grads[1:]:  # rank order, fp32
                total += g
            total = total / len(ranks)
            if reduce_dtype == "bf16":
                total = round_bf16(total)
            p.grad = total
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(numpy.mean(numpy.array(rank_losses, dtype=numpy.float64))))
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return numpy.array(losses, dtype=numpy.float32), final


def torch_mean_loss_backward(entry, onnx_path, data, optim, freeze, steps, world):
    """The reference written the other way: one backward of the mean of the
    per-rank losses (torch's own accumulation order)."""
    model = tp.torch_model(entry, onnx_path)
    named = [(n, p) for n, p in model.named_parameters()
             if not (freeze and re.fullmatch(freeze, n))]
    for n, p in model.named_parameters():
        p.requires_grad_(not (freeze and re.fullmatch(freeze, n)))
    optimizer = optim.build(named)
    names = [spec["name"] for spec in entry["inputs"]]
    b = entry["inputs"][0]["shape"][0]
    samples = len(data[names[0]])
    losses = []
    for step in range(steps):
        rows = tp.batch_rows(step, b * world, samples)
        optimizer.zero_grad(set_to_none=True)
        per_rank = [model(*[torch.from_numpy(data[n][rows[r * b:(r + 1) * b]]) for n in names])
                    for r in range(world)]
        loss = torch.stack(per_rank).mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return numpy.array(losses, dtype=numpy.float32), final


# --------------------------------------------------------------------------
# fsdp side
# --------------------------------------------------------------------------

def run(command, env=None):
    try:
        result = subprocess.run(command, capture_output=True, text=True, env=env,
                                timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise Failure(f"timed out after {TIMEOUT}s: {' '.join(command)}")
    if result.returncode != 0:
        raise Failure(f"exit {result.returncode}: {' '.join(command)}\n"
                      f"{(result.stderr or result.stdout).strip()[-2000:]}")
    return result


def config_flags(world, shard, param_dtype, reduce_dtype):
    """fsdp-opt flags of one distribution config; world None = no FSDP flag
    at all (the single-rank plan of before)."""
    if world is None:
        return []
    flags = [f"--world-size={world}", f"--shard={shard}", "--wrap=blocks"]
    if param_dtype != "f32":
        flags += [f"--param-dtype={param_dtype}", f"--reduce-dtype={reduce_dtype}"]
    return flags


def same_bits(a, b):
    """Problems between two fsdp runs (records, weights) that must agree
    bitwise."""
    problems = []
    la = tp.float32_bits([r["loss"] for r in a[0]])
    lb = tp.float32_bits([r["loss"] for r in b[0]])
    if not numpy.array_equal(la, lb):
        problems.append(f"losses {[r['loss'] for r in a[0]]} differ from "
                        f"{[r['loss'] for r in b[0]]}")
    if sorted(a[1]) != sorted(b[1]):
        problems.append(f"saved tensors differ: {sorted(set(a[1]) ^ set(b[1]))}")
    else:
        differ = [n for n in a[1] if a[1][n].dtype != b[1][n].dtype
                  or a[1][n].shape != b[1][n].shape
                  or a[1][n].tobytes() != b[1][n].tobytes()]
        if differ:
            problems.append(f"saved weights differ in {len(differ)} tensors, e.g. {differ[:3]}")
    return problems


class Table:
    def __init__(self):
        self.passed = self.failed = 0
        print(f"{'row':<8} {'check':<52} {'max loss rel':>12} {'param rel L2':>12}  result",
              flush=True)

    def row(self, row, check, loss_rel, param_rel, problems):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        fmt = lambda x: "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2e}"
        print(f"{row:<8} {check:<52} {fmt(loss_rel):>12} {fmt(param_rel):>12}  "
              f"{'PASS' if ok else 'FAIL'}", flush=True)
        for p in problems:
            print(f"    {p}", flush=True)


class Session:
    """Exports, data sets, plans, runs and references, each made once and
    shared by the rows that need it."""

    def __init__(self, args, tmp, entries):
        self.args, self.tmp, self.entries = args, tmp, entries
        self.table = Table()
        self._data, self._plans, self._runs, self._refs = {}, {}, {}, {}

    def onnx(self, model):
        return os.path.join(self.tmp, self.entries[model]["file"])

    def dataset(self, model, world):
        """S = 2*B + 1 samples (B = b*N): sampling wraps around inside the
        run and one batch straddles the wrap."""
        key = (model, world)
        if key not in self._data:
            entry = self.entries[model]
            b = entry["inputs"][0]["shape"][0]
            workdir = os.path.join(self.tmp, f"data-{model}-{world}")
            os.makedirs(workdir)
            data = tp.make_dataset(entry, 2 * b * world + 1, seed=100 * world + len(model))
            files = {}
            for name, array in data.items():
                files[name] = os.path.join(workdir, f"{name}.npy")
                numpy.save(files[name], array)
            self._data[key] = (data, files)
        return self._data[key]

    def reference(self, model, world, param_dtype="f32", reduce_dtype="f32", ranks=None):
        key = (model, world, param_dtype, reduce_dtype, tuple(ranks or ()))
        if key not in self._refs:
            optim, freeze = SETUP[model]
            data, _ = self.dataset(model, world)
            self._refs[key] = torch_reference(self.entries[model], self.onnx(model), data, optim,
                                              freeze, STEPS, world, param_dtype, reduce_dtype,
                                              ranks)
        return self._refs[key]

    def plan(self, model, world, shard="full", param_dtype="f32", reduce_dtype="f32"):
        key = (model, world, shard, param_dtype, reduce_dtype)
        if key not in self._plans:
            optim, freeze = SETUP[model]
            name = "-".join(str(k) for k in key).replace(":", "")
            path = os.path.join(self.tmp, f"{name}.plan")
            command = ([self.args.fsdp_opt, self.onnx(model), "-o", path] +
                       config_flags(world, shard, param_dtype, reduce_dtype) + optim.flags())
            if freeze:
                command.append(f"--freeze={freeze}")
            try:
                run(command)
                self._plans[key] = path
            except Failure as e:
                self._plans[key] = e
        if isinstance(self._plans[key], Failure):
            raise self._plans[key]
        return self._plans[key]

    def train(self, model, world, shard="full", param_dtype="f32", reduce_dtype="f32",
              mpi=False, inputs=None, data=None, tag=""):
        """(metrics records, saved weights) of one fsdp-run; `mpi` runs it
        under `mpirun -np N` instead of N in-process ranks."""
        key = (model, world, shard, param_dtype, reduce_dtype, mpi, tag)
        if key not in self._runs:
            try:
                plan = self.plan(model, world, shard, param_dtype, reduce_dtype)
                workdir = os.path.join(self.tmp, "run-" + "-".join(str(k) for k in key)
                                       .replace(":", ""))
                os.makedirs(workdir)
                metrics = os.path.join(workdir, "metrics.jsonl")
                weights = os.path.join(workdir, "weights.safetensors")
                if inputs is None and data is None:
                    inputs = self.dataset(model, world or 1)[1]
                command = [self.args.fsdp_run, plan, f"--steps={STEPS}",
                           f"--metrics={metrics}", f"--save-weights={weights}"]
                command += [f"--input={n}={f}" for n, f in (inputs or {}).items()]
                if data:
                    command.append(f"--data={data}")
                env = None
                if mpi:
                    if not self.args.mpirun:
                        raise Failure("no mpirun on PATH (pass --mpirun)")
                    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                    command = [self.args.mpirun, "-np", str(world), "--oversubscribe",
                               "--bind-to", "none"] + command
                run(command, env)
                if not os.path.exists(weights):
                    raise Failure(f"fsdp-run wrote no {weights}")
                self._runs[key] = (tp.read_metrics(metrics, STEPS), tp.read_safetensors(weights))
            except Failure as e:
                self._runs[key] = e
        if isinstance(self._runs[key], Failure):
            raise self._runs[key]
        return self._runs[key]

    def compare(self, model, result, reference):
        optim, freeze = SETUP[model]
        onnx_path = self.onnx(model)
        return tp.compare(result[0], result[1], reference[0], reference[1],
                          tp.frozen_names(onnx_path, freeze), tp.onnx_initializers(onnx_path),
                          optim.lr)

    def check(self, row, label, body):
        """Runs one row; a Failure is that row's FAIL."""
        if self.args.only and row not in self.args.only:
            return
        try:
            loss_rel, param_rel, problems = body()
        except Failure as e:
            loss_rel, param_rel, problems = None, None, [str(e)]
        self.table.row(row, label, loss_rel, param_rel, problems)


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------

def reference_rows(s):
    """The torch reference itself, before anything is compared with it."""
    for model in (GPT, TRANSFORMER):
        def body(model=model):
            optim, freeze = SETUP[model]
            data, _ = s.dataset(model, 1)
            ours = s.reference(model, 1)
            theirs = tp.torch_train(s.entries[model], s.onnx(model), data, optim, freeze, STEPS)
            problems = []
            if not numpy.array_equal(tp.float32_bits(ours[0]), tp.float32_bits(theirs[0])):
                problems.append(f"losses {ours[0].tolist()} != {theirs[0].tolist()}")
            if any(ours[1][n].tobytes() != theirs[1][n].tobytes() for n in theirs[1]):
                problems.append("final parameters differ")
            return 0.0 if not problems else None, tp.relative_l2(ours[1], theirs[1]), problems
        s.check("ref", f"{SHORT[model]} N=1 reference == train-parity's (bits)", body)

    def body():
        data, _ = s.dataset(GPT, 3)
        optim, freeze = SETUP[GPT]
        ours = s.reference(GPT, 3)
        theirs = torch_mean_loss_backward(s.entries[GPT], s.onnx(GPT), data, optim, freeze,
                                          STEPS, 3)
        loss_rel = float(numpy.max(numpy.abs(ours[0].astype(numpy.float64) - theirs[0])
                                   / numpy.abs(theirs[0])))
        param_rel = tp.relative_l2(ours[1], theirs[1])
        problems = []
        if not loss_rel <= tp.LOSS_TOLERANCE or not param_rel <= tp.PARAM_TOLERANCE:
            problems.append("per-rank gradient mean differs from backward on the mean loss")
        return loss_rel, param_rel, problems
    s.check("ref", "gpt N=3 reference ~ backward(mean of rank losses)", body)


def world_rows(s, model, worlds):
    for world in worlds:
        s.check(f"ws{world}", f"{SHORT[model]} N={world} --shard=full --wrap=blocks",
                lambda: s.compare(model, s.train(model, world), s.reference(model, world)))
        if world == 2 and model == GPT:
            negative_row(s)


def negative_row(s):
    """The N=2 run against torch trained on rank 0's micro-batch only."""
    def body():
        loss_rel, param_rel, problems = s.compare(GPT, s.train(GPT, 2),
                                                  s.reference(GPT, 2, ranks=[0]))
        return loss_rel, param_rel, ([] if problems else
                                     ["the comparison accepted torch on rank 0's batch only"])
    s.check("neg", "gpt N=2 vs torch on rank 0's batch (must differ)", body)


def shard_rows(s):
    for world in (4, 3):
        for shard in ("grad-op", "none"):
            def body(world=world, shard=shard):
                full = s.train(GPT, world, "full")
                other = s.train(GPT, world, shard)
                loss_rel, param_rel, problems = s.compare(GPT, other, s.reference(GPT, world))
                return loss_rel, param_rel, same_bits(full, other) + problems
            s.check("shard", f"gpt N={world} --shard={shard} == full (bits)", body)


def hybrid_rows(s):
    s.check("hybrid", "gpt N=4 --shard=hybrid:2",
            lambda: s.compare(GPT, s.train(GPT, 4, "hybrid:2"), s.reference(GPT, 4)))


def bf16_rows(s):
    for reduce in ("f32", "bf16"):
        s.check("bf16", f"gpt N=2 --param-dtype=bf16 --reduce-dtype={reduce}",
                lambda reduce=reduce: s.compare(GPT, s.train(GPT, 2, "full", "bf16", reduce),
                                                s.reference(GPT, 2, "bf16", reduce)))

    def body():
        loss_rel, param_rel, problems = s.compare(GPT, s.train(GPT, 2, "full", "bf16", "f32"),
                                                  s.reference(GPT, 2))
        return loss_rel, param_rel, ([] if problems else
                                     ["the comparison accepted the fp32 reference"])
    s.check("bf16", "gpt N=2 bf16 run vs fp32 reference (must differ)", body)

    def body():
        loss_rel, param_rel, problems = s.compare(GPT, s.train(GPT, 2, "full", "bf16", "bf16"),
                                                  s.reference(GPT, 2, "bf16", "f32"))
        return loss_rel, param_rel, ([] if problems else
                                     ["the comparison accepted the reduce-f32 reference"])
    s.check("bf16", "gpt N=2 reduce bf16 vs reduce-f32 reference (must differ)", body)


def mpirun_rows(s):
    for world in (2, 4):
        def body(world=world):
            threads = s.train(GPT, world)
            procs = s.train(GPT, world, mpi=True)
            loss_rel, param_rel, problems = s.compare(GPT, procs, s.reference(GPT, world))
            return loss_rel, param_rel, same_bits(threads, procs) + problems
        s.check("mpirun", f"gpt mpirun -np {world} == in-process ranks (bits)", body)


def token_rows(s, world=3):
    """--data=tokens.bin: sample j of step s starts at token
    ((s*B + j)*T) mod (n - T - 1) with B = b*N."""
    def body():
        entry = s.entries[GPT]
        b, T = entry["inputs"][0]["shape"]
        workdir = os.path.join(s.tmp, "tokens")
        os.makedirs(workdir)
        rng = numpy.random.default_rng(4321)
        tokens = rng.integers(0, entry["config"].get("vocab", 64), 150).astype(numpy.uint16)
        binary = os.path.join(workdir, "tokens.bin")
        tokens.astype("<u2").tofile(binary)
        idx, targets = tp.token_windows(tokens, STEPS, b * world, T)
        names = [spec["name"] for spec in entry["inputs"]]
        # STEPS*B rows: row (s*B + j) mod S is window s*B + j.
        data = {names[0]: idx, names[1]: targets}
        optim, freeze = SETUP[GPT]
        reference = torch_reference(entry, s.onnx(GPT), data, optim, freeze, STEPS, world)
        return s.compare(GPT, s.train(GPT, world, data=binary, tag="tokens"), reference)
    s.check("tokens", f"gpt N={world} --data=tokens.bin", body)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--mpirun", default=shutil.which("mpirun"))
    parser.add_argument("--only", nargs="+", default=[], metavar="ROW",
                        help="run only these rows (ref, ws1-0, ws2, neg, shard, bf16, ...)")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the reference's rounding must not depend on the machine
    start = time.time()

    tmp = args.keep or tempfile.mkdtemp(prefix="fsdp-parity-")
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    try:
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null  # the exporter's per-file lines
            try:
                entries = tp.export(tmp, sorted(SETUP))
            finally:
                sys.stdout = saved
        s = Session(args, tmp, entries)
        reference_rows(s)
        s.check("ws1-0", "gpt N=1, plan without FSDP flags",
                lambda: s.compare(GPT, s.train(GPT, None), s.reference(GPT, 1)))
        world_rows(s, GPT, (1, 2, 3, 4, 8))
        world_rows(s, TRANSFORMER, (1, 2, 3, 4, 8))
        world_rows(s, TIED, (4,))
        shard_rows(s)
        hybrid_rows(s)
        bf16_rows(s)
        mpirun_rows(s)
        token_rows(s)
        table = s.table
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{table.passed} passed, {table.failed} failed ({time.time() - start:.0f}s)")
    return 0 if table.failed == 0 and table.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
