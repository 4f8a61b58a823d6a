#!/usr/bin/env python3
"""fsdp-ckpt convert: checkpoints between formats and world sizes, exactly.

Trains the shipped byte-level GPT (as test_resume does) and checks, one row
each:

  - the resharding matrix through convert: a sharded checkpoint saved at
    world size A, converted to the shards of a plan for world size B
    (--format=sharded --plan=B) and back to one file (--format=full), holds
    the source plan's own full state bit for bit on every tensor
    (parameters and both AdamW moments; 1->4, 2->4, 4->2, 3->2), and the
    converted checkpoint is B's own: B resumes from it with the losses B
    gets from the source's full checkpoint;
  - full -> sharded and sharded -> full on their own, and from hybrid;
  - refusals, exit code 1 with the reason: no --format, a sharded target
    without --plan, --world-size that is not the plan's, a forward plan, a
    destination that already holds the step, --plan with --format=full,
    an unknown flag, and a source that is not a checkpoint.
"""

import argparse
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_resume as tr  # noqa: E402  (Session, run, tensor_differences)


def saved(s, flags, fmt):
    """(plan, checkpoint dir, the plan's own full save of the same state)."""
    plan = s.plan(flags)
    ckpt = os.path.join(s.fresh("ckpt"), "src")
    s.train(plan, 3, f"--save={ckpt}", f"--save-format={fmt}")
    reference = ckpt
    if fmt == "sharded":
        reference = os.path.join(s.fresh("ckpt"), "ref")
        s.train(plan, 3, f"--resume={ckpt}", f"--save={reference}", "--save-format=full")
    return plan, ckpt, reference


def convert(s, *args, expect_ok=True):
    return tr.run([s.args.fsdp_ckpt, "convert", *args], expect_ok=expect_ok)


def matrix_row(s, source_flags, target_flags, source_format="sharded"):
    _, src, reference = saved(s, source_flags, source_format)
    target = s.plan(target_flags)
    world = next((f.split("=")[1] for f in target_flags if f.startswith("--world-size=")), "1")
    sharded = os.path.join(s.fresh("ckpt"), "sharded")
    convert(s, src, sharded, "--format=sharded", f"--plan={target}", f"--world-size={world}")
    files = sorted(os.listdir(os.path.join(sharded, "step-00000003")))
    problems = []
    want = [f"rank-{r:05d}-of-{int(world):05d}.safetensors" for r in range(int(world))]
    if [f for f in files if f.startswith("rank-")] != want or "plan.fsdp" not in files:
        problems.append(f"converted checkpoint holds {files}")
    full = os.path.join(s.fresh("ckpt"), "full")
    convert(s, sharded, full, "--format=full")
    problems += tr.tensor_differences(tr.full_file(reference), tr.full_file(full))
    converted, _, _ = s.train(target, 5, f"--resume={sharded}")
    direct, _, _ = s.train(target, 5, f"--resume={reference}")
    if converted != direct or [step for step, _ in converted] != [4, 5]:
        problems.append(f"resumed from the converted shards {converted}, from the full "
                        f"checkpoint {direct}")
    return problems


def to_full_row(s, source_flags):
    _, src, reference = saved(s, source_flags, "sharded")
    full = os.path.join(s.fresh("ckpt"), "full")
    out = convert(s, src, full, "--format=full")
    problems = tr.tensor_differences(tr.full_file(reference), tr.full_file(full))
    if not re.search(r"converted .* \(step 3, sharded, world size \d+\) to .*step-00000003 \(full\)",
                     out.stdout):
        problems.append(f"convert printed {out.stdout.strip()!r}")
    return problems


def refusal_rows(s):
    plan, src, _ = saved(s, ["--world-size=2"], "sharded")
    forward = s.plan(["--mode=forward"])
    taken = os.path.join(s.fresh("ckpt"), "taken")
    convert(s, src, taken, "--format=full")
    cases = [
        ("no --format", [src, "x"], r"--format=full\|sharded is required"),
        ("a sharded target without --plan", [src, "x", "--format=sharded"], r"needs --plan=PLAN"),
        ("--world-size that is not the plan's",
         [src, "x", "--format=sharded", f"--plan={plan}", "--world-size=4"],
         r"--world-size=4: .* compiled for world size 2"),
        ("a forward plan", [src, "x", "--format=sharded", f"--plan={forward}"], r"a forward plan"),
        ("a destination that already holds the step", [src, taken, "--format=full"],
         r"step-00000003: already exists"),
        ("--plan with --format=full", [src, "x", "--format=full", f"--plan={plan}"],
         r"has no layout or world size"),
        ("an unknown flag", [src, "x", "--format=full", "--frobnicate"], r"unknown flag"),
        ("a source that is not a checkpoint", [s.tmp, "x", "--format=full"],
         r"no committed checkpoint"),
    ]
    rows = []
    for label, args, pattern in cases:
        out = convert(s, *args, expect_ok=False)
        problems = [] if out.returncode == 1 and re.search(pattern, out.stderr) else \
            [f"exit {out.returncode}, stderr {out.stderr.strip()[-200:]!r}, wanted {pattern!r}"]
        rows.append((f"refused: {label}", problems))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--fsdp-ckpt", required=True)
    args = ap.parse_args()
    args.mpirun = shutil.which("mpirun")
    with tempfile.TemporaryDirectory(prefix="ckpt-convert-") as tmp:
        s = tr.Session(args, tmp)
        rows = [
            ("convert sharded 1 (unsharded) -> sharded 4 -> full",
             lambda: matrix_row(s, [], ["--world-size=4"])),
            ("convert sharded 2 -> sharded 4 -> full",
             lambda: matrix_row(s, ["--world-size=2"], ["--world-size=4"])),
            ("convert sharded 4 -> sharded 2 -> full",
             lambda: matrix_row(s, ["--world-size=4"], ["--world-size=2"])),
            ("convert sharded 3 -> sharded 2 -> full",
             lambda: matrix_row(s, ["--world-size=3"], ["--world-size=2"])),
            ("convert full 2 -> sharded hybrid:2 N=4 -> full",
             lambda: matrix_row(s, ["--world-size=2"], ["--world-size=4", "--shard=hybrid:2"],
                                "full")),
            ("convert sharded grad-op N=2 -> full", lambda: to_full_row(
                s, ["--world-size=2", "--shard=grad-op"])),
            ("convert sharded hybrid:2 N=4 -> full", lambda: to_full_row(
                s, ["--world-size=4", "--shard=hybrid:2"])),
        ]
        results = rows_report.collect(rows, [("refusals", lambda: refusal_rows(s))], tr.Failure)
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
