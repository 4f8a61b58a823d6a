#!/usr/bin/python3
# The fuzz-seeds test: make_seeds.py, run into a fresh directory, writes a
# non-empty corpus for every fuzz target and a well-formed libFuzzer
# dictionary for each, within the size and time CI's short fuzz pass
# allows; and its seeds are the inputs they claim to be: every plan seed
# loads in fsdp-run (--dump), a checkpoint seed cut back into files as
# FuzzSupport's splitFiles cuts it is a checkpoint fsdp-run resumes from,
# and its "auto" twin leaves every file's size and hash to the target.
# Needs no fuzzing build: the fuzz targets themselves are scripts/fuzz.sh's.

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "e2e")]
import make_seeds  # noqa: E402
import seed_models  # noqa: E402
from rows import collect, report  # noqa: E402  (tests/e2e/rows.py)

MAX_TOTAL_BYTES = 30 << 20
MAX_SEED_BYTES = 1 << 20
MAX_SECONDS = 120
# A libFuzzer dictionary line: optional name=, then a quoted string whose
# only escapes are \\, \" and \xNN.
DICT_ENTRY = re.compile(r'^(\w+=)?"(?:\\\\|\\"|\\x[0-9A-Fa-f]{2}|[^"\\])*"$')


class Failure(Exception):
    pass


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        raise Failure(f"{' '.join(map(str, command))} exited {result.returncode}: "
                      f"{(result.stderr or result.stdout).strip()[-400:]}")
    return result.stdout


def split_files(data):
    """FuzzSupport.cpp's splitFiles: parts between separators, "NAME\\n" first."""
    files = []
    for part in data.split(seed_models.FILE_SEPARATOR):
        name, newline, body = part.partition(b"\n")
        if newline and re.fullmatch(rb"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}", name):
            files.append((name.decode(), body))
    return files


def check_layout(out, seconds):
    problems = []
    if seconds > MAX_SECONDS:
        problems.append(f"make_seeds.py took {seconds:.0f} s (limit {MAX_SECONDS} s)")
    total = 0
    for target in make_seeds.TARGETS:
        folder = os.path.join(out, target)
        names = os.listdir(folder) if os.path.isdir(folder) else []
        if not names:
            problems.append(f"{target}: no seeds")
        for name in names:
            size = os.path.getsize(os.path.join(folder, name))
            total += size
            if size > MAX_SEED_BYTES:
                problems.append(f"{target}/{name}: {size} bytes (limit {MAX_SEED_BYTES})")
    if total > MAX_TOTAL_BYTES:
        problems.append(f"corpus is {total} bytes (limit {MAX_TOTAL_BYTES})")
    return problems


def check_dicts(out):
    problems = []
    for name in make_seeds.TARGETS + sorted({p for ps in make_seeds.fuzz_dicts.TARGET_DICTS.values()
                                             for p in ps}):
        path = os.path.join(out, "dict", name + ".dict")
        if not os.path.isfile(path):
            problems.append(f"dict/{name}.dict: missing")
            continue
        with open(path, encoding="ascii") as f:
            lines = f.read().splitlines()
        if not lines or not lines[0].startswith("# "):
            problems.append(f"dict/{name}.dict: no comment saying what it is for")
        entries = [line for line in lines if line and not line.startswith("#")]
        if len(entries) < 10:
            problems.append(f"dict/{name}.dict: {len(entries)} entries")
        problems += [f"dict/{name}.dict: not a libFuzzer entry: {line!r}"
                     for line in entries if not DICT_ENTRY.match(line)][:3]
    return problems


def check_plans(out, fsdp_run, tmp):
    """Every plan seed is a plan (the target's loadPlan would accept it)."""
    problems = []
    folder = os.path.join(out, "plan")
    for name in sorted(os.listdir(folder)):
        copy = os.path.join(tmp, "input.fsdp")
        shutil.copyfile(os.path.join(folder, name), copy)
        result = subprocess.run([fsdp_run, copy, "--dump"], capture_output=True, text=True)
        if result.returncode != 0:
            problems.append(f"plan/{name}: {result.stderr.strip()[:200]}")
    return problems


def check_checkpoints(out, fsdp_run, tmp):
    """Each checkpoint seed cuts into COMMIT and its files, "auto" ones with
    every file line left to the target; one, unpacked, resumes."""
    problems = []
    folder = os.path.join(out, "checkpoint")
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            files = dict(split_files(f.read()))
        commit = files.get("COMMIT", b"")
        if not commit.startswith(b"fsdp-checkpoint 1\n"):
            problems.append(f"checkpoint/{name}: no COMMIT of the checkpoint format")
            continue
        listed = re.findall(rb"^file (\S+) (.*)$", commit, re.M)
        if sorted(n.decode() for n, _ in listed) != sorted(n for n in files if n != "COMMIT"):
            problems.append(f"checkpoint/{name}: COMMIT lists {[n for n, _ in listed]}, "
                            f"the input holds {sorted(files)}")
        auto = name.endswith("-auto.ckpt")
        if auto != all(value == b"auto" for _, value in listed):
            problems.append(f"checkpoint/{name}: file lines {[v for _, v in listed]}")
        if auto and "plan.fsdp" in files and b"\nplan_hash auto\n" not in commit:
            problems.append(f"checkpoint/{name}: plan_hash not left to the target")
    seed = os.path.join(folder, "w1-sharded-step-00000001-as-written.ckpt")
    step = os.path.join(tmp, "root", "step-00000001")
    os.makedirs(step)
    with open(seed, "rb") as f:
        for file_name, data in split_files(f.read()):
            with open(os.path.join(step, file_name), "wb") as g:
                g.write(data)
    tokens = os.path.join(tmp, "tokens.bin")
    (numpy.arange(400) % 16).astype(numpy.uint16).tofile(tokens)
    out_text = run([fsdp_run, os.path.join(step, "plan.fsdp"), f"--resume={os.path.dirname(step)}",
                    "--steps=2", f"--data={tokens}"])
    if "resumed from step 1" not in out_text:
        problems.append(f"unpacked checkpoint seed did not resume: {out_text.strip()[:200]}")
    return problems


def check_sources(out):
    """The corpus has what the brief of each target promises."""
    def names(target):
        return os.listdir(os.path.join(out, target))
    problems = []
    onnx = names("onnx-import")
    node = [n for n in onnx if n.startswith("node-")]
    if len(node) < len(seed_models.node_test_models()):
        problems.append(f"onnx-import: {len(node)} of {len(seed_models.node_test_models())} node tests")
    for family in ("gpt", "mlp", "transformer"):
        if not any(n.startswith("export-" + family) for n in onnx):
            problems.append(f"onnx-import: no {family} export")
    if not any(n.startswith("lit-model-") for n in onnx):
        problems.append("onnx-import: no lit generator models")
    npy = names("npy")
    for dtype in make_seeds.NPY_DTYPES:
        if f"{dtype}-2x3-fortran.npy" not in npy:
            problems.append(f"npy: no Fortran-order {dtype}")
    if not any(n.startswith("README-") for n in names("compile-flags") + names("run-flags")):
        problems.append("flags: no README command lines")
    if len(names("checkpoint")) < 2 * len(seed_models.CHECKPOINT_RUNS):
        problems.append(f"checkpoint: {len(names('checkpoint'))} seeds")
    return problems


def check_replay(out, bin_dir):
    """Every seed through its target (the replay build of tests/fuzz): the
    corpus a fuzzing run starts from must not already fail."""
    problems = []
    for target in sorted(os.listdir(out)):
        exe = os.path.join(bin_dir, "fuzz-" + target)
        if target == "dict":
            continue
        if not os.path.exists(exe):
            problems.append(f"{target}: no {exe}")
            continue
        # -runs=0: libFuzzer's build executes the inputs and stops; the
        # replay build ignores it.
        done = subprocess.run([exe, "-runs=0", os.path.join(out, target)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=300)
        if done.returncode != 0:
            problems.append(f"{target}: exit {done.returncode}: {done.stderr[-500:]}")
    return problems


def scratch(tmp, sub):
    path = os.path.join(tmp, sub)
    os.makedirs(path)
    return path


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--fuzz-bin-dir", required=True,
                        help="where the fuzz-TARGET executables are")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsdp-seeds-test-") as tmp:
        out = os.path.join(tmp, "corpus")
        start = time.time()
        printed = run([sys.executable, os.path.join(HERE, "make_seeds.py"), "--out", out,
                       "--fsdp-opt", args.fsdp_opt, "--fsdp-run", args.fsdp_run])
        seconds = time.time() - start
        print(printed, end="")
        results = collect(rows=[
            ("every target has seeds, within the size and time limits",
             lambda: check_layout(out, seconds)),
            ("every dictionary is well formed", lambda: check_dicts(out)),
            ("the corpus holds what each target's sources promise", lambda: check_sources(out)),
            ("every plan seed loads", lambda: check_plans(out, args.fsdp_run, scratch(tmp, "plans"))),
            ("checkpoint seeds are FuzzSupport multi-file inputs that resume",
             lambda: check_checkpoints(out, args.fsdp_run, scratch(tmp, "ckpt"))),
            ("every seed replays through its fuzz target",
             lambda: check_replay(out, args.fuzz_bin_dir)),
        ], failure=Failure)
        return report(results)


if __name__ == "__main__":
    sys.exit(main())
