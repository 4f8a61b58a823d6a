#!/usr/bin/env python3
"""Sharded checkpoints: fsdp-run --save / --save-every / --keep / --resume.

Trains the shipped byte-level GPT on examples/shakespeare.txt and checks,
one row each:

  - resume is bitwise: a run to step 3 that saves, resumed to step 6, gives
    the uninterrupted 6-step run's losses for steps 4-6 and its saved
    weights byte for byte (unsharded, full N=2, grad-op N=2, hybrid:2 N=4,
    --offload=cpu N=2, and a save in process resumed under mpirun -np 2;
    fp16 with its loss scale and skipped steps);
  - the comparison can fail: resuming from a checkpoint trained with
    another learning rate changes the losses;
  - atomic and verified: a flipped byte, a truncated shard, a missing shard,
    a flipped byte in the plan a sharded checkpoint carries, and one without
    its COMMIT marker (a crashed save) are refused with exit code 1 and a
    message naming the file or the reason; an unfinished .tmp directory is
    never loaded; state of another optimizer is refused both ways (missing
    momentum buffers; state the plan has no place for);
  - --save-format=full (one model.safetensors: parameters under their model
    names, optimizer state as <name>.exp_avg / .exp_avg_sq) resumes bitwise
    too;
  - resharding is exact: a checkpoint saved at world size A (full, or
    sharded: it carries its plan and is consolidated through it), loaded by
    a plan for world size B and saved again in full holds the source plan's
    own full state bit for bit on every tensor (1->4, 2->4, 4->2, 3->2, to
    grad-op with offload, from hybrid, to another schedule), and training
    continues from it;
  - --keep=N keeps the newest N committed checkpoints;
  - kill -9 at random moments of a run that saves every step (--kill-trials,
    20 sharded and half as many full by default; tests/soak/ runs more):
    every committed checkpoint left behind loads, and --resume picks the
    newest one.
"""

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
import test_train_parity as tp  # noqa: E402  (read_safetensors)
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
TEXT = os.path.join(ROOT, "examples", "shakespeare.txt")
MPI_ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


class Failure(Exception):
    pass


def run(command, env=None, expect_ok=True):
    try:
        out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    except subprocess.TimeoutExpired:
        raise Failure(f"{' '.join(command)} still runs after 300 s: a hang")
    if expect_ok and out.returncode != 0:
        raise Failure(f"{' '.join(command)} failed:\n{out.stderr.strip()}")
    return out


def losses(path):
    """(step, loss) of each step; an fp16 run's also carry the step's loss
    scale and whether it was skipped, so comparing them compares those."""
    with open(path) as f:
        return [(r["step"], r["loss"]) + ((r["loss_scale"], r["skipped"]) if "loss_scale" in r
                                          else ()) for r in map(json.loads, f)]


class Session:
    def __init__(self, args, tmp):
        self.args, self.tmp, self.count = args, tmp, 0
        self.tokens = os.path.join(tmp, "tokens.bin")
        with open(TEXT, "rb") as f:
            data = f.read()
        with open(self.tokens, "wb") as f:  # byte-level ids as raw little-endian uint16
            f.write(b"".join(bytes((b, 0)) for b in data))

    def fresh(self, name):
        self.count += 1
        path = os.path.join(self.tmp, f"{self.count}-{name}")
        os.makedirs(path)
        return path

    def plan(self, flags):
        path = os.path.join(self.fresh("plan"), "step.plan")
        run([self.args.fsdp_opt, MODEL, "-o", path, *flags])
        return path

    def train(self, plan, steps, *extra, mpi=0, expect_ok=True):
        """(losses, weights bytes, completed process) of one fsdp-run."""
        return self.run_program([self.args.fsdp_run, plan], steps, *extra, mpi=mpi,
                                expect_ok=expect_ok)

    def run_program(self, program, steps, *extra, mpi=0, expect_ok=True):
        """train() for any program taking fsdp-run's flags (a list: fsdp-run
        and a plan, or a compiled step binary)."""
        work = self.fresh("run")
        metrics, weights = os.path.join(work, "m.jsonl"), os.path.join(work, "w.safetensors")
        self.metrics = metrics  # the last run's, for fields beyond the loss
        command = [*program, f"--data={self.tokens}", f"--steps={steps}",
                   f"--metrics={metrics}", f"--save-weights={weights}", *extra]
        env = None
        if mpi:
            if not self.args.mpirun:
                raise Failure("no mpirun on PATH (setup.sh installs openmpi-bin)")
            command = [self.args.mpirun, "-np", str(mpi), "--oversubscribe", "--bind-to",
                       "none"] + command
            env = MPI_ENV
        out = run(command, env, expect_ok)
        if out.returncode != 0:
            return None, None, out
        with open(weights, "rb") as f:
            return losses(metrics), f.read(), out


def resume_row(s, flags, mpi=0, save_format="sharded"):
    plan = s.plan(flags)
    full_losses, full_weights, _ = s.train(plan, 6)
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    s.train(plan, 3, f"--save={ckpt}", "--save-every=3", f"--save-format={save_format}")
    resumed_losses, resumed_weights, _ = s.train(plan, 6, f"--resume={ckpt}", mpi=mpi)
    problems = []
    if resumed_losses != full_losses[3:]:
        problems.append(f"losses {resumed_losses} != uninterrupted {full_losses[3:]}")
    if resumed_weights != full_weights:
        problems.append("saved weights differ from the uninterrupted run's")
    return problems


def tensor_differences(path_a, path_b):
    """Problems when two safetensors files do not hold the same tensors bit
    for bit (names, dtypes, shapes, bytes), or hold no optimizer state."""
    ta, tb = tp.read_safetensors(path_a), tp.read_safetensors(path_b)
    if sorted(ta) != sorted(tb):
        return [f"tensor names differ: {sorted(set(ta) ^ set(tb))[:6]}"]
    if not any(k.endswith((".exp_avg_sq", ".momentum_buffer")) for k in ta):
        return ["no optimizer state in the full checkpoint"]
    differing = [k for k in ta if (ta[k].dtype, ta[k].shape) != (tb[k].dtype, tb[k].shape) or
                 ta[k].tobytes() != tb[k].tobytes()]
    return [f"{len(differing)} tensors differ, e.g. {differing[:3]}"] if differing else []


SPEC_DTYPES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2,
               "F16": 2, "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}


def spec_violations(path):
    """What the safetensors library checks when it opens a file (its
    SafeTensors::deserialize), so a file passing this loads there too:
    header length within the file, a JSON object starting with '{',
    __metadata__ mapping strings to strings, known dtypes, byte ranges
    matching the shapes, and the ranges, sorted, tiling the data buffer
    exactly from 0 to its end."""
    with open(path, "rb") as f:
        blob = f.read()
    n = int.from_bytes(blob[:8], "little")
    if len(blob) < 8 or 8 + n > len(blob):
        return [f"{path}: header length {n} past the end"]
    raw = blob[8:8 + n]
    if not raw.startswith(b"{"):
        return [f"{path}: header does not start with '{{'"]
    header = json.loads(raw.decode("utf-8"))
    problems = []
    meta = header.pop("__metadata__", {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items()):
        problems.append("__metadata__ is not a map of strings to strings")
    ranges = []
    for name, info in header.items():
        size = SPEC_DTYPES.get(info.get("dtype"))
        shape, (begin, end) = info.get("shape"), info.get("data_offsets")
        numel = 1
        for dim in shape:
            numel *= dim
        if size is None or end - begin != numel * size:
            problems.append(f"tensor {name}: dtype {info.get('dtype')}, shape {shape}, "
                            f"{end - begin} bytes")
        ranges.append((begin, end))
    at = 0
    for begin, end in sorted(ranges):
        if begin != at:
            problems.append(f"data ranges do not tile the buffer (a range starts at {begin}, "
                            f"not {at})")
            break
        at = end
    if at != len(blob) - 8 - n:
        problems.append(f"the data buffer is {len(blob) - 8 - n} bytes, the tensors cover {at}")
    if "step" not in meta:
        problems.append("no step in the metadata")
    return problems


def full_file(ckpt, step=3):
    return os.path.join(ckpt, f"step-{step:08d}", "model.safetensors")


def reshard_row(s, source_flags, target_flags, source_format="full", mpi=0):
    """A checkpoint of one plan (either format), loaded by another plan of
    the model at its step and saved again in full, holds the bits the
    source plan's own full save holds; training continues from it."""
    source, target = s.plan(source_flags), s.plan(target_flags)
    a = os.path.join(s.fresh("ckpt"), "a")
    b = os.path.join(s.fresh("ckpt"), "b")
    s.train(source, 3, f"--save={a}", f"--save-format={source_format}")
    reference = a
    if source_format == "sharded":  # the source plan's own consolidation
        reference = os.path.join(s.fresh("ckpt"), "ref")
        s.train(source, 3, f"--resume={a}", f"--save={reference}", "--save-format=full")
    s.train(target, 3, f"--resume={a}", f"--save={b}", "--save-format=full", mpi=mpi)
    problems = tensor_differences(full_file(reference), full_file(b))
    problems += spec_violations(full_file(b))
    losses_b, _, _ = s.train(target, 5, f"--resume={b}")
    if [step for step, _ in losses_b] != [4, 5]:
        problems.append(f"training from the resharded checkpoint ran steps {losses_b}")
    return problems


def wrong_checkpoint_row(s):
    """The comparison can fail: another run's checkpoint changes results."""
    plan = s.plan(["--world-size=2"])
    full_losses, _, _ = s.train(plan, 6)
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    s.train(plan, 3, f"--save={ckpt}", "--lr=0.01")
    resumed, _, _ = s.train(plan, 6, f"--resume={ckpt}")
    return [] if resumed != full_losses[3:] else ["resuming another run's state changed nothing"]


def refusal(s, plan, ckpt, pattern):
    _, _, out = s.train(plan, 6, f"--resume={ckpt}", expect_ok=False)
    if out.returncode != 1:
        return [f"exit code {out.returncode}, not 1 (stderr: {out.stderr.strip()[-300:]})"]
    if not re.search(pattern, out.stderr):
        return [f"stderr does not match {pattern!r}: {out.stderr.strip()[-300:]}"]
    return []


def corruption_rows(s):
    plan = s.plan(["--world-size=2"])
    base = os.path.join(s.fresh("ckpt"), "ckpt")
    s.train(plan, 3, f"--save={base}")
    step = os.path.join(base, "step-00000003")
    rank0, rank1 = (os.path.join(step, f"rank-0000{r}-of-00002.safetensors") for r in (0, 1))

    def copy():
        path = os.path.join(s.fresh("ckpt"), "ckpt")
        shutil.copytree(base, path)
        return path, os.path.join(path, "step-00000003")

    rows = []
    # fsdp-ckpt inspect reads every file through the same verification.
    out = run([s.args.fsdp_ckpt, "inspect", base])
    problems = [] if re.search(r"step 3, world size 2, plan hash [0-9a-f]{16}, sharded", out.stdout) \
        else [f"inspect header: {out.stdout[:200]}"]
    for r in (0, 1):
        if not re.search(rf"rank-0000{r}-of-00002\.safetensors: \d+ bytes, content hash "
                         r"[0-9a-f]{16} \(verified\)", out.stdout):
            problems.append(f"inspect lists no verified rank {r} file")
    if not re.search(r"^    unit/blocks\.0 +f32 +\[\d+\] +\d+ bytes$", out.stdout, re.M):
        problems.append("inspect lists no unit/blocks.0 tensor")
    if not re.search(r"plan\.fsdp: the saving plan \(\d+ bytes", out.stdout):
        problems.append("inspect does not list the carried plan")
    rows.append(("fsdp-ckpt inspect: step, world size, verified files, tensors", problems))
    path, d = copy()
    with open(os.path.join(d, os.path.basename(rank1)), "r+b") as f:
        f.seek(-5, 2)
        byte = f.read(1)
        f.seek(-5, 2)
        f.write(bytes([byte[0] ^ 0x40]))
    rows.append(("refused: a flipped byte in rank 1's shard",
                 refusal(s, plan, path, r"rank-00001-of-00002\.safetensors: content hash .* corrupted")))
    out = run([s.args.fsdp_ckpt, "inspect", path], expect_ok=False)
    rows.append(("refused: fsdp-ckpt inspect of the flipped byte",
                 [] if out.returncode == 1 and "corrupted" in out.stderr
                 else [f"exit {out.returncode}: {out.stderr.strip()[-200:]}"]))
    path, d = copy()
    with open(os.path.join(d, os.path.basename(rank0)), "r+b") as f:
        f.truncate(os.path.getsize(rank0) - 100)
    rows.append(("refused: a truncated shard", refusal(s, plan, path, r"rank-00000-of-00002\.safetensors: "
                                              r"\d+ bytes, the checkpoint wrote \d+")))
    path, d = copy()
    os.remove(os.path.join(d, os.path.basename(rank1)))
    rows.append(("refused: a missing shard", refusal(s, plan, path, r"rank-00001-of-00002\.safetensors: missing")))
    path, d = copy()
    os.remove(os.path.join(d, "COMMIT"))
    os.makedirs(os.path.join(path, ".tmp-step-00000004"))
    rows.append(("refused: no COMMIT (a crashed save) and a .tmp directory",
                 refusal(s, plan, path, r"no committed checkpoint")))
    # Another plan loads it by reading the files through the carried plan,
    # so that plan and every file are verified as a same-plan load would.
    other = s.plan(["--world-size=4"])

    def flipped(name, back):
        path, d = copy()
        with open(os.path.join(d, name), "r+b") as f:
            f.seek(-back, 2)
            byte = f.read(1)
            f.seek(-back, 2)
            f.write(bytes([byte[0] ^ 0x01]))
        return path

    bad_plan = flipped("plan.fsdp", 9)
    rows.append(("refused: a flipped byte in the carried plan, loaded at another world size",
                 refusal(s, other, bad_plan, r"plan\.fsdp: content hash .* corrupted")))
    out = run([s.args.fsdp_ckpt, "inspect", bad_plan], expect_ok=False)
    rows.append(("refused: fsdp-ckpt inspect of the flipped plan",
                 [] if out.returncode == 1 and re.search(r"plan\.fsdp: content hash .* corrupted",
                                                         out.stderr)
                 else [f"exit {out.returncode}: {out.stderr.strip()[-200:]}"]))
    rows.append(("refused: a flipped byte in rank 1's shard, loaded at another world size",
                 refusal(s, other, flipped(os.path.basename(rank1), 5),
                         r"rank-00001-of-00002\.safetensors: content hash .* corrupted")))
    sgd = s.plan(["--world-size=2", "--optimizer=sgd", "--momentum=0.9"])
    rows.append(("refused: an AdamW checkpoint by an SGD plan (no momentum_buffer)",
                 refusal(s, sgd, base, r"has no tensor '[^']+\.momentum_buffer'")))
    sgd_ckpt = os.path.join(s.fresh("ckpt"), "sgd")
    s.train(sgd, 3, f"--save={sgd_ckpt}")
    plain_sgd = s.plan(["--world-size=2", "--optimizer=sgd"])  # no momentum: no state
    rows.append(("refused: SGD momentum state by a plan without momentum (no place for it)",
                 refusal(s, plain_sgd, sgd_ckpt,
                         r"holds '[^']+\.momentum_buffer', which .* has no place")))
    return rows


def initial_weights_rows(s):
    """A resumed run takes every parameter from its checkpoint: it needs no
    initial weights file beside the plan, and --weights with it is refused."""
    plan = s.plan(["--world-size=2"])
    full_losses, _, _ = s.train(plan, 5)
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    s.train(plan, 3, f"--save={ckpt}")
    weights = os.path.splitext(plan)[0] + ".safetensors"
    moved = weights + ".away"
    os.rename(weights, moved)
    try:
        resumed, _, _ = s.train(plan, 5, f"--resume={ckpt}")
    finally:
        os.rename(moved, weights)
    rows = [("resume reads no initial weights (the plan's file moved away)",
             [] if resumed == full_losses[3:] else [f"losses {resumed} != {full_losses[3:]}"])]
    _, _, out = s.train(plan, 5, f"--resume={ckpt}", f"--weights={weights}", expect_ok=False)
    rows.append(("refused: --weights with --resume",
                 [] if out.returncode == 1 and "--weights and --resume" in out.stderr
                 else [f"exit {out.returncode}: {out.stderr.strip()[-200:]}"]))
    return rows


def keep_row(s):
    plan = s.plan(["--world-size=2"])
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    s.train(plan, 4, f"--save={ckpt}", "--save-every=1", "--keep=2")
    kept = sorted(os.listdir(ckpt))
    return [] if kept == ["step-00000003", "step-00000004"] else [f"kept {kept}"]


def kill_rows(s, trials, save_format="sharded", seed=7):
    """SIGKILL at random moments while every step saves; then each
    committed checkpoint must load and --resume must pick the newest."""
    plan = s.plan(["--world-size=2"])
    rng = random.Random(seed)
    problems, committed_total = [], 0
    for trial in range(trials):
        ckpt = os.path.join(s.fresh("kill"), "ckpt")
        proc = subprocess.Popen([s.args.fsdp_run, plan, f"--data={s.tokens}", "--steps=100000",
                                 f"--save={ckpt}", "--save-every=1", "--keep=3",
                                 f"--save-format={save_format}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # The random moment counts from the first save's start, not from the
        # launch: on a loaded machine start-up alone can outlast a fixed
        # delay, and then no trial would ever kill a save.
        deadline = time.monotonic() + 60
        while not os.path.isdir(ckpt) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if not os.path.isdir(ckpt):
            proc.kill()
            proc.wait()
            problems.append(f"trial {trial}: no save began within 60 s (exit {proc.returncode})")
            continue
        time.sleep(rng.uniform(0.0, 0.7))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        steps = sorted(int(n[len("step-"):]) for n in (os.listdir(ckpt) if os.path.isdir(ckpt) else [])
                       if n.startswith("step-") and os.path.exists(os.path.join(ckpt, n, "COMMIT")))
        committed_total += len(steps)
        for step in steps:
            d = os.path.join(ckpt, f"step-{step:08d}")
            _, _, out = s.train(plan, step + 1, f"--resume={d}", expect_ok=False)
            if out.returncode != 0:
                problems.append(f"trial {trial}: committed {d} does not load: "
                                f"{out.stderr.strip()[-200:]}")
        if steps:
            _, _, out = s.train(plan, steps[-1] + 1, f"--resume={ckpt}", expect_ok=False)
            if f"resumed from step {steps[-1]}" not in out.stdout:
                problems.append(f"trial {trial}: --resume did not pick step {steps[-1]}: "
                                f"{(out.stdout + out.stderr).strip()[-200:]}")
    if committed_total == 0:
        problems.append("no trial left a committed checkpoint (the kills came too early)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    ap.add_argument("--fsdp-ckpt", required=True)
    ap.add_argument("--mpirun", default=shutil.which("mpirun"))
    ap.add_argument("--kill-trials", type=int, default=20,
                    help="kill -9 trials (a soak: several hundred)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="resume-") as tmp:
        s = Session(args, tmp)
        rows = [
            ("resume unsharded (world size 1)", lambda: resume_row(s, [])),
            ("resume --world-size=2 --shard=full", lambda: resume_row(s, ["--world-size=2"])),
            ("resume --world-size=2 --shard=grad-op",
             lambda: resume_row(s, ["--world-size=2", "--shard=grad-op"])),
            ("resume --world-size=4 --shard=hybrid:2",
             lambda: resume_row(s, ["--world-size=4", "--shard=hybrid:2"])),
            ("resume --world-size=2 --offload=cpu",
             lambda: resume_row(s, ["--world-size=2", "--offload=cpu"])),
            ("saved in process, resumed under mpirun -np 2",
             lambda: resume_row(s, ["--world-size=2"], mpi=2)),
            ("resume --world-size=2 --param-dtype=bf16",
             lambda: resume_row(s, ["--world-size=2", "--param-dtype=bf16"])),
            ("resume --world-size=2 --param-dtype=f16 (the loss scaler's state too)",
             lambda: resume_row(s, ["--world-size=2", "--param-dtype=f16", "--reduce-dtype=f16",
                                    "--loss-scale-growth-interval=2"])),
            ("resume --world-size=2 --optimizer=sgd --momentum=0.9",
             lambda: resume_row(s, ["--world-size=2", "--optimizer=sgd", "--momentum=0.9"])),
            ("resume --save-format=full --world-size=2",
             lambda: resume_row(s, ["--world-size=2"], save_format="full")),
            ("resume --save-format=full --world-size=4 --shard=hybrid:2",
             lambda: resume_row(s, ["--world-size=4", "--shard=hybrid:2"], save_format="full")),
            ("reshard full 1 (unsharded) -> 4", lambda: reshard_row(s, [], ["--world-size=4"])),
            ("reshard full 2 -> 4", lambda: reshard_row(s, ["--world-size=2"], ["--world-size=4"])),
            ("reshard full 4 -> 2", lambda: reshard_row(s, ["--world-size=4"], ["--world-size=2"])),
            ("reshard full 3 -> 2", lambda: reshard_row(s, ["--world-size=3"], ["--world-size=2"])),
            ("reshard full N=2 -> grad-op N=2 with --offload=cpu",
             lambda: reshard_row(s, ["--world-size=2"],
                                 ["--world-size=2", "--shard=grad-op", "--offload=cpu"])),
            ("reshard sharded 1 (unsharded) -> 4",
             lambda: reshard_row(s, [], ["--world-size=4"], "sharded")),
            ("reshard sharded 2 -> 4",
             lambda: reshard_row(s, ["--world-size=2"], ["--world-size=4"], "sharded")),
            ("reshard sharded 4 -> 2",
             lambda: reshard_row(s, ["--world-size=4"], ["--world-size=2"], "sharded")),
            ("reshard sharded 3 -> 2",
             lambda: reshard_row(s, ["--world-size=3"], ["--world-size=2"], "sharded")),
            ("reshard sharded hybrid:2 N=4 -> grad-op N=2 with --offload=cpu",
             lambda: reshard_row(s, ["--world-size=4", "--shard=hybrid:2"],
                                 ["--world-size=2", "--shard=grad-op", "--offload=cpu"],
                                 "sharded")),
            ("reshard sharded bf16 parameters 2 -> 4",
             lambda: reshard_row(s, ["--world-size=2", "--param-dtype=bf16"],
                                 ["--world-size=4", "--param-dtype=bf16"], "sharded")),
            ("reshard sharded SGD momentum 2 -> 3",
             lambda: reshard_row(s, ["--world-size=2", "--optimizer=sgd", "--momentum=0.9"],
                                 ["--world-size=3", "--optimizer=sgd", "--momentum=0.9"],
                                 "sharded")),
            ("reshard sharded 2 (in process) -> 4 under mpirun -np 4",
             lambda: reshard_row(s, ["--world-size=2"], ["--world-size=4"], "sharded", mpi=4)),
            ("reshard sharded N=2 -> N=2 --ckpt=blocks --prefetch=2 (another schedule)",
             lambda: reshard_row(s, ["--world-size=2"],
                                 ["--world-size=2", "--ckpt=blocks", "--prefetch=2"], "sharded")),
            ("control: another run's checkpoint must change the losses",
             lambda: wrong_checkpoint_row(s)),
            ("--keep=2 keeps the newest two", lambda: keep_row(s)),
            (f"kill -9 during sharded saves, {args.kill_trials} trials: committed ones load, "
             "--resume picks the newest", lambda: kill_rows(s, args.kill_trials)),
            (f"kill -9 during full saves, {args.kill_trials // 2} trials: committed ones load, "
             "--resume picks the newest", lambda: kill_rows(s, args.kill_trials // 2, "full")),
        ]
        results = rows_report.collect(rows, [("refusals", lambda: corruption_rows(s)),
                                             ("initial weights", lambda: initial_weights_rows(s))],
                                      Failure)
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
