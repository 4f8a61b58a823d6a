#!/usr/bin/python3
# Activation checkpointing changes memory, never results (docs/design.md's
# numerics contract). For the GPT and nn.Transformer families exported by
# tests/models/export_models.py, each configuration (world size 1 without
# FSDP flags, world size 2 with --shard=full --wrap=blocks) is compiled with
# --ckpt=none, blocks and selective and trained for a few steps by fsdp-run;
# the per-step losses (metrics jsonl) and the saved weights (--save-weights)
# of blocks and selective must be bitwise those of none.
#
# Memory comes from `fsdp-opt --emit=report --report-format=json` for the
# same flags: activations_bytes (the largest activation bytes live at any
# instruction) must fall under blocks and under selective, and blocks must
# keep no more than selective. A plan that ignored --ckpt would pass the
# bitwise rows, so each checkpointed plan must also hold more instructions
# than none's (the recomputed forward ops, read from `fsdp-run --dump`).
#
# --ckpt=auto on unequal blocks: a residual MLP of ten blocks, blocks 5
# and 7 four times wider than the rest, under a budget between the plans
# without and with every block recomputed. Every block costs the same to
# recompute, so the note must name fewer blocks than the first-k rule
# needs (its k found by planning the first 1, 2, ... blocks through the
# recompute pass's blocks= option), and not the first blocks; the plan
# must fit the budget at the noted peak and train bitwise as --ckpt=none.
#
# Prints a table (configuration, activations, peak, ratios to none, bits
# equal), then "N passed, M failed"; any failure fails the test.
#
#   /usr/bin/python3 tests/e2e/test_checkpointing.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--keep DIR]

import argparse
import contextlib
import json
import os
import re
import shutil
import sys
import tempfile

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_fsdp_parity as fp  # noqa: E402  (models, optimizer settings, same_bits)
import test_train_parity as tp  # noqa: E402  (export, data, metrics, safetensors)

STEPS = 3
MODELS = [fp.GPT, fp.TRANSFORMER]
# (label, fsdp-opt distribution flags, world size)
WORLDS = [("N=1", [], 1), ("N=2 full", ["--world-size=2", "--shard=full", "--wrap=blocks"], 2)]
CKPTS = ["none", "blocks", "selective"]
# The unequal MLP: widths per block, and where between the peaks without
# (0) and with every block recomputed (1) the --ckpt=auto budget lies.
UNEQUAL_WIDTHS = [16, 16, 16, 16, 16, 64, 16, 64, 16, 16]
UNEQUAL_BUDGET = 0.2


# One failure type for this file's commands and test_train_parity's readers
# (metrics, safetensors), so either becomes a FAIL row.
Failure = tp.Failure


def run(command):
    return fp.run(command).stdout


def dataset(tmp, entry, model, world):
    b = entry["inputs"][0]["shape"][0]
    workdir = os.path.join(tmp, f"data-{model}-{world}")
    os.makedirs(workdir, exist_ok=True)
    files = {}
    for name, array in tp.make_dataset(entry, 2 * b * world + 1, seed=7 * world).items():
        files[name] = os.path.join(workdir, f"{name}.npy")
        numpy.save(files[name], array)
    return files


def configuration(args, tmp, model, onnx_path, flags, world, ckpt, inputs):
    """Compiles, reports and trains one configuration: (records, weights),
    the JSON report and the plan's instruction count."""
    optim, freeze = fp.SETUP[model]
    compile_flags = flags + optim.flags() + [f"--ckpt={ckpt}"]
    if freeze:
        compile_flags.append(f"--freeze={freeze}")
    stem = os.path.join(tmp, f"{model}-{world}-{ckpt}")
    run([args.fsdp_opt, onnx_path, "-o", stem + ".plan"] + compile_flags)
    report = json.loads(run([args.fsdp_opt, onnx_path, "--emit=report", "--report-format=json"]
                            + compile_flags))
    dump = run([args.fsdp_run, stem + ".plan", "--dump"])
    instructions = sum(line.startswith("inst ") for line in dump.splitlines())
    metrics, weights = stem + ".jsonl", stem + ".safetensors"
    run([args.fsdp_run, stem + ".plan", f"--steps={STEPS}", f"--metrics={metrics}",
         f"--save-weights={weights}"] + [f"--input={n}={f}" for n, f in inputs.items()])
    return (tp.read_metrics(metrics, STEPS), tp.read_safetensors(weights)), report, instructions


def peak_of(args, onnx_path, flags):
    report = run([args.fsdp_opt, onnx_path, "--emit=report", "--report-format=json"] + flags)
    return json.loads(report)["peak_bytes"]


def first_k_fitting(args, tmp, onnx_path, budget, count):
    """The least k whose first k blocks fit `budget`, and that plan's peak."""
    train = os.path.join(tmp, "mlp-unequal-train.mlir")
    run([args.fsdp_opt, onnx_path, "--stop-after=train", "--emit=mlir", "-o", train])
    for k in range(1, count + 1):
        blocks = ",".join(str(i) for i in range(k))
        step = os.path.join(tmp, f"mlp-unequal-first{k}.mlir")
        run([args.fsdp_opt, train, "-o", step,
             f"--pass-pipeline=builtin.module(fsdp-recompute-activations{{blocks={blocks}}})"])
        peak = peak_of(args, step, [])
        if peak <= budget:
            return k, peak
    return None, None


@contextlib.contextmanager
def quiet():
    """Silences stdout (the model exporter prints a line per file)."""
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        yield


def unequal_auto_case(args, tmp):
    """--ckpt=auto on the unequal MLP: (row text, problems)."""
    em = tp.export_models
    variant = em.variant("mlp", 17, "train", em.MLPClassifier,
                         lambda gen: em.mlp_inputs(gen, batch=256), tags=("unequal",),
                         d=16, hidden=UNEQUAL_WIDTHS, layers=len(UNEQUAL_WIDTHS))
    with quiet():  # the exporter's per-file line
        entry = em.run_variant(variant, tmp)
    onnx_path = os.path.join(tmp, entry["file"])
    inputs = dataset(tmp, entry, "mlp-unequal", 1)
    none_peak = peak_of(args, onnx_path, ["--ckpt=none"])
    all_peak = peak_of(args, onnx_path, ["--ckpt=blocks"])
    budget = int(none_peak - UNEQUAL_BUDGET * (none_peak - all_peak))
    problems = []
    results, notes = {}, {}
    for ckpt, flags in [("none", []), ("auto", [f"--mem-budget={budget}"])]:
        stem = os.path.join(tmp, f"mlp-unequal-{ckpt}")
        notes[ckpt] = fp.run([args.fsdp_opt, onnx_path, "-o", stem + ".plan", f"--ckpt={ckpt}"]
                          + flags).stderr
        metrics, weights = stem + ".jsonl", stem + ".safetensors"
        run([args.fsdp_run, stem + ".plan", f"--steps={STEPS}", f"--metrics={metrics}",
             f"--save-weights={weights}"] + [f"--input={n}={f}" for n, f in inputs.items()])
        results[ckpt] = (tp.read_metrics(metrics, STEPS), tp.read_safetensors(weights))
    note = re.search(r"recomputing blocks? (\S+) of the \d+ blocks \(\+(.*?) by the cost model\): "
                     r"planned peak .*?\((\d+) B\)", notes["auto"])
    chosen = note.group(1) if note else "-"
    first_k, first_k_peak = first_k_fitting(args, tmp, onnx_path, budget, len(UNEQUAL_WIDTHS))
    if not note:
        problems.append(f"no --ckpt=auto choice in: {notes['auto'].strip()}")
    else:
        blocks = set()
        for part in chosen.split(","):
            first, _, last = part.partition("-")
            blocks.update(range(int(first), int(last or first) + 1))
        if blocks == set(range(len(blocks))):
            problems.append(f"chose blocks {chosen}: the first k, not the cheapest set")
        if 5 not in blocks:
            problems.append(f"chose blocks {chosen} without the wide block 5")
        if first_k is None or len(blocks) >= first_k:
            problems.append(f"chose {len(blocks)} blocks, the first-k rule {first_k}")
        peak = int(note.group(3))
        if peak > budget:
            problems.append(f"planned peak {peak} over the budget {budget}")
        reported = peak_of(args, onnx_path, ["--ckpt=auto", f"--mem-budget={budget}"])
        if reported != peak:
            problems.append(f"the note's peak {peak} is not the report's {reported}")
    bits = fp.same_bits(results["none"], results["auto"])
    problems += bits
    row = (f"mlp-unequal N=1 --ckpt=auto, budget {budget} B (peak without recomputation "
           f"{none_peak}, with all blocks {all_peak}): blocks {chosen} "
           f"(+{note.group(2) if note else '-'}, peak {note.group(3) if note else '-'}); "
           f"first k: 0-{first_k - 1 if first_k else '-'} (peak {first_k_peak}); "
           f"bits equal {'yes' if not bits else 'NO'}")
    return row, problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    tmp = args.keep or tempfile.mkdtemp(prefix="checkpointing-")
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    passed = failed = 0
    header = (f"{'configuration':<36} {'activations':>12} {'peak':>12} {'act/none':>9} "
              f"{'peak/none':>9} {'insts':>6}  bits equal  result")
    try:
        with quiet():  # the exporter's per-file lines
            entries = tp.export(tmp, MODELS)
        print(header, flush=True)
        for model in MODELS:
            onnx_path = os.path.join(tmp, entries[model]["file"])
            for label, flags, world in WORLDS:
                inputs = dataset(tmp, entries[model], model, world)
                results = {}
                for ckpt in CKPTS:
                    name = f"{fp.SHORT[model]} {label} --ckpt={ckpt}"
                    problems = []
                    try:
                        results[ckpt] = configuration(args, tmp, model, onnx_path, flags,
                                                      world, ckpt, inputs)
                    except Failure as e:
                        problems.append(str(e))
                    base = results.get("none")
                    mine = results.get(ckpt)
                    act = peak = insts = None
                    equal = "-"
                    if mine:
                        act = mine[1]["activations_bytes"]
                        peak = mine[1]["peak_bytes"]
                        insts = mine[2]
                    if mine and base and ckpt != "none":
                        bits = fp.same_bits(base[0], mine[0])
                        equal = "yes" if not bits else "NO"
                        problems += bits
                        if act >= base[1]["activations_bytes"]:
                            problems.append(f"activations {act} not below none's "
                                            f"{base[1]['activations_bytes']}")
                        if insts <= base[2]:
                            problems.append(f"{insts} instructions, none has {base[2]}: "
                                            "nothing recomputed")
                    if ckpt == "selective" and "blocks" in results and mine:
                        if results["blocks"][1]["activations_bytes"] > act:
                            problems.append("blocks keeps more activations than selective")
                    ratio = lambda key, v: (f"{v / base[1][key]:.2f}" if base and v is not None
                                            else "-")
                    print(f"{name:<36} {act if act is not None else '-':>12} "
                          f"{peak if peak is not None else '-':>12} "
                          f"{ratio('activations_bytes', act):>9} {ratio('peak_bytes', peak):>9} "
                          f"{insts if insts is not None else '-':>6}  {equal:<10}  "
                          f"{'FAIL' if problems else 'PASS'}", flush=True)
                    for p in problems:
                        print(f"    {p}", flush=True)
                    passed += not problems
                    failed += bool(problems)
        try:
            row, problems = unequal_auto_case(args, tmp)
        except Failure as e:
            row, problems = "mlp-unequal N=1 --ckpt=auto", [str(e)]
        print(f"{row}  {'FAIL' if problems else 'PASS'}", flush=True)
        for p in problems:
            print(f"    {p}", flush=True)
        passed += not problems
        failed += bool(problems)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
