#!/usr/bin/python3
# Before/after check for refactors that must not change results: compiles
# the same models with the same flags using two builds' fsdp-opt, compares
# the plan files, the weights written beside them and the memory reports
# byte for byte, then trains each plan for a few steps with each build's
# fsdp-run and compares every step's loss (as printed, which round-trips
# exactly) and the saved weights byte for byte. Models: the embedded
# example GPT (training graph, and its logits graph as a forward plan), the
# torch-exported test families (GPT with tied and untied weights,
# torch.nn.Transformer with dropout, MLPs), exported once with
# tests/models/export_models.py, and the plan emitter's lit inputs (forward
# plans). Plans may differ only where a change meant to change the encoding
# (--allow-plan-diff); losses and weights must never differ, and a case
# both builds refuse must be refused with the same message. Prints one line
# per case and exits 1 on any difference.
#
#   scripts/compare-builds.py OLD_BIN_DIR NEW_BIN_DIR [--steps=3] [--quick]
#                             [--plans-only]

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# (name, flags, world size): the strategies, schedules, dtypes, offload and
# optimizers the e2e tests cover.
FLAG_SETS = [
    ("default", [], 1),
    ("forward", ["--mode=forward"], 1),
    ("full2", ["--world-size=2", "--shard=full"], 2),
    ("full2-ckpt-prefetch", ["--world-size=2", "--shard=full", "--ckpt=blocks", "--prefetch=1"], 2),
    ("full2-prefetch", ["--world-size=2", "--shard=full", "--prefetch=2"], 2),
    ("gradop2-ckpt", ["--world-size=2", "--shard=grad-op", "--ckpt=blocks"], 2),
    ("none2", ["--world-size=2", "--shard=none"], 2),
    ("hybrid4", ["--world-size=4", "--shard=hybrid:2", "--ckpt=selective"], 4),
    ("bf16", ["--world-size=2", "--shard=full", "--param-dtype=bf16"], 2),
    ("bf16-reduce", ["--world-size=2", "--shard=full", "--param-dtype=bf16",
                     "--reduce-dtype=bf16"], 2),
    ("offload", ["--world-size=2", "--shard=full", "--offload=cpu"], 2),
    ("sgd", ["--optimizer=sgd", "--lr=0.05", "--momentum=0.9", "--nesterov"], 1),
    ("sgd-plain", ["--optimizer=sgd", "--weight-decay=0"], 1),
    ("nofusion", ["--fusion=none", "--ckpt=blocks"], 1),
]
QUICK = {"default", "forward", "full2-prefetch", "hybrid4", "offload"}
# The emitter's lit inputs that compile standalone (forward plans, no weights).
LIT_INPUTS = ["plan-emitter", "plan-emitter-views", "plan-emitter-fused",
              "plan-emitter-slice-views"]


def run(command, **kwargs):
    out = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if out.returncode != 0:
        raise RuntimeError(" ".join(command) + "\n" + out.stderr.strip()[-2000:])
    return out.stdout


def same_file(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def export_models(workdir):
    """The test families (opset 17, training graphs) and their inputs."""
    outdir = os.path.join(workdir, "models")
    run(["/usr/bin/python3", os.path.join(ROOT, "tests", "models", "export_models.py"),
         outdir, "--only", "gpt-op17-train", "gpt-tanh-tied-op17-train",
         "transformer-dropout-op17-train", "mlp-op17-train", "mlp-op14-train"])
    with open(os.path.join(outdir, "manifest.json")) as f:
        manifest = json.load(f)
    models = [("gpt-tiny", os.path.join(ROOT, "examples", "gpt-tiny.onnx"), "tokens", 256),
              ("gpt-tiny-logits", os.path.join(ROOT, "examples", "gpt-tiny-logits.onnx"),
               "forward", None)]
    for entry in manifest["models"]:
        models.append((entry["file"].removesuffix(".onnx"),
                       os.path.join(outdir, entry["file"]), entry, None))
    for name in LIT_INPUTS:
        models.append((name, os.path.join(ROOT, "tests", "lit", "compiler", "Target",
                                          name + ".mlir"), "forward", None))
    return models


def inputs_for(model, workdir, world):
    """fsdp-run data flags: a token file for GPTs, random .npy rows otherwise."""
    name, path, entry, vocab = model
    rng = numpy.random.default_rng(7)
    if entry == "tokens" or name.startswith("gpt"):
        vocab = vocab or entry["config"].get("vocab", 64)
        tokens = os.path.join(workdir, f"{name}.bin")
        rng.integers(0, vocab, 40000, dtype=numpy.uint16).tofile(tokens)
        return [f"--data={tokens}"]
    flags = []
    for inp in entry["inputs"]:
        shape = [inp["shape"][0] * world * 4] + inp["shape"][1:]
        if inp["dtype"].startswith("float"):
            value = rng.standard_normal(shape).astype(numpy.float32)
        else:
            high = entry["config"].get("vocab", entry["config"].get("classes", 10))
            value = rng.integers(0, high, shape).astype(numpy.int64)
        file = os.path.join(workdir, f"{name}-{inp['name']}-{world}.npy")
        numpy.save(file, value)
        flags.append(f"--input={inp['name']}={file}")
    return flags


def compile_plan(bindir, path, flags, d):
    """Plan, weights and report of one build; the refusal message on failure."""
    plan = os.path.join(d, "step.plan")
    try:
        run([os.path.join(bindir, "fsdp-opt"), path, *flags, "-o", plan])
        report = run([os.path.join(bindir, "fsdp-opt"), path, *flags, "--emit=report",
                      "--report-format=json"])
    except RuntimeError as e:
        return None, str(e).split("\n", 1)[-1]
    return dict(plan=plan, weights_file=os.path.join(d, "step.safetensors"),
                report=report), None


def train(bindir, plan, flags, d, steps):
    """Every step's loss as printed, and the trained weights' file."""
    metrics = os.path.join(d, "metrics.jsonl")
    weights = os.path.join(d, "weights.safetensors")
    run([os.path.join(bindir, "fsdp-run"), plan, f"--steps={steps}", f"--metrics={metrics}",
         f"--save-weights={weights}", *flags],
        env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    with open(metrics) as f:
        return [json.loads(line)["loss"] for line in f if line.strip()], weights


def compare_case(args, model, flag_set, workdir):
    """What differs between the builds (empty: nothing), and the losses."""
    name, path, kind = model[0], model[1], model[2]
    label, flags, world = flag_set
    trains = label != "forward" and not args.plans_only
    out, refusal = {}, {}
    for side, bindir in (("old", args.old), ("new", args.new)):
        d = os.path.join(workdir, f"{name}-{label}-{side}")
        os.makedirs(d)
        out[side], refusal[side] = compile_plan(bindir, path, flags, d)
        if out[side] and trains:
            out[side]["losses"], out[side]["weights"] = train(
                bindir, out[side]["plan"], inputs_for(model, workdir, world), d, args.steps)
    if refusal["old"] or refusal["new"]:
        if refusal["old"] and refusal["new"]:
            return ([] if refusal["old"] == refusal["new"] else ["different refusals"]), "refused"
        return [f"only the {'old' if refusal['old'] else 'new'} build refuses"], None
    old, new = out["old"], out["new"]
    problems = []
    if not same_file(old["plan"], new["plan"]) and not args.allow_plan_diff:
        problems.append("plan files differ")
    if os.path.exists(old["weights_file"]) != os.path.exists(new["weights_file"]) or (
            os.path.exists(old["weights_file"])
            and not same_file(old["weights_file"], new["weights_file"])):
        problems.append("initial weights differ")
    if old["report"] != new["report"]:
        problems.append("reports differ")
    if trains:
        if old["losses"] != new["losses"]:
            problems.append(f"losses differ: {old['losses']} vs {new['losses']}")
        if not same_file(old["weights"], new["weights"]):
            problems.append("trained weights differ")
    return problems, old.get("losses", "plan only")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("old", help="bin directory of the build before the change")
    ap.add_argument("new", help="bin directory of the build after the change")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="a subset of the flag sets")
    ap.add_argument("--plans-only", action="store_true",
                    help="compare plans, weights and reports; train nothing")
    ap.add_argument("--allow-plan-diff", action="store_true",
                    help="the change alters the plan encoding; compare results only")
    args = ap.parse_args()
    failed = passed = 0
    with tempfile.TemporaryDirectory() as workdir:
        models = export_models(workdir)
        for model in models:
            for flag_set in FLAG_SETS:
                if args.quick and flag_set[0] not in QUICK:
                    continue
                if model[2] == "forward" and flag_set[0] != "forward":
                    continue  # a forward graph or lit input: forward plans only
                label = f"{model[0]} {flag_set[0]}"
                try:
                    problems, losses = compare_case(args, model, flag_set, workdir)
                except RuntimeError as e:
                    problems, losses = [f"failed: {e}"], []
                if problems:
                    failed += 1
                    print(f"DIFF {label}: {'; '.join(problems)}", flush=True)
                else:
                    passed += 1
                    print(f"same {label}: {losses}", flush=True)
    print(f"{passed} identical, {failed} different")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
