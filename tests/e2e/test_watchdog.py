#!/usr/bin/python3
"""The collective watchdog and its flight recorder, end to end (issue 17).

The shipped 2-block gpt-tiny compiled for two ranks (--shard=full
--wrap=blocks) trains on examples/shakespeare.txt as a token file, and:

  flag       --collective-timeout refuses 0, negative and non-numbers with
             one line and exit 1; --help documents it
  quiet      a 0.5 s timeout on a healthy run changes nothing: the same
             per-step losses as without the flag, exit 0
  inproc     in-process ranks, rank 1 stalled in its 15th collective call
             (FSDP_TEST_STALL_COLLECTIVE, a test hook): exit 1 within
             timeout + 10 s, one "step N: KIND of unit U (BYTES, group G)
             did not complete in S s on rank R" line, and both ranks'
             flight recorders in the documented form
  hybrid     the same at world size 4 with --shard=hybrid:2, rank 3 stalled:
             every rank's recorder names the unit of every collective but
             the loss's all-reduce (and the per-step stop agreement, a host
             call), and the groups as "G of 2: ranks a,b"
  ckpt       the same stall in the collectives of a --save checkpoint after
             the last step: "step 2: checkpoint save (group world) did not
             complete ..." (a checkpoint save is watched as one host call)
  sigstop    mpirun -np 2, rank 1 stopped with SIGSTOP once steps run: exit
             1 within timeout + 10 s of the stop, the watchdog line from
             rank 0 and its recorder (last 64 collectives)
  sigkill    mpirun -np 2, rank 1 killed with SIGKILL: the job ends within
             timeout + 10 s of the kill, with rank 0's line saying it was
             ended and its recorder

Under mpirun, rank 0's stderr is read from its own file (mpirun
--output-filename), since mpirun interleaves the ranks' output on its own.
Rank 1's process is the one whose environment has OMPI_COMM_WORLD_RANK=1
and whose command line names this test's plan; leftover processes get
SIGCONT and SIGKILL in a finally block. Each row prints its time to exit.

  /usr/bin/python3 tests/e2e/test_watchdog.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--mpirun mpirun]
"""

import argparse
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TIMEOUT = 3  # --collective-timeout of the stall rows, seconds
MESSAGE = re.compile(r"^fsdp-run: error: step (\d+): (AllGather|ReduceScatter|AllReduce)"
                     r"( of unit \d+ '[\w.]+')? \(([\d.]+ (?:B|KiB|MiB)), "
                     r"group (?:world|\d+ of \d+: ranks [\d,]+)\) "
                     r"did not complete in (\d+(?:\.\d+)?) s on rank (\d)$", re.M)
# A rank stopped between steps leaves rank 0 in the per-step stop agreement
# (a host call, watched like a collective): the same line, with the host
# call's name and no size, and the same six groups as MESSAGE.
STOP_MESSAGE = re.compile(r"^fsdp-run: error: step (\d+): (stop agreement) \(allGather of the "
                          r"stop flag\)() \(group world\)() did not complete in (\d+(?:\.\d+)?) s "
                          r"on rank (\d)$", re.M)
HEADER = re.compile(r"^rank (\d): last (\d+) collectives \(oldest first; seconds since the run "
                    r"started\)$", re.M)
ENTRY = re.compile(r"^  #(\d+) (step \d+|start-up): (.+) \((?:([\d.]+ (?:B|KiB|MiB)), )?group (.+)\): "
                   r"issued ([\d.]+|-), started ([\d.]+|-), finished ([\d.]+|-)$")


class Failure(Exception):
    pass


def recorders(stderr):
    """{rank: [entry match, ...]} for every printed recorder, each cut at
    its first line that is no entry (mpirun may interleave its own banner
    with what it forwards from a rank; check_recorder counts them)."""
    out = {}
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if m := HEADER.match(line):
            entries = []
            for entry in lines[i + 1:i + 1 + int(m[2])]:
                e = ENTRY.match(entry)
                if not e:
                    break
                entries.append(e)
            out[int(m[1])] = entries
    return out


def check_recorder(entries, rank, want_count=None, late=False):
    """Consecutive entries (want_count of them); with `late` (the rank
    whose watchdog fired), one of them never finished."""
    if not entries:
        raise Failure(f"rank {rank}: empty flight recorder")
    if want_count is not None and len(entries) != want_count:
        raise Failure(f"rank {rank}: {len(entries)} recorder entries, expected {want_count}")
    seqs = [int(e[1]) for e in entries]
    if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
        raise Failure(f"rank {rank}: recorder sequence numbers not consecutive: {seqs}")
    if late and not any(e[7] != "-" and e[8] == "-" for e in entries):
        raise Failure(f"rank {rank}: no collective started and never finished")


def losses(path):
    with open(path) as f:
        return [re.search(r'"loss":\s*([-\d.e+]+)', line)[1] for line in f if line.strip()]


def rank_pids(marker, rank):
    """Pids of fsdp-run processes of this test (marker in the command line)
    that mpirun started as `rank`."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().decode(errors="replace")
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read().split(b"\0")
        except OSError:
            continue
        if marker in cmdline and "fsdp-run" in cmdline and \
                f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
            pids.append(int(entry))
    return pids


def kill_leftovers(marker):
    for rank in range(2):
        for pid in rank_pids(marker, rank):
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--mpirun", default=shutil.which("mpirun"))
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="fsdp-watchdog-")
    plan = os.path.join(tmp, "gpt2.plan")
    tokens = os.path.join(tmp, "tokens.bin")
    with open(os.path.join(ROOT, "examples", "shakespeare.txt"), "rb") as f:
        text = f.read()
    with open(tokens, "wb") as f:
        f.write(struct.pack(f"<{len(text)}H", *text))
    subprocess.run([args.fsdp_opt, os.path.join(ROOT, "examples", "gpt-tiny.onnx"),
                    "--world-size=2", "--shard=full", "--wrap=blocks", "-o", plan],
                   check=True, capture_output=True, timeout=300)
    base = [args.fsdp_run, plan, f"--data={tokens}"]
    passed = failed = 0

    def row(name, body):
        nonlocal passed, failed
        try:
            note = body() or ""
            print(f"PASS  {name:9} {note}")
            passed += 1
        except (Failure, subprocess.TimeoutExpired, OSError) as e:
            print(f"FAIL  {name:9} {e}")
            failed += 1

    def flag():
        for value in ("0", "-1", "abc", "", "inf"):
            r = subprocess.run(base + [f"--collective-timeout={value}"], capture_output=True,
                               text=True, timeout=60)
            if r.returncode != 1 or f"--collective-timeout: invalid value '{value}'" not in r.stderr:
                raise Failure(f"--collective-timeout={value}: rc {r.returncode}, {r.stderr!r}")
        r = subprocess.run([args.fsdp_run, "--help"], capture_output=True, text=True, timeout=60)
        if "--collective-timeout=SECONDS" not in r.stdout or "did not complete" not in r.stdout:
            raise Failure("--help does not document --collective-timeout")

    def quiet():
        got = {}
        for label, extra in (("plain", []), ("watched", ["--collective-timeout=0.5"])):
            metrics = os.path.join(tmp, f"{label}.jsonl")
            r = subprocess.run(base + ["--steps=5", f"--metrics={metrics}"] + extra,
                               capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                raise Failure(f"{label}: rc {r.returncode}: {r.stderr}")
            got[label] = losses(metrics)
        if got["plain"] != got["watched"] or len(got["plain"]) != 5:
            raise Failure(f"losses differ: {got}")
        return "5 steps, same losses"

    def inproc():
        env = dict(os.environ, FSDP_TEST_STALL_COLLECTIVE="1:15")
        start = time.monotonic()
        r = subprocess.run(base + ["--steps=1000", f"--collective-timeout={TIMEOUT}"], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT + 60)
        elapsed = time.monotonic() - start
        if r.returncode != 1:
            raise Failure(f"rc {r.returncode}: {r.stderr[-2000:]}")
        if elapsed > TIMEOUT + 10:
            raise Failure(f"exited after {elapsed:.1f} s")
        found = MESSAGE.findall(r.stderr)
        if len(found) != 1 or found[0][4] != str(TIMEOUT):
            raise Failure(f"expected one watchdog line, stderr:\n{r.stderr[-3000:]}")
        # Call 15 of rank 1: call 1 is the plan agreement, then 10 per step
        # (9 collectives and the stop agreement, StopSignals.h).
        if found[0][0] != "2":
            raise Failure(f"stalled in step {found[0][0]}, expected 2: {found[0]}")
        recs = recorders(r.stderr)
        if sorted(recs) != [0, 1]:
            raise Failure(f"recorders printed for ranks {sorted(recs)}, expected 0 and 1")
        for rank, entries in recs.items():
            check_recorder(entries, rank, None if rank else 21, late=rank == int(found[0][5]))
            if entries[0][2] != "start-up":
                raise Failure(f"rank {rank}: first entry is not the start-up agreement")
        return f"exit 1 after {elapsed:.2f} s (timeout {TIMEOUT} s)"

    def hybrid():
        plan4 = os.path.join(tmp, "hybrid4.plan")
        subprocess.run([args.fsdp_opt, os.path.join(ROOT, "examples", "gpt-tiny.onnx"),
                        "--world-size=4", "--shard=hybrid:2", "--wrap=blocks", "-o", plan4],
                       check=True, capture_output=True, timeout=300)
        env = dict(os.environ, FSDP_TEST_STALL_COLLECTIVE="3:20")
        r = subprocess.run([args.fsdp_run, plan4, f"--data={tokens}", "--steps=100",
                            f"--collective-timeout={TIMEOUT}"], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT + 60)
        if r.returncode != 1 or len(MESSAGE.findall(r.stderr)) != 1:
            raise Failure(f"rc {r.returncode}:\n{r.stderr[-3000:]}")
        recs = recorders(r.stderr)
        if sorted(recs) != [0, 1, 2, 3]:
            raise Failure(f"recorders of ranks {sorted(recs)}")
        groups = {0: ("1 of 2: ranks 0,1", "1 of 2: ranks 0,2"),
                  3: ("2 of 2: ranks 2,3", "2 of 2: ranks 1,3")}
        checked = 0
        for rank, (shard, replica) in groups.items():
            check_recorder(recs[rank], rank)
            for e in recs[rank]:
                if not e[2].startswith("step") or e[3].startswith("stop agreement"):
                    continue  # host calls: no unit
                checked += 1
                if e[4] == "4 B":  # the loss's all-reduce, over the world
                    if e[3] != "AllReduce" or e[5] != "world":
                        raise Failure(f"rank {rank}: {e[0]}")
                elif " of unit " not in e[3] or e[5] != (replica if e[3].startswith(
                        "AllReduce") else shard):
                    raise Failure(f"rank {rank}: {e[0]}")
        if checked < 20:
            raise Failure(f"only {checked} step collectives in the recorders of ranks 0 and 3")
        return f"units and groups of {checked} collectives on ranks 0 and 3"

    def ckpt():
        # Rank 1's calls: 1 agreement + 9 per step for 2 steps + the stop
        # agreement after step 1 (none after the last), then the save's.
        env = dict(os.environ, FSDP_TEST_STALL_COLLECTIVE="1:21")
        start = time.monotonic()
        r = subprocess.run(base + ["--steps=2", f"--save={os.path.join(tmp, 'ckpt')}",
                                   f"--collective-timeout={TIMEOUT}"], env=env,
                           capture_output=True, text=True, timeout=TIMEOUT + 60)
        elapsed = time.monotonic() - start
        want = re.compile(r"^fsdp-run: error: step 2: checkpoint save \(group world\) did not "
                          rf"complete in {TIMEOUT} s on rank [01]$", re.M)
        if r.returncode != 1 or not want.search(r.stderr) or elapsed > TIMEOUT + 10:
            raise Failure(f"rc {r.returncode} after {elapsed:.1f} s:\n{r.stderr[-3000:]}")
        if sorted(recorders(r.stderr)) != [0, 1]:
            raise Failure("recorders of ranks 0 and 1 not printed")
        return f"exit 1 after {elapsed:.2f} s"

    def under_mpirun(sig):
        if not args.mpirun:
            raise Failure("no mpirun on PATH (pass --mpirun)")
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        metrics = os.path.join(tmp, f"mpi-{sig}.jsonl")
        # Each rank's stderr in its own file as well: mpirun interleaves the
        # ranks' output (and its own) on its stderr, even inside a line.
        outputs = os.path.join(tmp, f"mpi-{sig}")
        command = [args.mpirun, "-np", "2", "--oversubscribe", "--output-filename", outputs] + base + [
            "--steps=1000000", "--log-every=1000", f"--metrics={metrics}",
            f"--collective-timeout={TIMEOUT}"]
        job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
        try:
            deadline = time.monotonic() + 120
            # Ten steps fill the 64-entry ring (9 collectives a step).
            while not (os.path.exists(metrics) and len(losses(metrics)) >= 10):
                if job.poll() is not None or time.monotonic() > deadline:
                    raise Failure(f"no steps ran (rc {job.poll()})")
                time.sleep(0.1)
            pids = rank_pids(plan, 1)
            if len(pids) != 1:
                raise Failure(f"rank 1's process: found {pids}")
            os.kill(pids[0], sig)
            stopped = time.monotonic()
            _, stderr = job.communicate(timeout=TIMEOUT + 60)
            elapsed = time.monotonic() - stopped
        finally:
            if job.poll() is None:
                job.kill()
            kill_leftovers(plan)
            job.wait()
        if elapsed > TIMEOUT + 10:
            raise Failure(f"the job ended {elapsed:.1f} s after the signal")
        with open(os.path.join(outputs, "1", "rank.0", "stderr")) as f:
            stderr = f.read()
        recs = recorders(stderr)
        if 0 not in recs:
            raise Failure(f"no recorder from rank 0:\n{stderr[-3000:]}")
        if sig == signal.SIGSTOP:
            if job.returncode != 1:
                raise Failure(f"mpirun rc {job.returncode}, expected 1:\n{stderr[-3000:]}")
            found = MESSAGE.findall(stderr) + STOP_MESSAGE.findall(stderr)
            if len(found) != 1 or found[0][5] != "0":
                raise Failure(f"expected rank 0's watchdog line:\n{stderr[-3000:]}")
            check_recorder(recs[0], 0, 64, late=True)
            return (f"mpirun exit 1 {elapsed:.2f} s after SIGSTOP (timeout {TIMEOUT} s): "
                    f"step {found[0][0]} {found[0][1]}")
        # SIGKILL: mpirun ends the job (rank 1's signal is its exit code);
        # rank 0 says why it stops and prints its recorder.
        if job.returncode == 0:
            raise Failure("mpirun exited 0 after a rank was killed")
        if "fsdp-run: error: rank 0: ended by SIGTERM" not in stderr:
            raise Failure(f"rank 0 did not report its end:\n{stderr[-3000:]}")
        check_recorder(recs[0], 0, 64)
        return f"mpirun exit {job.returncode} {elapsed:.2f} s after SIGKILL"

    try:
        row("flag", flag)
        row("quiet", quiet)
        row("inproc", inproc)
        row("hybrid", hybrid)
        row("ckpt", ckpt)
        row("sigstop", lambda: under_mpirun(signal.SIGSTOP))
        row("sigkill", lambda: under_mpirun(signal.SIGKILL))
    finally:
        kill_leftovers(plan)
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
