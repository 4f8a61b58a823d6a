#!/usr/bin/python3
"""Compiled step binaries (fsdp-opt --emit=binary) train exactly as fsdp-run.

On the shipped gpt-tiny with --data, a step binary and fsdp-run running the
plan --emit=plan writes for the same flags must give bitwise equal
per-step losses and saved weights, one row each:

  - world size 1; world size 2 with --shard=full and --shard=grad-op and
    --ckpt=blocks, as in-process ranks; world size 2 under mpirun -np 2;
  - --embed-weights: the binary alone (no weights file beside it);
  - checkpoints move both ways: saved by the binary at step 3 and resumed
    by fsdp-run to step 6, and the reverse, equal the uninterrupted run;
  - the binary refuses, with exit code 1 and fsdp-run's messages, a weights
    file beside it that is not the one it was compiled with, and mpirun
    starting another number of processes than its world size;
  - ./step --help says what it was compiled from (model and hash, world
    size, strategy, checkpointing, planned peak per rank).
  - its errors read as fsdp-run's, as messages: --resume of a directory
    without a checkpoint names it, with no status expression or source
    file:line, which FSDP_DEBUG_STATUS=1 adds back
    (tests/lit/tools/error-messages.test holds the other tools').
  - SIGTERM mid-run stops ./step after the step with a checkpoint, as it
    stops fsdp-run (test_preemption.py), and ./step resumes it bitwise.

The binaries link libfsdp_runtime.a (the runtime as a library), which every
build makes (target fsdp_runtime, in ALL); where it is absent the script
says so and fails, as it fails without mpirun (setup.sh installs it).

  /usr/bin/python3 tests/e2e/test_binary_step.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run --runtime-lib build/lib/libfsdp_runtime.a
"""

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_resume as tr  # noqa: E402  (the token file, running a program)
from test_resume import Failure, run  # noqa: E402
import test_preemption as preemption  # noqa: E402  (signalling a run mid-way)

MODEL = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
STEPS = 3


class Session(tr.Session):
    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        self.env = dict(os.environ, FSDP_RUNTIME_LIB=args.runtime_lib)
        self.cache = {}

    def compiled(self, flags, embed=False):
        """(step binary, plan file) compiled with `flags`: the plan file is
        what fsdp-run runs, named so its weights file has the binary's."""
        key = (tuple(flags), embed)
        if key not in self.cache:
            binary = os.path.join(self.fresh("binary"), "step")
            plan = os.path.join(self.fresh("plan"), "step.plan")
            run([self.args.fsdp_opt, MODEL, "--emit=binary", "-o", binary, *flags,
                 *(["--embed-weights"] if embed else [])], env=self.env)
            run([self.args.fsdp_opt, MODEL, "-o", plan, *flags])
            self.cache[key] = (binary, plan)
        return self.cache[key]

    def train(self, program, steps=STEPS, *extra, mpi=0, expect_ok=True):
        """(losses, weights bytes, completed process) of one run of
        `program` (a list: [fsdp-run, plan] or [binary])."""
        return self.run_program(program, steps, *extra, mpi=mpi, expect_ok=expect_ok)

    def fsdp_run(self, plan):
        return [self.args.fsdp_run, plan]


def same(label_a, a, label_b, b):
    """Problems when two (losses, weights) results differ in any bit."""
    problems = []
    if a[0] != b[0]:
        problems.append(f"losses differ: {label_a} {a[0]} vs {label_b} {b[0]}")
    if a[1] != b[1]:
        problems.append(f"saved weights differ ({label_a} vs {label_b})")
    if not a[0]:
        problems.append(f"{label_a} trained no steps")
    return problems


def parity_row(s, flags, mpi=0, embed=False):
    def body():
        binary, plan = s.compiled(flags, embed)
        if embed and os.path.exists(os.path.join(os.path.dirname(binary), "step.safetensors")):
            return ["--embed-weights left a weights file beside the binary"]
        reference = s.train(s.fsdp_run(plan))
        ours = s.train([binary], mpi=mpi)
        return same("./step", ours, "fsdp-run", reference)
    return body


def resume_row(s, flags, save_in_binary):
    """Saved at step 3 by one program, resumed to step 6 by the other."""
    def body():
        binary, plan = s.compiled(flags)
        saver, resumer = ([binary], s.fsdp_run(plan)) if save_in_binary else \
            (s.fsdp_run(plan), [binary])
        full = s.train(s.fsdp_run(plan), 6)
        ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
        s.train(saver, 3, f"--save={ckpt}", "--save-every=3")
        resumed = s.train(resumer, 6, f"--resume={ckpt}")
        return same("resumed", resumed, "uninterrupted", (full[0][3:], full[1]))
    return body


def preemption_row(s):
    """SIGTERM stops ./step after the step as it stops fsdp-run
    (test_preemption.py), and ./step resumes it bitwise."""
    def body():
        binary, plan = s.compiled(["--world-size=2"])
        full = s.train(s.fsdp_run(plan), preemption.K)
        return preemption.stop_and_resume(s, [binary], full[:2], signal.SIGTERM)
    return body


def refuses_foreign_weights(s):
    binary, _ = s.compiled(["--world-size=2", "--ckpt=blocks"])
    other = os.path.join(s.fresh("foreign"), "step")
    shutil.copy(binary, other)
    # Weights of another training: same names and shapes, other content.
    _, weights, _ = s.train([binary], 1)
    with open(os.path.join(os.path.dirname(other), "step.safetensors"), "wb") as f:
        f.write(weights)
    _, _, out = s.train([other], expect_ok=False)
    expected = "weights file does not match the plan (content hash differs"
    problems = []
    if out.returncode != 1:
        problems.append(f"exit code {out.returncode}, not 1")
    if expected not in out.stderr:
        problems.append(f"stderr lacks fsdp-run's {expected!r}: {out.stderr.strip()!r}")
    return problems


def error_reads_as_a_message(s):
    binary, _ = s.compiled([])
    command = [binary, f"--data={s.tokens}", "--steps=1",
               f"--resume={os.path.join(s.tmp, 'no-checkpoint')}"]
    expected = "no-checkpoint: no committed checkpoint (no step-N directory with COMMIT)"
    problems = []
    plain = {k: v for k, v in os.environ.items() if k != "FSDP_DEBUG_STATUS"}
    for debug, env in ((False, plain), (True, dict(plain, FSDP_DEBUG_STATUS="1"))):
        out = run(command, env, expect_ok=False)
        err = out.stderr.strip()
        located = "(at " in err and ".cpp:" in err
        if out.returncode != 1 or not err.startswith("step: error: --resume: ") or \
                expected not in err or located != debug:
            problems.append(f"FSDP_DEBUG_STATUS={'1' if debug else '(unset)'}: exit "
                            f"{out.returncode}, stderr {err!r}; expected 1 and {expected!r}"
                            f" {'with' if debug else 'without'} a source location")
    return problems


def refuses_wrong_process_count(s):
    binary, _ = s.compiled(["--world-size=2", "--ckpt=blocks"])
    _, _, out = s.train([binary], mpi=3, expect_ok=False)
    expected = "compiled for world size 2, but 3 ranks were started"
    problems = []
    if out.returncode == 0:
        problems.append("mpirun -np 3 of a world-size-2 binary succeeded")
    if expected not in out.stderr + out.stdout:
        problems.append(f"output lacks fsdp-run's {expected!r}: {out.stderr.strip()[-400:]!r}")
    return problems


def help_row(s):
    binary, _ = s.compiled(["--world-size=2", "--shard=grad-op", "--ckpt=blocks"])
    out = run([binary, "--help"])
    text = " ".join((out.stdout + out.stderr).split())
    problems = []
    for expected in ("Compiled by fsdp-opt from " + MODEL + " (content hash ",
                     "train step, world size 2, --shard=grad-op, --ckpt=blocks; "
                     "planned peak per rank ", "--data", "--steps"):
        if expected not in text:
            problems.append(f"--help lacks {expected!r}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--runtime-lib", required=True, help="libfsdp_runtime.a")
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    args = ap.parse_args()
    if not os.path.exists(args.runtime_lib):
        print(f"FAIL: {args.runtime_lib} is absent: the step binaries link the runtime "
              "library (build it: ninja fsdp_runtime), so nothing here can run")
        return 1
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="binary-step-")
    try:
        s = Session(args, tmp)
        rows = [
            ("N=1: ./step == fsdp-run (losses, weights)", parity_row(s, [])),
            ("N=2 full --ckpt=blocks, in-process ranks: ./step == fsdp-run",
             parity_row(s, ["--world-size=2", "--shard=full", "--ckpt=blocks"])),
            ("N=2 grad-op --ckpt=blocks, in-process ranks: ./step == fsdp-run",
             parity_row(s, ["--world-size=2", "--shard=grad-op", "--ckpt=blocks"])),
            ("N=1 --embed-weights, no weights file beside it: ./step == fsdp-run",
             parity_row(s, [], embed=True)),
            ("saved by ./step at 3, resumed by fsdp-run to 6 == uninterrupted",
             resume_row(s, ["--world-size=2", "--ckpt=blocks"], save_in_binary=True)),
            ("saved by fsdp-run at 3, resumed by ./step to 6 == uninterrupted",
             resume_row(s, ["--world-size=2", "--ckpt=blocks"], save_in_binary=False)),
            ("a weights file that is not the compiled one: exit 1, fsdp-run's message",
             lambda: refuses_foreign_weights(s)),
            ("./step --help says what it was compiled from", lambda: help_row(s)),
            ("./step's errors read as messages (FSDP_DEBUG_STATUS=1 adds the source)",
             lambda: error_reads_as_a_message(s)),
            ("SIGTERM mid-run, N=2: ./step stops after the step with a checkpoint, "
             "resumes bitwise", preemption_row(s)),
        ]
        if args.mpirun:
            rows += [
                ("N=2 full --ckpt=blocks under mpirun -np 2: ./step == fsdp-run in-process",
                 parity_row(s, ["--world-size=2", "--shard=full", "--ckpt=blocks"], mpi=2)),
                ("mpirun -np 3 of a world-size-2 step: fails with fsdp-run's message",
                 lambda: refuses_wrong_process_count(s)),
            ]
        else:
            rows.append(("the mpirun rows", lambda: [
                "no mpirun on PATH (setup.sh installs openmpi-bin)"]))
        results = rows_report.collect(rows, failure=Failure)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows_report.report(results, f" in {time.time() - start:.1f}s")


if __name__ == "__main__":
    sys.exit(main())
