#!/usr/bin/env python3
"""What a sharded plan holds in full, and when, read from the plan itself.

FSDP's memory promise is that a non-root unit exists in full only inside its
gather window: from the all-gather that rebuilds it to the last instruction
that reads one of its parameters. This test compiles sharded plans, replays
`fsdp-run --dump` (buffers with their region, offset and size; instructions
with their operands) and checks, per strategy:

  - every gathered unit is read by the very next instruction (the gather sits
    right before its first use) and dies at its last reader;
  - --shard=full: a non-root unit is gathered once for the forward and at
    most once for the backward, the two windows are disjoint, and no two
    non-root units are ever held in full at the same instruction;
  - --shard=grad-op: one gather per non-root unit, alive across forward and
    backward;
  - --shard=none: no gathers at all (the flat buffer is replicated);
  - the memory plan never writes over bytes that are still to be read (each
    arena write lands on bytes whose previous owner is dead), so the windows
    measured here are the memory the runtime really uses.

Models: the shipped byte-level GPT (2 blocks) and a 4-layer GPT exported by
tests/models/export_models.py.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))

BUFFER = re.compile(r'^buffer %(\d+) \w+\[[^\]]*\] (persistent|arena|constant)\+(\d+) size=(\d+) "(.*)"$')
INST = re.compile(r"^inst (\d+) (\w+) \[([^\]]*)\] -> \[([^\]]*)\]")
GATHER_NAME = re.compile(r"^fsdp:(.+)\.(forward|backward|gather)\.all_gather$")


def ids(text):
    return [int(t.strip()[1:]) for t in text.split(",") if t.strip().startswith("%")]


class Plan:
    """The dump's buffers and instructions, with arena ownership replayed."""

    def __init__(self, dump):
        self.buffers, self.insts = {}, []
        for line in dump.splitlines():
            if m := BUFFER.match(line):
                self.buffers[int(m[1])] = (m[2], int(m[3]), int(m[4]), m[5])
            elif m := INST.match(line):
                self.insts.append((m[2], ids(m[3]), ids(m[4])))
        self.written = {b for _, _, outs in self.insts for b in outs}
        self._replay()

    def _replay(self):
        """Maps every arena read to the buffer that owns the bytes read (a
        view reads its root's bytes), and records each owner's first write
        and last read."""
        owners = []  # (offset, end, buffer) of arena buffers written so far
        self.first_write, self.last_read, self.reads = {}, {}, []
        for i, (_, ins, outs) in enumerate(self.insts):
            read = []
            for b in ins:
                region, off, size, _ = self.buffers[b]
                if region != "arena":
                    continue
                owner = b if b in self.written else self._owner(owners, off, size)
                read.append(owner)
                self.last_read[owner] = i
            self.reads.append(read)
            for b in outs:
                region, off, size, _ = self.buffers[b]
                if region == "arena":
                    self.first_write.setdefault(b, i)
                    owners.append((off, off + size, b))

    @staticmethod
    def _owner(owners, off, size):
        for lo, hi, b in reversed(owners):
            if lo <= off and off + max(size, 1) <= hi:
                return b
        raise AssertionError(f"view at arena+{off} has no live owner")

    def overwrites(self):
        """Writes that land on bytes another owner has yet to be read from."""
        bad = []
        live = []  # (offset, end, buffer, last read)
        for i, (kernel, _, outs) in enumerate(self.insts):
            live = [x for x in live if x[3] >= i]
            for b in outs:
                region, off, size, name = self.buffers[b]
                if region != "arena" or self.first_write.get(b) != i:
                    continue
                for lo, hi, other, last in live:
                    if other != b and lo < off + size and off < hi and last > i:
                        bad.append(f"inst {i} {kernel} writes {name!r} over "
                                   f"{self.buffers[other][3]!r} (read until inst {last})")
                live.append((off, off + size, b, self.last_read.get(b, i)))
        return bad

    def gather_windows(self):
        """unit -> [(phase, gather inst, first reader, last reader)]. Under
        bf16 the widened copy (a Cast of the gathered buffer) is the unit in
        full too, so its readers extend the window."""
        windows = {}
        for i, (kernel, _, outs) in enumerate(self.insts):
            if kernel != "AllGather":
                continue
            m = GATHER_NAME.match(self.buffers[outs[0]][3])
            assert m, f"gathered buffer {self.buffers[outs[0]][3]!r} names no unit"
            held = {outs[0]}
            for j in range(i + 1, len(self.insts)):
                k, _, o = self.insts[j]
                if k == "Cast" and set(self.reads[j]) & held:
                    held.update(o)
            readers = [j for j in range(i + 1, len(self.insts)) if set(self.reads[j]) & held]
            assert readers, f"inst {i}: gathered {m[1]} is never read"
            windows.setdefault(m[1], []).append((m[2], i, readers[0], readers[-1]))
        return windows


def check(plan, shard, failures, label):
    def fail(msg):
        failures.append(f"{label}: {msg}")

    for msg in plan.overwrites():
        fail(msg)
    windows = plan.gather_windows()
    blocks = {u: w for u, w in windows.items() if u != "root"}
    if shard == "none":
        if windows:
            fail(f"--shard=none gathers {sorted(windows)}")
        return 0
    if not blocks:
        fail("no non-root unit is gathered")
    for unit, ws in windows.items():
        for phase, start, first, last in ws:
            if first != start + 1 and plan.insts[start + 1][0] != "Cast":
                fail(f"{unit} {phase}: gathered at inst {start}, first read at {first}")
    if shard == "grad-op":
        for unit, ws in blocks.items():
            if len(ws) != 1:
                fail(f"grad-op gathers {unit} {len(ws)} times")
    if shard == "full":
        for unit, ws in blocks.items():
            phases = [p for p, *_ in ws]
            if phases not in (["forward"], ["backward"], ["forward", "backward"]):
                fail(f"{unit}: windows {phases}")
            if len(ws) == 2 and ws[0][3] >= ws[1][1]:
                fail(f"{unit}: forward copy alive at inst {ws[0][3]}, after the backward "
                     f"gather at inst {ws[1][1]}")
        # At most one non-root unit in full at any instruction.
        spans = [(s, e, u) for u, ws in blocks.items() for _, s, _, e in ws]
        for s, e, u in spans:
            for s2, e2, u2 in spans:
                if u2 != u and s <= e2 and s2 <= e:
                    fail(f"{u} [{s}, {e}] and {u2} [{s2}, {e2}] are held in full together")
    return sum(len(w) for w in blocks.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    args = ap.parse_args()
    import export_models
    import torch

    tmp = tempfile.mkdtemp(prefix="gather-windows-")
    deep = os.path.join(tmp, "gpt4.onnx")
    torch.manual_seed(0)
    model = export_models.GPT(layers=4, tied=False, gelu="erf")
    gen = torch.Generator().manual_seed(0)
    with export_models.quiet():
        export_models.export(model, export_models.gpt_inputs(gen), deep, 17, "train")
    models = {"gpt-tiny": os.path.join(ROOT, "examples", "gpt-tiny.onnx"), "gpt4": deep}
    configs = [("full", 2, []), ("full", 3, []), ("grad-op", 4, []), ("none", 2, []),
               ("hybrid:2", 4, []), ("full", 2, ["--param-dtype=bf16", "--reduce-dtype=bf16"])]
    failures, rows = [], []
    for name, path in models.items():
        for shard, world, extra in configs:
            tag = "-bf16" if extra else ""
            plan_path = os.path.join(tmp, f"{name}-{shard.replace(':', '')}-{world}{tag}.plan")
            subprocess.run([args.fsdp_opt, path, f"--world-size={world}", f"--shard={shard}",
                            "--wrap=blocks", *extra, "-o", plan_path],
                           check=True, capture_output=True, text=True)
            dump = subprocess.run([args.fsdp_run, plan_path, "--dump"], check=True,
                                  capture_output=True, text=True).stdout
            label = f"{name} --shard={shard} N={world} {' '.join(extra)}".strip()
            before = len(failures)
            kind = "full" if shard.startswith("hybrid") else shard
            gathers = check(Plan(dump), kind, failures, label)
            rows.append((label, gathers, "PASS" if len(failures) == before else "FAIL"))
    # Negative control: a plan whose backward reads the forward copy (a
    # grad-op plan checked as if it were full) must be caught.
    control = []
    grad_op = os.path.join(tmp, "gpt4-grad-op-4.plan")
    dump = subprocess.run([args.fsdp_run, grad_op, "--dump"], check=True,
                          capture_output=True, text=True).stdout
    check(Plan(dump), "full", control, "control")
    rows.append(("control: grad-op plan judged as full (must fail)", "-",
                 "PASS" if control else "FAIL"))
    if not control:
        failures.append("negative control: a grad-op plan passed the full-shard window checks")
    # Negative control for the memory check: move a buffer written inside a
    # gather window onto the gathered bytes; the replay must see the clash.
    plan = Plan(subprocess.run([args.fsdp_run, os.path.join(tmp, "gpt4-full-2.plan"), "--dump"],
                               check=True, capture_output=True, text=True).stdout)
    unit, ws = next((u, w) for u, w in plan.gather_windows().items() if u != "root")
    _, start, _, end = ws[0]
    gathered = plan.insts[start][2][0]
    victim = next(b for j in range(start + 1, end) for b in plan.insts[j][2]
                  if plan.buffers[b][0] == "arena" and plan.first_write.get(b) == j)
    region, _, size, name = plan.buffers[victim]
    plan.buffers[victim] = (region, plan.buffers[gathered][1], size, name)
    clash = bool(plan.overwrites())
    rows.append((f"control: {name!r} moved onto gathered {unit} (must fail)", "-",
                 "PASS" if clash else "FAIL"))
    if not clash:
        failures.append("negative control: an overlapping arena write went unnoticed")

    width = max(len(r[0]) for r in rows)
    print(f"{'plan':<{width}}  non-root gathers  result")
    for label, gathers, result in rows:
        print(f"{label:<{width}}  {gathers!s:>16}  {result}")
    for f in failures:
        print("FAIL:", f)
    print(f"{sum(r[2] == 'PASS' for r in rows)} passed, {sum(r[2] == 'FAIL' for r in rows)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
