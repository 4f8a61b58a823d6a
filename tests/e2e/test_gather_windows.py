#!/usr/bin/env python3
"""What a sharded plan holds in full, and when, read from the plan itself.

FSDP's memory promise is that a non-root unit exists in full only inside its
gather window: from the all-gather that rebuilds it to the last instruction
that reads one of its parameters. This test compiles sharded plans, replays
`fsdp-run --dump` (buffers with their region, offset and size; instructions
with their operands) and checks, per strategy:

  - every gathered unit's first reader is the compute instruction that waits
    for the gather (collectives run on the communication stream; without
    one, the gather sits right before its first use) and it dies at its last
    reader;
  - --shard=full: a non-root unit is gathered once for the forward and at
    most once for the backward, the two windows are disjoint, and at most
    min(K + 1, L) non-root units are held in full at any instruction under
    --prefetch=K --limit-all-gathers=L (one at --prefetch=0: a unit's
    window is the gather, while the previous unit computes, to its last
    reader);
  - --shard=grad-op: one gather per non-root unit, in place: into a
    persistent buffer that holds the unit's shard as this rank's chunk (as
    is the root unit's single gather under every strategy), so the unit is
    held once, in full, for the whole step;
  - --shard=none: no gathers at all (the flat buffer is replicated);
  - the memory plan never writes over bytes that are still to be read (each
    arena write lands on bytes whose previous owner is dead; a collective on
    the communication stream reads its operands until it is known complete:
    the instruction that waits for it or for a later collective, the stream
    running in order), so the windows measured here are the memory the
    runtime really uses.

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

BUFFER = re.compile(r'^buffer %(\d+) \w+\[[^\]]*\] (persistent|arena|constant)\+(\d+)'
                    r'(?:\+rank%\d+\*\d+)? size=(\d+) "(.*)"$')
INST = re.compile(r"^inst (\d+) (\w+) \[([^\]]*)\] -> \[([^\]]*)\]")
STREAM = re.compile(r" stream=(\d+)")
WAIT = re.compile(r" wait=\[([^\]]*)\]")
SIGNAL = re.compile(r" signal=(\d+)")
GATHER_NAME = re.compile(r"^fsdp:(.+)\.(forward|backward|gather)\.all_gather$")
IN_PLACE_NAME = re.compile(r"^(.+)\.gathered$")


def ids(text):
    return [int(t.strip()[1:]) for t in text.split(",") if t.strip().startswith("%")]


class Plan:
    """The dump's buffers and instructions, with arena ownership replayed."""

    def __init__(self, dump):
        self.buffers, self.insts = {}, []
        self.streams, self.waits, self.signals = [], [], []
        for line in dump.splitlines():
            if m := BUFFER.match(line):
                self.buffers[int(m[1])] = (m[2], int(m[3]), int(m[4]), m[5])
            elif m := INST.match(line):
                self.insts.append((m[2], ids(m[3]), ids(m[4])))
                stream = STREAM.search(line)
                wait = WAIT.search(line)
                signal = SIGNAL.search(line)
                self.streams.append(int(stream[1]) if stream else 0)
                self.waits.append([int(e) for e in wait[1].split(",")] if wait else [])
                self.signals.append(int(signal[1]) if signal else None)
        self.written = {b for _, _, outs in self.insts for b in outs}
        # The instruction that waits for each async one (the end if none),
        # and the first by which it is known complete: its own waiter or
        # that of any later collective (the stream runs in plan order).
        self.waiter, self.done = {}, {}
        for i, e in enumerate(self.signals):
            if self.streams[i]:
                self.waiter[i] = len(self.insts) if e is None else next(
                    (j for j in range(i + 1, len(self.insts)) if e in self.waits[j]),
                    len(self.insts))
        earliest = len(self.insts)
        for i in sorted(self.waiter, reverse=True):
            earliest = self.done[i] = min(earliest, self.waiter[i])
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
                # An async collective reads until it is waited for.
                until = self.done[i] if self.streams[i] else i
                self.last_read[owner] = max(self.last_read.get(owner, -1), until)
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
        self.in_place = []  # units gathered into their persistent buffer
        for i, (kernel, _, outs) in enumerate(self.insts):
            if kernel != "AllGather":
                continue
            region, _, _, name = self.buffers[outs[0]]
            if region == "persistent":
                m = IN_PLACE_NAME.match(name)
                assert m, f"persistent gathered buffer {name!r} names no unit"
                self.in_place.append(m[1])
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


def check(plan, shard, failures, label, held=1):
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
    if not blocks and shard != "grad-op":
        fail("no non-root unit is gathered")
    for unit, ws in windows.items():
        for phase, start, first, last in ws:
            if plan.streams[start]:
                if first != plan.waiter.get(start) and plan.insts[first - 1][0] != "Cast":
                    fail(f"{unit} {phase}: gathered at inst {start}, first read at {first} "
                         f"but waited for at {plan.waiter.get(start)}")
            elif first != start + 1 and plan.insts[start + 1][0] != "Cast":
                fail(f"{unit} {phase}: gathered at inst {start}, first read at {first}")
    # Units gathered once per step (grad-op's, and the root unit) are
    # gathered in place into a persistent buffer holding their shard: each
    # is then in full for the whole step, so it has no window to check.
    if shard == "grad-op":
        in_place = [u for u in plan.in_place if u != "root"]
        if blocks:
            fail(f"grad-op gathers {sorted(blocks)} into transient buffers, not in place")
        if not in_place:
            fail("no non-root unit is gathered")
        for unit in set(in_place):
            if in_place.count(unit) != 1:
                fail(f"grad-op gathers {unit} {in_place.count(unit)} times")
        return len(in_place)
    if plan.in_place not in ([], ["root"]):
        fail(f"--shard={shard} gathers {plan.in_place} in place")
    if shard == "full":
        for unit, ws in blocks.items():
            phases = [p for p, *_ in ws]
            if phases not in (["forward"], ["backward"], ["forward", "backward"]):
                fail(f"{unit}: windows {phases}")
            if len(ws) == 2 and ws[0][3] >= ws[1][1]:
                fail(f"{unit}: forward copy alive at inst {ws[0][3]}, after the backward "
                     f"gather at inst {ws[1][1]}")
        # At most `held` non-root units in full at any instruction.
        spans = [(s, e, u) for u, ws in blocks.items() for _, s, _, e in ws]
        for i in range(len(plan.insts)):
            together = sorted({u for s, e, u in spans if s <= i <= e})
            if len(together) > held:
                fail(f"inst {i}: {together} are held in full together (at most {held})")
                break
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
    # (strategy, world size, flags, non-root units in full at once): the
    # defaults prefetch one unit ahead (--prefetch=1 --limit-all-gathers=2).
    configs = [("full", 2, [], 2), ("full", 3, [], 2), ("grad-op", 4, [], 2), ("none", 2, [], 2),
               ("hybrid:2", 4, [], 2),
               ("full", 2, ["--param-dtype=bf16", "--reduce-dtype=bf16"], 2),
               ("full", 2, ["--prefetch=0"], 1),
               ("full", 2, ["--prefetch=2", "--limit-all-gathers=3"], 3),
               ("full", 2, ["--prefetch=2", "--limit-all-gathers=1"], 1)]
    failures, rows = [], []
    for name, path in models.items():
        for shard, world, extra, held in configs:
            tag = "".join("-" + re.sub(r"\W", "", f) for f in extra)
            plan_path = os.path.join(tmp, f"{name}-{shard.replace(':', '')}-{world}{tag}.plan")
            subprocess.run([args.fsdp_opt, path, f"--world-size={world}", f"--shard={shard}",
                            "--wrap=blocks", *extra, "-o", plan_path],
                           check=True, capture_output=True, text=True)
            dump = subprocess.run([args.fsdp_run, plan_path, "--dump"], check=True,
                                  capture_output=True, text=True).stdout
            label = f"{name} --shard={shard} N={world} {' '.join(extra)}".strip()
            before = len(failures)
            kind = "full" if shard.startswith("hybrid") else shard
            gathers = check(Plan(dump), kind, failures, label, held)
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
