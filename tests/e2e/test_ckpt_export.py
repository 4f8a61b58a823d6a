#!/usr/bin/env python3
"""fsdp-ckpt export: a checkpoint's trained parameters as safetensors or ONNX.

Trains the shipped byte-level GPT 3 steps at --world-size=2 --shard=full on
examples/shakespeare.txt, once saving a sharded checkpoint and once a full
one (each with --save-weights=W), and checks, one row each:

  - `export DIR --safetensors` writes W's tensors bit for bit, in the same
    bytes as --save-weights (sharded checkpoint, and a full one given as
    its step-N directory);
  - `export DIR --onnx=examples/gpt-tiny.onnx` writes a model that
    onnx.checker accepts, whose initializers are W's tensors where W has
    them and the source model's elsewhere, with the source's graph; at
    least one initializer changed;
  - the exported model runs: its forward plan's loss is bit for bit the
    source model's forward plan run with --weights=W, and differs from the
    untrained model's; exported into the inference model
    (examples/gpt-tiny-logits.onnx, same initializers), its logits equal
    that model's with --weights=W;
  - refusals, exit code 1 and a message naming the tensor, file or flag:
    a model whose initializer has another shape, one missing a
    parameter's initializer, a garbage file and a safetensors file as
    --onnx, no -o, an unknown flag, both --onnx and --safetensors; no
    output file is left behind.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_train_parity as tp  # noqa: E402  (read_safetensors)
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
LOGITS_MODEL = os.path.join(ROOT, "examples", "gpt-tiny-logits.onnx")
TEXT = os.path.join(ROOT, "examples", "shakespeare.txt")


class Failure(Exception):
    pass


def run(command, expect_ok=True):
    out = subprocess.run(command, capture_output=True, text=True, timeout=300)
    if expect_ok and out.returncode != 0:
        raise Failure(f"{' '.join(command)} failed:\n{out.stderr.strip()}")
    return out


def same_tensors(got, want):
    """Problems if the two {name: array} maps differ in names, dtypes,
    shapes or bits."""
    if sorted(got) != sorted(want):
        return [f"tensor names differ: {sorted(set(got) ^ set(want))[:6]}"]
    differing = [k for k in want if (got[k].dtype, got[k].shape) != (want[k].dtype, want[k].shape)
                 or got[k].tobytes() != want[k].tobytes()]
    return [f"{len(differing)} tensors differ, e.g. {differing[:3]}"] if differing else []


class Session:
    """The shared runs: one training plan, a sharded and a full checkpoint
    with the weights each run saved, and a batch for the forward plans."""

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        with open(TEXT, "rb") as f:
            data = f.read()
        tokens = os.path.join(tmp, "tokens.bin")
        with open(tokens, "wb") as f:  # byte-level ids as raw little-endian uint16
            f.write(b"".join(bytes((b, 0)) for b in data))
        plan = self.path("train.plan")
        run([args.fsdp_opt, MODEL, "--world-size=2", "--shard=full", "-o", plan])
        self.ckpt = {}
        self.weights = {}
        for fmt in ("sharded", "full"):
            self.ckpt[fmt], self.weights[fmt] = self.path(f"ckpt-{fmt}"), self.path(f"w-{fmt}.safetensors")
            run([args.fsdp_run, plan, f"--data={tokens}", "--steps=3", f"--save={self.ckpt[fmt]}",
                 f"--save-format={fmt}", f"--save-weights={self.weights[fmt]}"])
        # The forward batch: 16 rows of 64 bytes of the text and the next byte of each.
        # The inference model takes one row.
        ids = numpy.frombuffer(data[:16 * 64 + 1], dtype=numpy.uint8).astype(numpy.int64)
        arrays = {"idx": ids[:-1].reshape(16, 64), "targets": ids[1:].reshape(16, 64),
                  "row": ids[:64].reshape(1, 64)}
        for name, value in arrays.items():
            numpy.save(self.path(f"{name}.npy"), value)
        self.batch = {"idx": self.path("idx.npy"), "targets": self.path("targets.npy")}
        self.row = {"idx": self.path("row.npy")}

    def path(self, name):
        return os.path.join(self.tmp, name)

    def export(self, *flags, expect_ok=True):
        return run([self.args.fsdp_ckpt, "export", *flags], expect_ok)

    def forward(self, model, output, *extra, inputs=None):
        """`output` of `model`'s forward plan on `inputs` (default: the
        batch) as (dtype, shape, bytes)."""
        stem = self.path(f"fwd-{len(os.listdir(self.tmp))}")
        run([self.args.fsdp_opt, model, "--mode=forward", "-o", stem + ".plan"])
        run([self.args.fsdp_run, stem + ".plan", f"--outputs={stem}", *extra,
             *[f"--input={n}={f}" for n, f in (inputs or self.batch).items()]])
        value = numpy.load(os.path.join(stem, output + ".npy"))
        return value.dtype, value.shape, value.tobytes()


def safetensors_row(s, fmt, source):
    out = s.path(f"export-{fmt}.safetensors")
    s.export(source, "--safetensors", "-o", out)
    problems = same_tensors(tp.read_safetensors(out), tp.read_safetensors(s.weights[fmt]))
    with open(out, "rb") as a, open(s.weights[fmt], "rb") as b:
        if a.read() != b.read():
            problems.append("file bytes differ from --save-weights' (metadata or layout)")
    return problems


def initializers(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def onnx_row(s):
    out = s.path("trained.onnx")
    s.export(s.ckpt["sharded"], f"--onnx={MODEL}", "-o", out)
    problems = []
    try:
        onnx.checker.check_model(out)
    except Exception as e:  # noqa: BLE001  (any checker complaint fails the row)
        problems.append(f"onnx.checker: {e}")
    source, trained = onnx.load(MODEL), onnx.load(out)
    weights = tp.read_safetensors(s.weights["sharded"])
    got, before = initializers(trained), initializers(source)
    if sorted(got) != sorted(before):
        problems.append(f"initializer names changed: {sorted(set(got) ^ set(before))[:6]}")
    missing = sorted(set(weights) - set(got))
    if missing:
        problems.append(f"parameters with no initializer: {missing[:6]}")
    problems += same_tensors({k: got[k] for k in weights if k in got}, weights)
    untouched = {k: v for k, v in got.items() if k not in weights}
    problems += [f"untouched initializers: {p}"
                 for p in same_tensors(untouched, {k: before[k] for k in untouched})]
    if not untouched:
        problems.append("every initializer is a parameter: nothing checks untouched ones")
    if all(got[k].tobytes() == before[k].tobytes() for k in got if k in before):
        problems.append("no initializer changed: the export wrote the source values")
    if list(trained.graph.node) != list(source.graph.node):
        problems.append("the graph's nodes changed")
    return problems


def forward_row(s):
    trained = s.path("trained.onnx")
    if not os.path.exists(trained):
        s.export(s.ckpt["sharded"], f"--onnx={MODEL}", "-o", trained)
    problems = []
    exported = s.forward(trained, "loss")
    reference = s.forward(MODEL, "loss", f"--weights={s.weights['sharded']}")
    untrained = s.forward(MODEL, "loss")
    if exported != reference:
        problems.append(f"loss {numpy.frombuffer(exported[2], exported[0])} != the source "
                        f"model's with --weights {numpy.frombuffer(reference[2], reference[0])}")
    if exported == untrained:
        problems.append("the exported model's loss is the untrained model's")
    inference = s.path("trained-logits.onnx")
    s.export(s.ckpt["full"], f"--onnx={LOGITS_MODEL}", "-o", inference)
    logits = s.forward(inference, "logits", inputs=s.row)
    reference = s.forward(LOGITS_MODEL, "logits", f"--weights={s.weights['full']}", inputs=s.row)
    untrained = s.forward(LOGITS_MODEL, "logits", inputs=s.row)
    if logits != reference:
        problems.append("exported inference model's logits != the source's with --weights")
    if logits == untrained:
        problems.append("the exported inference model's logits are the untrained model's")
    return problems


def refused(s, flags, pattern, output):
    out = s.export(*flags, expect_ok=False)
    problems = []
    if out.returncode != 1:
        problems.append(f"exit code {out.returncode}, not 1 (stderr: {out.stderr.strip()[-300:]})")
    elif not re.search(pattern, out.stderr):
        problems.append(f"stderr does not match {pattern!r}: {out.stderr.strip()[-300:]}")
    if output and os.path.exists(output):
        problems.append(f"{output} was written")
    return problems


def refusal_rows(s):
    ckpt = s.ckpt["sharded"]
    out = s.path("refused.onnx")
    source = onnx.load(MODEL)
    reshaped = onnx.ModelProto()
    reshaped.CopyFrom(source)
    head = next(t for t in reshaped.graph.initializer if t.name == "head.weight")
    head.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(head)[:-1], "head.weight"))
    onnx.save(reshaped, s.path("reshaped.onnx"))
    lacking = onnx.ModelProto()
    lacking.CopyFrom(source)
    kept = [t for t in lacking.graph.initializer if t.name != "ln_f.bias"]
    del lacking.graph.initializer[:]
    lacking.graph.initializer.extend(kept)
    onnx.save(lacking, s.path("lacking.onnx"))
    garbage = s.path("garbage.onnx")
    with open(garbage, "wb") as f:
        f.write(b"this is not an ONNX model\n" * 40)
    weights = s.weights["sharded"]
    return [
        ("refused: a model whose initializer has another shape (names the tensor)",
         refused(s, [ckpt, f"--onnx={s.path('reshaped.onnx')}", "-o", out],
                 r"initializer 'head\.weight' is float\[\d+,\d+\] but the checkpoint's", out)),
        ("refused: a model without a parameter's initializer (names the tensor)",
         refused(s, [ckpt, f"--onnx={s.path('lacking.onnx')}", "-o", out],
                 r"has no initializer 'ln_f\.bias'", out)),
        ("refused: a garbage file as --onnx (names the file)",
         refused(s, [ckpt, f"--onnx={garbage}", "-o", out],
                 re.escape(garbage) + r": not a valid ONNX protobuf", out)),
        ("refused: a safetensors file as --onnx (names the file)",
         refused(s, [ckpt, f"--onnx={weights}", "-o", out], re.escape(weights) + ": not ", out)),
        ("refused: no -o", refused(s, [ckpt, "--safetensors"], r"no output file", None)),
        ("refused: an unknown flag",
         refused(s, [ckpt, "--safetensors", "--bogus", "-o", out], r"unknown option '--bogus'", out)),
        ("refused: both --onnx and --safetensors",
         refused(s, [ckpt, "--safetensors", f"--onnx={MODEL}", "-o", out], r"exactly one of", out)),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--fsdp-ckpt", required=True)
    args = ap.parse_args()
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="ckpt-export-") as tmp:
        results = []
        try:
            s = Session(args, tmp)
        except Failure as e:
            results.append(("training the checkpoints", [str(e)]))
        else:
            rows = [
                ("export --safetensors of a sharded checkpoint = --save-weights",
                 lambda: safetensors_row(s, "sharded", s.ckpt["sharded"])),
                ("export --safetensors of a full checkpoint (its step-N directory) = "
                 "--save-weights", lambda: safetensors_row(
                     s, "full", os.path.join(s.ckpt["full"], "step-00000003"))),
                ("export --onnx: checker passes, trained initializers, the rest untouched",
                 lambda: onnx_row(s)),
                ("exported model runs: forward = source with --weights, != untrained",
                 lambda: forward_row(s)),
            ]
            results = rows_report.collect(rows, [("refusals", lambda: refusal_rows(s))], Failure)
    return rows_report.report(results, f" ({time.time() - start:.1f} s)")


if __name__ == "__main__":
    sys.exit(main())
