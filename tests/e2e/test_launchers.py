#!/usr/bin/python3
"""fsdp-run's launch paths train the same bits, and fail together.

A plan compiled for N ranks runs as N in-process ranks, or as N processes
that find each other over TCP from torchrun's environment (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT; runtime/comm/TcpCommunicator.h).
On the shipped gpt-tiny with --data, for world size 2 (--shard=full) and 4
(--shard=hybrid:2), the per-step losses and the saved weights must be
bitwise equal across:
  threads   N in-process ranks
  env       N processes started here with torchrun's variables set by hand
            on loopback (no torchrun involved)
  torchrun  `torchrun --no-python --nproc-per-node=N fsdp-run ...` (the
            torch 2.x venv's torchrun, whose agent holds MASTER_PORT; a
            venv without one fails the row: the set-up always makes it)
and the failure contract holds across processes: two ranks given different
plans both exit 1 with the same message; a rank that fails (its data file is
missing) aborts the job, and the other rank exits 1 naming it and its
reason; a rank killed with SIGKILL mid-run makes the other exit 1 naming it;
rank 0 started alone exits 1 after the start-up timeout naming the missing
rank. Every one of those within a bounded time, never a hang.

  /usr/bin/python3 tests/e2e/test_launchers.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run [--torchrun .venv/bin/torchrun]
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import numpy

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import test_fsdp_parity as fp  # noqa: E402  (run, same_bits, Failure)
import test_train_parity as tp  # noqa: E402  (metrics and safetensors readers)

STEPS = 3
TIMEOUT = 120  # seconds for any one launch


def free_port():
    """A port free right now (the rendezvous binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_env(rank, world, port, **extra):
    """This process's environment plus torchrun's variables for `rank`;
    no agent holds the port, so rank 0 listens at MASTER_PORT itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TORCHELASTIC_USE_AGENT_STORE", "FSDP_RENDEZVOUS_PORT")
           and not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
               LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_ranks(commands, world, **extra):
    """Starts commands[r] as rank r of a hand-made torchrun environment."""
    port = free_port()
    return [subprocess.Popen(command, env=torchrun_env(r, world, port, **extra),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for r, command in enumerate(commands)]


def finish(procs, timeout=TIMEOUT):
    """(exit code, stdout, stderr) of each process; kills them all and
    fails if any outlives `timeout` seconds (a hang)."""
    deadline = time.time() + timeout
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=max(1, deadline - time.time()))
            results.append((p.returncode, out, err))
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise fp.Failure(f"a rank still runs after {timeout}s: a hang")
    return results


class Launches:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.data = os.path.join(tmp, "tokens.bin")
        text = open(os.path.join(ROOT, "examples", "shakespeare.txt"), "rb").read()
        (numpy.frombuffer(text, dtype=numpy.uint8).astype(numpy.uint16) % 256).tofile(self.data)
        self.runs = 0

    def plan(self, world, shard, extra=()):
        path = os.path.join(self.tmp, f"gpt-tiny-{world}-{shard.replace(':', '')}"
                            f"{''.join(extra)}.plan".replace("=", "").replace("-", "_"))
        if not os.path.exists(path):
            fp.run([self.args.fsdp_opt, os.path.join(ROOT, "examples", "gpt-tiny.onnx"),
                    f"--world-size={world}", f"--shard={shard}", "--wrap=blocks", *extra,
                    "-o", path])
        return path

    def command(self, plan, steps=STEPS, data=None, extra=()):
        """fsdp-run's command line and the (metrics, weights) files rank 0
        writes."""
        self.runs += 1
        work = os.path.join(self.tmp, f"run-{self.runs}")
        os.makedirs(work)
        metrics = os.path.join(work, "metrics.jsonl")
        weights = os.path.join(work, "weights.safetensors")
        return ([self.args.fsdp_run, plan, f"--data={data or self.data}", f"--steps={steps}",
                 f"--metrics={metrics}", f"--save-weights={weights}", *extra],
                (metrics, weights))

    @staticmethod
    def result(files):
        metrics, weights = files
        if not os.path.exists(weights):
            raise fp.Failure(f"fsdp-run wrote no {weights}")
        return tp.read_metrics(metrics, STEPS), tp.read_safetensors(weights)

    def threads(self, plan):
        command, files = self.command(plan)
        fp.run(command)
        return self.result(files)

    def env(self, plan, world):
        command, files = self.command(plan)
        results = finish(start_ranks([command] * world, world))
        for r, (code, out, err) in enumerate(results):
            if code != 0:
                raise fp.Failure(f"rank {r} exit {code}: {err.strip()[-1500:]}")
        # Only rank 0 reports: a process that ran all N ranks by itself
        # (the launch not detected) would print too.
        printed = [r for r, (_, out, _) in enumerate(results) if "done:" in out]
        if printed != [0]:
            raise fp.Failure(f"ranks {printed} printed a summary; only rank 0 should")
        return self.result(files)

    def torchrun(self, plan, world):
        # The set-up always makes the torch 2.x venv, so a missing torchrun
        # is a broken set-up: the row fails rather than passing untested.
        if not (self.args.torchrun and os.access(self.args.torchrun, os.X_OK)):
            raise fp.Failure(f"no torchrun at {self.args.torchrun!r} "
                             "(scripts/setup-venv.sh makes the torch 2.x venv)")
        command, files = self.command(plan)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("OMPI_", "PMIX_", "PMI_"))}
        out = fp.run([self.args.torchrun, "--no-python", f"--nproc-per-node={world}", *command],
                     env).stdout
        if out.count("done:") != 1:
            raise fp.Failure(f"{out.count('done:')} processes printed a summary; only rank 0 "
                             "should (were the ranks one job?)")
        return self.result(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--torchrun", help="torchrun of the torch 2.x venv (its rows fail without it)")
    args = ap.parse_args()
    start = time.time()
    tmp = tempfile.mkdtemp(prefix="launchers-")
    passed, failed = 0, 0

    def check(label, body):
        nonlocal passed, failed
        try:
            problems = body()
        except fp.Failure as e:
            problems = [str(e)]
        status = "PASS" if not problems else "FAIL"
        print(f"{status}  {label}" + "".join(f"\n      {p}" for p in problems), flush=True)
        passed, failed = passed + (not problems), failed + bool(problems)

    try:
        s = Launches(args, tmp)
        for world, shard in ((2, "full"), (4, "hybrid:2")):
            threads = {}

            def in_process(world=world, shard=shard):
                threads[world] = s.threads(s.plan(world, shard))
                return [] if threads[world][0] else ["no steps"]

            check(f"N={world} {shard}: in-process ranks train", in_process)
            if world not in threads:
                continue
            check(f"N={world} {shard}: processes in torchrun's environment == in-process (bits)",
                  lambda world=world, shard=shard: fp.same_bits(
                      threads[world], s.env(s.plan(world, shard), world)))
            check(f"N={world} {shard}: torchrun --nproc-per-node={world} == in-process (bits)",
                  lambda world=world, shard=shard: fp.same_bits(
                      threads[world], s.torchrun(s.plan(world, shard), world)))

        def different_plans():
            a, _ = s.command(s.plan(2, "full"))
            b, _ = s.command(s.plan(2, "full", ("--lr=0.002",)))
            results = finish(start_ranks([a, b], 2))
            problems = []
            lines = []
            for r, (code, _, err) in enumerate(results):
                if code != 1:
                    problems.append(f"rank {r} exit {code}, expected 1")
                line = [x for x in err.splitlines() if "differs across ranks" in x]
                # "fsdp-run: error: rank R: MESSAGE"
                lines.append(line[0].split(": ", 3)[-1] if line else None)
                if not line:
                    problems.append(f"rank {r} does not say the plans differ: {err.strip()}")
            if lines[0] != lines[1]:
                problems.append(f"the ranks' messages differ: {lines}")
            return problems

        check("different plans: both ranks exit 1 with one message", different_plans)

        def failing_rank():
            plan = s.plan(2, "full")
            good, _ = s.command(plan)
            bad, _ = s.command(plan, data=os.path.join(tmp, "no-such-tokens.bin"))
            results = finish(start_ranks([good, bad], 2))
            problems = [f"rank {r} exit {code}, expected 1"
                        for r, (code, _, _) in enumerate(results) if code != 1]
            if "rank 1 aborted the group: token file" not in results[0][2]:
                problems.append(f"rank 0 does not name rank 1's abort: {results[0][2].strip()}")
            return problems

        check("a rank that fails aborts the other (exit 1, names it and why)", failing_rank)

        def killed_rank():
            command, _ = s.command(s.plan(2, "full"), steps=100000)
            procs = start_ranks([command] * 2, 2)
            time.sleep(3)  # training runs: a step takes milliseconds
            if procs[1].poll() is not None:
                finish(procs)
                return [f"rank 1 ended (exit {procs[1].returncode}) before it was killed"]
            procs[1].send_signal(signal.SIGKILL)
            begin = time.time()
            results = finish(procs, timeout=60)
            problems = []
            if results[0][0] != 1:
                problems.append(f"rank 0 exit {results[0][0]}, expected 1")
            if "rank 1 left the group" not in results[0][2]:
                problems.append(f"rank 0 does not name rank 1: {results[0][2].strip()}")
            if time.time() - begin > 30:
                problems.append(f"rank 0 took {time.time() - begin:.0f}s to stop")
            return problems

        check("a rank killed mid-run: the other exits 1 naming it", killed_rank)

        def missing_peer():
            command, _ = s.command(s.plan(2, "full"))
            begin = time.time()
            [(code, _, err)] = finish(start_ranks([command], 2, FSDP_RENDEZVOUS_TIMEOUT=2),
                                      timeout=30)
            problems = [] if code == 1 else [f"exit {code}, expected 1"]
            if "only 1 of 2 ranks arrived within 2 s (missing: rank 1" not in err:
                problems.append(f"no clear message: {err.strip()}")
            if time.time() - begin > 15:
                problems.append(f"took {time.time() - begin:.0f}s with a 2 s timeout")
            return problems

        check("rank 0 alone: exit 1 after the start-up timeout naming rank 1", missing_peer)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed ({time.time() - start:.0f}s)")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
