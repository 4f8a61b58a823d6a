#!/usr/bin/env python3
"""Preemption: SIGTERM or SIGINT during training (runtime/run/StopSignals.h).

Trains the shipped byte-level GPT (test_resume.py's Session), signals the
run once its Nth metrics line is written, and checks, one row each:

  - in process, world size 2 (SIGTERM) and 1 (SIGINT), and under
    mpirun -np 2 with only rank 1 signalled: exit code 0, the line
    "stopped by SIG... after step S of K; checkpoint DIR/step-S at step S",
    the metrics end at step S, the checkpoint of step S is committed, and
    --save-weights is not written; resuming it to step K gives the
    uninterrupted run's losses (steps 1..S from the stopped run, S+1..K
    from the resumed one) and its saved weights bit for bit;
  - a second signal (SIGTERM and SIGINT at once) exits 130 at once; every
    step-N directory left is committed (COMMIT present), and --resume
    takes the newest one and continues bitwise;
  - without --save the line says no checkpoint was written;
  - torchrun (the venv's, which the set-up always makes: a missing one
    fails the row): SIGTERM to its agent, which
    passes it on to the ranks, stops them the same way (torchrun itself
    exits 1: its agent raises on the signal), resumed bitwise.

Compiled step binaries run the same driver: test_binary_step.py signals one
through stop_and_resume.
"""

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
from test_resume import MPI_ENV, Failure, Session, losses  # noqa: E402
from test_launchers import free_port  # noqa: E402
from test_watchdog import kill_leftovers, rank_pids  # noqa: E402

K = 40      # the run's --steps
SIGNAL_AT = 4  # metrics lines written before the signal
STOP_LINE = re.compile(r"stopped by (SIGTERM|SIGINT) after step (\d+) of (\d+); "
                       r"(?:checkpoint (\S+) at step (\d+) \(continue with --resume=(\S+)\)"
                       r"|no checkpoint \(no --save\))")


def lines(path):
    try:
        with open(path) as f:
            return sum(1 for line in f if line.endswith("\n"))
    except OSError:
        return 0


def start(s, program, work, extra, mpi=False):
    """`program` (a list: fsdp-run and a plan, or a step binary) training K
    steps in the background, once its SIGNAL_AT-th metrics line is written."""
    metrics = os.path.join(work, "m.jsonl")
    command = [*program, f"--data={s.tokens}", f"--steps={K}", f"--metrics={metrics}", *extra]
    env = None
    if mpi:
        if not s.args.mpirun:
            raise Failure("no mpirun on PATH (setup.sh installs openmpi-bin)")
        command = [s.args.mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none"] + command
        env = MPI_ENV
    job = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env)
    deadline = time.monotonic() + 120
    while lines(metrics) < SIGNAL_AT:
        if job.poll() is not None or time.monotonic() > deadline:
            job.kill()
            out, err = job.communicate()
            raise Failure(f"fewer than {SIGNAL_AT} steps ran (rc {job.returncode}):\n{err}")
        time.sleep(0.01)
    return job, metrics


def finish(job, marker=None):
    try:
        out, err = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        out, err = job.communicate()
        raise Failure(f"still running 120 s after the signal:\n{err}")
    finally:
        if marker:
            kill_leftovers(marker)
    return out, err


def stop_row(s, plan_flags, sig, mpi=False):
    plan = s.plan(plan_flags)
    full_losses, full_weights, _ = s.train(plan, K)
    return stop_and_resume(s, [s.args.fsdp_run, plan], (full_losses, full_weights), sig,
                           mpi_marker=plan if mpi else None)


def stop_and_resume(s, program, full, sig, mpi_marker=None, resume_program=None,
                    expect_rc=0):
    """Problems of `program` signalled with `sig` mid-run (under mpirun with
    `mpi_marker`, the plan path naming its processes: only rank 1 is
    signalled; otherwise the process started) and resumed by
    `resume_program` (default: the same), against `full`, the uninterrupted
    run's (losses, saved weights). `expect_rc`: the exit code, or None for a
    launcher's own."""
    full_losses, full_weights = full
    mpi = mpi_marker is not None
    work = s.fresh("stopped")
    ckpt, weights = os.path.join(work, "ckpt"), os.path.join(work, "w.safetensors")
    job, metrics = start(s, program, work, [f"--save={ckpt}", "--save-every=5",
                                            f"--save-weights={weights}"], mpi)
    if mpi:
        pids = rank_pids(mpi_marker, 1)
        if len(pids) != 1:
            job.kill()
            raise Failure(f"rank 1's process: found {pids}")
        os.kill(pids[0], sig)  # rank 0 learns of it through the stop agreement
    else:
        os.kill(job.pid, sig)
    out, err = finish(job, mpi_marker)
    problems = []
    if expect_rc is not None and job.returncode != expect_rc:
        return [f"exit code {job.returncode}, expected {expect_rc}:\n{err}"]
    found = STOP_LINE.search(out)
    if not found:
        return [f"no stop line in stdout:\n{out}\n{err}"]
    name, step, total, directory, at, resume = found.groups()
    step = int(step)
    if name != signal.Signals(sig).name or int(total) != K or not SIGNAL_AT <= step < K:
        problems.append(f"line {found[0]!r}: expected {signal.Signals(sig).name}, "
                        f"step in {SIGNAL_AT}..{K - 1}")
    if directory != os.path.join(ckpt, f"step-{step:08d}") or int(at) != step or resume != ckpt:
        problems.append(f"line {found[0]!r} names the wrong checkpoint")
    if not os.path.exists(os.path.join(ckpt, f"step-{step:08d}", "COMMIT")):
        problems.append(f"no committed checkpoint of step {step}: {os.listdir(ckpt)}")
    if os.path.exists(weights):
        problems.append("--save-weights was written by a stopped run")
    stopped_losses = losses(metrics)
    if [st for st, _ in stopped_losses] != list(range(1, step + 1)):
        problems.append(f"metrics steps {[st for st, _ in stopped_losses]}, expected 1..{step}")
    resumed_losses, resumed_weights, _ = s.run_program(resume_program or program, K,
                                                       f"--resume={ckpt}")
    if stopped_losses + resumed_losses != full_losses:
        problems.append(f"losses {stopped_losses + resumed_losses} != uninterrupted "
                        f"{full_losses}")
    if resumed_weights != full_weights:
        problems.append("resumed run's saved weights differ from the uninterrupted run's")
    return problems


def torchrun_row(s):
    """torchrun's agent passes its SIGTERM on to the ranks (and then exits
    1 with its own SignalException): they stop like fsdp-run's own."""
    if not (s.args.torchrun and os.path.exists(s.args.torchrun)):
        raise Failure(f"no torchrun at {s.args.torchrun!r} "
                      "(scripts/setup-venv.sh makes the torch 2.x venv)")
    plan = s.plan(["--world-size=2"])
    full_losses, full_weights, _ = s.train(plan, K)
    launcher = [s.args.torchrun, "--no-python", "--nproc-per-node=2",
                f"--master-port={free_port()}", s.args.fsdp_run, plan]
    return stop_and_resume(s, launcher, (full_losses, full_weights), signal.SIGTERM,
                           resume_program=[s.args.fsdp_run, plan], expect_rc=None)


def double_signal_row(s):
    plan = s.plan(["--world-size=2"])
    full_losses, full_weights, _ = s.train(plan, K)
    work = s.fresh("double")
    ckpt = os.path.join(work, "ckpt")
    job, _ = start(s, [s.args.fsdp_run, plan], work, [f"--save={ckpt}", "--save-every=2"])
    # Two different signals, so the kernel cannot merge them into one.
    os.kill(job.pid, signal.SIGTERM)
    sent = time.monotonic()
    os.kill(job.pid, signal.SIGINT)
    out, err = finish(job)
    elapsed = time.monotonic() - sent
    problems = []
    if job.returncode == 0 and STOP_LINE.search(out):
        # The first stop finished before the second signal was taken: the
        # row says nothing about the second signal then.
        raise Failure(f"the run stopped before the second signal arrived:\n{out}")
    if job.returncode != 130:
        problems.append(f"exit code {job.returncode}, expected 130:\n{err}")
    if "again: exiting at once (exit code 130)" not in err:
        problems.append(f"stderr lacks the second signal's line:\n{err}")
    if elapsed > 5:
        problems.append(f"exited {elapsed:.1f} s after the second signal")
    committed = sorted(d for d in os.listdir(ckpt) if d.startswith("step-"))
    for d in committed:
        if not os.path.exists(os.path.join(ckpt, d, "COMMIT")):
            problems.append(f"{d} has no COMMIT: a partial checkpoint under a committed name")
    if not committed:
        return problems + [f"no committed checkpoint left: {os.listdir(ckpt)}"]
    newest = int(committed[-1][len("step-"):])
    resumed_losses, resumed_weights, out = s.train(plan, K, f"--resume={ckpt}")
    if f"resumed from step {newest} " not in out.stdout:
        problems.append(f"--resume did not take the newest committed step {newest}:\n"
                        f"{out.stdout}")
    if resumed_losses != full_losses[newest:]:
        problems.append(f"losses {resumed_losses} != uninterrupted {full_losses[newest:]}")
    if resumed_weights != full_weights:
        problems.append("resumed run's saved weights differ from the uninterrupted run's")
    return problems


def no_save_row(s):
    plan = s.plan([])
    job, _ = start(s, [s.args.fsdp_run, plan], s.fresh("nosave"), [])
    os.kill(job.pid, signal.SIGTERM)
    out, err = finish(job)
    if job.returncode != 0:
        return [f"exit code {job.returncode}, expected 0:\n{err}"]
    found = STOP_LINE.search(out)
    if not found or "no checkpoint (no --save)" not in found[0]:
        return [f"expected 'no checkpoint (no --save)' in:\n{out}"]
    return []


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    ap.add_argument("--torchrun", help="torchrun of the torch 2.x venv (its row fails "
                    "without it)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="preemption-") as tmp:
        s = Session(args, tmp)
        rows = [
            ("SIGTERM, in process --world-size=2: stop, checkpoint, resume bitwise",
             lambda: stop_row(s, ["--world-size=2"], signal.SIGTERM)),
            ("SIGINT, world size 1: stop, checkpoint, resume bitwise",
             lambda: stop_row(s, [], signal.SIGINT)),
            ("SIGTERM to rank 1 of mpirun -np 2: both ranks stop after the same step, "
             "resume bitwise",
             lambda: stop_row(s, ["--world-size=2"], signal.SIGTERM, mpi=True)),
            ("a second signal exits 130; only committed checkpoints remain; the newest "
             "resumes bitwise", lambda: double_signal_row(s)),
            ("without --save: the line says no checkpoint", lambda: no_save_row(s)),
        ]
        rows.append(("SIGTERM to torchrun's agent (--nproc-per-node=2): the ranks stop "
                     "after the same step, resume bitwise", lambda: torchrun_row(s)))
        results = rows_report.collect(rows, (), Failure)
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
