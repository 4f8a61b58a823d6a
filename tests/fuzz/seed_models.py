# The seeds that models and the tools make: ONNX files (the ONNX node
# tests, the lit tests' generators under tests/lit/frontends/onnx/Inputs
# and tiny exports of the three e2e model families of
# tests/models/export_models.py), the plans and weights fsdp-opt compiles
# from those exports, and the checkpoints fsdp-run saves from them. Tiny
# dimensions keep each file a few KiB, so the fuzzer's executions stay
# fast and mutations land in structure rather than in weight bytes (and
# libFuzzer's default -max_len, the largest seed, stays small; hence no
# examples/gpt-tiny.onnx, 430 KiB, whose GPT the tiny export already is).

import contextlib
import glob
import importlib
import inspect
import io
import os
import re
import subprocess
import sys

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
LIT_INPUTS = os.path.join(REPO, "tests/lit/frontends/onnx/Inputs")
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"
MAX_SMALL_SEED = 64 << 10

# The multi-file input of FuzzSupport.h (joinFiles): parts joined by the
# separator, each "NAME\n" followed by the file's bytes.
FILE_SEPARATOR = b"\n--fsdp-fuzz-file--\n"


def join_files(files):
    return FILE_SEPARATOR.join(name.encode() + b"\n" + data for name, data in files)


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def node_test_models():
    """The ONNX node tests' model files (Debian's libonnx-testdata)."""
    return sorted(p for p in glob.glob(os.path.join(NODE_TESTS, "*", "model.onnx"))
                  if os.path.getsize(p) <= MAX_SMALL_SEED)


def lit_models(tmp):
    """Every case of the lit tests' ONNX generators, hostile files included
    (external data files they write beside the model do not follow the
    model into the fuzzer's directory; the model alone still is a seed)."""
    sys.path.insert(0, LIT_INPUTS)
    seeds = []
    for script in sorted(glob.glob(os.path.join(LIT_INPUTS, "make_*.py"))):
        stem = os.path.basename(script)[:-3]
        module = importlib.import_module(stem)
        for case in sorted(module.CASES):
            out = os.path.join(tmp, stem, case, "model.onnx")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            make = module.CASES[case]
            with contextlib.redirect_stdout(io.StringIO()):
                if hasattr(module, "main"):
                    module.main(["make", case, out])
                elif inspect.signature(make).parameters:
                    make(out)
                else:
                    module.save(make(), out)
            if os.path.isfile(out) and os.path.getsize(out) <= MAX_SMALL_SEED:
                seeds.append((f"lit-{stem[5:]}-{case}.onnx", read_bytes(out)))
    sys.path.remove(LIT_INPUTS)
    return seeds


def self_contained_external_model():
    """The lit tests' external-data model (make_model.py's ext_model) with its
    weight's bytes inside the model file itself, as the raw data of an
    unused uint8 initializer, and the external data entry pointing there:
    location "model.onnx", the name the fuzz target gives its input, so
    the external data path is fuzzed too."""
    from onnx import numpy_helper

    sys.path.insert(0, LIT_INPUTS)
    make_model = importlib.import_module("make_model")
    sys.path.remove(LIT_INPUTS)
    weight = make_model.WEIGHT
    carrier = numpy_helper.from_array(numpy.frombuffer(weight.tobytes(), numpy.uint8), "bytes")
    offset = 0
    for _ in range(8):  # the offset's digits move the bytes they point at
        m = make_model.ext_model(weight, "model.onnx", offset=offset, length=weight.nbytes)
        m.graph.initializer.append(carrier)
        data = m.SerializeToString()
        found = data.find(weight.tobytes())
        if found == offset:
            return data
        offset = found
    raise RuntimeError("external data offset did not settle")


def torch_models(tmp):
    """Tiny exports of export_models.py's families, as the e2e tests make
    them (torch.onnx.export with the loss inside the graph, initializers
    kept): the GPT at opsets 14 and 17 (train, tied tanh, a logits graph),
    the residual MLP and the nn.Transformer (train and eval). Returns
    {stem: path}."""
    sys.path.insert(0, os.path.join(REPO, "tests/models"))
    export_models = importlib.import_module("export_models")
    import torch

    gpt = dict(vocab=16, T=8, d=8, heads=2, layers=2, mlp_ratio=2)
    variants = [
        ("gpt-op17-train", export_models.GPT, gpt, export_models.gpt_inputs, 17, "train"),
        ("gpt-op14-train", export_models.GPT, gpt, export_models.gpt_inputs, 14, "train"),
        ("gpt-tanh-tied-op17-train", export_models.GPT, dict(gpt, gelu="tanh", tied=True),
         export_models.gpt_inputs, 17, "train"),
        ("mlp-op17-train", export_models.MLPClassifier,
         dict(in_dim=4, d=8, hidden=[8, 16], layers=2, classes=3), export_models.mlp_inputs, 17,
         "train"),
        ("transformer-op17-train", export_models.Seq2SeqTransformer,
         dict(vocab=16, T=8, d=8, heads=2, layers=1, ff=16), export_models.transformer_inputs, 17,
         "train"),
        # The GPT has no dropout, so its eval export is its train export's
        # bytes; the Transformer's drops its Dropout nodes.
        ("transformer-op17-eval", export_models.Seq2SeqTransformer,
         dict(vocab=16, T=8, d=8, heads=2, layers=1, ff=16), export_models.transformer_inputs, 17,
         "eval"),
    ]
    os.makedirs(tmp, exist_ok=True)
    paths = {}
    for stem, cls, config, inputs, opset, mode in variants:
        torch.manual_seed(export_models.SEED)
        model = cls(**config)
        export_models.break_symmetry(model)
        model.train(mode == "train")
        gen = torch.Generator().manual_seed(export_models.SEED)
        if cls is export_models.MLPClassifier:
            example = inputs(gen, batch=4, in_dim=4, classes=3)
        else:
            example = inputs(gen, vocab=16, T=8, batch=2)
        paths[stem] = os.path.join(tmp, stem + ".onnx")
        export_models.export(model, example, paths[stem], opset, mode)
        if stem == "gpt-op17-train":  # the sampling graph of the same model
            paths["gpt-logits-op17"] = os.path.join(tmp, "gpt-logits-op17.onnx")
            export_models.export(model, {"idx": example["idx"][:1]}, paths["gpt-logits-op17"],
                                 17, "train", output="logits")
    sys.path.pop(0)
    return paths


def onnx_seeds(tmp):
    seeds = [("node-" + os.path.basename(os.path.dirname(p)) + ".onnx", read_bytes(p))
             for p in node_test_models()]
    seeds += lit_models(os.path.join(tmp, "lit"))
    seeds.append(("external-data-in-model.onnx", self_contained_external_model()))
    models = torch_models(os.path.join(tmp, "models"))
    seeds += [("export-" + stem + ".onnx", read_bytes(p)) for stem, p in models.items()]
    return seeds, models


# Plans of the tiny exports: (plan stem, model stem, fsdp-opt flags).
PLANS = [
    ("gpt-forward", "gpt-op17-train", ["--mode=forward"]),
    ("gpt-logits-forward", "gpt-logits-op17", ["--mode=forward"]),
    ("gpt-train", "gpt-op17-train", []),
    ("gpt-op14-train", "gpt-op14-train", ["--optimizer=sgd", "--lr=0.1", "--momentum=0.9"]),
    ("gpt-tied-train", "gpt-tanh-tied-op17-train", ["--fusion=none"]),
    ("gpt-w2-full", "gpt-op17-train", ["--world-size=2", "--shard=full", "--wrap=blocks"]),
    ("gpt-w2-grad-op", "gpt-op17-train", ["--world-size=2", "--shard=grad-op"]),
    ("gpt-w2-none", "gpt-op17-train", ["--world-size=2", "--shard=none"]),
    ("gpt-w4-hybrid", "gpt-op17-train", ["--world-size=4", "--shard=hybrid:2"]),
    ("gpt-ckpt-blocks", "gpt-op17-train", ["--ckpt=blocks"]),
    ("gpt-w2-prefetch", "gpt-op17-train", ["--world-size=2", "--prefetch=2",
                                           "--limit-all-gathers=3"]),
    ("gpt-offload", "gpt-op17-train", ["--offload=cpu"]),
    ("gpt-grad-accum", "gpt-op17-train", ["--grad-accum=2"]),
    ("gpt-w2-bf16", "gpt-op17-train", ["--world-size=2", "--param-dtype=bf16"]),
    ("gpt-f16", "gpt-op17-train", ["--param-dtype=f16"]),
    ("gpt-clip", "gpt-op17-train", ["--clip-grad-norm=1.0"]),
    ("gpt-w2-clip-inf", "gpt-op17-train", ["--world-size=2", "--clip-grad-norm=0.5",
                                           "--clip-norm-type=inf", "--ckpt=blocks"]),
    ("mlp-train", "mlp-op17-train", ["--no-decay=bias$"]),
    ("mlp-forward", "mlp-op17-train", ["--mode=forward"]),
    ("transformer-train", "transformer-op17-train", ["--freeze=^(pos\\.pe|tgt_mask)$"]),
]


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {result.returncode}: "
                           f"{result.stderr.strip()}")


def compile_plans(fsdp_opt, models, out):
    """Compiles PLANS into `out`; returns {plan stem: plan path}."""
    os.makedirs(out, exist_ok=True)
    plans = {}
    for stem, model, flags in PLANS:
        plans[stem] = os.path.join(out, stem + ".plan")
        run([fsdp_opt, models[model], *flags, "-o", plans[stem]])
    return plans


def weights_of(plan):
    return os.path.splitext(plan)[0] + ".safetensors"


def tokens_file(path, count=400, vocab=16):
    (numpy.arange(count) % vocab).astype(numpy.uint16).tofile(path)
    return path


# Checkpoint runs: (seed stem, plan stem, fsdp-run flags); each trains two
# steps and saves both.
CHECKPOINT_RUNS = [
    ("w1-sharded", "gpt-train", []),
    ("w1-full", "gpt-train", ["--save-format=full"]),
    ("w2-sharded", "gpt-w2-full", []),
    ("w1-f16-scaler", "gpt-f16", []),
]


def checkpoint_dirs(fsdp_run, plans, tmp):
    """Runs CHECKPOINT_RUNS; returns [(seed stem, step directory)]."""
    data = tokens_file(os.path.join(tmp, "tokens.bin"))
    dirs = []
    for stem, plan, flags in CHECKPOINT_RUNS:
        save = os.path.join(tmp, "ckpt-" + stem)
        run([fsdp_run, plans[plan], f"--data={data}", "--steps=2", f"--save={save}",
             "--save-every=1", *flags])
        dirs += [(f"{stem}-{step}", os.path.join(save, step))
                 for step in sorted(os.listdir(save)) if step.startswith("step-")]
    return dirs


def auto_commit(commit, carries_plan):
    """COMMIT with each file's size and hash, and the plan hash of a
    checkpoint that carries its plan, left for the fuzz target to fill in
    (CheckpointFuzzer.cpp's "auto"), so mutated files reach the loaders
    instead of stopping at the hash check. A full checkpoint's plan_hash
    names a plan it does not carry and stays as written."""
    commit = re.sub(rb"^file (\S+) \d+ [0-9a-fA-F]+$", rb"file \1 auto", commit, flags=re.M)
    if not carries_plan:
        return commit
    return re.sub(rb"^plan_hash [0-9a-fA-F]+$", rb"plan_hash auto", commit, flags=re.M)


def checkpoint_seeds(dirs):
    """Each step directory as one multi-file input, COMMIT first, with its
    numbers resolved by the target ("auto") and as written."""
    seeds = []
    for stem, path in dirs:
        names = sorted(os.listdir(path), key=lambda n: (n != "COMMIT", n))
        files = [(n, read_bytes(os.path.join(path, n))) for n in names]
        seeds.append((stem + "-auto.ckpt", join_files(
            [(n, auto_commit(b, "plan.fsdp" in names) if n == "COMMIT" else b)
             for n, b in files])))
        seeds.append((stem + "-as-written.ckpt", join_files(files)))
    return seeds


def safetensors_seeds(plans, dirs, tmp, fsdp_run):
    """The weights files beside the plans, the shards and full files of the
    checkpoints, and the --save-weights output of a run."""
    seeds = [(stem + ".safetensors", read_bytes(weights_of(p))) for stem, p in plans.items()]
    for stem, path in dirs:
        seeds += [(f"ckpt-{stem}-{n}", read_bytes(os.path.join(path, n)))
                  for n in sorted(os.listdir(path)) if n.endswith(".safetensors")]
    saved = os.path.join(tmp, "saved.safetensors")
    run([fsdp_run, plans["mlp-train"], "--input=x=" + npy(tmp, "x", numpy.ones((4, 4), "float32")),
         "--input=labels=" + npy(tmp, "labels", numpy.array([0, 1, 2, 0])), "--steps=1",
         f"--save-weights={saved}"])
    seeds.append(("save-weights-mlp.safetensors", read_bytes(saved)))
    return seeds


def npy(tmp, name, array):
    path = os.path.join(tmp, name + ".npy")
    numpy.save(path, array)
    return path


def runtime_npy_seeds(plans, tmp, fsdp_run):
    """.npy files the runtime itself writes (--outputs of a forward plan)."""
    out = os.path.join(tmp, "outputs")
    tokens = numpy.arange(16, dtype=numpy.int64).reshape(2, 8) % 16
    run([fsdp_run, plans["gpt-forward"], "--input=idx=" + npy(tmp, "idx", tokens),
         "--input=targets=" + npy(tmp, "targets", tokens), f"--outputs={out}"])
    logits = os.path.join(tmp, "logits-out")
    run([fsdp_run, plans["gpt-logits-forward"], "--input=idx=" + npy(tmp, "idx1", tokens[:1]),
         f"--outputs={logits}"])
    return [("fsdp-run-output-" + n, read_bytes(os.path.join(d, n)))
            for d in (out, logits) for n in sorted(os.listdir(d))]
