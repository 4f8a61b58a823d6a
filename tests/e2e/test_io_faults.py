#!/usr/bin/env python3
"""Injected I/O faults during checkpoint I/O (FSDP_FAULT_INJECT).

The runtime's file layer fails the Nth open/write/fsync/rename/read/mkdir
of the process on request (runtime/io/FaultInjection.h). A clean run with
FSDP_FAULT_INJECT=trace numbers every call; this script picks calls of the
operation it tests from that trace and fails them, one run each, checking:

  - a checkpoint save of the byte-level GPT at world size 2 (in-process
    ranks) failed at the first, a middle and the last open, write, fsync and
    rename of the save (and its mkdir, and a disk that stays full; for
    --save-format=full, its writes and fsyncs): exit 1,
    an error naming a file of the checkpoint and the errno's text, no hang;
    the previous committed checkpoint is byte for byte what a clean run
    saved; no temporary directory or *.tmp file is left; and --resume from
    the directory continues bitwise to the uninterrupted run's losses and
    weights;
  - a re-save of the same step (a run resumed at its last step, saving to
    the same directory) failed at either rename keeps the old step-N;
  - temporary directories are never checkpoints: --resume of the directory
    skips a .tmp-step-N (and a step-N.tmp) holding a COMMIT, and naming one
    is refused;
  - read and open errors while resuming (a shard) and while inspecting (the
    COMMIT file): exit 1, the file and the errno named;
  - --save-weights, fsdp-ckpt convert (full, and sharded through in-process
    ranks) and fsdp-ckpt export failed the same way: the old destination
    file or checkpoint untouched, nothing partial left under a final name;
  - a malformed FSDP_FAULT_INJECT stops fsdp-opt, fsdp-run and fsdp-ckpt
    (exit 1).

--table FILE writes the outcome of every fault as a Markdown table (fault,
where, the message seen, exit code, state after).
"""

import argparse
import errno
import filecmp
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_resume as tr  # noqa: E402  (Session, run, Failure)

ENV = "FSDP_FAULT_INJECT"
TRACE = re.compile(r"^fsdp-fault: (\w+) #(\d+) '(.*)'$", re.M)
ERRNOS = ["ENOSPC", "EIO", "EDQUOT", "EROFS"]
SAVED_STEP, FAILED_STEP, LAST_STEP = 2, 4, 6


def step_dir(step):
    return f"step-{step:08d}"


def traced(out):
    """[(op, number, path)] of a trace run's stderr, in the order printed."""
    return [(op, int(n), path) for op, n, path in TRACE.findall(out.stderr)]


def picks(numbers):
    """The first, a middle and the last of a list of call numbers."""
    numbers = sorted(numbers)
    return sorted({numbers[0], numbers[len(numbers) // 2], numbers[-1]})


def tree(root):
    """Every path under root, relative, sorted."""
    found = []
    for top, dirs, files in os.walk(root):
        found += [os.path.relpath(os.path.join(top, n), root) for n in dirs + files]
    return sorted(found)


def leftovers(root):
    return [p for p in tree(root) if ".tmp" in os.path.basename(p)]


def short(message):
    """The error line without the status's source locations."""
    line = next((l for l in message.strip().splitlines() if "error:" in l), message.strip())
    return re.sub(r" \(at .*$", "", line)


class Faults:
    def __init__(self, args, tmp):
        self.s = tr.Session(args, tmp)
        self.args = args
        self.table = []  # (fault, where, message, exit, state)
        self._plan = self._uninterrupted = None

    def plan(self):
        """The world-size-2 plan every row runs (compiled once)."""
        if not self._plan:
            self._plan = self.s.plan(["--world-size=2"])
        return self._plan

    def uninterrupted(self):
        """(losses, weights) of the plan's uninterrupted run to LAST_STEP."""
        if not self._uninterrupted:
            self._uninterrupted = self.s.train(self.plan(), LAST_STEP)[:2]
        return self._uninterrupted

    def checkpointed(self, name, every=SAVED_STEP, steps=FAILED_STEP):
        """A fresh --save directory of a clean run to `steps`."""
        ckpt = os.path.join(self.s.fresh("ckpt"), name)
        self.s.train(self.plan(), steps, f"--save={ckpt}", f"--save-every={every}")
        return ckpt

    def resumes_bitwise(self, ckpt, step):
        """Problems unless --resume=ckpt continues from `step` to the
        uninterrupted run's losses and weights."""
        full_losses, full_weights = self.uninterrupted()
        resumed, weights, out = self.s.train(self.plan(), LAST_STEP, f"--resume={ckpt}",
                                             expect_ok=False)
        if out.returncode != 0:
            return [f"--resume failed: {short(out.stderr)}"]
        if f"resumed from step {step} " not in out.stdout:
            return [f"did not resume from step {step}: {out.stdout[:200]}"]
        if resumed != full_losses[step:] or weights != full_weights:
            return [f"resumed from step {step}, not bitwise: losses {resumed} vs "
                    f"{full_losses[step:]}"]
        return []

    def env(self, spec):
        return dict(os.environ, **{ENV: spec})

    def failing(self, command, spec, where, names, errno_name):
        """Runs command with spec; problems unless it exits 1 naming
        `names` (a path) and the errno's text. Returns (problems, exit code, message)."""
        out = tr.run(command, self.env(spec), expect_ok=False)
        message = short(out.stderr)
        problems = []
        if out.returncode != 1:
            problems.append(f"{spec} during {where}: exit {out.returncode}, not 1: "
                            f"{out.stderr.strip()[-300:]}")
        text = os.strerror(getattr(errno, errno_name))
        if text not in out.stderr or names not in out.stderr:
            problems.append(f"{spec} during {where}: the error names not both '{names}' and "
                            f"'{text}': {message}")
        return problems, out.returncode, message

    # --- checkpoint saves -------------------------------------------------

    def save_command(self, plan, ckpt, fmt="sharded"):
        return [self.args.fsdp_run, plan, f"--data={self.s.tokens}", f"--steps={FAILED_STEP}",
                f"--save={ckpt}", f"--save-every={SAVED_STEP}", f"--save-format={fmt}"]

    def save_rows(self, fmt="sharded", ops=("open", "write", "fsync", "rename", "mkdir")):
        """Sharded: every op of the save. Full (rank 0 streams one file as
        the ranks gather each unit): its writes and fsyncs."""
        reference = os.path.join(self.s.fresh("ckpt"), "ckpt")
        calls = traced(tr.run(self.save_command(self.plan(), reference, fmt), self.env("trace")))
        # The calls of the second save: from its mkdir on (rank 0 makes the
        # directory only once every rank has reached the save).
        start = next(i for i, c in enumerate(calls)
                     if c[0] == "mkdir" and step_dir(FAILED_STEP) in c[2])
        second = calls[start:]
        faults = []
        for op in ops:
            numbers = [n for o, n, _ in second if o == op]
            if not numbers:
                raise tr.Failure(f"the trace shows no {op} in the step-{FAILED_STEP} save")
            faults += [f"{op}:{n}:{ERRNOS[i % len(ERRNOS)]}" for i, n in enumerate(picks(numbers))]
        first_write = min(n for o, n, _ in second if o == "write")
        faults.append(f"write:{first_write}+:ENOSPC")  # the disk stays full
        return [(f"{fmt} save at step {FAILED_STEP}, world size 2: {spec}",
                 lambda spec=spec: self.save_fault(spec, reference, fmt)) for spec in faults]

    def save_fault(self, spec, reference, fmt):
        ckpt = os.path.join(self.s.fresh("ckpt"), "ckpt")
        # Which file a call number hits varies with how the ranks interleave
        # (the message names the one it was); the table says where in the save.
        where = f"--save --save-format={fmt}, step {FAILED_STEP} of a world-size-2 run"
        problems, code, message = self.failing(self.save_command(self.plan(), ckpt, fmt), spec,
                                               "a checkpoint save", ckpt, spec.split(":")[2])
        if leftovers(ckpt):
            problems.append(f"{spec}: left {leftovers(ckpt)}")
        saved, failed = step_dir(SAVED_STEP), step_dir(FAILED_STEP)
        if not os.path.isdir(os.path.join(ckpt, saved)):
            problems.append(f"{spec}: the committed {saved} is gone")
        else:
            _, mismatch, errors = filecmp.cmpfiles(
                os.path.join(reference, saved), os.path.join(ckpt, saved),
                os.listdir(os.path.join(reference, saved)), shallow=False)
            if mismatch or errors:
                problems.append(f"{spec}: {saved} differs from a clean run's: {mismatch + errors}")
        committed = os.path.isdir(os.path.join(ckpt, failed))
        resumed_from = FAILED_STEP if committed else SAVED_STEP
        problems += [f"{spec}: {p}" for p in self.resumes_bitwise(ckpt, resumed_from)]
        state = (f"{saved} intact; {failed} " +
                 ("committed whole (the failure came after the rename)" if committed
                  else "absent") + f"; no .tmp left; --resume from {resumed_from} bitwise")
        self.table.append((spec, where, message, code, state))
        return problems

    def mpi_row(self):
        """Under mpirun, rank 1 alone fails its save (an MPMD command line
        gives only it the rule): every rank exits, none hangs, nothing is
        left, and the run resumes from the earlier checkpoint bitwise."""
        if not self.args.mpirun:
            raise tr.Failure("no mpirun on PATH (setup.sh installs openmpi-bin)")
        ckpt = os.path.join(self.s.fresh("ckpt"), "ckpt")
        command = self.save_command(self.plan(), ckpt)
        # rank 1's process writes its own file 11 times a save: the 15th
        # write is in the second save
        spec = "write:15:ENOSPC"
        mpmd = [self.args.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "1", *command,
                ":", "-np", "1", "env", f"{ENV}={spec}", *command]
        out = tr.run(mpmd, tr.MPI_ENV, expect_ok=False)
        problems = []
        name = os.path.join(ckpt, ".tmp-" + step_dir(FAILED_STEP), "rank-00001-of-00002")
        if out.returncode != 1 or name not in out.stderr or "No space left on device" not in \
                out.stderr:
            problems.append(f"mpirun: exit {out.returncode}: {short(out.stderr)}")
        if leftovers(ckpt):
            problems.append(f"mpirun: left {leftovers(ckpt)}")
        problems += self.resumes_bitwise(ckpt, SAVED_STEP)
        self.table.append((f"{spec} (rank 1's process only)", "--save, step 4, mpirun -np 2",
                           short(out.stderr), out.returncode,
                           "step-00000002 intact; step-00000004 absent; no .tmp left; --resume "
                           "from 2 bitwise"))
        return problems

    def resave_rows(self):
        """A run resumed at its last step saves that step again into the same
        DIR: the old step-N is moved aside and back if the new one cannot
        be renamed in (and if even that fails, the message says where it is)."""
        reference = self.checkpointed("ckpt")
        command = [self.args.fsdp_run, self.plan(), f"--data={self.s.tokens}",
                   f"--steps={FAILED_STEP}", f"--resume=DIR", f"--save=DIR"]
        calls = traced(tr.run([a.replace("DIR", reference) for a in command], self.env("trace")))
        renames = [n for o, n, p in calls if o == "rename" and p.endswith(step_dir(FAILED_STEP))]
        if len(renames) != 2:
            raise tr.Failure(f"a re-save renamed {renames} (expected: aside, then in)")
        aside, into = renames
        rows = []
        for spec, kept in ((f"rename:{aside}:EIO", "step"), (f"rename:{into}:EIO", "step"),
                           (f"rename:{into}+:EIO", ".old-step")):
            def body(spec=spec, kept=kept):
                ckpt = os.path.join(self.s.fresh("ckpt"), "ckpt")
                shutil.copytree(reference, ckpt)
                where = f"--resume=DIR --save=DIR at the step reached (re-save of step {FAILED_STEP})"
                problems, code, message = self.failing(
                    [a.replace("DIR", ckpt) for a in command], spec, where, ckpt, "EIO")
                old = os.path.join(ckpt, ("" if kept == "step" else ".old-") + step_dir(FAILED_STEP))
                if kept != "step" and old not in message:
                    problems.append(f"{spec}: the message does not say where step "
                                    f"{FAILED_STEP} is: {message}")
                if not os.path.isdir(old) or filecmp.dircmp(
                        old, os.path.join(reference, step_dir(FAILED_STEP))).diff_files:
                    problems.append(f"{spec}: the old step {FAILED_STEP} is not intact at {old}")
                if leftovers(ckpt):
                    problems.append(f"{spec}: left {leftovers(ckpt)}")
                self.table.append((spec, where, message, code,
                                   f"old {step_dir(FAILED_STEP)} intact" +
                                   ("" if kept == "step" else
                                    f" at {os.path.basename(old)}, named in the message") +
                                   "; no .tmp left"))
                return problems
            rows.append((f"re-save of step {FAILED_STEP}: {spec}", body))
        return rows

    # --- temporary directories are not checkpoints --------------------------

    def temp_dir_rows(self):
        s, plan = self.s, self.plan()
        ckpt = self.checkpointed("ckpt")
        later = self.checkpointed("later", every=LAST_STEP, steps=LAST_STEP)
        # A crashed or failed save's directories, each holding a real COMMIT
        # of a later step.
        shutil.copytree(os.path.join(later, step_dir(LAST_STEP)),
                        os.path.join(ckpt, ".tmp-" + step_dir(LAST_STEP)))
        shutil.copytree(os.path.join(later, step_dir(LAST_STEP)),
                        os.path.join(ckpt, step_dir(LAST_STEP + 2) + ".tmp"))
        problems = []
        _, _, out = s.train(plan, LAST_STEP + 2, f"--resume={ckpt}")
        if f"resumed from step {FAILED_STEP} " not in out.stdout:
            problems.append(f"--resume={ckpt} took a temporary directory: {out.stdout[:200]}")
        named = os.path.join(ckpt, ".tmp-" + step_dir(LAST_STEP))
        _, _, out = s.train(plan, LAST_STEP + 2, f"--resume={named}", expect_ok=False)
        if out.returncode != 1 or "temporary directory" not in out.stderr:
            problems.append(f"--resume={named}: exit {out.returncode}: {short(out.stderr)}")
        self.table.append(("(a crashed save)", "DIR/.tmp-step-00000006 and DIR/step-00000008.tmp "
                           "holding a COMMIT", "--resume=DIR: resumed from step 4; --resume="
                           "DIR/.tmp-step-00000006: " + short(out.stderr), out.returncode,
                           "never loaded"))
        return problems

    # --- reads ----------------------------------------------------------------

    def read_rows(self):
        ckpt = self.checkpointed("ckpt", every=FAILED_STEP)
        resume = [self.args.fsdp_run, self.plan(), f"--data={self.s.tokens}",
                  f"--steps={LAST_STEP}", f"--resume={ckpt}"]
        calls = traced(tr.run(resume, self.env("trace")))
        # Shard reads come after every rank's COMMIT read (an agreement
        # between), so their numbers do not depend on how ranks interleave.
        shard = [(o, n, p) for o, n, p in calls if ckpt in p and p.endswith(".safetensors")]
        reads = [n for o, n, _ in shard if o == "read"]
        opens = [n for o, n, _ in shard if o == "open"]
        rows = [(f"--resume, world size 2: {spec}",
                 lambda spec=spec: self.read_fault(resume, spec, "--resume (a shard)", ckpt))
                for spec in (f"read:{min(reads)}:EIO", f"read:{max(reads)}:EIO",
                             f"open:{min(opens)}:EIO")]
        inspect = [self.args.fsdp_ckpt, "inspect", ckpt]
        commit = os.path.join(ckpt, step_dir(FAILED_STEP), "COMMIT")
        return rows + [(f"fsdp-ckpt inspect: {spec}",
                        lambda spec=spec: self.read_fault(inspect, spec,
                                                          "fsdp-ckpt inspect (COMMIT)", commit))
                       for spec in ("read:1:EIO", "open:1:EIO")]  # it reads COMMIT first

    def read_fault(self, command, spec, where, names):
        problems, code, message = self.failing(command, spec, where, names, "EIO")
        self.table.append((spec, where, message, code, "nothing written"))
        return problems

    # --- other writers ----------------------------------------------------------

    def replace_rows(self, label, command, dest, opener):
        """Faults of one command writing the file `dest` over an old one:
        its first open of `dest`, first write, every later write, fsync and
        rename."""
        calls = traced(tr.run(command, self.env("trace")))
        mine = [(o, n) for o, n, p in calls if p.startswith(dest)]
        first = {op: min(n for o, n in mine if o == op) for op in ("open", "write", "fsync",
                                                                   "rename")}
        specs = [f"open:{first['open']}:EROFS", f"write:{first['write']}:ENOSPC",
                 f"write:{first['write'] + 1}+:EDQUOT", f"fsync:{first['fsync']}:EIO",
                 f"rename:{first['rename']}:EIO"]
        rows = []
        for spec in specs:
            def body(spec=spec):
                with open(dest, "wb") as f:
                    f.write(b"old")
                problems, code, message = self.failing(command, spec, label, dest,
                                                       spec.split(":")[2])
                with open(dest, "rb") as f:
                    if f.read() != b"old":
                        problems.append(f"{spec}: the old {dest} was replaced")
                if os.path.exists(dest + ".tmp"):
                    problems.append(f"{spec}: left {dest}.tmp")
                self.table.append((spec, label, message, code,
                                   f"old {opener} untouched; no .tmp left"))
                return problems
            rows.append((f"{label}: {spec}", body))
        return rows

    def weights_rows(self):
        weights = os.path.join(self.s.fresh("weights"), "w.safetensors")
        command = [self.args.fsdp_run, self.plan(), f"--data={self.s.tokens}", "--steps=2",
                   f"--save-weights={weights}"]
        return self.replace_rows("fsdp-run --save-weights", command, weights, "weights file")

    def export_rows(self):
        ckpt = self.checkpointed("ckpt", every=SAVED_STEP, steps=SAVED_STEP)
        out = os.path.join(self.s.fresh("export"), "out.safetensors")
        command = [self.args.fsdp_ckpt, "export", ckpt, "--safetensors", "-o", out]
        return self.replace_rows("fsdp-ckpt export --safetensors", command, out, "output file")

    def convert_rows(self):
        """convert SRC (step 4) into a directory already holding step 2's
        conversion: a failure must leave that one and add nothing."""
        s, plan = self.s, self.plan()
        src = self.checkpointed("src")
        old = os.path.join(src, step_dir(SAVED_STEP))
        rows = []
        for fmt, flags in (("full", []), ("sharded", [f"--plan={plan}"])):
            probe = os.path.join(s.fresh("convert"), "dst")
            calls = traced(tr.run([self.args.fsdp_ckpt, "convert", src, probe, f"--format={fmt}",
                                   *flags], self.env("trace")))
            mine = [(o, n) for o, n, p in calls if p.startswith(probe)]
            specs = []
            for i, op in enumerate(("write", "fsync", "rename")):
                numbers = [n for o, n in mine if o == op]
                specs += [f"{op}:{numbers[0]}:{ERRNOS[i]}", f"{op}:{numbers[-1]}:{ERRNOS[i + 1]}"]
            specs += [f"write:{[n for o, n in mine if o == 'write'][1]}+:ENOSPC", "mkdir:1:EROFS"]
            for spec in specs:
                def body(spec=spec, fmt=fmt, flags=flags):
                    dst = os.path.join(s.fresh("convert"), "dst")
                    tr.run([self.args.fsdp_ckpt, "convert", old, dst, f"--format={fmt}", *flags])
                    before = {p: open(os.path.join(dst, p), "rb").read() for p in tree(dst)
                              if os.path.isfile(os.path.join(dst, p))}
                    where = f"fsdp-ckpt convert --format={fmt}"
                    problems, code, message = self.failing(
                        [self.args.fsdp_ckpt, "convert", src, dst, f"--format={fmt}", *flags],
                        spec, where, dst, spec.split(":")[2])
                    after = {p: open(os.path.join(dst, p), "rb").read() for p in tree(dst)
                             if os.path.isfile(os.path.join(dst, p)) and p in before}
                    if after != before:
                        problems.append(f"{spec}: step {SAVED_STEP}'s checkpoint in {dst} changed")
                    if leftovers(dst):
                        problems.append(f"{spec}: left {leftovers(dst)}")
                    committed = os.path.isdir(os.path.join(dst, step_dir(FAILED_STEP)))
                    if committed:  # only after the rename: then whole and verified
                        check = tr.run([self.args.fsdp_ckpt, "inspect",
                                        os.path.join(dst, step_dir(FAILED_STEP))], expect_ok=False)
                        if check.returncode != 0:
                            problems.append(f"{spec}: a partial {step_dir(FAILED_STEP)}: "
                                            f"{short(check.stderr)}")
                    self.table.append((spec, where, message, code,
                                       f"step {SAVED_STEP} untouched; step {FAILED_STEP} " +
                                       ("committed whole (after the rename)" if committed
                                        else "absent") + "; no .tmp left"))
                    return problems
                rows.append((f"fsdp-ckpt convert --format={fmt}: {spec}", body))
        return rows

    def malformed_rows(self):
        problems = []
        for command in ([self.args.fsdp_opt, "--help"], [self.args.fsdp_run, "--help"],
                        [self.args.fsdp_ckpt, "--help"]):
            for spec in ("write:3:ENOSPACE", "write:0:EIO", "writes:1:EIO", "write:1"):
                out = tr.run(command, self.env(spec), expect_ok=False)
                if out.returncode != 1 or f"{ENV}={spec}" not in out.stderr:
                    problems.append(f"{ENV}={spec} {os.path.basename(command[0])}: exit "
                                    f"{out.returncode}: {out.stderr.strip()[-200:]}")
                self.table.append((spec, f"{os.path.basename(command[0])}, at start",
                                   short(out.stderr), out.returncode, "nothing run"))
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--fsdp-ckpt", required=True)
    ap.add_argument("--table", help="write the outcome of each fault here (Markdown)")
    args = ap.parse_args()
    args.mpirun = shutil.which("mpirun")
    with tempfile.TemporaryDirectory(prefix="io-faults-") as tmp:
        f = Faults(args, tmp)
        results = []
        # Each maker traces a clean run and returns its rows (label, body).
        for label, make in (("checkpoint saves", f.save_rows),
                            ("full checkpoint saves", lambda: f.save_rows("full", ("write", "fsync"))),
                            ("re-saves", f.resave_rows), ("reads", f.read_rows),
                            ("--save-weights", f.weights_rows), ("export", f.export_rows),
                            ("convert", f.convert_rows)):
            try:
                results += rows_report.collect(make(), (), tr.Failure)
            except tr.Failure as e:
                results.append((label, [str(e)]))
        results += rows_report.collect(
            [("save under mpirun -np 2, rank 1 alone failing", f.mpi_row),
             ("temporary directories are never checkpoints", f.temp_dir_rows),
             (f"a malformed {ENV} stops the tools", f.malformed_rows)], (), tr.Failure)
        if args.table:
            with open(args.table, "w") as out:
                out.write("| fault | where | message seen | exit | state after |\n"
                          "|---|---|---|---|---|\n")
                for fault, where, message, code, state in f.table:
                    message = message.replace(tmp, "$TMP").replace("|", "\\|")
                    out.write(f"| `{fault}` | {where} | `{message}` | {code} | {state} |\n")
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
