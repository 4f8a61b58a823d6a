#!/usr/bin/python3
# Activation checkpointing changes memory, never results (DESIGN.md's
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
# Prints a table (configuration, activations, peak, ratios to none, bits
# equal), then "N passed, M failed"; any failure fails the test.
#
#   /usr/bin/python3 tests/e2e/test_checkpointing.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--keep DIR]

import argparse
import json
import os
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
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null  # the exporter's per-file lines
            try:
                entries = tp.export(tmp, MODELS)
            finally:
                sys.stdout = saved
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
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
