#!/usr/bin/env python3
"""The runtime half of compiled step binaries: libfsdp_runtime.a and its
link file, fsdp_step_main and the session API of runtime/embed/fsdp_step.h.

Builds step binaries the way fsdp-opt --emit=binary does, without the
compiler's part: a C file defining fsdp_embedded_step over a real plan's
FlatBuffer (and weights) by .incbin, a main calling fsdp_step_main, linked
with the system compiler against lib/libfsdp_runtime.a and the flags of
lib/libfsdp_runtime.link only. Rows:

  - its losses equal fsdp-run's on the same plan bit for bit: world size 1
    (weights in a file beside the binary), world size 2 in-process
    (weights embedded) and under mpirun -np 2; a forward plan's outputs
    are fsdp-run's byte for byte;
  - checkpoints move both ways: saved by the binary and resumed by fsdp-run
    (and the reverse) gives the uninterrupted run's losses;
  - it is fsdp-run with its plan built in: a plan argument, an unknown
    flag and a weights file that does not match are refused with fsdp-run's
    message after the binary's own name; --help prints fsdp-run's flags and
    what the step was compiled from;
  - the C session API (a program in plain C): one step per call gives
    fsdp-run's losses, a checkpoint it saves resumes in fsdp-run, and a
    step past --steps is refused; under mpirun -np 2 every rank gets them.
"""

import argparse
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_resume as tr  # noqa: E402  (run, losses, the token file)
from test_resume import Failure, losses, run  # noqa: E402
SOURCES = os.path.join(HERE, "step_runtime")


class Session(tr.Session):
    def __init__(self, args, tmp):
        super().__init__(args, tmp)
        with open(args.link_file) as f:
            self.link_flags = f.read().split()
        self.plans = {}

    def plan(self, world, *flags):
        key = (world, *flags)
        if key not in self.plans:
            path = os.path.join(self.fresh("plan"), "step.plan")
            run([self.args.fsdp_opt, tr.MODEL, "-o", path, f"--world-size={world}", *flags])
            self.plans[key] = path
        return self.plans[key]

    def weights_of(self, plan):
        names = [n for n in os.listdir(os.path.dirname(plan)) if n.endswith(".safetensors")]
        if len(names) != 1:
            raise Failure(f"expected one weights file beside {plan}, found {names}")
        return os.path.join(os.path.dirname(plan), names[0])

    def binary(self, plan, embed_weights, main="main.c", weights_file=None):
        """Builds a step binary of `plan` in a fresh directory; returns its path."""
        work = self.fresh("bin")
        with open(plan, "rb") as f:
            data = f.read()
        magic, version, reserved, hash_, size = struct.unpack("<8sIIQQ", data[:32])
        if magic != b"FSDPPLAN" or size != len(data) - 32:
            raise Failure(f"{plan}: not a plan file")
        fb = os.path.join(work, "plan.fb")
        with open(fb, "wb") as f:
            f.write(data[32:])
        weights = self.weights_of(plan)
        if embed_weights:
            weights_ptr, weights_size, name = "fsdp_test_weights", os.path.getsize(weights), "0"
            incbin = weights
        else:
            incbin = os.path.join(work, "empty")
            open(incbin, "wb").close()
            weights_ptr, weights_size = "0", 0
            name = f'"{weights_file}"' if weights_file else "0"
        with open(os.path.join(SOURCES, "step_def.c.in")) as f:
            text = f.read()
        for key, value in {"PLAN": fb, "WEIGHTS": incbin, "PLAN_SIZE": str(size),
                           "PLAN_HASH": hex(hash_), "WEIGHTS_PTR": weights_ptr,
                           "WEIGHTS_SIZE": str(weights_size), "WEIGHTS_FILE": name}.items():
            text = text.replace(f"@{key}@", value)
        step_def = os.path.join(work, "step_def.c")
        with open(step_def, "w") as f:
            f.write(text)
        objects = []
        for source in (step_def, os.path.join(SOURCES, main)):
            obj = os.path.join(work, os.path.basename(source) + ".o")
            run([self.args.cc, "-std=c11", "-Wall", "-Werror", "-c", source, "-o", obj,
                 f"-I{self.args.include_dir}"])
            objects.append(obj)
        exe = os.path.join(work, "step")
        run([self.args.cxx, *objects, self.args.archive, *self.link_flags, "-o", exe])
        return exe

    def run_program(self, program, steps, *extra, mpi=0, expect_ok=True):
        """(losses, completed process) of one run of fsdp-run (program is a
        plan file) or of a step binary."""
        work = self.fresh("run")
        metrics = os.path.join(work, "m.jsonl")
        command = [program] if os.access(program, os.X_OK) else [self.args.fsdp_run, program]
        command += [f"--data={self.tokens}", f"--steps={steps}", f"--metrics={metrics}", *extra]
        env = None
        if mpi:
            command = [self.args.mpirun, "-np", str(mpi), "--oversubscribe", "--bind-to",
                       "none"] + command
            env = tr.MPI_ENV
        out = run(command, env, expect_ok)
        if out.returncode != 0:
            return None, out
        return losses(metrics), out


def parity_rows(s):
    rows = []
    plan1, plan2 = s.plan(1), s.plan(2)
    # World size 1, weights from the plan's file beside the binary.
    exe1 = s.binary(plan1, embed_weights=False)
    shutil.copy(s.weights_of(plan1), os.path.dirname(exe1))
    ref1, _ = s.run_program(plan1, 4)
    got1, _ = s.run_program(exe1, 4)
    rows.append(("world size 1, weights beside the binary: fsdp-run's losses",
                 [] if got1 == ref1 else [f"{got1} != fsdp-run's {ref1}"]))
    exe2 = s.binary(plan2, embed_weights=True)
    ref2, _ = s.run_program(plan2, 4)
    got2, _ = s.run_program(exe2, 4)
    rows.append(("world size 2 in-process, weights embedded: fsdp-run's losses",
                 [] if got2 == ref2 else [f"{got2} != fsdp-run's {ref2}"]))
    if s.args.mpirun:
        got_mpi, _ = s.run_program(exe2, 4, mpi=2)
        rows.append(("world size 2 under mpirun -np 2: fsdp-run's losses",
                     [] if got_mpi == ref2 else [f"{got_mpi} != fsdp-run's {ref2}"]))
    else:
        rows.append(("world size 2 under mpirun -np 2", ["no mpirun on PATH"]))
    # Checkpoints: binary -> fsdp-run and fsdp-run -> binary.
    ref6, _ = s.run_program(plan2, 6)
    for label, first, second in (("saved by the binary, resumed by fsdp-run", exe2, plan2),
                                 ("saved by fsdp-run, resumed by the binary", plan2, exe2)):
        ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
        s.run_program(first, 3, f"--save={ckpt}")
        resumed, _ = s.run_program(second, 6, f"--resume={ckpt}")
        rows.append((label, [] if resumed == ref6[3:] else
                     [f"{resumed} != the uninterrupted run's {ref6[3:]}"]))
    s.exe1, s.exe2, s.ref6 = exe1, exe2, ref6
    # A forward plan: the same outputs, byte for byte.
    forward = s.plan(1, "--mode=forward")
    exe = s.binary(forward, embed_weights=True)
    work = s.fresh("forward")
    with open(s.tokens, "rb") as f:  # uint16 ids: the low bytes
        tokens = list(f.read()[:2 * (16 * 64 + 1):2])
    inputs = []
    for name, offset in (("idx", 0), ("targets", 1)):
        path = os.path.join(work, name + ".npy")
        write_npy_i64(path, tokens[offset:offset + 16 * 64], (16, 64))
        inputs.append(f"--input={name}={path}")
    outputs = {}
    for label, command in (("fsdp-run", [s.args.fsdp_run, forward]), ("binary", [exe])):
        out_dir = os.path.join(work, label)
        run(command + inputs + [f"--outputs={out_dir}"])
        outputs[label] = {n: open(os.path.join(out_dir, n), "rb").read()
                          for n in sorted(os.listdir(out_dir))}
    rows.append(("forward plan: fsdp-run's outputs byte for byte",
                 [] if outputs["binary"] == outputs["fsdp-run"] and outputs["binary"] else
                 [f"outputs differ: {sorted(outputs['binary'])} vs {sorted(outputs['fsdp-run'])}"]))
    return rows


def write_npy_i64(path, values, shape):
    """A little-endian int64 .npy of `values` (no numpy needed)."""
    header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d, %d), }" % shape
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack(f"<{len(values)}q", *values))


def message_after_prefix(out, prefix):
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    if out.returncode != 1 or len(lines) != 1 or not lines[0].startswith(prefix):
        return None
    return lines[0][len(prefix):]


def cli_rows(s):
    rows = []
    exe = s.exe1
    name = os.path.basename(exe)
    plan = s.plan(1)
    # A plan argument.
    out = run([exe, plan, f"--data={s.tokens}"], expect_ok=False)
    msg = message_after_prefix(out, f"{name}: error: ")
    rows.append(("a plan argument is refused", [] if msg and "takes no plan argument" in msg
                 else [f"exit {out.returncode}, stderr {out.stderr!r}"]))
    # An unknown flag: fsdp-run's words after the name.
    ours = run([exe, "--no-such-flag"], expect_ok=False)
    theirs = run([s.args.fsdp_run, plan, "--no-such-flag"], expect_ok=False)
    a, b = message_after_prefix(ours, f"{name}: error: "), message_after_prefix(
        theirs, "fsdp-run: error: ")
    rows.append(("an unknown flag: fsdp-run's message", [] if a and a == b else
                 [f"{ours.stderr!r} vs fsdp-run's {theirs.stderr!r}"]))
    # A weights file beside the binary that is not the plan's.
    beside = os.path.join(os.path.dirname(exe), os.path.basename(s.weights_of(plan)))
    original = beside + ".orig"
    shutil.move(beside, original)
    with open(original, "rb") as f, open(beside, "wb") as g:
        data = bytearray(f.read())
        data[-1] ^= 1  # same names and shapes, other bytes
        g.write(data)
    ours = run([exe, f"--data={s.tokens}"], expect_ok=False)
    msg = message_after_prefix(ours, f"{name}: error: ")
    want = f"{beside}: weights file does not match the plan (content hash differs; " \
           "recompile or pass --weights)"
    rows.append(("a weights file that does not match is refused",
                 [] if msg == want else [f"stderr {ours.stderr!r}, wanted {want!r}"]))
    shutil.move(original, beside)
    # --help: fsdp-run's flags, then the step's description.
    out = run([exe, "--help"])
    flags = run([s.args.fsdp_run, "--help"]).stdout
    problems = []
    for flag in ("--data=FILE", "--resume=DIR", "--lr-schedule=S", "--device=NAME",
                 "--profile", "--dump"):
        if flag not in out.stdout or flag not in flags:
            problems.append(f"{flag} not in both usages")
    for text in (f"usage: {name} [--input", "compiled from gpt-tiny.onnx",
                 "generated Fused kernels: 0", "PTX modules: none", "weights: the plan's"):
        if text not in out.stdout:
            problems.append(f"--help lacks {text!r}")
    if "fsdp-run PLAN" in out.stdout:
        problems.append("--help still says 'fsdp-run PLAN'")
    rows.append(("--help: fsdp-run's flags and what the step is", problems))
    return rows


def api_rows(s):
    rows = []
    plan2 = s.plan(2)
    exe = s.binary(plan2, embed_weights=True, main="api_main.c")
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    env = dict(os.environ, FSDP_TEST_SAVE=ckpt)
    work = s.fresh("api")
    metrics = os.path.join(work, "m.jsonl")
    out = run([exe, f"--data={s.tokens}", "--steps=6", f"--metrics={metrics}"], env=env)
    printed = [(int(line.split()[2]), float(line.split()[4]))
               for line in out.stdout.splitlines() if line.startswith("api step ")]
    problems = []
    # The loss is an f32: the same f32 (--metrics prints the shortest
    # text that round-trips it, the program all of its double's digits).
    def f32(rows):
        return [(st, struct.pack("<f", l)) for st, l in rows]
    if f32(printed) != f32(s.ref6):
        problems.append(f"api losses {printed} != fsdp-run's {s.ref6}")
    if losses(metrics) != s.ref6:
        problems.append("--metrics of the session differ from fsdp-run's")
    if "api stopped: step 7 is past --steps=6" not in out.stdout:
        problems.append(f"a step past --steps was not refused: {out.stdout[-300:]!r}")
    rows.append(("session API: one step per call gives fsdp-run's losses", problems))
    if s.args.mpirun:
        out = run([s.args.mpirun, "-np", "2", "--oversubscribe", "--bind-to", "none", exe,
                   f"--data={s.tokens}", "--steps=3"], env=tr.MPI_ENV)
        # Every rank prints its own loss lines: the same global loss.
        printed = sorted((int(line.split()[2]), float(line.split()[4]))
                         for line in out.stdout.splitlines() if line.startswith("api step "))
        want = sorted(s.ref6[:3] * 2)
        rows.append(("session API under mpirun -np 2: each rank gets fsdp-run's losses",
                     [] if f32(printed) == f32(want) else [f"{printed} != {want}"]))
    resumed, _ = s.run_program(plan2, 6, f"--resume={ckpt}")
    rows.append(("session API: its checkpoint resumes in fsdp-run",
                 [] if resumed == s.ref6[2:] else [f"{resumed} != {s.ref6[2:]}"]))
    out = run([exe, f"--data={s.tokens}"], expect_ok=False)
    rows.append(("session API: --steps is required",
                 [] if out.returncode == 1 and "needs --steps=K" in out.stderr else
                 [f"exit {out.returncode}, stderr {out.stderr!r}"]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--archive", required=True, help="lib/libfsdp_runtime.a")
    ap.add_argument("--link-file", required=True, help="lib/libfsdp_runtime.link")
    ap.add_argument("--include-dir", required=True, help="runtime/embed")
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--cxx", default="c++")
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        s = Session(args, tmp)
        results = rows_report.collect(groups=[("parity", lambda: parity_rows(s)),
                                              ("command line", lambda: cli_rows(s)),
                                              ("session API", lambda: api_rows(s))],
                                      failure=Failure)
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
