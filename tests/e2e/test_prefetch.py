#!/usr/bin/python3
"""Prefetch and async collectives change no bit (docs/design.md numerics contract).

Scheduling (compiler/Transforms/ScheduleCollectives.cpp) only moves
all-gathers earlier and runs collectives on the communication stream (a
worker thread per rank in fsdp-run), so every --prefetch=K and
--limit-all-gathers=L must train to exactly the same per-step losses and
saved weights as --prefetch=0. Checked on a 4-block GPT exported by
tests/models/export_models.py (so K = 2 reaches past the next unit) and the
shipped 2-block gpt-tiny, at world sizes 2 and 4 with in-process ranks, and
once under `mpirun -np 2`; plus --shard=grad-op and
hybrid:2 with prefetch. Each plan is also checked in `fsdp-run --dump` to
really have a communication stream, and the prefetched plans to issue some
all-gather before the instruction right before its first reader (so a
scheduler that ignored the flag cannot pass).

  /usr/bin/python3 tests/e2e/test_prefetch.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--mpirun mpirun]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

STEPS = 3
INST = re.compile(r"^inst (\d+) (\w+) \[([^\]]*)\] -> \[([^\]]*)\]")


def run(cmd, env=None):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stdout


def ids(text):
    return [int(t.strip()[1:]) for t in text.split(",") if t.strip().startswith("%")]


def gather_lead(dump):
    """(has a communication stream, largest distance from an all-gather to
    its first reader in instructions)."""
    insts = []
    for line in dump.splitlines():
        if m := INST.match(line):
            insts.append((m[2], ids(m[3]), ids(m[4]), line))
    streams = any(" stream=1" in line for *_, line in insts)
    lead = 0
    # A gathered buffer's first reader reads it directly or through a view
    # (a flat_view is a buffer over the same bytes); the dump's buffer
    # lines give offsets, so compare arena ranges.
    buffers = {}
    for line in dump.splitlines():
        if m := re.match(r'^buffer %(\d+) \w+\[[^\]]*\] (\w+)\+(\d+) size=(\d+)', line):
            buffers[int(m[1])] = (m[2], int(m[3]), int(m[4]))
    for i, (kernel, _, outs, _) in enumerate(insts):
        if kernel != "AllGather":
            continue
        region, lo, size = buffers[outs[0]]
        for j in range(i + 1, len(insts)):
            if insts[j][0] == "AllGather":
                continue
            if any(buffers[b][0] == region and lo <= buffers[b][1] < lo + size
                   for b in insts[j][1]):
                lead = max(lead, j - i)
                break
    return streams, lead


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    args = ap.parse_args()
    import export_models
    import numpy as np
    import torch

    tmp = tempfile.mkdtemp(prefix="prefetch-")
    gpt4 = os.path.join(tmp, "gpt4.onnx")
    torch.manual_seed(0)
    model = export_models.GPT(layers=4, tied=False, gelu="erf")
    with export_models.quiet():
        export_models.export(model, export_models.gpt_inputs(torch.Generator().manual_seed(0)),
                             gpt4, 17, "train")
    models = {"gpt4": (gpt4, 64), "gpt-tiny": (os.path.join(ROOT, "examples", "gpt-tiny.onnx"), 256)}
    text = open(os.path.join(ROOT, "examples", "shakespeare.txt"), "rb").read()
    data = {}
    for name, (_, vocab) in models.items():
        data[name] = os.path.join(tmp, f"{name}.bin")
        (np.frombuffer(text, dtype=np.uint8).astype(np.uint16) % vocab).tofile(data[name])

    rows, failures = [], []

    def train(name, world, flags, mpi=False):
        path, _ = models[name]
        tag = "_".join(f.strip("-").replace("=", "").replace(":", "") for f in flags) or "default"
        plan = os.path.join(tmp, f"{name}-{world}-{tag}.plan")
        run([args.fsdp_opt, path, f"--world-size={world}", "--wrap=blocks", *flags, "-o", plan])
        dump = run([args.fsdp_run, plan, "--dump"])
        work = tempfile.mkdtemp(dir=tmp)
        metrics, weights = os.path.join(work, "m.jsonl"), os.path.join(work, "w.safetensors")
        cmd = [args.fsdp_run, plan, f"--steps={STEPS}", f"--data={data[name]}",
               f"--metrics={metrics}", f"--save-weights={weights}"]
        env = None
        if mpi:
            env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            cmd = [args.mpirun, "-np", str(world), "--oversubscribe", "--bind-to", "none"] + cmd
        run(cmd, env)
        losses = [line.split('"loss":')[1].split(",")[0].strip()
                  for line in open(metrics) if '"loss"' in line]
        return losses, open(weights, "rb").read(), dump

    def check(label, fn):
        try:
            msg = fn()
        except Exception as e:  # noqa: BLE001 - any failure is a row
            msg = str(e)
        rows.append((label, "PASS" if not msg else "FAIL"))
        if msg:
            failures.append(f"{label}: {msg}")

    configs = [["--prefetch=1"], ["--prefetch=2"], ["--prefetch=1", "--limit-all-gathers=1"],
               ["--prefetch=2", "--limit-all-gathers=2"], []]
    for name in models:
        for world in (2, 4):
            base = {}

            def baseline(name=name, world=world, base=base):
                base["run"] = train(name, world, ["--prefetch=0"])
                streams, lead = gather_lead(base["run"][2])
                if not streams:
                    return "--prefetch=0 plan has no communication stream"
                return "" if len(base["run"][0]) == STEPS else f"losses {base['run'][0]}"
            check(f"{name} N={world} --prefetch=0 trains", baseline)
            if "run" not in base:
                continue
            for flags in configs:
                def same(flags=flags, name=name, world=world, base=base):
                    losses, weights, dump = train(name, world, flags)
                    _, lead0 = gather_lead(base["run"][2])
                    streams, lead = gather_lead(dump)
                    if not streams:
                        return "no communication stream"
                    # The defaults are --prefetch=1 --limit-all-gathers=2.
                    if "--limit-all-gathers=1" not in flags and lead <= lead0:
                        return f"no gather is issued earlier than at --prefetch=0 (lead {lead})"
                    if losses != base["run"][0]:
                        return f"losses {losses} != {base['run'][0]}"
                    return "" if weights == base["run"][1] else "saved weights differ"
                check(f"{name} N={world} {' '.join(flags) or '(defaults)'} == --prefetch=0 (bits)",
                      same)
    # Other strategies with prefetch.
    for flags, world in ((["--shard=grad-op"], 4), (["--shard=hybrid:2"], 4),
                         (["--param-dtype=bf16"], 2)):
        def strategy(flags=flags, world=world):
            a = train("gpt4", world, flags + ["--prefetch=0"])
            b = train("gpt4", world, flags + ["--prefetch=2"])
            if len(a[0]) != STEPS:
                return f"losses {a[0]}"
            if gather_lead(b[2])[1] <= gather_lead(a[2])[1]:
                return "no gather is issued earlier than at --prefetch=0"
            return "" if a[:2] == b[:2] else "losses or weights differ"
        check(f"gpt4 N={world} {' '.join(flags)} --prefetch=2 == --prefetch=0 (bits)", strategy)
    if args.mpirun:
        def mpi():
            a = train("gpt4", 2, ["--prefetch=0"])
            b = train("gpt4", 2, ["--prefetch=2"], mpi=True)
            return "" if a[:2] == b[:2] else "losses or weights differ"
        check("gpt4 mpirun -np 2 --prefetch=2 == in-process --prefetch=0 (bits)", mpi)
    else:
        # setup.sh installs Open MPI: a missing mpirun is a broken setup.
        rows.append(("mpirun", "FAIL"))
        failures.append("mpirun: not on PATH (pass --mpirun)")

    width = max(len(r[0]) for r in rows)
    for label, result in rows:
        print(f"{label:<{width}}  {result}")
    for f in failures:
        print("FAIL:", f)
    print(f"{sum(r[1] == 'PASS' for r in rows)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
