#!/usr/bin/python3
# FSDP training parity with PyTorch (docs/design.md's numerics and data contracts
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
# precision (--param-dtype=bf16) is FSDP2's MixedPrecisionPolicy: fp32
# master parameters; forward and backward run on a bf16 copy of the model
# (torch computing in bf16 on the parameters rounded to bf16); each rank's
# bf16 gradient goes to f32 (--reduce-dtype=bf16 keeps it bf16), the ranks'
# sum in fp32 in rank order, divided by N in fp32 and (reduce bf16) rounded
# once to bf16 before the fp32 optimizer sees it. Those rows compare within
# LOW_PRECISION_TOLERANCE, since the GEMMs' bf16 rounding differs from
# torch's (tests/e2e/torch2/mixed_precision.py has the full comparison).
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
#           (a different global batch), and the N=3 SGD run against torch
#           with summed instead of averaged gradients, must FAIL
#   optim   SGD momentum and the no-decay regex at N=3 (padded shards), a
#           frozen real parameter in the tied GPT at N=2; SGD through
#           hybrid:2 and the bf16 reduce at N=4 (AdamW alone would not
#           notice a wrong 1/N: summed gradients stay within tolerance)
#   shard   grad-op and none are bitwise the full run (per-step losses and
#           saved weights): GPT at N=4 and N=3 (padding), tied GPT and
#           Transformer at N=4
#   offload --offload=cpu (full, grad-op, none, hybrid:2, bf16) gives the
#           bits of the same run on device, with unit shards in host memory
#           and every optimizer update on the host stream (3)
#   hybrid  hybrid:2 at N=4 (GPT, Transformer), hybrid:2 and hybrid:4 at N=8
#   bf16    --param-dtype=bf16 with --reduce-dtype=f32 and bf16 at N=2 and 4
#           against torch computing in bf16; the bf16 run's losses are bf16
#           values and the bf16 reduce changes bits (the dtypes are there)
#   mpirun  `mpirun -np 2` and `-np 4` (full, hybrid:2, bf16) give the
#           in-process ranks' bits
#   tokens  --data=tokens.bin at N=3 (the token-file formula with B = b*N)
#
# Every plan compared with torch is also checked for its shape in
# `fsdp-run --dump` (world_size, and which collectives its --shard implies),
# so a plan that ignored the flags cannot pass the strategy rows.
#
# Prints one table row per check, then "N passed, M failed"; any failure
# (compile, run, timeout, mismatch) fails the test.
#
#   /usr/bin/python3 tests/e2e/test_fsdp_parity.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--mpirun mpirun] [--only ROW ...] [--keep DIR]

import argparse
import copy
import collections
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_train_parity as tp  # noqa: E402  (files, data, torch model, compare)

Failure = tp.Failure
STEPS = 5
TIMEOUT = 120  # seconds per fsdp-opt / fsdp-run command: a hung collective fails

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


# --param-dtype/--reduce-dtype's low precisions.
LOW_PRECISION = {"bf16": torch.bfloat16, "f16": torch.float16}
# Loss (relative, every step) and parameters (relative L2, after the last
# step) against torch computing in bf16. The loss is itself a bf16 value,
# whose ulp is 2^-8 = 3.9e-3 relative near 1 (up to 7.8e-3 just above a
# power of two), and the GEMMs rounded once from another summation order
# than torch's differ by an ulp on a few percent of elements: measured here
# up to 7.3e-3 (two loss ulps) and 6.7e-4 on the parameters over 5 steps at
# N = 2 and 4, so 2e-2 (five loss ulps) and 2e-3.
LOW_PRECISION_TOLERANCE = (2e-2, 2e-3)


def round_to(t, dtype):
    return t.to(LOW_PRECISION[dtype]).to(torch.float32) if dtype in LOW_PRECISION else t


# --------------------------------------------------------------------------
# torch reference at world size N
# --------------------------------------------------------------------------

def torch_trainable(entry, onnx_path, optim, freeze):
    """(torch model, its (name, parameter) pairs that train, `optim`'s
    optimizer over them): parameters matching the regex `freeze` are
    constants of training, as the compiler's --freeze makes them."""
    model = tp.torch_model(entry, onnx_path)
    named = [(n, p) for n, p in model.named_parameters()
             if not (freeze and re.fullmatch(freeze, n))]
    for n, p in model.named_parameters():
        p.requires_grad_(not (freeze and re.fullmatch(freeze, n)))
    return model, named, optim.build(named)


def torch_reference(entry, onnx_path, data, optim, freeze, steps, world,
                    param_dtype="f32", reduce_dtype="f32", ranks=None, average=True,
                    clip=None, norms=None, scaler=None):
    """Returns (global losses as float32, {name: final parameter}, scaler
    log). `ranks` (default all) picks the ranks whose micro-batches count:
    [0] is the negative control's different global batch. average=False sums
    the ranks' gradients without dividing (a negative control). clip=(MAX,
    NORM_TYPE) runs torch.nn.utils.clip_grad_norm_ on the reduced gradients
    before each optimizer step (MAX inf: the norm only), appending each
    step's total norm to the list `norms`. `scaler`, a torch.amp.GradScaler
    (fp16), scales each rank's loss before its backward and steps the
    optimizer through scaler.step/update; the log then holds each step's
    (scale used, skipped)."""
    model, named, optimizer = torch_trainable(entry, onnx_path, optim, freeze)
    params = [p for _, p in named]
    names = [spec["name"] for spec in entry["inputs"]]
    b = entry["inputs"][0]["shape"][0]
    samples = len(data[names[0]])
    ranks = list(range(world)) if ranks is None else list(ranks)
    losses, log = [], []
    # Mixed precision: the forward and backward run on a low-precision copy
    # of the model, refreshed from the fp32 masters every step (FSDP2's
    # all-gather of the parameters cast to param_dtype).
    compute, compute_params = model, params
    if param_dtype in LOW_PRECISION:
        compute = copy.deepcopy(model).to(LOW_PRECISION[param_dtype])
        by_name = dict(compute.named_parameters())
        compute_params = [by_name[n] for n, _ in named]
    for step in range(steps):
        rows = tp.batch_rows(step, b * world, samples)
        if compute is not model:
            with torch.no_grad():
                for low, p in zip(compute_params, params):
                    low.copy_(p)
        rank_losses, rank_grads = [], []
        for r in ranks:
            micro = rows[r * b:(r + 1) * b]
            inputs = [torch.from_numpy(data[n][micro]) for n in names]
            if compute is not model:  # cast_forward_inputs
                inputs = [x.to(LOW_PRECISION[param_dtype]) if x.is_floating_point() else x
                          for x in inputs]
            loss = compute(*inputs)
            grads = torch.autograd.grad(scaler.scale(loss) if scaler else loss, compute_params)
            rank_grads.append([g.float() for g in grads])
            rank_losses.append(loss.item())
        for i, p in enumerate(params):
            grads = [round_to(g[i], reduce_dtype) for g in rank_grads]
            total = grads[0].clone()
            for g in grads[1:]:  # rank order, fp32
                total += g
            if average:
                total = total / len(ranks)
            p.grad = round_to(total, reduce_dtype)
        if clip:
            norm = torch.nn.utils.clip_grad_norm_(params, clip[0], norm_type=clip[1])
            if norms is not None:
                norms.append(float(norm))
        if scaler:
            scale = scaler.get_scale()
            scaler.step(optimizer)  # unscale_, found_inf, optimizer.step() unless found
            scaler.update()
            log.append((scale, scaler.get_scale() < scale))  # halved exactly when skipped
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(numpy.mean(numpy.array(rank_losses, dtype=numpy.float64))))
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return numpy.array(losses, dtype=numpy.float32), final, log


def torch_mean_loss_backward(entry, onnx_path, data, optim, freeze, steps, world):
    """The reference written the other way: one backward of the mean of the
    per-rank losses (torch's own accumulation order)."""
    model, named, optimizer = torch_trainable(entry, onnx_path, optim, freeze)
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


def config_flags(world, shard, param_dtype, reduce_dtype, offload=False, growth_interval=2000):
    """fsdp-opt flags of one distribution config; world None = no FSDP flag
    at all (the single-rank plan of before)."""
    if world is None:
        return []
    flags = [f"--world-size={world}", f"--shard={shard}", "--wrap=blocks"]
    if param_dtype != "f32":
        flags += [f"--param-dtype={param_dtype}", f"--reduce-dtype={reduce_dtype}"]
    if growth_interval != 2000:
        flags.append(f"--loss-scale-growth-interval={growth_interval}")
    if offload:
        flags.append("--offload=cpu")
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
        print(f"{'row':<8} {'check':<60} {'max loss rel':>12} {'param rel L2':>12}  result",
              flush=True)

    def row(self, row, check, loss_rel, param_rel, problems):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        fmt = lambda x: "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2e}"
        print(f"{row:<8} {check:<60} {fmt(loss_rel):>12} {fmt(param_rel):>12}  "
              f"{'PASS' if ok else 'FAIL'}", flush=True)
        for p in problems:
            print(f"    {p}", flush=True)


@dataclass(frozen=True)
class Spec:
    """One training configuration: model, world size, distribution flags and
    (unless the model's default from SETUP) optimizer and frozen regex."""
    model: str
    world: object = 1  # None: a plan compiled without any FSDP flag
    shard: str = "full"
    param_dtype: str = "f32"
    reduce_dtype: str = "f32"
    optim: object = None
    freeze: object = None
    offload: bool = False  # --offload=cpu
    flags: tuple = ()  # further fsdp-opt flags (--clip-grad-norm=1, --grad-accum=K, ...)
    growth_interval: int = 2000  # f16: the loss scaler's (GradScaler's) growth_interval

    def resolved(self):
        optim, freeze = SETUP[self.model]
        return (self.optim or optim, freeze if self.freeze is None else self.freeze)

    def name(self):
        optim, freeze = self.resolved()
        text = f"{self.model}-{self.world}-{self.shard}-{self.param_dtype}-{self.reduce_dtype}"
        text += f"-{optim.describe()}-{freeze}" + ("-offload" if self.offload else "")
        text += "".join(self.flags)
        text += f"-growth{self.growth_interval}" if self.growth_interval != 2000 else ""
        return re.sub(r"[^A-Za-z0-9.=-]+", "_", text)


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

    def reference(self, spec, ranks=None, average=True):
        """torch at spec's world size, dtypes, optimizer (shard is
        irrelevant); a plan without FSDP flags is world size 1."""
        world = spec.world or 1
        optim, freeze = spec.resolved()
        key = (spec.model, world, spec.param_dtype, spec.reduce_dtype, optim.describe(), freeze,
               tuple(ranks or ()), average, spec.growth_interval)
        if key not in self._refs:
            data, _ = self.dataset(spec.model, world)
            # fp16 scales the loss dynamically: torch.amp.GradScaler's
            # defaults (torch 2.x; test_loss_scaling.py runs these rows).
            scaler = (torch.amp.GradScaler("cpu", growth_interval=spec.growth_interval)
                      if spec.param_dtype == "f16" else None)
            self._refs[key] = torch_reference(self.entries[spec.model], self.onnx(spec.model),
                                              data, optim, freeze, STEPS, world,
                                              spec.param_dtype, spec.reduce_dtype, ranks,
                                              average, scaler=scaler)
        return self._refs[key]

    def plan(self, spec):
        key = spec.name()
        if key not in self._plans:
            optim, freeze = spec.resolved()
            path = os.path.join(self.tmp, f"{spec.name()}.plan")
            command = ([self.args.fsdp_opt, self.onnx(spec.model), "-o", path] +
                       config_flags(spec.world, spec.shard, spec.param_dtype, spec.reduce_dtype,
                                    spec.offload, spec.growth_interval) +
                       optim.flags() + list(spec.flags))
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

    def train(self, spec, mpi=False, data=None, gemm=None):
        """(metrics records, saved weights) of one fsdp-run of spec's plan on
        the world size's data set (or --data=FILE); `mpi` runs it under
        `mpirun -np N` instead of N in-process ranks; `gemm` sets
        FSDP_CPU_GEMM (the CPU's GEMM route)."""
        key = (spec.name(), mpi, data, gemm)
        if key not in self._runs:
            try:
                plan = self.plan(spec)
                workdir = os.path.join(self.tmp, f"run-{len(self._runs)}")
                os.makedirs(workdir)
                metrics = os.path.join(workdir, "metrics.jsonl")
                weights = os.path.join(workdir, "weights.safetensors")
                command = [self.args.fsdp_run, plan, f"--steps={STEPS}",
                           f"--metrics={metrics}", f"--save-weights={weights}"]
                if data:
                    command.append(f"--data={data}")
                else:
                    inputs = self.dataset(spec.model, spec.world or 1)[1]
                    command += [f"--input={n}={f}" for n, f in inputs.items()]
                env = dict(os.environ, FSDP_CPU_GEMM=gemm) if gemm else None
                if mpi:
                    if not self.args.mpirun:
                        raise Failure("no mpirun on PATH (pass --mpirun)")
                    env = dict(env or os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                    command = [self.args.mpirun, "-np", str(spec.world), "--oversubscribe",
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

    def compare(self, spec, result, reference):
        optim, freeze = spec.resolved()
        onnx_path = self.onnx(spec.model)
        tolerances = (LOW_PRECISION_TOLERANCE if spec.param_dtype in LOW_PRECISION
                      else (None, None))
        return tp.compare(result[0], result[1], reference[0], reference[1],
                          tp.frozen_names(onnx_path, freeze), tp.onnx_initializers(onnx_path),
                          optim.lr, *tolerances)

    def parity(self, spec):
        """spec's fsdp run against spec's torch reference, and the plan's
        shape (structure())."""
        loss_rel, param_rel, problems = self.compare(spec, self.train(spec),
                                                     self.reference(spec))
        return loss_rel, param_rel, self.structure(spec) + problems

    def collectives(self, spec):
        """(world size, {AllGather|ReduceScatter|AllReduce: count}) from
        `fsdp-run --dump` of spec's plan."""
        dump = run([self.args.fsdp_run, self.plan(spec), "--dump"]).stdout
        world = re.search(r"\bworld_size=(\d+)", dump)
        kinds = collections.Counter(re.findall(
            r"^inst \d+ (AllGather|ReduceScatter|AllReduce)\b", dump, re.M))
        return (int(world.group(1)) if world else None), kinds

    def structure(self, spec):
        """The plan is what its flags ask for, so rows that compare
        strategies cannot pass on plans that ignored --shard: its world size,
        and at N > 1 full gathers and reduce-scatters, grad-op gathers fewer
        times than full, none only all-reduces, hybrid all-reduces more than
        full (across groups)."""
        world, kinds = self.collectives(spec)
        problems = []
        if world != (spec.world or 1):
            problems.append(f"plan has world_size={world}, expected {spec.world or 1}")
        if not spec.world or spec.world == 1:
            return problems
        full = kinds if spec.shard == "full" else self.collectives(
            Spec(spec.model, spec.world, "full", spec.param_dtype, spec.reduce_dtype,
                 spec.optim, spec.freeze, growth_interval=spec.growth_interval))[1]
        shape = dict(kinds)
        if spec.shard == "full":
            ok = kinds["AllGather"] > 0 and kinds["ReduceScatter"] > 0
        elif spec.shard == "grad-op":
            ok = kinds["ReduceScatter"] > 0 and 0 < kinds["AllGather"] < full["AllGather"]
        elif spec.shard == "none":
            ok = kinds["AllGather"] == 0 and kinds["ReduceScatter"] == 0 and kinds["AllReduce"] > 0
        else:  # hybrid:G
            ok = kinds["ReduceScatter"] > 0 and kinds["AllReduce"] > full["AllReduce"]
        if not ok:
            problems.append(f"--shard={spec.shard} plan has collectives {shape} "
                            f"(full: {dict(full)})")
        return problems

    def check(self, row, label, body):
        """Runs one row; a Failure is that row's FAIL."""
        if self.args.only and row not in self.args.only:
            return
        try:
            loss_rel, param_rel, problems = body()
        except Failure as e:
            loss_rel, param_rel, problems = None, None, [str(e)]
        self.table.row(row, label, loss_rel, param_rel, problems)

    def must_differ(self, row, label, spec, reference, what):
        """A negative control: spec's run against a wrong reference must
        fail the comparison."""
        def body():
            loss_rel, param_rel, problems = self.compare(spec, self.train(spec), reference())
            return loss_rel, param_rel, ([] if problems else [f"the comparison accepted {what}"])
        self.check(row, label + " (must differ)", body)


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------

def reference_rows(s):
    """The torch reference itself, before anything is compared with it."""
    for model in (GPT, TRANSFORMER):
        def body(model=model):
            optim, freeze = SETUP[model]
            data, _ = s.dataset(model, 1)
            ours = s.reference(Spec(model, 1))
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
        ours = s.reference(Spec(GPT, 3))
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
        spec = Spec(model, world)
        s.check(f"ws{world}", f"{SHORT[model]} N={world} --shard=full --wrap=blocks",
                lambda spec=spec: s.parity(spec))
        if world == 2 and model == GPT:
            # A different global batch: rank 0's micro-batch only.
            s.must_differ("neg", "gpt N=2 vs torch on rank 0's batch", spec,
                          lambda spec=spec: s.reference(spec, ranks=[0]),
                          "torch on rank 0's batch only")


def optimizer_rows(s):
    """Optimizer state and per-parameter settings on shards: SGD momentum,
    the no-decay regex across flat buffers (N=3 pads), a frozen real
    parameter (a buffer in its unit) with the tied GPT. AdamW hardly sees a
    constant factor on the gradient (summing the ranks' gradients instead of
    averaging them stays within tolerance), so every reduction path that is
    only compared with torch (full, hybrid, the bf16 reduce) also runs SGD,
    and a negative control shows SGD rejects the sum."""
    sgd = tp.SGD_NESTEROV
    for spec, label in (
            (Spec(GPT, 3, optim=sgd), "gpt N=3 " + sgd.describe()),
            (Spec(GPT, 3, optim=tp.ADAMW_NO_DECAY), "gpt N=3 " + tp.ADAMW_NO_DECAY.describe()),
            (Spec(TIED, 2, optim=sgd, freeze=r"pos_emb\.weight"),
             "gpt-tied N=2 sgd, frozen pos_emb"),
            (Spec(GPT, 4, "hybrid:2", optim=sgd), "gpt N=4 hybrid:2 sgd"),
            (Spec(GPT, 4, "full", "bf16", "bf16", optim=sgd), "gpt N=4 bf16/bf16 sgd")):
        s.check("optim", label, lambda spec=spec: s.parity(spec))
    spec = Spec(GPT, 3, optim=sgd)
    s.must_differ("neg", "gpt N=3 sgd vs summed (not averaged) gradients", spec,
                  lambda: s.reference(spec, average=False), "summed gradients")


def shard_rows(s):
    """grad-op and none give the full run's bits (DESIGN: same world size,
    same rank-order sums); N=3 pads every flat buffer."""
    for model, world in ((GPT, 4), (GPT, 3), (TIED, 4), (TRANSFORMER, 4)):
        for shard in ("grad-op", "none"):
            def body(model=model, world=world, shard=shard):
                spec = Spec(model, world, shard)
                other = s.train(spec)
                loss_rel, param_rel, problems = s.parity(spec)
                return loss_rel, param_rel, same_bits(s.train(Spec(model, world)), other) + problems
            s.check("shard", f"{SHORT[model]} N={world} --shard={shard} == full (bits)", body)


def offload_rows(s):
    """--offload=cpu keeps shards, gradient shards and optimizer state in
    host memory and copies them across; the bits are the in-device run's."""
    for model, world, shard, dtype in ((GPT, 2, "full", "f32"), (GPT, 4, "grad-op", "f32"),
                                       (GPT, 2, "none", "f32"), (TRANSFORMER, 4, "hybrid:2", "f32"),
                                       (GPT, 2, "full", "bf16")):
        def body(model=model, world=world, shard=shard, dtype=dtype):
            spec = Spec(model, world, shard, dtype, dtype)
            off = Spec(model, world, shard, dtype, dtype, offload=True)
            offloaded = s.train(off)
            problems = same_bits(s.train(spec), offloaded)
            # The state really moved: unit shards in the host region, copies.
            dump = run([s.args.fsdp_run, s.plan(off), "--dump"]).stdout
            unit0 = re.search(r"^unit 0 .* shard_buffer=%(\d+)", dump, re.M)
            if not re.search(r"^memory .* host=\d+", dump, re.M) or not unit0:
                problems.append("the offloaded plan has no host region")
            elif not re.search(rf"^buffer %{unit0[1]} \S+ host\+", dump, re.M):
                problems.append(f"unit 0's shard (buffer %{unit0[1]}) is not in host memory")
            # The updates run on the host stream (3), beside the device's.
            updates = re.findall(r"^inst \d+ (?:AdamW|Sgd) .*$", dump, re.M)
            if not updates or any(" stream=3 " not in u + " " for u in updates):
                problems.append("not every optimizer update is on the host stream (stream=3)")
            loss_rel, param_rel, more = s.compare(spec, offloaded, s.reference(spec))
            return loss_rel, param_rel, problems + more
        s.check("offload", f"{SHORT[model]} N={world} --shard={shard} {dtype} --offload=cpu "
                "== on device (bits)", body)


def hybrid_rows(s):
    for model, world, group in ((GPT, 4, 2), (TRANSFORMER, 4, 2), (GPT, 8, 2), (GPT, 8, 4)):
        spec = Spec(model, world, f"hybrid:{group}")
        s.check("hybrid", f"{SHORT[model]} N={world} --shard=hybrid:{group}",
                lambda spec=spec: s.parity(spec))


def bf16_rows(s):
    for world in (2, 4):
        for reduce in ("f32", "bf16"):
            spec = Spec(GPT, world, "full", "bf16", reduce)
            s.check("bf16", f"gpt N={world} --param-dtype=bf16 --reduce-dtype={reduce}",
                    lambda spec=spec: s.parity(spec))
    # The dtypes are really there: a bf16 run's losses are bf16 values (its
    # loss is computed in bf16), and the bf16 reduce changes bits.
    def body():
        spec = Spec(GPT, 2, "full", "bf16", "f32")
        records, weights = s.train(spec)
        losses = numpy.array([r["loss"] for r in records], dtype=numpy.float32)
        rounded = torch.from_numpy(losses).to(torch.bfloat16).float().numpy()
        problems = [] if numpy.array_equal(losses, rounded) else [
            f"losses {losses.tolist()} are not bf16 values"]
        other = s.train(Spec(GPT, 2, "full", "bf16", "bf16"))
        if not same_bits((records, weights), other):
            problems.append("--reduce-dtype=bf16 gave the reduce-f32 run's bits")
        loss_rel, param_rel, more = s.parity(spec)
        return loss_rel, param_rel, problems + more
    s.check("bf16", "gpt N=2 bf16: losses are bf16, reduce bf16 changes bits", body)


def mpirun_rows(s):
    for spec, label in ((Spec(GPT, 2), "gpt mpirun -np 2"),
                        (Spec(GPT, 4), "gpt mpirun -np 4"),
                        (Spec(GPT, 4, "hybrid:2"), "gpt mpirun -np 4 hybrid:2"),
                        (Spec(GPT, 2, "full", "bf16", "bf16"), "gpt mpirun -np 2 bf16/bf16")):
        def body(spec=spec):
            threads = s.train(spec)
            procs = s.train(spec, mpi=True)
            loss_rel, param_rel, problems = s.compare(spec, procs, s.reference(spec))
            return loss_rel, param_rel, same_bits(threads, procs) + problems
        s.check("mpirun", label + " == in-process ranks (bits)", body)


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
        spec = Spec(GPT, world)
        optim, freeze = spec.resolved()
        reference = torch_reference(entry, s.onnx(GPT), data, optim, freeze, STEPS, world)
        return s.compare(spec, s.train(spec, data=binary), reference)
    s.check("tokens", f"gpt N={world} --data=tokens.bin", body)


def suite_parser(only_help=None, mpirun=False):
    """The flags of every test that runs through run_suite: the tools, --keep,
    and where asked --mpirun and --only ROW... (only_help lists the rows)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    if mpirun:
        parser.add_argument("--mpirun", default=shutil.which("mpirun"))
    if only_help:
        parser.add_argument("--only", nargs="+", default=[], metavar="ROW", help=only_help)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    return parser


def run_suite(args, prefix, rows, models=(), export=None, session=Session):
    """Every e2e parity test's run after parsing its flags: a work directory
    (--keep DIR's, kept; else a fresh one, removed), the models exported
    (by `export(tmp)`, or quietly here), `session(args, tmp, entries)`'s
    table filled by `rows(s)`, then the summary line. Returns the exit code."""
    start = time.time()
    tmp = args.keep or tempfile.mkdtemp(prefix=prefix)
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    try:
        if export:
            entries = export(tmp)
        else:
            with open(os.devnull, "w") as null:
                saved, sys.stdout = sys.stdout, null  # the exporter's per-file lines
                try:
                    entries = tp.export(tmp, models)
                finally:
                    sys.stdout = saved
        s = session(args, tmp, entries)
        rows(s)
        table = s.table
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{table.passed} passed, {table.failed} failed ({time.time() - start:.0f}s)")
    return 0 if table.failed == 0 and table.passed > 0 else 1


def main():
    args = suite_parser("run only these rows (ref, ws1-0, ws2, neg, optim, shard, hybrid, "
                        "bf16, mpirun, tokens)", mpirun=True).parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)  # the reference's rounding must not depend on the machine

    def rows(s):
        reference_rows(s)
        s.check("ws1-0", "gpt N=1, plan without FSDP flags", lambda: s.parity(Spec(GPT, None)))
        world_rows(s, GPT, (1, 2, 3, 4, 5, 8))  # 3 and 5 divide no unit: padding
        world_rows(s, TRANSFORMER, (1, 2, 3, 4, 8))
        world_rows(s, TIED, (4,))
        optimizer_rows(s)
        shard_rows(s)
        offload_rows(s)
        hybrid_rows(s)
        bf16_rows(s)
        mpirun_rows(s)
        token_rows(s)
    return run_suite(args, "fsdp-parity-", rows, sorted(SETUP))


if __name__ == "__main__":
    sys.exit(main())
