#!/usr/bin/python3
# One plan, two devices: the same plan file run by `fsdp-run --device=D` and
# by `fsdp-run --device=cpu` (the reference, itself proven against torch by
# tests/e2e) must agree within the numerics contract (docs/design.md):
# every step's loss within 1e-5 relative over 10 steps and the final
# parameters within 5e-5 relative L2 (TF32 stays off: fsdp-run's default).
# D is `cuda` (a real GPU: the ctest `gpu-parity`, label gpu) or `cuda-simt`
# (the CUDA kernels under emulation on the CPU: ctests labelled cuda-simt;
# on these models the emulation takes seconds). Plans computing in bf16 or
# f16 (--param-dtype) keep those tolerances under cuda-simt, whose CPU
# reference then sums 16-bit GEMMs as the emulation does (FSDP_CPU_GEMM=
# naive: the rows are equal bit for bit), and on a real GPU, where cuBLAS
# sums them in its own order, meet bf16's loss 2e-2 / parameters 2e-3 and
# f16's 5e-3 / 1e-3 (GPU_LOW_PRECISION says why). The cases:
#   - forward: forward-only plans (--mode=forward) of the GPT (its loss, and
#     its logits), the Transformer and the MLP; the GPT's logits computed in
#     bf16 (cast to f32 outputs: .npy has no bf16) and its loss in f16;
#     every output compared;
#   - training: the GPT unsharded, --shard=full at world size 1, with
#     --offload=cpu, --ckpt=blocks, --param-dtype=bf16 (alone, and with
#     --shard=full, --ckpt=blocks and --reduce-dtype=bf16) and
#     --param-dtype=f16 (loss scaling growing every 3 steps: each step's
#     loss_scale and skipped the CPU's exactly, steps 1, 5 and 9 skipped);
#     the Transformer with dropout (the masks come from the shared counter
#     RNG, so they are the CPU's bit for bit); the MLP with SGD + Nesterov
#     momentum; the GPT's attention fused (nn.attention, f32 and bf16: the
#     plan's summary must show it fused) and with --fuse-attention=off;
#   - a real training run (issue 19): the GPT with --clip-grad-norm (2-norm
#     and inf, clipping every step; grad_norm compared too), with
#     --grad-accum=2 (each and last), and with validation (--eval-input:
#     val_loss after steps 5 and 10 compared too);
#   - negative controls: the device's run against a CPU run with lr x 1.1
#     must FAIL the same comparison, so a comparison that cannot fail is
#     caught; and its bf16 and f16 runs against CPU runs at lr x 1.25 must
#     FAIL the GPU's bf16/f16 tolerances on every device, so those bounds
#     are shown to catch something wherever the suite runs;
#   - checkpoints: saved after 5 steps on the CPU and resumed on D to step
#     10, and the reverse, both equal to the uninterrupted CPU run; the two
#     devices write checkpoints of the same files and tensors;
#   - bad input: a token id out of the vocabulary is refused on both
#     devices (exit 1, no hang);
#   - sharded plans at world size N > 1 (issue 17), the device's run
#     against the CPU's run of the same plan file: --shard=full as N
#     in-process ranks (one GPU each, collectives on NCCL) and as N
#     processes under mpirun, --shard=hybrid:2 from N = 4; on cuda N = 2,
#     4 and 8 as far as the machine has GPUs (fewer GPUs: those rows are
#     listed as not run and count for nothing), on cpu (the driver's
#     self-check) N = 2 and 4, on cuda-simt none (its device has no
#     collectives);
#   - a compiled step: examples/gpt-tiny.onnx compiled with --emit=binary
#     (--optimizer=adamw), `./step --device=D --steps=5` against `fsdp-run
#     plan --device=D` and `--device=cpu` of the plan the same flags
#     compile, on the same --data: losses and parameters within the
#     tolerances above (on a GPU the step's Fused chains run the PTX
#     fsdp-opt generated, fsdp-run's the backend's own kernels), and
#     `./step --help` naming the sm_80 and sm_90 PTX modules it carries;
#   - on a real GPU only: two runs bitwise equal (no atomics in reductions),
#     resume on the GPU bitwise equal to its uninterrupted run,
#     --cuda-graphs=off bitwise equal to the default (on), peak_bytes equal
#     to the CPU's (the plan's bytes) with the context's own usage reported
#     apart (device_context_bytes), --tf32 changing the losses (so TF32
#     is off by default), no --device choosing the GPU, a plan larger than
#     the GPU refused before its first step naming the bytes, and
#     tests/e2e/test_gradcheck.py with --device=cuda.
# With --device=cuda and no GPU (the NVIDIA driver finds none, or there is no
# driver) it prints "no GPU: N GPU tests not run" once, with fsdp-run's own
# error, and exits 77, which ctest reports as skipped (SKIP_RETURN_CODE):
# nothing counts as passed. On a machine with a GPU, fsdp-run failing to
# use it is a failure like any other.
#
# Prints one row per case (and the losses and worst parameters of a failed
# comparison), then "N passed, M failed"; exit 1 on any failure.
#
#   /usr/bin/python3 tests/gpu/test_device_parity.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run --device cuda|cuda-simt|cpu
#       [--runtime-lib build/lib/libfsdp_runtime.a] [--size small|tiny]
#       [--only SUBSTRING ...] [--list] [--keep DIR]
#
# --device=cpu compares the CPU with itself (every row exact but the
# negative control's): a check of this driver.

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
sys.path.insert(0, HERE)
import gpu_probe  # noqa: E402  (which GPUs the driver sees)

LOSS_TOLERANCE = 1e-5   # relative, every step
PARAM_TOLERANCE = 5e-5  # relative L2 over all parameters, after the last step
OUTPUT_TOLERANCE = 1e-5  # relative L2 of each forward output


@dataclass(frozen=True)
class Tolerance:
    loss: float     # relative, every step (and each compared metric)
    params: float   # relative L2 over all parameters, after the last step
    outputs: float  # relative L2 of each forward output


TIGHT = Tolerance(LOSS_TOLERANCE, PARAM_TOLERANCE, OUTPUT_TOLERANCE)
# --param-dtype=bf16|f16 on a real GPU. Every kernel but the GEMMs gives the
# CPU's bits there too; the 16-bit GEMMs are cuBLAS's, accumulating in f32
# in another order than the CPU's oneDNN, so a product now and then rounds
# to the other neighbouring 16-bit value and training carries it on. A loss
# is a value of the compute dtype: bf16 keeps 8 significant bits (an ulp is
# 2^-7..2^-8 relative, 7.8e-3..3.9e-3), f16 11 (9.8e-4..4.9e-4), so these
# admit a loss (or forward output) at least 2.5 (bf16) or 5 (f16) ulps off.
# The parameters stay f32 masters that AdamW moves by about lr a step
# whatever the gradient's rounding. These are the bounds fsdp-opt's
# bf16/f16 runs meet against torch's (tests/e2e/torch2/mixed_precision.py),
# whose rounding differs from ours in more places than a GEMM's order. On
# the CPU, two orders of the same f32 sums (FSDP_CPU_GEMM=naive against
# oneDNN) leave the bf16 rows 3.9e-10 apart in parameters and the f16 row
# 6.4e-5 (attention's key bias, whose gradient is rounding noise), losses
# and outputs equal; tensor cores may round their sums less kindly, hence
# the margin. What the bounds still catch: the low-precision negative
# controls (lr x LOW_PRECISION_LR_FACTOR).
GPU_LOW_PRECISION = {"bf16": Tolerance(2e-2, 2e-3, 2e-2), "f16": Tolerance(5e-3, 1e-3, 5e-3)}
# The SIMT emulation's 16-bit GEMMs are a naive loop (a thread per element
# summing its k terms in increasing order in f32: LinearAlgebraKernels.cu),
# the arithmetic of the CPU's FSDP_CPU_GEMM=naive route, not of its default
# (oneDNN, which sums in another order: the f16 training row then ends
# 6.4e-5 apart in parameters, past TIGHT, through attention's key bias
# whose gradient is rounding noise; see test_train_parity.py). Under
# cuda-simt the CPU reference takes that route, so every row compares the
# same arithmetic; f32 and f64 GEMMs are OpenBLAS's on every route.
SIMT_REFERENCE_GEMM = "naive"
STEPS = 10
RESUME_AT = 5
REFERENCE = "cpu"
SKIP_EXIT = 77  # ctest SKIP_RETURN_CODE
TRANSFORMER_BUFFERS = r"pos\.pe|tgt_mask"

# Model sizes. small (the default): tests/models' defaults, whose larger
# tensors take several blocks of 256 threads. tiny: the driver's own check.
SIZES = {
    "small": {"gpt": dict(vocab=64, T=16, d=32, heads=4, layers=2), "gpt_batch": 2,
              "transformer": dict(vocab=64, T=16, d=32, heads=4, layers=2, ff=64),
              "transformer_batch": 2,
              "mlp": dict(in_dim=16, d=32, hidden=64, layers=2, classes=10), "mlp_batch": 8},
    "tiny": {"gpt": dict(vocab=32, T=8, d=16, heads=2, layers=2), "gpt_batch": 2,
             "transformer": dict(vocab=32, T=8, d=16, heads=2, layers=1, ff=32),
             "transformer_batch": 1,
             "mlp": dict(in_dim=8, d=16, hidden=16, layers=2, classes=5), "mlp_batch": 4},
}

ADAMW = ["--optimizer=adamw", "--lr=0.001", "--weight-decay=0.01"]
ADAMW_EPS6 = ADAMW + ["--eps=1e-06"]  # see test_train_parity.py: attention's key bias
SGD_NESTEROV = ["--optimizer=sgd", "--lr=0.05", "--weight-decay=0.01", "--momentum=0.9",
                "--nesterov"]
BF16 = ADAMW + ["--world-size=1", "--param-dtype=bf16"]
# f16 scales the loss as torch.amp.GradScaler does. Its seed, 65536, is inf
# in f16, so step 1 skips; growing every 3 good steps brings it back, so
# steps 1, 5 and 9 skip whatever the device's rounding (a gradient at the
# backed-off scale 32768 is far from overflowing).
F16 = ADAMW + ["--world-size=1", "--param-dtype=f16", "--loss-scale-growth-interval=3"]
# The low-precision negative controls' lr factor: at x 1.1 the CPU's BF16
# runs at lr 1e-3 and 1.1e-3 end 1.2e-2 apart in losses and 1.98e-3 in
# parameters (small models), inside GPU_LOW_PRECISION's bf16 bounds; at
# x 1.25, 2.5e-2 and 4.7e-3 (F16: 1.8e-2 and 3.4e-3), rejected.
LOW_PRECISION_LR_FACTOR = 1.25


class Failure(Exception):
    pass


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------

SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8",
                      "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1", "BOOL": "?"}


def safetensors_header(path):
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        return json.loads(f.read(size)), 8 + size


def read_safetensors(path):
    """{name: float64 or integer array}; bf16 widened exactly to f32."""
    header, start = safetensors_header(path)
    with open(path, "rb") as f:
        blob = f.read()[start:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in SAFETENSORS_DTYPES:
            raise Failure(f"{path}: tensor '{name}' has unsupported dtype {info['dtype']}")
        begin, end = info["data_offsets"]
        array = numpy.frombuffer(blob[begin:end], SAFETENSORS_DTYPES[info["dtype"]])
        if info["dtype"] == "BF16":
            array = (array.astype(numpy.uint32) << 16).view(numpy.float32)
        out[name] = array.reshape(info["shape"]).astype(array.dtype.newbyteorder("="))
    return out


def read_metrics(path, first, last):
    if not os.path.exists(path):
        raise Failure(f"no metrics file {path}")
    with open(path) as f:
        records = [json.loads(line) for line in f if line.strip()]
    steps = [r.get("step") for r in records]
    if steps != list(range(first, last + 1)):
        raise Failure(f"{path}: steps {steps}, expected {first}..{last}")
    return records


def bits(values):
    return numpy.asarray(values, dtype=numpy.float32).view(numpy.uint32).tolist()


# --------------------------------------------------------------------------
# Models (tests/models' families, exported with torch 1.13 like tests/e2e)
# --------------------------------------------------------------------------

@dataclass
class Model:
    family: str    # gpt | transformer | mlp
    mode: str      # train | eval
    output: str = "loss"  # or logits (the GPT without targets)
    dropout: float = 0.0


MODELS = {
    "gpt-train": Model("gpt", "train"),
    "gpt-eval": Model("gpt", "eval"),
    "gpt-logits": Model("gpt", "eval", output="logits"),
    "transformer-eval": Model("transformer", "eval"),
    "transformer-dropout-train": Model("transformer", "train", dropout=0.1),
    "mlp-train": Model("mlp", "train"),
    "mlp-eval": Model("mlp", "eval"),
}


class Models:
    """Exports each model once, on first use, with S = 2b + 1 samples of
    data (so sampling wraps around inside 10 steps)."""

    def __init__(self, tmp, size):
        self.tmp, self.size, self.done = tmp, SIZES[size], {}

    def get(self, key):
        if key not in self.done:
            self.done[key] = self.export(key, MODELS[key])
        return self.done[key]

    def export(self, key, m):
        import torch
        import export_models as em

        sizes = self.size
        config = dict(sizes[m.family])
        batch = sizes[f"{m.family}_batch"]
        torch.manual_seed(em.SEED)
        if m.family == "gpt":
            model = em.GPT(**config)
        elif m.family == "transformer":
            model = em.Seq2SeqTransformer(dropout=m.dropout, **config)
        else:
            model = em.MLPClassifier(**config)
        em.break_symmetry(model)
        model.train(m.mode == "train")
        gen = torch.Generator().manual_seed(em.SEED)
        if m.family == "gpt":
            example = em.gpt_inputs(gen, vocab=config["vocab"], T=config["T"], batch=batch)
        elif m.family == "transformer":
            example = em.transformer_inputs(gen, vocab=config["vocab"], T=config["T"], batch=batch)
        else:
            example = em.mlp_inputs(gen, batch=batch, in_dim=config["in_dim"],
                                    classes=config["classes"])
        if m.output == "logits":
            example = {"idx": example["idx"]}
        path = os.path.join(self.tmp, key + ".onnx")
        em.export(model, example, path, 17, m.mode, output=m.output)
        # Data: forward plans take the exact batch; training plans S samples.
        rng = numpy.random.default_rng(len(key))
        samples = batch if m.mode == "eval" else 2 * batch + 1
        inputs = {}
        for name, tensor in example.items():
            shape = [samples] + list(tensor.shape[1:])
            if tensor.dtype == torch.float32:
                array = rng.standard_normal(shape).astype(numpy.float32)
            else:
                high = config["classes"] if m.family == "mlp" else config["vocab"]
                array = rng.integers(0, high, shape).astype(numpy.int64)
            inputs[name] = os.path.join(self.tmp, f"{key}.{name}.npy")
            numpy.save(inputs[name], array)
        return {"onnx": path, "inputs": inputs, "config": config}


# --------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------

class Tools:
    def __init__(self, args, tmp, models):
        self.args, self.tmp, self.models = args, tmp, models
        self.count = 0
        self.plans = {}
        self.runs = {}

    def fresh(self, name):
        self.count += 1
        path = os.path.join(self.tmp, f"{self.count:03d}-{name}")
        os.makedirs(path)
        return path

    def call(self, command, expect_ok=True, timeout=None, env=None):
        timeout = timeout or self.args.timeout
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                 env=env)
        except subprocess.TimeoutExpired:
            raise Failure(f"no answer after {timeout} s (hung?): {' '.join(command)}")
        if expect_ok and out.returncode != 0:
            raise Failure(f"exit {out.returncode}: {' '.join(command)}\n"
                          f"{(out.stderr or out.stdout).strip()}")
        return out

    def plan(self, model, flags):
        """One plan per (model, flags), compiled once: every device runs the
        same file."""
        key = (model, tuple(flags))
        if key not in self.plans:
            path = os.path.join(self.fresh("plan"), "step.plan")
            self.call([self.args.fsdp_opt, self.models.get(model)["onnx"], "-o", path, *flags])
            self.plans[key] = path
        return self.plans[key]

    def input_flags(self, model):
        return [f"--input={n}={f}" for n, f in self.models.get(model)["inputs"].items()]

    def train(self, device, model, flags, steps=STEPS, extra=(), first=1, launcher=()):
        """(metrics records, {name: final parameter}, run dir) of one
        training run; identical requests reuse the first run's result.
        `launcher` prefixes the command (mpirun -np N ...)."""
        plan = self.plan(model, flags)
        key = (device, plan, steps, tuple(extra), tuple(launcher))
        if key in self.runs:
            return self.runs[key]
        # Open MPI refuses root unless told (CI and containers run as root).
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1") if launcher else None
        result = self.run_training([*launcher, self.args.fsdp_run, plan], device, steps,
                                   [*self.input_flags(model), *extra], first, env)
        self.runs[key] = result
        return result

    def run_training(self, program, device, steps, extra=(), first=1, env=None):
        """(metrics records, {name: final parameter}, run dir) of `program`
        (a command: fsdp-run and its plan, or a compiled step) training for
        `steps` steps on `device`."""
        work = self.fresh(f"train-{device}")
        metrics = os.path.join(work, "metrics.jsonl")
        weights = os.path.join(work, "weights.safetensors")
        self.call([*program, f"--device={device}", f"--steps={steps}",
                   f"--metrics={metrics}", f"--save-weights={weights}", *extra], env=env)
        return read_metrics(metrics, first, steps), read_safetensors(weights), work

    def forward(self, device, model, flags=("--mode=forward",)):
        """{output name: array} of one forward run."""
        plan = self.plan(model, list(flags))
        outputs = os.path.join(self.fresh(f"forward-{device}"), "outputs")
        self.call([self.args.fsdp_run, plan, f"--device={device}", f"--outputs={outputs}",
                   *self.input_flags(model)])
        files = sorted(f for f in os.listdir(outputs) if f.endswith(".npy"))
        if not files:
            raise Failure(f"fsdp-run --device={device} wrote no outputs")
        return {f[:-4]: numpy.load(os.path.join(outputs, f)) for f in files}


# --------------------------------------------------------------------------
# Comparisons (problems as text; a failed one shows the numbers)
# --------------------------------------------------------------------------

@dataclass
class Result:
    loss_rel: float = math.nan
    param_rel: float = math.nan
    problems: list = field(default_factory=list)
    notes: list = field(default_factory=list)  # printed under the row


def difference(ours, reference):
    """ours - reference elementwise, 0 where they are equal (so the -inf of
    a frozen causal mask compares equal to itself)."""
    ours, reference = numpy.asarray(ours, numpy.float64), numpy.asarray(reference, numpy.float64)
    with numpy.errstate(invalid="ignore"):
        return numpy.where(ours == reference, 0.0, ours - reference)


def relative_l2(ours, reference):
    reference = numpy.asarray(reference, numpy.float64)
    norm = numpy.linalg.norm(reference[numpy.isfinite(reference)])
    diff = numpy.linalg.norm(difference(ours, reference))
    return float(diff / norm) if norm > 0 else (0.0 if diff == 0 else math.inf)


def compute_dtype(flags):
    """The plan's --param-dtype (f32 without one)."""
    return next((f.split("=", 1)[1] for f in flags if f.startswith("--param-dtype=")), "f32")


def tolerance_for(device, flags):
    """The tolerance of a plan compiled with `flags` run on `device`: TIGHT
    but for 16-bit compute on a real GPU (GPU_LOW_PRECISION's why); the
    SIMT emulation's 16-bit GEMMs are its reference's (SIMT_REFERENCE_GEMM)."""
    if device == "cuda":
        return GPU_LOW_PRECISION.get(compute_dtype(flags), TIGHT)
    return TIGHT


def compare_losses(device, records, ref_records, result, reference=REFERENCE,
                   tolerance=LOSS_TOLERANCE):
    ours = numpy.array([r.get("loss") if r.get("loss") is not None else math.nan
                        for r in records], numpy.float64)
    theirs = numpy.array([r.get("loss") if r.get("loss") is not None else math.nan
                          for r in ref_records], numpy.float64)
    rel = numpy.abs(ours - theirs) / numpy.abs(theirs)
    result.loss_rel = float(numpy.max(rel)) if len(rel) else math.nan
    if not (numpy.all(numpy.isfinite(ours)) and result.loss_rel <= tolerance):
        lines = [f"losses differ (max rel {result.loss_rel:.2e}, tolerance {tolerance:g}):",
                 f"  {'step':>4} {reference:>16} {device:>16} {'rel':>9}"]
        for r, a, b, d in zip(records, theirs, ours, rel):
            flag = "  <--" if not d <= tolerance else ""
            lines.append(f"  {r['step']:>4} {a:>16.9g} {b:>16.9g} {d:>9.2e}{flag}")
        result.problems.append("\n".join(lines))


def compare_params(device, weights, ref_weights, result, tolerance=PARAM_TOLERANCE,
                   reference=REFERENCE):
    if sorted(weights) != sorted(ref_weights):
        result.problems.append(f"saved parameters differ: only on {device} "
                               f"{sorted(set(weights) - set(ref_weights))}, only on {reference} "
                               f"{sorted(set(ref_weights) - set(weights))}")
        return
    shapes = [n for n in ref_weights if weights[n].shape != ref_weights[n].shape]
    if shapes:
        result.problems.append("parameter shapes differ: " + ", ".join(
            f"{n} {list(weights[n].shape)} vs {list(ref_weights[n].shape)}" for n in shapes))
        return
    names = sorted(ref_weights)
    result.param_rel = relative_l2(numpy.concatenate([weights[n].ravel() for n in names]),
                                   numpy.concatenate([ref_weights[n].ravel() for n in names]))
    if not result.param_rel <= tolerance:
        worst = sorted(names, key=lambda n: -relative_l2(weights[n], ref_weights[n]))[:5]
        lines = [f"parameters rel L2 {result.param_rel:.2e} > {tolerance:g}; worst tensors:"]
        for n in worst:
            d = numpy.abs(difference(weights[n], ref_weights[n]))
            at = numpy.unravel_index(int(numpy.argmax(d)), d.shape) if d.size else ()
            lines.append(f"  {n} {list(ref_weights[n].shape)}: rel L2 "
                         f"{relative_l2(weights[n], ref_weights[n]):.2e}, max |diff| "
                         f"{d.max() if d.size else 0:.3e} at {list(map(int, at))} "
                         f"({reference} {ref_weights[n][at]!r}, {device} {weights[n][at]!r})")
        result.problems.append("\n".join(lines))


def compare_training(device, run, ref_run, reference=REFERENCE, tolerance=TIGHT):
    result = Result()
    compare_losses(device, run[0], ref_run[0], result, reference=reference,
                   tolerance=tolerance.loss)
    compare_params(device, run[1], ref_run[1], result, tolerance=tolerance.params,
                   reference=reference)
    return result


def bitwise(label, run, other):
    """Problems if two runs' losses or weights differ in any bit."""
    problems = []
    if bits([r["loss"] for r in run[0]]) != bits([r["loss"] for r in other[0]]):
        problems.append(f"{label}: losses {[r['loss'] for r in run[0]]} vs "
                        f"{[r['loss'] for r in other[0]]}")
    if sorted(run[1]) != sorted(other[1]) or any(
            not numpy.array_equal(run[1][n], other[1][n]) for n in run[1]):
        problems.append(f"{label}: the saved weights differ")
    return problems


# --------------------------------------------------------------------------
# Cases
# --------------------------------------------------------------------------

def forward_case(model, flags=("--mode=forward",)):
    def case(t, device):
        ours, ref = t.forward(device, model, flags), t.forward(REFERENCE, model, flags)
        tolerance = tolerance_for(device, flags).outputs
        result = Result()
        if sorted(ours) != sorted(ref):
            result.problems.append(f"outputs {sorted(ours)} vs {REFERENCE}'s {sorted(ref)}")
            return result
        worst = 0.0
        for name in ref:
            if ours[name].shape != ref[name].shape or ours[name].dtype != ref[name].dtype:
                result.problems.append(f"output {name}: {ours[name].dtype} "
                                       f"{list(ours[name].shape)} vs {ref[name].dtype} "
                                       f"{list(ref[name].shape)}")
                continue
            rel = relative_l2(ours[name], ref[name])
            worst = max(worst, rel)
            if not rel <= tolerance:
                d = numpy.abs(difference(ours[name], ref[name])).ravel()
                i = int(numpy.argmax(d))
                result.problems.append(
                    f"output {name}: rel L2 {rel:.2e} > {tolerance:g}; max |diff| "
                    f"{d[i]:.3e} at flat {i} ({REFERENCE} {ref[name].ravel()[i]!r}, "
                    f"{device} {ours[name].ravel()[i]!r})")
        result.loss_rel = worst
        return result
    return case


def train_case(model, flags):
    def case(t, device):
        return compare_training(device, t.train(device, model, flags),
                                t.train(REFERENCE, model, flags),
                                tolerance=tolerance_for(device, flags))
    return case


def attention_case(model, flags):
    """Training with the model's attention fused (fsdp-opt's default: one
    nn.attention per layer, the device's flash-style kernels), which the
    plan's summary must show, against the CPU; the same plan compiled
    --fuse-attention=off is the train_case row beside it."""
    def case(t, device):
        # Fusion is a stage-free rewrite: the summary takes no training flag.
        summary = t.call([t.args.fsdp_opt, t.models.get(model)["onnx"],
                          "--emit=summary"]).stdout
        fused = re.search(r"attention:\s+(\d+) fused into nn.attention.*", summary)
        result = train_case(model, flags)(t, device)
        if not fused or int(fused.group(1)) == 0:
            result.problems.append(f"no attention fused: {summary.strip()[-300:]}")
        else:
            result.notes.append(fused.group(0).strip())
        return result
    return case


def loss_scaling_case(model, flags):
    """A --param-dtype=f16 training comparison that also requires each
    step's loss scale and whether it skipped its update to be the CPU's
    exactly (a power of two and a yes or no: equal, or the runs went
    apart), and the run to have skipped a step and grown the scale after
    one, so the device ran found_inf, a skipped update and the growth."""
    def case(t, device):
        run, ref_run = t.train(device, model, flags), t.train(REFERENCE, model, flags)
        result = compare_training(device, run, ref_run, tolerance=tolerance_for(device, flags))
        ours = [(r.get("loss_scale"), r.get("skipped")) for r in run[0]]
        theirs = [(r.get("loss_scale"), r.get("skipped")) for r in ref_run[0]]
        scales = [scale for scale, _ in theirs]
        skipped = [r["step"] for r in ref_run[0] if r.get("skipped")]
        if ours != theirs:
            result.problems.append(f"(loss_scale, skipped) per step differ: {device} {ours}, "
                                   f"{REFERENCE} {theirs}")
        elif not skipped or not any(b > a for a, b in zip(scales, scales[1:])):
            result.problems.append(f"the run needs a skipped step and a grown scale: "
                                   f"(loss_scale, skipped) per step {theirs}")
        else:
            result.notes.append(f"skipped steps {skipped}, loss scales {scales}, as the CPU's")
        return result
    return case


def compare_metric(device, key, run, ref_run, result, tolerance=LOSS_TOLERANCE):
    """Problems if the runs' `key` values (a metric some steps log, as
    val_loss or grad_norm) differ beyond `tolerance` (relative) or are
    missing."""
    ours = [r[key] for r in run[0] if r.get(key) is not None]
    theirs = [r[key] for r in ref_run[0] if r.get(key) is not None]
    if not ours or len(ours) != len(theirs):
        result.problems.append(f"{key}: {device} logged {ours}, {REFERENCE} {theirs}")
        return
    worst = max(abs(a - b) / abs(b) for a, b in zip(ours, theirs))
    if not worst <= tolerance:
        result.problems.append(f"{key} differs (max rel {worst:.2e}): {device} {ours}, "
                               f"{REFERENCE} {theirs}")


def metric_case(model, flags, key, extra=lambda t, model: []):
    """A training comparison (losses, parameters) that also compares the
    metric `key` the plan's flags make the run log; `extra(t, model)` gives
    further fsdp-run flags."""
    def case(t, device):
        more = tuple(extra(t, model))
        run = t.train(device, model, flags, extra=more)
        ref_run = t.train(REFERENCE, model, flags, extra=more)
        tolerance = tolerance_for(device, flags)
        result = compare_training(device, run, ref_run, tolerance=tolerance)
        compare_metric(device, key, run, ref_run, result, tolerance=tolerance.loss)
        return result
    return case


def eval_flags(t, model):
    """Validation on the training samples' file, after steps 5 and 10."""
    return [f"--eval-input={n}={f}" for n, f in t.models.get(model)["inputs"].items()] + [
        "--eval-every=5", "--eval-batches=1"]


def mpirun(n):
    """The launcher of n processes on this machine (each picks GPU
    OMPI_COMM_WORLD_LOCAL_RANK), or None without mpirun."""
    found = shutil.which("mpirun")
    return [found, "-np", str(n), "--oversubscribe", "--bind-to", "none"] if found else None


def sharded_case(model, flags, launcher=()):
    """The device's run of a sharded plan (N ranks, in-process or under
    `launcher`) against the CPU's in-process run of the same plan file."""
    def case(t, device):
        return compare_training(device, t.train(device, model, flags, launcher=launcher),
                                t.train(REFERENCE, model, flags),
                                tolerance=tolerance_for(device, flags))
    return case


def sharded_cases(world_sizes):
    """The multi-rank rows for these world sizes (collectives on the
    device's channel: NCCL on cuda)."""
    cases = []
    for n in world_sizes:
        full = ADAMW + [f"--world-size={n}", "--shard=full", "--wrap=blocks"]
        cases.append(Case(f"train gpt --shard=full at N={n} (in-process)",
                          sharded_case("gpt-train", full)))
        launcher = mpirun(n)
        if launcher:
            cases.append(Case(f"train gpt --shard=full at N={n} (mpirun)",
                              sharded_case("gpt-train", full, launcher)))
        if n >= 4:
            hybrid = ADAMW + [f"--world-size={n}", "--shard=hybrid:2", "--wrap=blocks"]
            cases.append(Case(f"train gpt --shard=hybrid:2 at N={n}",
                              sharded_case("gpt-train", hybrid)))
    return cases


def world_sizes(device):
    """(world sizes to run sharded plans at, a note on those left out)."""
    if device == "cuda":
        gpus = len(gpu_probe.gpus()[0])
        sizes = [n for n in (2, 4, 8) if n <= gpus]
        left = [n for n in (2, 4, 8) if n > gpus]
        return sizes, (f"world sizes {left} not run: this machine has {gpus} GPU(s)"
                       if left else "")
    if device == "cpu":
        return [2, 4], ""
    return [], f"no world size > 1: --device={device} has no collectives"


def negative_case(flags, factor, tolerance):
    """The device's run of the GPT plan `flags` compile against a CPU run at
    lr x `factor` must fail the comparison at `tolerance`, on every device:
    the low-precision controls check the GPU's looser bounds wherever the
    suite runs."""
    lr = float(next(f for f in flags if f.startswith("--lr=")).split("=", 1)[1])

    def case(t, device):
        result = compare_training(device, t.train(device, "gpt-train", flags),
                                  t.train(REFERENCE, "gpt-train", flags,
                                          extra=(f"--lr={lr * factor:.9g}",)),
                                  tolerance=tolerance)
        verdict = Result(result.loss_rel, result.param_rel)
        if not result.problems:
            verdict.problems.append(f"the comparison (loss {tolerance.loss:g}, parameters "
                                    f"{tolerance.params:g}) accepted a {REFERENCE} run with "
                                    f"lr x {factor:g}")
        return verdict
    return case


def checkpoint_layout(ckpt):
    """{file: {tensor: (dtype, shape)} or None} of a step-N directory."""
    layout = {}
    for f in sorted(os.listdir(ckpt)):
        path = os.path.join(ckpt, f)
        if f.endswith(".safetensors"):
            header, _ = safetensors_header(path)
            layout[f] = {n: (i["dtype"], i["shape"]) for n, i in header.items()
                         if n != "__metadata__"}
        elif f.endswith(".fsdp"):  # the plan: the same file on every device
            with open(path, "rb") as plan:
                layout[f] = plan.read()
        else:  # COMMIT holds content hashes: present, not equal
            layout[f] = None
    return layout


def resume_case(t, device):
    """5 steps on one device, --save; resumed to step 10 on the other; both
    ways, each against the uninterrupted CPU run."""
    flags = ADAMW
    full = t.train(REFERENCE, "gpt-train", flags)
    result = Result(0.0, 0.0)
    layouts = {}
    for first, second in ((REFERENCE, device), (device, REFERENCE)):
        ckpt = os.path.join(t.fresh(f"ckpt-{first}"), "ckpt")
        t.train(first, "gpt-train", flags, steps=RESUME_AT, extra=(f"--save={ckpt}",))
        steps = sorted(os.listdir(ckpt)) if os.path.isdir(ckpt) else []
        if len(steps) != 1 or not steps[0].startswith("step-"):
            result.problems.append(f"--device={first} --save wrote {steps} into {ckpt}, "
                                   f"expected one step-N directory")
            continue
        step_dir = os.path.join(ckpt, steps[0])
        layouts[first] = checkpoint_layout(step_dir)
        resumed = t.train(second, "gpt-train", flags, extra=(f"--resume={ckpt}",),
                          first=RESUME_AT + 1)
        part = compare_training(second, resumed, (full[0][RESUME_AT:], full[1]))
        result.loss_rel = max(result.loss_rel, part.loss_rel)
        result.param_rel = max(result.param_rel, part.param_rel)
        result.problems += [f"saved on {first}, resumed on {second}: {p}" for p in part.problems]
    if len(layouts) == 2 and layouts[REFERENCE] != layouts[device]:
        result.problems.append(f"the checkpoints differ in files or tensors: {REFERENCE} "
                               f"{layouts[REFERENCE]}, {device} {layouts[device]}")
    return result


def bad_token_case(t, device):
    """A token id equal to the vocabulary size is refused on both devices."""
    entry = t.models.get("gpt-eval")
    bad = dict(entry["inputs"])
    idx = numpy.load(bad["idx"])
    idx[-1, -1] = entry["config"]["vocab"]
    bad["idx"] = os.path.join(t.fresh("bad-token"), "idx.npy")
    numpy.save(bad["idx"], idx)
    plan = t.plan("gpt-eval", ["--mode=forward"])
    result = Result()
    messages = {}
    for d in (REFERENCE, device):
        out = t.call([t.args.fsdp_run, plan, f"--device={d}",
                      *[f"--input={n}={f}" for n, f in bad.items()]], expect_ok=False)
        messages[d] = out.stderr.strip()
        if out.returncode != 1 or not messages[d]:
            result.problems.append(f"--device={d}: exit {out.returncode} (expected 1 with a "
                                   f"message): {messages[d] or out.stdout.strip()}")
    if result.problems:
        return result
    # Refused for the right reason: the CPU names the node ("error:
    # /tok_emb/Gather: ...") and the bad index; so must the device (a kernel
    # that is missing or crashes also exits 1).
    node = re.search(r"error: (\S+?):", messages[REFERENCE])
    for what in ([node.group(1)] if node else []) + [f"index {entry['config']['vocab']}"]:
        for d in (REFERENCE, device):
            if what not in messages[d]:
                result.problems.append(f"--device={d} does not say '{what}': {messages[d]}")
    result.notes += [f"{d}: {messages[d].splitlines()[-1]}" for d in (REFERENCE, device)]
    return result


GPT_TINY = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
SHAKESPEARE = os.path.join(ROOT, "examples", "shakespeare.txt")
STEP_BINARY_STEPS = 5


def step_binary_case(t, device):
    """./step (fsdp-opt --emit=binary) of the shipped gpt-tiny on `device`
    against fsdp-run of the plan the same flags compile, on `device` and on
    the CPU, on the same data; ./step --help names its PTX modules."""
    flags = ["--optimizer=adamw"]
    # Apart: each writes its weights file (step.safetensors) beside it.
    binary = os.path.join(t.fresh("step-binary"), "step")
    plan = os.path.join(t.fresh("step-plan"), "step.plan")
    work = os.path.dirname(binary)
    if t.args.runtime_lib and not os.path.exists(t.args.runtime_lib):
        raise Failure(f"{t.args.runtime_lib} is not built (ninja fsdp_runtime): "
                      f"fsdp-opt --emit=binary links it")
    env = dict(os.environ, FSDP_RUNTIME_LIB=t.args.runtime_lib) if t.args.runtime_lib else None
    t.call([t.args.fsdp_opt, GPT_TINY, "--emit=binary", "-o", binary, *flags], env=env)
    t.call([t.args.fsdp_opt, GPT_TINY, "-o", plan, *flags])
    tokens = os.path.join(work, "tokens.bin")
    with open(SHAKESPEARE, "rb") as f:  # byte-level ids, little-endian uint16
        numpy.frombuffer(f.read(), numpy.uint8).astype("<u2").tofile(tokens)
    data = [f"--data={tokens}"]
    result = Result(0.0, 0.0)
    ours = t.run_training([binary], device, STEP_BINARY_STEPS, data)
    for ref_device in dict.fromkeys([device, REFERENCE]):
        reference = t.run_training([t.args.fsdp_run, plan], ref_device, STEP_BINARY_STEPS, data)
        part = compare_training(f"./step {device}", ours, reference,
                                reference=f"fsdp-run {ref_device}")
        result.loss_rel = max(result.loss_rel, part.loss_rel)
        result.param_rel = max(result.param_rel, part.param_rel)
        result.problems += part.problems
    text = " ".join(t.call([binary, "--help"]).stdout.split())
    kernels = re.search(r"generated Fused kernels: (\d+) \(.*?PTX entries for (\d+)\)", text)
    if "PTX modules: sm_80, sm_90" not in text or not kernels or \
            int(kernels.group(1)) == 0 or kernels.group(1) != kernels.group(2):
        result.problems.append(f"./step --help does not name the sm_80 and sm_90 PTX modules "
                               f"and a PTX entry for each generated Fused kernel: {text}")
    else:
        result.notes.append(f"./step carries {kernels.group(1)} Fused kernels, PTX for "
                            f"sm_80 and sm_90")
    return result


# Cases that only a real GPU can run.

def determinism_case(t, device):
    first = t.train(device, "gpt-train", ADAMW)
    second = rerun(t, device, "gpt-train", ADAMW)
    return Result(0.0, 0.0, bitwise("two runs", first, second))


def rerun(t, device, model, flags, extra=()):
    """A second, uncached run of the same request."""
    key = (device, t.plan(model, flags), STEPS, tuple(extra))
    cached = t.runs.pop(key, None)
    try:
        return t.train(device, model, flags, extra=extra)
    finally:
        if cached is not None:
            t.runs[key] = cached


def resume_same_device_case(t, device):
    full = t.train(device, "gpt-train", ADAMW)
    ckpt = os.path.join(t.fresh("ckpt-same"), "ckpt")
    t.train(device, "gpt-train", ADAMW, steps=RESUME_AT, extra=(f"--save={ckpt}",))
    resumed = t.train(device, "gpt-train", ADAMW, extra=(f"--resume={ckpt}",),
                      first=RESUME_AT + 1)
    return Result(0.0, 0.0, bitwise("resumed vs uninterrupted",
                                    resumed, (full[0][RESUME_AT:], full[1])))


def graphs_case(t, device):
    on = t.train(device, "gpt-train", ADAMW)
    off = t.train(device, "gpt-train", ADAMW, extra=("--cuda-graphs=off",))
    return Result(0.0, 0.0, bitwise("--cuda-graphs=off vs on", off, on))


def tf32_case(t, device):
    """TF32 is off unless asked: --tf32 rounds GEMM inputs to 10 mantissa
    bits, so its losses must differ from the default run's."""
    default = t.train(device, "gpt-train", ADAMW)
    tf32 = t.train(device, "gpt-train", ADAMW, extra=("--tf32",))
    if bits([r["loss"] for r in default[0]]) == bits([r["loss"] for r in tf32[0]]):
        return Result(problems=["--tf32 gives the default run's losses bit for bit: is TF32 "
                                "on by default, or does --tf32 do nothing?"])
    result = compare_training(device, tf32, default)
    return Result(result.loss_rel, result.param_rel,
                  notes=["--tf32 against the default (information, no tolerance)"])


def default_device_case(t, device):
    """fsdp-run without --device picks the GPU: only the CUDA device reports
    device_context_bytes."""
    plan = t.plan("gpt-train", ADAMW)
    metrics = os.path.join(t.fresh("default-device"), "metrics.jsonl")
    t.call([t.args.fsdp_run, plan, "--steps=1", f"--metrics={metrics}",
            *t.input_flags("gpt-train")])
    record = read_metrics(metrics, 1, 1)[0]
    if "device_context_bytes" not in record:
        return Result(problems=[f"without --device, fsdp-run ran on the CPU: {record}"])
    return Result()


def memory_case(t, device):
    ours = t.train(device, "gpt-train", ADAMW)[0][-1]
    ref = t.train(REFERENCE, "gpt-train", ADAMW)[0][-1]
    result = Result()
    if ours.get("peak_bytes") != ref.get("peak_bytes"):
        result.problems.append(f"peak_bytes {ours.get('peak_bytes')} on {device}, "
                               f"{ref.get('peak_bytes')} on {REFERENCE} (both: the plan's bytes)")
    context = ours.get("device_context_bytes")
    if not isinstance(context, int) or context <= 0:
        result.problems.append(f"device_context_bytes is {context!r}, expected the CUDA "
                               f"context's own bytes (> 0)")
    else:
        result.notes.append(f"peak_bytes {ours['peak_bytes']}, device_context_bytes {context}")
    return result


def oversized_case(t, device):
    """A forward plan whose arena (an Expand to 260000 x 260000 f32, 252
    GiB) is larger than any single GPU's memory (H200: 141 GB, B200: 192
    GB): refused before the first step."""
    import onnx
    from onnx import TensorProto, helper

    path = os.path.join(t.fresh("oversized"), "big.onnx")
    shape = helper.make_tensor("shape", TensorProto.INT64, [2], [260000, 260000])
    graph = helper.make_graph(
        [helper.make_node("Constant", [], ["s"], value=shape),
         helper.make_node("Expand", ["x", "s"], ["y"]),
         helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
        "oversized", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    plan = path[:-5] + ".plan"
    t.call([t.args.fsdp_opt, path, "--mode=forward", "-o", plan])
    x = path[:-5] + ".x.npy"
    numpy.save(x, numpy.ones([1], numpy.float32))
    out = t.call([t.args.fsdp_run, plan, f"--device={device}", f"--input=x={x}"],
                 expect_ok=False, timeout=120)
    result = Result()
    message = out.stderr.strip()
    if out.returncode != 1 or "bytes" not in message or "available" not in message:
        result.problems.append(f"expected exit 1 naming the planned and available bytes; "
                               f"got exit {out.returncode}: {message or out.stdout.strip()}")
    else:
        result.notes.append(message.splitlines()[-1])
    return result


def gradcheck_case(t, device):
    script = os.path.join(ROOT, "tests", "e2e", "test_gradcheck.py")
    out = t.call([sys.executable, script, "--fsdp-opt", t.args.fsdp_opt, "--fsdp-run",
                  t.args.fsdp_run, f"--device={device}"], expect_ok=False, timeout=3600)
    tail = (out.stdout.strip().splitlines() or [""])[-1]
    if out.returncode != 0:
        failed = [line for line in out.stdout.splitlines() if "FAIL" in line]
        return Result(problems=[f"test_gradcheck.py --device={device}: exit "
                                f"{out.returncode}, {tail}\n" + "\n".join(failed[:20]) +
                                (out.stderr.strip()[-2000:] if not failed else "")])
    return Result(notes=[tail])


@dataclass
class Case:
    name: str
    run: object
    gpu_only: bool = False


CASES = [
    Case("forward gpt (loss)", forward_case("gpt-eval")),
    Case("forward gpt (logits)", forward_case("gpt-logits")),
    Case("forward transformer", forward_case("transformer-eval")),
    Case("forward mlp", forward_case("mlp-eval")),
    # .npy has no bf16: the bf16 plan casts its outputs to f32 (exactly).
    Case("forward gpt (logits) --param-dtype=bf16",
         forward_case("gpt-logits", ["--mode=forward", "--param-dtype=bf16",
                                     "--output-dtype=f32"])),
    Case("forward gpt (loss) --param-dtype=f16",
         forward_case("gpt-eval", ["--mode=forward", "--param-dtype=f16"])),
    Case("train gpt adamw (attention fused)", attention_case("gpt-train", ADAMW)),
    Case("train gpt --shard=full (world size 1)",
         train_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full", "--wrap=blocks"])),
    Case("train gpt --offload=cpu", train_case("gpt-train", ADAMW + ["--offload=cpu"])),
    Case("train gpt --ckpt=blocks", train_case("gpt-train", ADAMW + ["--ckpt=blocks"])),
    Case("train gpt --fuse-attention=off", train_case("gpt-train",
                                                       ADAMW + ["--fuse-attention=off"])),
    Case("train gpt --param-dtype=bf16 (attention fused)", attention_case("gpt-train", BF16)),
    Case("train gpt --param-dtype=bf16 sharded, ckpt",
         train_case("gpt-train", BF16 + ["--shard=full", "--wrap=blocks", "--ckpt=blocks",
                                         "--reduce-dtype=bf16"])),
    Case("train gpt --param-dtype=f16 (loss scaling)", loss_scaling_case("gpt-train", F16)),
    Case("train transformer dropout 0.1",
         train_case("transformer-dropout-train",
                    ADAMW_EPS6 + [f"--freeze={TRANSFORMER_BUFFERS}"])),
    Case("train mlp sgd nesterov", train_case("mlp-train", SGD_NESTEROV)),
    # A real training run (issue 19): what the compiler adds to the step.
    Case("train gpt --clip-grad-norm (clips every step)",
         metric_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full",
                                           "--clip-grad-norm=0.05"], "grad_norm")),
    Case("train gpt --clip-grad-norm --clip-norm-type=inf",
         metric_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full",
                                           "--clip-grad-norm=0.01", "--clip-norm-type=inf"],
                     "grad_norm")),
    Case("train gpt --grad-accum=2 --accum-reduce=each",
         train_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full", "--grad-accum=2",
                                          "--accum-reduce=each"])),
    Case("train gpt --grad-accum=2 --accum-reduce=last",
         train_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full", "--grad-accum=2",
                                          "--accum-reduce=last"])),
    Case("train gpt with validation (--eval-input)",
         metric_case("gpt-train", ADAMW + ["--world-size=1", "--shard=full"], "val_loss",
                     extra=eval_flags)),
    Case("negative: vs cpu at lr x1.1 must differ", negative_case(ADAMW, 1.1, TIGHT)),
    Case(f"negative: --param-dtype=bf16, cpu lr x{LOW_PRECISION_LR_FACTOR:g}",
         negative_case(BF16, LOW_PRECISION_LR_FACTOR, GPU_LOW_PRECISION["bf16"])),
    Case(f"negative: --param-dtype=f16, cpu lr x{LOW_PRECISION_LR_FACTOR:g}",
         negative_case(F16, LOW_PRECISION_LR_FACTOR, GPU_LOW_PRECISION["f16"])),
    Case("resume cpu->device and device->cpu", resume_case),
    Case("bad token id refused on both", bad_token_case),
    Case("compiled ./step gpt-tiny vs fsdp-run", step_binary_case),
    Case("two runs bitwise equal", determinism_case, gpu_only=True),
    Case("resume on the GPU bitwise", resume_same_device_case, gpu_only=True),
    Case("--cuda-graphs=off bitwise as on", graphs_case, gpu_only=True),
    Case("peak_bytes = plan, context apart", memory_case, gpu_only=True),
    Case("TF32 off unless --tf32", tf32_case, gpu_only=True),
    Case("no --device: the GPU", default_device_case, gpu_only=True),
    Case("plan larger than the GPU refused", oversized_case, gpu_only=True),
    Case("gradcheck (tests/e2e) on the GPU", gradcheck_case, gpu_only=True),
]


# --------------------------------------------------------------------------
# Does fsdp-run run on the device? (Whether a GPU is here: gpu_probe.py.)
# --------------------------------------------------------------------------

def probe_device(args, tmp, device):
    """Runs a two-node forward plan on `device`: (ok, fsdp-run's message)."""
    import onnx
    from onnx import TensorProto, helper

    path = os.path.join(tmp, "probe.onnx")
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "x"], ["y"]),
         helper.make_node("ReduceSum", ["y"], ["loss"], keepdims=0)],
        "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    plan, x = path[:-5] + ".plan", path[:-5] + ".x.npy"
    numpy.save(x, numpy.arange(4, dtype=numpy.float32))
    compiled = subprocess.run([args.fsdp_opt, path, "--mode=forward", "-o", plan],
                              capture_output=True, text=True)
    if compiled.returncode != 0:
        sys.exit(f"fsdp-opt cannot compile the probe model: {compiled.stderr.strip()}")
    out = subprocess.run([args.fsdp_run, plan, f"--device={device}", f"--input=x={x}"],
                         capture_output=True, text=True, timeout=300)
    return out.returncode == 0, (out.stderr or out.stdout).strip()


# --------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--runtime-lib", help="libfsdp_runtime.a, which --emit=binary links "
                        "(default: fsdp-opt's own lookup)")
    parser.add_argument("--device", required=True, help="cuda, cuda-simt (or cpu: self-check)")
    parser.add_argument("--size", choices=sorted(SIZES), default="small",
                        help="model size")
    parser.add_argument("--only", nargs="*", default=[], help="cases whose name contains one")
    parser.add_argument("--list", action="store_true", help="print the cases and exit")
    parser.add_argument("--keep", help="keep the models, plans and runs in this directory")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per fsdp-run")
    args = parser.parse_args()
    args.fsdp_opt, args.fsdp_run = os.path.abspath(args.fsdp_opt), os.path.abspath(args.fsdp_run)
    if args.runtime_lib:
        args.runtime_lib = os.path.abspath(args.runtime_lib)
    on_gpu = args.device == "cuda"
    sizes, sizes_note = world_sizes(args.device)
    cases = [c for c in CASES + sharded_cases(sizes)
             if (on_gpu or not c.gpu_only) and (not args.only or any(s in c.name for s in args.only))]
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    if not cases:
        sys.exit(f"--only {args.only} matched no case for --device={args.device}")

    if args.device == "cuda-simt":
        os.environ["FSDP_CPU_GEMM"] = SIMT_REFERENCE_GEMM
    tmp = args.keep or tempfile.mkdtemp(prefix="device-parity-")
    os.makedirs(tmp, exist_ok=True)
    try:
        if on_gpu:
            found, why = gpu_probe.gpus()
            if not found:
                ok, message = probe_device(args, tmp, "cuda")
                if not ok:
                    last = message.splitlines()[-1] if message else "no message"
                    print(f"no GPU: {len(cases)} GPU tests not run")
                    print(f"  ({why}; fsdp-run --device=cuda: {last})")
                    return SKIP_EXIT
                # fsdp-run found a GPU that libcuda did not: trust it, run.
        print(f"--device={args.device} against --device={REFERENCE}, one plan file each, "
              f"{args.size} models, {STEPS} steps; tolerances: loss {LOSS_TOLERANCE:g} rel per "
              f"step, parameters {PARAM_TOLERANCE:g} rel L2, outputs {OUTPUT_TOLERANCE:g} rel L2")
        if args.device == "cuda-simt":
            print(f"  the CPU's 16-bit GEMMs: FSDP_CPU_GEMM={SIMT_REFERENCE_GEMM}, the "
                  f"emulation's arithmetic")
        if on_gpu:
            print("  --param-dtype rows (cuBLAS's 16-bit GEMMs): " + "; ".join(
                f"{d}: loss {t.loss:g}, parameters {t.params:g}, outputs {t.outputs:g}"
                for d, t in GPU_LOW_PRECISION.items()))
        print(f"{'case':<44} {'max loss rel':>12} {'param rel L2':>12}  result {'s':>6}")
        if sizes_note:
            print(sizes_note)
        tools = Tools(args, tmp, Models(tmp, args.size))
        passed = failed = 0
        for case in cases:
            start = time.time()
            try:
                result = case.run(tools, args.device)
            except Failure as e:
                result = Result(problems=[str(e)])
            ok = not result.problems
            passed += ok
            failed += not ok
            fmt = lambda x: "-" if x is None or math.isnan(x) else f"{x:.2e}"
            print(f"{case.name:<44} {fmt(result.loss_rel):>12} {fmt(result.param_rel):>12}  "
                  f"{'PASS' if ok else 'FAIL':<6} {time.time() - start:>6.1f}", flush=True)
            for p in result.notes + result.problems:
                print("    " + p.replace("\n", "\n    "), flush=True)
        print(f"{passed} passed, {failed} failed")
        return 1 if failed else 0
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
