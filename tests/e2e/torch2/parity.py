#!/usr/bin/env python3
"""Training parity of torch 2.x exports with torch 2.x itself.

Each case is MODEL/MODE/WORLD: a model of models.py, exported one of the
ways in exports.py (dynamo default, optimize=False, fsdp_opt.export), then
compiled by fsdp-opt (AdamW; at world size 2 with --shard=full --ckpt=blocks)
and trained 5 steps by fsdp-run from a uint16 token file (docs/design.md's
data contract: the global batch is the exported batch times the world size).
torch 2.x trains the same initial weights on the same windows with
torch.optim.AdamW: every step's loss must be within 1e-5 relative, the final
parameters within 5e-5 relative L2 (DESIGN's numerics contract), and
fsdp_opt.load_weights must load fsdp-run's --save-weights file into the
torch module with load_state_dict(strict=True), giving exactly the saved
values. An export that cannot train as torch does (parameters merged,
folded or renamed, constants stored as float initializers: exports.py's
expectation) must instead make fsdp-opt print a warning naming one of
them, and still compile. A negative row compares the first passing trained case with torch
trained at lr x 1.1 and must fail, so a comparison that cannot fail is
caught.

With --fuse-attention=on every case is compiled with it, and fsdp-opt's
summary must show at least one attention fused and none left unfused: the
fused kernels then train as torch does, on every export path.

Prints one PASS/FAIL row per case with its numbers and first problem (for a
refused import, fsdp-opt's first error line); exits 1 if any case failed.

  .venv/bin/python tests/e2e/torch2/parity.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--cases nanogpt/helper/1 ...] [--keep DIR]
      [--fuse-attention=on]
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy
import torch
from safetensors.numpy import load_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import rows  # noqa: E402
import exports  # noqa: E402
import models  # noqa: E402
import fsdp_opt  # noqa: E402  (exports put python/ on the path)

STEPS = 5
LOSS_TOLERANCE = 1e-5   # relative, every step
PARAM_TOLERANCE = 5e-5  # relative L2 over all parameters after the last step
WORLDS = (1, 2)
# AdamW as both sides run it. eps 1e-6, as in test_train_parity.py: the
# attention key bias of the GPTs has an exactly zero gradient, whose
# rounding noise eps 1e-8 would turn into steps of +-lr.
ADAMW = dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01)
# What fsdp-opt prints about a graph it cannot train as torch does. Until
# the wording is settled: a line with this word that names an initializer
# or parameter of the export.
WARNING_WORD = "warning"


class Failure(Exception):
    pass


def all_cases():
    return [f"{m}/{mode}/{w}" for m in models.MODELS for mode in exports.MODES for w in WORLDS]


# --------------------------------------------------------------------------
# Data and torch
# --------------------------------------------------------------------------

def token_windows(tokens, steps, batch, T):
    """fsdp-run's windows of a token file: sample j of step s starts at
    ((s*B + j) * T) mod (n - T - 1); inputs tok[a:a+T], targets tok[a+1:a+T+1]."""
    n = len(tokens)
    starts = [((s * batch + j) * T) % (n - T - 1) for s in range(steps) for j in range(batch)]
    idx = numpy.stack([tokens[a:a + T] for a in starts]).astype(numpy.int64)
    return idx, numpy.stack([tokens[a + 1:a + T + 1] for a in starts]).astype(numpy.int64)


def torch_train(name, initial, tokens, world, lr_scale=1.0):
    """Losses and {name: final parameter} of torch training `initial`."""
    model = models.build(name)
    model.load_state_dict(initial)
    batch = models.BATCH * world
    idx, targets = token_windows(tokens, STEPS, batch, models.SEQ)
    optim = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                              **{**ADAMW, "lr": ADAMW["lr"] * lr_scale})
    losses = []
    for s in range(STEPS):
        rows_ = slice(s * batch, (s + 1) * batch)
        optim.zero_grad(set_to_none=True)
        loss = model(torch.from_numpy(idx[rows_]), torch.from_numpy(targets[rows_]))
        loss.backward()
        optim.step()
        losses.append(loss.item())
    return numpy.array(losses), model


# --------------------------------------------------------------------------
# fsdp-opt and fsdp-run
# --------------------------------------------------------------------------

def run(command):
    return subprocess.run(command, capture_output=True, text=True)


def first_error(result):
    """The first line of a failed tool's output that says "error"."""
    lines = (result.stderr or result.stdout).strip().splitlines()
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or [f"exit {result.returncode}"])[0]


def compile_flags(world):
    flags = ["--optimizer=adamw", f"--lr={ADAMW['lr']!r}", f"--beta1={ADAMW['betas'][0]!r}",
             f"--beta2={ADAMW['betas'][1]!r}", f"--eps={ADAMW['eps']!r}",
             f"--weight-decay={ADAMW['weight_decay']!r}"]
    if world > 1:
        flags += [f"--world-size={world}", "--shard=full", "--ckpt=blocks"]
    return flags


def fsdp_compile(args, onnx_path, plan, world):
    flags = compile_flags(world) + [f"--fuse-attention={args.fuse_attention}"]
    result = run([args.fsdp_opt, onnx_path, "-o", plan] + flags)
    if result.returncode != 0:
        raise Failure(first_error(result))
    if args.fuse_attention == "on":
        check_fused(args, onnx_path)
    return result


def check_fused(args, onnx_path):
    """fsdp-opt's summary of the export: every attention fused, at least one."""
    result = run([args.fsdp_opt, onnx_path, "--fuse-attention=on", "--emit=summary"])
    match = re.search(r"attention:\s+(\d+) fused into nn.attention, (\d+) left unfused",
                      result.stdout)
    if result.returncode != 0 or not match:
        raise Failure(f"--emit=summary: {first_error(result)}")
    # An opset 23 export imports ONNX Attention as nn.attention directly; the
    # summary's op counts show those.
    ops = re.search(r"^\s+nn\.attention\s+(\d+)$", result.stdout, re.M)
    total = int(ops.group(1)) if ops else 0
    if int(match.group(2)) != 0 or total == 0:
        raise Failure(f"attention not fused: {match.group(0)}, {total} nn.attention ops")


def fsdp_train(args, plan, workdir, tokens_file, world):
    metrics = os.path.join(workdir, "metrics.jsonl")
    weights = os.path.join(workdir, "weights.safetensors")
    result = run([args.fsdp_run, plan, f"--world-size={world}", f"--steps={STEPS}",
                  f"--data={tokens_file}", f"--metrics={metrics}", f"--save-weights={weights}"])
    if result.returncode != 0:
        raise Failure(f"fsdp-run: {first_error(result)}")
    with open(metrics) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if [r.get("step") for r in records] != list(range(1, STEPS + 1)):
        raise Failure(f"{metrics}: steps {[r.get('step') for r in records]}, expected 1..{STEPS}")
    return numpy.array([r["loss"] for r in records]), weights


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def compare(losses, saved, torch_losses, model):
    """(max loss rel, param rel L2, problems) of fsdp-run's losses and saved
    tensors against torch's. A saved tensor may carry any name of a
    parameter (tied ones have several); a saved buffer must be unchanged."""
    problems = []
    loss_rel = numpy.abs(losses - torch_losses) / numpy.abs(torch_losses)
    max_loss_rel = float(numpy.max(loss_rel)) if numpy.all(numpy.isfinite(losses)) else math.inf
    if not max_loss_rel <= LOSS_TOLERANCE:
        worst = int(numpy.nanargmax(loss_rel))
        problems.append(f"step {worst + 1} loss {losses[worst]!r}, torch {torch_losses[worst]!r} "
                        f"(per-step rel {numpy.array2string(loss_rel, precision=2)}) "
                        f"(max rel {max_loss_rel:.2e} > {LOSS_TOLERANCE:g})")
    known = set()
    diffs, refs, missing = [], [], []
    for tensor, names in exports.parameter_groups(model):
        known.update(names)
        found = [n for n in names if n in saved]
        if not found:
            if tensor.requires_grad:
                missing.append(names[0])
            continue
        ours, theirs = saved[found[0]].astype(numpy.float64), tensor.detach().double().numpy()
        if ours.shape != theirs.shape:
            problems.append(f"'{found[0]}' saved as {list(ours.shape)}, torch {list(theirs.shape)}")
            continue
        diffs.append((ours - theirs).ravel())
        refs.append(theirs.ravel())
    if missing:
        problems.append(f"--save-weights lacks {missing}")
    buffers = dict(model.named_buffers(remove_duplicate=False))  # torch never changes them
    for name, value in saved.items():
        if name in known:
            continue
        if name not in buffers:
            problems.append(f"--save-weights has '{name}', which torch does not have")
        elif not numpy.array_equal(value, buffers[name].numpy()):
            problems.append(f"buffer '{name}' changed in training")
    param_rel = math.nan
    if diffs:
        param_rel = float(numpy.linalg.norm(numpy.concatenate(diffs))
                          / numpy.linalg.norm(numpy.concatenate(refs)))
    if not param_rel <= PARAM_TOLERANCE:
        problems.append(f"parameters rel L2 {param_rel:.2e} > {PARAM_TOLERANCE:g}")
    return max_loss_rel, param_rel, problems


def check_load_weights(name, initial, weights, manifest):
    """fsdp_opt.load_weights puts exactly the saved values into the module."""
    model = models.build(name)
    model.load_state_dict(initial)
    try:
        fsdp_opt.load_weights(model, weights, manifest=manifest)
    except fsdp_opt.WeightsError as e:
        return [f"load_weights: {e}"]
    saved = load_file(weights)
    state = model.state_dict()
    wrong = [n for n, v in saved.items() if n in state and not numpy.array_equal(
        state[n].numpy(), v)]
    return [f"load_weights: {wrong} differ from the file"] if wrong else []


def warned(result, names):
    """The lines of fsdp-opt's output that are a warning naming one of
    `names`."""
    text = (result.stderr or "") + (result.stdout or "")
    pattern = re.compile("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)))
    return [line for line in text.splitlines()
            if WARNING_WORD in line.lower() and pattern.search(line)]


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

class Suite:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.exported = {}   # (model, mode) -> (onnx path, initial state, expectation)
        self.results = []
        self.negative = None
        rng = numpy.random.default_rng(1234)
        # n - T - 1 = 183 is not a multiple of T: windows wrap at shifting offsets.
        self.tokens = rng.integers(0, models.VOCAB, 200).astype(numpy.uint16)
        self.tokens_file = os.path.join(tmp, "tokens.bin")
        self.tokens.astype("<u2").tofile(self.tokens_file)

    def export(self, name, mode):
        key = (name, mode)
        if key not in self.exported:
            model = models.build(name)
            initial = {k: v.clone() for k, v in model.state_dict().items()}
            path = os.path.join(self.tmp, f"{name}-{mode}", "model.onnx")
            os.makedirs(os.path.dirname(path))
            exports.export(model, models.example_inputs(), mode, path)
            self.exported[key] = (path, initial, exports.expectation(model, path))
        return self.exported[key]

    def case(self, case):
        name, mode, world = case.split("/")
        world = int(world)
        label = f"{name:<12} {mode:<7} ws{world}"
        try:
            path, initial, (expect, names) = self.export(name, mode)
        except Exception as e:  # the exporter's own failure is the row's result
            self.results.append((f"{label}  export", [f"export failed: {str(e).splitlines()[0]}"]))
            return
        workdir = os.path.join(os.path.dirname(path), f"ws{world}")
        os.makedirs(workdir, exist_ok=True)
        plan = os.path.join(workdir, "step.plan")
        if expect == "warn":
            # The warning, and a plan all the same (the user decides): an
            # import that fails on an op is this row's failure, not a pass.
            result = run([self.args.fsdp_opt, path, "-o", plan] + compile_flags(world)
                         + [f"--fuse-attention={self.args.fuse_attention}"])
            lines = warned(result, names)
            problems = [] if lines else [
                f"expected a {WARNING_WORD} naming a merged/folded initializer"
                + (" (fsdp-opt exited 0 without one)" if result.returncode == 0 else "")]
            if result.returncode != 0:
                problems.append(first_error(result))
            shown = lines[0].strip() if lines else ""
            shown = shown if len(shown) <= 160 else shown[:157] + "..."
            self.results.append((f"{label}  warns" + (f": {shown}" if lines else ""),
                                 problems))
            return
        try:
            fsdp_compile(self.args, path, plan, world)
            losses, weights = fsdp_train(self.args, plan, workdir, self.tokens_file, world)
            torch_losses, model = torch_train(name, initial, self.tokens, world)
            saved = load_file(weights)
            loss_rel, param_rel, problems = compare(losses, saved, torch_losses, model)
            manifest = path if mode == "helper" else None
            problems += check_load_weights(name, initial, weights, manifest)
            if not problems and self.negative is None:
                self.negative = (name, initial, world, losses, saved)
            self.results.append((f"{label}  loss rel {loss_rel:.1e}  param rel L2 {param_rel:.1e}",
                                 problems))
        except Failure as e:
            self.results.append((label, [str(e)]))

    def negative_row(self):
        """The first passing case against torch at lr x 1.1 must fail (when
        no case trained, those cases' rows already fail)."""
        if self.negative is None:
            return
        name, initial, world, losses, saved = self.negative
        torch_losses, model = torch_train(name, initial, self.tokens, world, lr_scale=1.1)
        _, _, problems = compare(losses, saved, torch_losses, model)
        self.results.append((f"negative check: {name} ws{world} vs torch at lr x 1.1 must differ",
                             [] if problems else ["the comparison accepted torch at lr x 1.1"]))


def run_cases(args, cases):
    tmp = args.keep or tempfile.mkdtemp(prefix="torch2-parity-")
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    try:
        suite = Suite(args, tmp)
        for case in cases:
            suite.case(case)
        suite.negative_row()
        # Paths relative to the work directory keep rows comparable across runs.
        return rows.report([(label.replace(tmp + os.sep, ""),
                             [p.replace(tmp + os.sep, "") for p in problems])
                            for label, problems in suite.results])
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fsdp-opt", required=True)
    p.add_argument("--fsdp-run", required=True)
    p.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    p.add_argument("--fuse-attention", choices=("on", "off"), default="off",
                   help="compile with fsdp-opt's --fuse-attention and require every "
                        "attention fused")
    return p


def main():
    p = parser()
    p.add_argument("--cases", nargs="+", default=all_cases(), metavar="MODEL/MODE/WORLD")
    args = p.parse_args()
    unknown = sorted(set(args.cases) - set(all_cases()))
    if unknown:
        p.error(f"unknown cases {unknown}; known: {' '.join(all_cases())}")
    torch.manual_seed(0)
    return run_cases(args, args.cases)


if __name__ == "__main__":
    sys.exit(main())
