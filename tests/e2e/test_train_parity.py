#!/usr/bin/python3
# Training parity with PyTorch (docs/design.md's numerics contract): each model
# family exported by tests/models/export_models.py (GPT-style decoder with
# erf GELU and untied head, GPT with tanh GELU and tied embedding, the
# torch.nn.Transformer encoder-decoder without dropout, the residual MLP; the
# opset-17 TRAINING exports and opset-14 variants) is compiled with
# `fsdp-opt --optimizer=adamw|sgd ...` and trained for K steps by
# `fsdp-run --steps=K --input=... --metrics=... --save-weights=...` on a data
# set of S samples (S a little larger than the batch, so sampling wraps
# around inside the run and some batches straddle the wrap). The same torch
# model, with its weights loaded by name from the ONNX initializers, trains
# on the same batches (docs/design.md's data contract) with torch.optim.AdamW or
# torch.optim.SGD under the same settings, in fp32. Every step's loss must be
# within 1e-5 relative of torch's, and the final parameters within 5e-5
# relative L2 norm (the norm of all differences over the norm of all torch
# parameters).
#
# The GPT family also trains from a raw uint16 token file (--data=.bin), from
# the same ids as an int64 .npy token file, and from the equivalent windows
# written as .npy inputs: their losses and weights must be bitwise identical,
# and equal torch's within tolerance. A
# negative check trains torch with a perturbed learning rate and requires the
# comparison to fail, so a comparison that cannot fail is caught.
#
# Prints one table row per run, then an "N passed, M failed" line; any
# failure (compile, run, missing metric, mismatch) fails the test.
#
#   /usr/bin/python3 tests/e2e/test_train_parity.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--only gpt-op17-train ...] [--keep DIR]

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

import numpy
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import export_models  # noqa: E402  (the test models' definitions and exporter)

LOSS_TOLERANCE = 1e-5   # relative, every step
PARAM_TOLERANCE = 5e-5  # relative L2 over all parameters, after the last step
STEPS = 10

# The Transformer's sinusoid table and its float causal mask are float
# initializers that torch keeps as buffers: they must not train.
TRANSFORMER_BUFFERS = r"pos\.pe|tgt_mask"


@dataclass
class Optim:
    """One optimizer configuration, expressed both as fsdp-opt flags and as
    the torch optimizer with the same meaning."""
    kind: str  # adamw | sgd
    lr: float
    weight_decay: float
    betas: tuple = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.0
    nesterov: bool = False
    no_decay: str = ""  # regex of parameters excluded from weight decay
    label: str = ""

    def flags(self):
        out = [f"--optimizer={self.kind}", f"--lr={self.lr!r}",
               f"--weight-decay={self.weight_decay!r}"]
        if self.kind == "adamw":
            out += [f"--beta1={self.betas[0]!r}", f"--beta2={self.betas[1]!r}",
                    f"--eps={self.eps!r}"]
        else:
            out += [f"--momentum={self.momentum!r}"] + (["--nesterov"] if self.nesterov else [])
        if self.no_decay:
            out.append(f"--no-decay={self.no_decay}")
        return out

    def build(self, named_params, lr=None):
        lr = self.lr if lr is None else lr
        decay = [p for n, p in named_params if not (self.no_decay and re.fullmatch(self.no_decay, n))]
        plain = [p for n, p in named_params if self.no_decay and re.fullmatch(self.no_decay, n)]
        groups = [{"params": decay, "weight_decay": self.weight_decay}]
        if plain:
            groups.append({"params": plain, "weight_decay": 0.0})
        if self.kind == "adamw":
            return torch.optim.AdamW(groups, lr=lr, betas=self.betas, eps=self.eps)
        return torch.optim.SGD(groups, lr=lr, momentum=self.momentum, nesterov=self.nesterov)

    def describe(self):
        if self.label:
            return self.label
        if self.kind == "adamw":
            return f"adamw wd {self.weight_decay:g}"
        return (f"sgd m {self.momentum:g}{' nesterov' if self.nesterov else ''} "
                f"wd {self.weight_decay:g}")


ADAMW = Optim("adamw", lr=1e-3, weight_decay=0.01)
# Attention's key bias has an exactly zero gradient (softmax ignores a shift
# that is the same for every key), so what reaches Adam there is rounding
# noise, which eps 1e-8 turns into steps of +-lr: with torch's defaults, torch
# fp32 against torch fp64 already differs by 5-6e-5 on the tied GPT and the
# Transformer (the table's last column shows the floor). eps 1e-6 keeps that
# noise below 1e-6 without changing anything else about the update.
ADAMW_EPS6 = Optim("adamw", lr=1e-3, weight_decay=0.01, eps=1e-6, label="adamw wd 0.01 eps 1e-6")
SGD_NESTEROV = Optim("sgd", lr=0.05, weight_decay=0.01, momentum=0.9, nesterov=True)
SGD_MOMENTUM = Optim("sgd", lr=0.05, weight_decay=0.0, momentum=0.9)
ADAMW_NO_DECAY = Optim("adamw", lr=2e-3, weight_decay=0.1, betas=(0.8, 0.95), eps=1e-6,
                       no_decay=r".*(bias|ln1\.weight|ln2\.weight|ln_f\.weight)",
                       label="adamw wd 0.1, no-decay")


@dataclass
class Case:
    model: str            # export_models variant name (file stem)
    optim: Optim
    freeze: str = ""      # fsdp-opt --freeze regex: float initializers that are buffers
    samples_extra: int = 1  # S = 2*b + samples_extra
    note: str = ""


CASES = [
    Case("gpt-op17-train", ADAMW),
    Case("gpt-op17-train", SGD_NESTEROV),
    Case("gpt-op17-train", ADAMW_NO_DECAY),
    Case("gpt-tanh-tied-op17-train", ADAMW_EPS6),
    Case("gpt-tanh-tied-op17-train", SGD_MOMENTUM),
    Case("transformer-op17-train", ADAMW_EPS6, freeze=TRANSFORMER_BUFFERS),
    Case("transformer-op17-train", SGD_NESTEROV, freeze=TRANSFORMER_BUFFERS),
    Case("mlp-op17-train", ADAMW, samples_extra=3),
    Case("mlp-op17-train", SGD_NESTEROV, samples_extra=3),
    Case("gpt-op14-train", ADAMW),
    # A frozen real parameter: --freeze turns it into a buffer, torch leaves
    # it out of the optimizer.
    Case("gpt-tanh-tied-op14-train", SGD_NESTEROV, freeze=r"pos_emb\.weight", note="frozen pos_emb"),
    Case("transformer-op14-train", ADAMW_EPS6, freeze=TRANSFORMER_BUFFERS),
    Case("mlp-op14-train", SGD_MOMENTUM, samples_extra=3),
]

FAMILY_CLASS = {"gpt": export_models.GPT, "transformer": export_models.Seq2SeqTransformer,
                "mlp": export_models.MLPClassifier}


class Failure(Exception):
    pass


# --------------------------------------------------------------------------
# Files: ONNX initializers, safetensors, metrics
# --------------------------------------------------------------------------

def onnx_initializers(path):
    model = onnx.load(path)
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


SAFETENSORS_DTYPES = {"F64": numpy.float64, "F32": numpy.float32, "F16": numpy.float16,
                      "I64": numpy.int64, "I32": numpy.int32, "I16": numpy.int16,
                      "I8": numpy.int8, "U8": numpy.uint8, "BOOL": numpy.bool_}


def read_safetensors(path):
    """Numpy-only reader: 8-byte little-endian header length, JSON header
    {name: {dtype, shape, data_offsets}}, then the raw little-endian data."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Failure(f"{path}: truncated safetensors file")
    size = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + size])
    data = memoryview(blob)[8 + size:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in SAFETENSORS_DTYPES:
            raise Failure(f"{path}: tensor '{name}' has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        dtype = numpy.dtype(SAFETENSORS_DTYPES[info["dtype"]]).newbyteorder("<")
        array = numpy.frombuffer(data[begin:end], dtype=dtype).reshape(info["shape"])
        out[name] = array.astype(array.dtype.newbyteorder("="))
    return out


def read_metrics(path, steps):
    if not os.path.exists(path):
        raise Failure(f"no metrics file {path}")
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    if [r.get("step") for r in records] != list(range(1, steps + 1)):
        raise Failure(f"{path}: steps {[r.get('step') for r in records]}, expected 1..{steps}")
    for r in records:
        for key in ("loss", "lr", "peak_bytes"):
            if key not in r:
                raise Failure(f"{path}: step {r['step']} has no '{key}'")
    return records


def float32_bits(values):
    return numpy.asarray(values, dtype=numpy.float32).view(numpy.uint32)


# --------------------------------------------------------------------------
# Data (docs/design.md's data contract, world size 1: B = b)
# --------------------------------------------------------------------------

def make_dataset(entry, samples, seed):
    """S samples of each graph input, shaped like the exported batch."""
    rng = numpy.random.default_rng(seed)
    config = entry["config"]
    data = {}
    for spec in entry["inputs"]:
        shape = [samples] + spec["shape"][1:]
        if spec["dtype"] == "float32":
            data[spec["name"]] = rng.standard_normal(shape).astype(numpy.float32)
        else:
            if entry["family"] == "mlp":
                high = config.get("classes", 10)
            else:
                high = config.get("vocab", 64)
            data[spec["name"]] = rng.integers(0, high, shape).astype(numpy.int64)
    return data


def batch_rows(step, batch, samples):
    """Sample j of step s is row (s*B + j) mod S."""
    return [(step * batch + j) % samples for j in range(batch)]


def token_windows(tokens, steps, batch, T):
    """The windows fsdp-run reads from a token file: sample j of step s starts
    at ((s*B + j) * T) mod (n - T - 1); input gets tok[start:start+T], the
    target tok[start+1:start+T+1]."""
    n = len(tokens)
    starts = [((s * batch + j) * T) % (n - T - 1) for s in range(steps) for j in range(batch)]
    idx = numpy.stack([tokens[a:a + T] for a in starts]).astype(numpy.int64)
    targets = numpy.stack([tokens[a + 1:a + T + 1] for a in starts]).astype(numpy.int64)
    return idx, targets


# --------------------------------------------------------------------------
# torch side
# --------------------------------------------------------------------------

def torch_model(entry, onnx_path):
    """The exported model, with every parameter and float buffer loaded by
    name from the ONNX initializers (not trusting the export's seed)."""
    model = FAMILY_CLASS[entry["family"]](**entry["config"])
    inits = onnx_initializers(onnx_path)
    with torch.no_grad():
        for name, tensor in list(model.named_parameters()) + list(model.named_buffers()):
            if name not in inits:
                raise Failure(f"{entry['file']}: no initializer named '{name}'")
            value = torch.from_numpy(inits[name].copy())
            if value.shape != tensor.shape or value.dtype != tensor.dtype:
                raise Failure(f"{entry['file']}: initializer '{name}' is {value.dtype} "
                              f"{list(value.shape)}, torch has {tensor.dtype} {list(tensor.shape)}")
            tensor.copy_(value)
    model.train(True)  # as exported (the dropout of these variants is 0)
    return model


def torch_train(entry, onnx_path, data, optim, freeze, steps, lr=None, dtype=torch.float32):
    """Returns (losses as float32, {name: final parameter}). dtype float64
    gives the reference's own rounding floor."""
    model = torch_model(entry, onnx_path).to(dtype)
    data = {n: a.astype(numpy.float64) if dtype == torch.float64 and a.dtype == numpy.float32
            else a for n, a in data.items()}
    params = [(n, p) for n, p in model.named_parameters()
              if not (freeze and re.fullmatch(freeze, n))]
    for n, p in model.named_parameters():
        p.requires_grad_(not (freeze and re.fullmatch(freeze, n)))
    optimizer = optim.build(params, lr)
    names = [spec["name"] for spec in entry["inputs"]]
    batch = entry["inputs"][0]["shape"][0]
    samples = len(data[names[0]])
    losses = []
    for step in range(steps):
        rows = batch_rows(step, batch, samples)
        inputs = [torch.from_numpy(data[n][rows]) for n in names]
        optimizer.zero_grad(set_to_none=True)
        loss = model(*inputs)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return numpy.array(losses, dtype=numpy.float32), final


def relative_l2(ours, reference):
    names = sorted(reference)
    diff = numpy.concatenate([(ours[n].astype(numpy.float64) - reference[n]).ravel() for n in names])
    ref = numpy.concatenate([reference[n].astype(numpy.float64).ravel() for n in names])
    return float(numpy.linalg.norm(diff) / numpy.linalg.norm(ref))


# --------------------------------------------------------------------------
# fsdp side
# --------------------------------------------------------------------------

def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise Failure(f"exit {result.returncode}: {' '.join(command)}\n"
                      f"{(result.stderr or result.stdout).strip()}")
    return result


def fsdp_compile(args, onnx_path, plan, optim, freeze):
    command = [args.fsdp_opt, onnx_path, "-o", plan] + optim.flags()
    if freeze:
        command.append(f"--freeze={freeze}")
    run(command)


def fsdp_train(args, plan, workdir, steps, inputs=None, data=None):
    """Runs the plan; returns (metrics records, saved weights)."""
    metrics = os.path.join(workdir, "metrics.jsonl")
    weights = os.path.join(workdir, "weights.safetensors")
    command = [args.fsdp_run, plan, f"--steps={steps}", f"--metrics={metrics}",
               f"--save-weights={weights}"]
    command += [f"--input={n}={f}" for n, f in (inputs or {}).items()]
    if data:
        command.append(f"--data={data}")
    run(command)
    if not os.path.exists(weights):
        raise Failure(f"fsdp-run wrote no {weights}")
    return read_metrics(metrics, steps), read_safetensors(weights)


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

def compare(records, weights, torch_losses, torch_params, frozen, initial, optim_lr,
            loss_tolerance=None, param_tolerance=None):
    """Returns (max loss rel diff, param rel L2, problems). The tolerances
    default to the fp32 contract's."""
    loss_tolerance = LOSS_TOLERANCE if loss_tolerance is None else loss_tolerance
    param_tolerance = PARAM_TOLERANCE if param_tolerance is None else param_tolerance
    problems = []
    ours = numpy.array([r["loss"] for r in records], dtype=numpy.float64)
    theirs = torch_losses.astype(numpy.float64)
    if not numpy.all(numpy.isfinite(ours)):
        problems.append(f"non-finite loss {ours.tolist()}")
    loss_rel = numpy.abs(ours - theirs) / numpy.abs(theirs)
    max_loss_rel = float(numpy.max(loss_rel))
    if not max_loss_rel <= loss_tolerance:
        worst = int(numpy.argmax(loss_rel))
        problems.append(f"step {worst + 1} loss {ours[worst]!r}, torch {theirs[worst]!r} "
                        f"(rel {max_loss_rel:.2e} > {loss_tolerance:g})")
    for r in records:
        if abs(r["lr"] - optim_lr) > 1e-6 * optim_lr:
            problems.append(f"step {r['step']} lr {r['lr']!r}, expected {optim_lr!r}")
            break

    missing = [n for n in torch_params if n not in frozen and n not in weights]
    if missing:
        problems.append(f"--save-weights lacks {missing}")
    # Frozen buffers (pos.pe, tgt_mask) are not parameters; a file that
    # carries them anyway must carry them unchanged.
    extra = [n for n in weights if n not in torch_params and n not in frozen]
    if extra:
        problems.append(f"--save-weights has unknown tensors {extra}")
    for name in weights:
        if name in frozen and name not in torch_params and not numpy.array_equal(
                weights[name], initial[name]):
            problems.append(f"frozen '{name}' changed")
    diffs, refs = [], []
    for name, value in torch_params.items():
        if name in frozen:
            # A buffer stays what it was; if saved, it must be unchanged.
            if name in weights and not numpy.array_equal(weights[name], initial[name]):
                problems.append(f"frozen '{name}' changed")
            continue
        if name not in weights:
            continue
        if weights[name].shape != value.shape:
            problems.append(f"'{name}' saved as {list(weights[name].shape)}, torch {list(value.shape)}")
            continue
        diffs.append((weights[name].astype(numpy.float64) - value).ravel())
        refs.append(value.astype(numpy.float64).ravel())
    param_rel = math.nan
    if diffs:
        param_rel = float(numpy.linalg.norm(numpy.concatenate(diffs))
                          / numpy.linalg.norm(numpy.concatenate(refs)))
    if not param_rel <= param_tolerance:
        problems.append(f"parameters rel L2 {param_rel:.2e} > {param_tolerance:g}")
    return max_loss_rel, param_rel, problems


# --------------------------------------------------------------------------
# Runs
# --------------------------------------------------------------------------

class Table:
    def __init__(self):
        self.passed = self.failed = 0
        print(f"{'model':<26} {'optimizer':<46} {'steps':>5} {'max loss rel':>12} "
              f"{'param rel L2':>12}  result  {'torch f32/f64 L2':>16}")

    def row(self, model, optim, steps, loss_rel, param_rel, problems, floor=None):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        fmt = lambda x: "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2e}"
        print(f"{model:<26} {optim:<46} {steps:>5} {fmt(loss_rel):>12} {fmt(param_rel):>12}  "
              f"{'PASS' if ok else 'FAIL'}    {fmt(floor):>16}", flush=True)
        for p in problems:
            print(f"    {p}", flush=True)


def frozen_names(onnx_path, freeze):
    """Float initializers --freeze makes buffers: torch parameters the test
    leaves out of the optimizer, and the model's own buffers."""
    return {n for n, v in onnx_initializers(onnx_path).items()
            if freeze and v.dtype == numpy.float32 and re.fullmatch(freeze, n)}


def parity_case(args, tmp, entry, case, table, index):
    onnx_path = os.path.join(tmp, entry["file"])
    workdir = os.path.join(tmp, f"case{index}")
    os.makedirs(workdir)
    label = case.optim.describe() + (f" ({case.note})" if case.note else "")
    try:
        batch = entry["inputs"][0]["shape"][0]
        samples = 2 * batch + case.samples_extra  # wraps around inside STEPS steps
        data = make_dataset(entry, samples, seed=index)
        inputs = {}
        for name, array in data.items():
            inputs[name] = os.path.join(workdir, f"{name}.npy")
            numpy.save(inputs[name], array)
        plan = os.path.join(workdir, "step.plan")
        fsdp_compile(args, onnx_path, plan, case.optim, case.freeze)
        records, weights = fsdp_train(args, plan, workdir, STEPS, inputs=inputs)
        losses, params = torch_train(entry, onnx_path, data, case.optim, case.freeze, STEPS)
        initial = onnx_initializers(onnx_path)
        result = compare(records, weights, losses, params, frozen_names(onnx_path, case.freeze),
                         initial, case.optim.lr)
        _, params64 = torch_train(entry, onnx_path, data, case.optim, case.freeze, STEPS,
                                  dtype=torch.float64)
        table.row(entry["file"][:-5], label, STEPS, *result, floor=relative_l2(params, params64))
        return data, records, weights
    except Failure as e:
        table.row(entry["file"][:-5], label, STEPS, None, None, [str(e)])
        return None


def negative_case(entry, onnx_path, case, data, records, weights, table):
    """The same comparison against torch trained with lr x 1.1 must fail."""
    losses, params = torch_train(entry, onnx_path, data, case.optim, case.freeze, STEPS,
                                 lr=case.optim.lr * 1.1)
    loss_rel, param_rel, problems = compare(records, weights, losses, params,
                                            frozen_names(onnx_path, case.freeze),
                                            onnx_initializers(onnx_path), case.optim.lr)
    verdict = [] if problems else ["the comparison accepted torch trained with lr x 1.1"]
    table.row(entry["file"][:-5], case.optim.describe() + " vs lr x1.1 (must differ)", STEPS,
              loss_rel, param_rel, verdict)


def token_file_case(args, tmp, entry, table):
    """--data=tokens.bin (and the same ids as an int64 --data=tokens.npy)
    against the same windows as .npy inputs: bitwise identical losses and
    weights, and all equal to torch."""
    onnx_path = os.path.join(tmp, entry["file"])
    workdir = os.path.join(tmp, "tokens")
    os.makedirs(workdir)
    batch, T = entry["inputs"][0]["shape"]
    vocab = entry["config"].get("vocab", 64)
    rng = numpy.random.default_rng(1234)
    # n - T - 1 = 83 is not a multiple of T: windows wrap at shifting offsets.
    tokens = rng.integers(0, vocab, 100).astype(numpy.uint16)
    binary = os.path.join(workdir, "tokens.bin")
    tokens.astype("<u2").tofile(binary)
    ids = os.path.join(workdir, "tokens.npy")
    numpy.save(ids, tokens.astype(numpy.int64))
    idx, targets = token_windows(tokens, STEPS, batch, T)
    names = [spec["name"] for spec in entry["inputs"]]
    inputs = {names[0]: os.path.join(workdir, "idx.npy"), names[1]: os.path.join(workdir, "targets.npy")}
    numpy.save(inputs[names[0]], idx)
    numpy.save(inputs[names[1]], targets)
    optim = ADAMW
    label = optim.describe() + " --data .bin/.npy vs windows"
    try:
        plan = os.path.join(workdir, "step.plan")
        fsdp_compile(args, onnx_path, plan, optim, "")
        for sub in ("bin", "ids", "npy"):
            os.makedirs(os.path.join(workdir, sub))
        from_bin = fsdp_train(args, plan, os.path.join(workdir, "bin"), STEPS, data=binary)
        problems = []
        for what, run_ in (("--data=tokens.npy", fsdp_train(args, plan, os.path.join(workdir, "ids"),
                                                            STEPS, data=ids)),
                           ("--input windows", fsdp_train(args, plan, os.path.join(workdir, "npy"),
                                                          STEPS, inputs=inputs))):
            if not numpy.array_equal(float32_bits([r["loss"] for r in from_bin[0]]),
                                     float32_bits([r["loss"] for r in run_[0]])):
                problems.append(f"--data=tokens.bin losses {[r['loss'] for r in from_bin[0]]} "
                                f"differ from {what} losses {[r['loss'] for r in run_[0]]}")
            if sorted(from_bin[1]) != sorted(run_[1]) or any(
                    not numpy.array_equal(from_bin[1][n], run_[1][n]) for n in from_bin[1]):
                problems.append(f"--data=tokens.bin and {what} runs saved different weights")
        losses, params = torch_train(entry, onnx_path, {names[0]: idx, names[1]: targets},
                                     optim, "", STEPS)
        loss_rel, param_rel, more = compare(from_bin[0], from_bin[1], losses, params, set(),
                                            onnx_initializers(onnx_path), optim.lr)
        table.row(entry["file"][:-5], label, STEPS, loss_rel, param_rel, problems + more)
    except Failure as e:
        table.row(entry["file"][:-5], label, STEPS, None, None, [str(e)])


def attached_loss_case(args, tmp, entry, table):
    """The GPT exported returning logits (no loss in the graph), trained with
    `--loss=xent:logits,targets`: the compiler attaches a mean cross-entropy
    and adds the `targets` input; torch trains the same weights with the
    loss inside forward (F.cross_entropy over the flattened positions)."""
    workdir = os.path.join(tmp, "xent")
    os.makedirs(workdir)
    label = ADAMW.describe() + " --loss=xent:logits,targets"
    try:
        onnx_path = os.path.join(tmp, entry["file"])
        logits_path = os.path.join(workdir, "gpt-logits.onnx")
        model = torch_model(entry, onnx_path)
        batch, T = entry["inputs"][0]["shape"]
        idx = torch.zeros((batch, T), dtype=torch.int64)
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null
            try:
                export_models.export(model, {"idx": idx}, logits_path, 17, "train",
                                     output="logits")
            finally:
                sys.stdout = saved
        data = make_dataset(entry, 2 * batch + 1, seed=99)
        inputs = {}
        for name, array in data.items():
            inputs[name] = os.path.join(workdir, f"{name}.npy")
            numpy.save(inputs[name], array)
        plan = os.path.join(workdir, "step.plan")
        run([args.fsdp_opt, logits_path, "-o", plan, "--loss=xent:logits,targets"] +
            ADAMW.flags())
        records, weights = fsdp_train(args, plan, workdir, STEPS, inputs=inputs)
        losses, params = torch_train(entry, onnx_path, data, ADAMW, "", STEPS)
        table.row(entry["file"][:-5], label, STEPS,
                  *compare(records, weights, losses, params, set(),
                           onnx_initializers(logits_path), ADAMW.lr))
    except Failure as e:
        table.row(entry["file"][:-5], label, STEPS, None, None, [str(e)])


def fusion_case(args, tmp, entry, table):
    """Elementwise fusion changes no bit: the same model and batches with
    --fusion=none give bitwise the same losses and weights."""
    workdir = os.path.join(tmp, "fusion")
    os.makedirs(workdir)
    label = ADAMW.describe() + " fused vs --fusion=none"
    try:
        onnx_path = os.path.join(tmp, entry["file"])
        batch = entry["inputs"][0]["shape"][0]
        data = make_dataset(entry, 2 * batch + 1, seed=7)
        inputs = {}
        for name, array in data.items():
            inputs[name] = os.path.join(workdir, f"{name}.npy")
            numpy.save(inputs[name], array)
        runs = []
        for sub, extra in (("fused", []), ("unfused", ["--fusion=none"])):
            os.makedirs(os.path.join(workdir, sub))
            plan = os.path.join(workdir, sub, "step.plan")
            run([args.fsdp_opt, onnx_path, "-o", plan] + ADAMW.flags() + extra)
            dump = run([args.fsdp_run, plan, "--dump"]).stdout
            runs.append((fsdp_train(args, plan, os.path.join(workdir, sub), STEPS, inputs=inputs),
                         dump.count(" Fused ")))
        (fused, fused_count), (unfused, unfused_count) = runs
        problems = []
        if fused_count == 0 or unfused_count != 0:
            problems.append(f"expected Fused instructions only in the fused plan "
                            f"({fused_count} and {unfused_count})")
        if not numpy.array_equal(float32_bits([r["loss"] for r in fused[0]]),
                                 float32_bits([r["loss"] for r in unfused[0]])):
            problems.append("fused and unfused losses differ")
        if any(not numpy.array_equal(fused[1][n], unfused[1][n]) for n in fused[1]):
            problems.append("fused and unfused runs saved different weights")
        losses, params = torch_train(entry, onnx_path, data, ADAMW, "", STEPS)
        loss_rel, param_rel, more = compare(fused[0], fused[1], losses, params, set(),
                                            onnx_initializers(onnx_path), ADAMW.lr)
        table.row(entry["file"][:-5], label, STEPS, loss_rel, param_rel, problems + more)
    except Failure as e:
        table.row(entry["file"][:-5], label, STEPS, None, None, [str(e)])


def export(tmp, names):
    variants = [v for v in export_models.all_variants() if v["name"] in names]
    if {v["name"] for v in variants} != set(names):
        raise SystemExit(f"unknown variants {set(names) - {v['name'] for v in variants}}")
    return {v["name"]: export_models.run_variant(v, tmp) for v in variants}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--only", nargs="+", default=[], metavar="MODEL",
                        help="run only the cases of these model variants")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    torch.manual_seed(0)
    cases = [c for c in CASES if not args.only or c.model in args.only]
    if not cases:
        sys.exit(f"--only {' '.join(args.only)} matched no case")

    tmp = args.keep or tempfile.mkdtemp(prefix="train-parity-")
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    try:
        names = sorted({c.model for c in cases} | {"gpt-op17-train"})
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null  # the exporter's per-file lines
            try:
                entries = export(tmp, names)
            finally:
                sys.stdout = saved
        table = Table()
        negative_done = False
        for index, case in enumerate(cases):
            entry = entries[case.model]
            outcome = parity_case(args, tmp, entry, case, table, index)
            if outcome is not None and not negative_done:
                negative_case(entry, os.path.join(tmp, entry["file"]), case, *outcome, table)
                negative_done = True
        if not negative_done:
            table.row("(negative check)", "-", STEPS, None, None,
                      ["no case ran, so the negative check could not"])
        token_file_case(args, tmp, entries["gpt-op17-train"], table)
        attached_loss_case(args, tmp, entries["gpt-op17-train"], table)
        fusion_case(args, tmp, entries["gpt-op17-train"], table)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{table.passed} passed, {table.failed} failed")
    return 0 if table.failed == 0 and table.passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
