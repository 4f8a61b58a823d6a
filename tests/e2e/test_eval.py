#!/usr/bin/python3
# Validation (fsdp-run --eval-data / --eval-input, runtime/run/Eval.h):
# the training plan's evaluation prefix, run on held-out token windows after
# every --eval-every steps and after the last one, reports the val_loss
# torch's model.eval() computes on the same weights and batches (mean over
# the M batches of the global-batch mean loss; DESIGN's loss tolerance, 1e-5
# relative), at world sizes 1 and 2. At one world size every strategy
# (full, grad-op, none, hybrid), --ckpt=blocks, --prefetch and --offload=cpu
# report bitwise the same val_loss; --eval-input windows give the bits of
# --eval-data; evaluating changes no training loss or weight bit; and bad
# evaluation input is refused before anything runs, exit 1, naming the
# reason.
#
#   /usr/bin/python3 tests/e2e/test_eval.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--keep DIR]

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows  # noqa: E402
import test_train_parity as tp  # noqa: E402  (torch model, windows, metrics, Optim)

MODEL = "gpt-op17-train"
STEPS = 4
EVERY = 2        # evaluations after steps 2 and 4
EVAL_BATCHES = 3


class Session:
    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.entry = self.export(MODEL)
        self.onnx = os.path.join(tmp, self.entry["file"])
        self.b, self.T = self.entry["inputs"][0]["shape"]
        vocab = self.entry["config"].get("vocab", 64)
        rng = numpy.random.default_rng(19)
        self.train_tokens = rng.integers(0, vocab, 400).astype(numpy.int64)
        # Enough windows for EVAL_BATCHES batches of 8 samples (world size 4)
        # and a few more, so --eval-batches picks a prefix.
        self.val_tokens = rng.integers(0, vocab, 16 * 30 + 40).astype(numpy.int64)
        self.train_file = os.path.join(tmp, "train.npy")
        self.val_file = os.path.join(tmp, "val.npy")
        numpy.save(self.train_file, self.train_tokens)
        numpy.save(self.val_file, self.val_tokens)
        self.plans = {}
        self.runs = 0

    def export(self, name):
        with open(os.devnull, "w") as null:
            saved, sys.stdout = sys.stdout, null  # the exporter's per-file lines
            try:
                return tp.export(self.tmp, [name])[name]
            finally:
                sys.stdout = saved

    def plan(self, flags):
        """A plan of the model with the parity tests' AdamW (or a forward
        plan, for flags ["--mode=forward"])."""
        key = " ".join(flags)
        if key not in self.plans:
            path = os.path.join(self.tmp, f"plan{len(self.plans)}.plan")
            optim = [] if "--mode=forward" in flags else tp.ADAMW.flags()
            tp.run([self.args.fsdp_opt, self.onnx, "-o", path] + optim + list(flags))
            self.plans[key] = path
        return self.plans[key]

    def train(self, flags, evaluate=True, extra=(), mpi=0):
        """Runs STEPS steps (under `mpirun -np mpi` when mpi); returns
        (metrics records, saved weights)."""
        self.runs += 1
        work = os.path.join(self.tmp, f"run{self.runs}")
        os.makedirs(work)
        metrics = os.path.join(work, "metrics.jsonl")
        weights = os.path.join(work, "weights.safetensors")
        command = [self.args.fsdp_run, self.plan(flags), f"--steps={STEPS}",
                   f"--data={self.train_file}", f"--metrics={metrics}",
                   f"--save-weights={weights}"]
        if evaluate:
            command += [f"--eval-every={EVERY}", f"--eval-batches={EVAL_BATCHES}"]
            if not any(e.startswith("--eval-input") for e in extra):
                command.append(f"--eval-data={self.val_file}")
        command += list(extra)
        if mpi:
            if not self.args.mpirun:
                raise tp.Failure("no mpirun on PATH (pass --mpirun)")
            os.environ.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            command = [self.args.mpirun, "-np", str(mpi), "--oversubscribe", "--bind-to",
                       "none"] + command
        tp.run(command)
        return tp.read_metrics(metrics, STEPS), tp.read_safetensors(weights)

    def refused(self, command, pattern):
        result = subprocess.run(command, capture_output=True, text=True)
        problems = []
        if result.returncode != 1:
            problems.append(f"exit {result.returncode} (want 1): {' '.join(command)}\n"
                            f"{result.stdout}{result.stderr}")
        elif pattern not in result.stderr:
            problems.append(f"stderr lacks '{pattern}': {result.stderr.strip()}")
        if "step 1" in result.stdout:
            problems.append("it trained before refusing")
        return problems


def val_losses(records):
    return {r["step"]: r["val_loss"] for r in records if "val_loss" in r}


def torch_reference(s, world, shift=0):
    """Training losses and {step: val_loss} of torch on the global batch of
    b x world samples, evaluating with model.eval() under no_grad (on
    evaluation batches shift .. shift + M - 1: a negative control)."""
    model = tp.torch_model(s.entry, s.onnx)
    optimizer = tp.ADAMW.build(list(model.named_parameters()))
    batch = s.b * world
    idx, targets = tp.token_windows(s.train_tokens, STEPS, batch, s.T)
    vidx, vtargets = tp.token_windows(s.val_tokens, EVAL_BATCHES + shift, batch, s.T)
    vidx, vtargets = vidx[shift * batch:], vtargets[shift * batch:]
    losses, evals = [], {}
    for step in range(STEPS):
        rows_ = slice(step * batch, (step + 1) * batch)
        model.train(True)
        optimizer.zero_grad(set_to_none=True)
        loss = model(torch.from_numpy(idx[rows_]), torch.from_numpy(targets[rows_]))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if (step + 1) % EVERY == 0 or step + 1 == STEPS:
            model.eval()
            with torch.no_grad():
                batch_losses = [model(torch.from_numpy(vidx[e * batch:(e + 1) * batch]),
                                      torch.from_numpy(vtargets[e * batch:(e + 1) * batch])).item()
                                for e in range(EVAL_BATCHES)]
            evals[step + 1] = float(numpy.mean(batch_losses))
    return numpy.array(losses, dtype=numpy.float32), evals


def parity_row(s, world, flags):
    def body():
        records, _ = s.train(flags)
        ours = val_losses(records)
        losses, reference = torch_reference(s, world)
        problems = []
        if sorted(ours) != sorted(reference):
            return [f"val_loss after steps {sorted(ours)}, want {sorted(reference)}"]
        if len(records) != len(losses):
            return [f"{len(records)} steps logged, torch trained {len(losses)}"]
        worst = max(abs(ours[k] - reference[k]) / abs(reference[k]) for k in reference)
        loss_rel = max(abs(r["loss"] - t) / abs(t) for r, t in zip(records, losses))
        print(f"      world {world}: val_loss {ours} vs torch {reference}: max rel "
              f"{worst:.2e}; training loss max rel {loss_rel:.2e}", flush=True)
        if worst > tp.LOSS_TOLERANCE:
            problems.append(f"val_loss differs from torch's eval() loss by {worst:.2e} relative")
        if loss_rel > tp.LOSS_TOLERANCE:
            problems.append(f"training loss differs from torch's by {loss_rel:.2e} relative")
        # Negative control: the comparison must reject other batches.
        shifted = torch_reference(s, world, shift=1)[1]
        if max(abs(ours[k] - shifted[k]) / abs(shifted[k]) for k in shifted) <= tp.LOSS_TOLERANCE:
            problems.append("the comparison accepted torch's loss on the next batches")
        return problems
    return (f"world {world} {' '.join(flags) or '(unsharded)'}: val_loss vs torch eval()", body)


def bitwise_row(s, label, reference_flags, variants, extra=()):
    def body():
        want = val_losses(s.train(reference_flags, extra=extra)[0])
        problems = []
        for flags in variants:
            got = val_losses(s.train(flags, extra=extra)[0])
            if got != want:
                problems.append(f"{' '.join(flags)}: val_loss {got} != {want} "
                                f"({' '.join(reference_flags) or 'unsharded'})")
        return problems
    return (label, body)


def mpirun_row(s):
    def body():
        flags = ["--world-size=2", "--shard=full"]
        want = val_losses(s.train(flags)[0])
        got = val_losses(s.train(flags, mpi=2)[0])
        return [] if got == want else [f"mpirun -np 2 val_loss {got} != in-process {want}"]
    return ("world 2: mpirun -np 2 gives the in-process ranks' val_loss bits", body)


def unchanged_row(s, flags):
    def body():
        with_eval = s.train(flags)
        without = s.train(flags, evaluate=False)
        problems = []
        if tp.float32_bits([r["loss"] for r in with_eval[0]]).tolist() != \
                tp.float32_bits([r["loss"] for r in without[0]]).tolist():
            problems.append("training losses differ with --eval-data")
        if sorted(with_eval[1]) != sorted(without[1]) or any(
                not numpy.array_equal(with_eval[1][n], without[1][n]) for n in without[1]):
            problems.append("saved weights differ with --eval-data")
        if any("val_loss" in r for r in without[0]):
            problems.append("a run without --eval-data logged val_loss")
        return problems
    return (f"{' '.join(flags) or '(unsharded)'}: evaluation changes no training bit", body)


def eval_input_row(s):
    """The same windows as --eval-input .npy files: the same val_loss bits."""
    def body():
        batch = s.b * 2
        idx, targets = tp.token_windows(s.val_tokens, EVAL_BATCHES, batch, s.T)
        names = [spec["name"] for spec in s.entry["inputs"]]
        files = []
        for name, value in zip(names, (idx, targets)):
            path = os.path.join(s.tmp, f"eval-{name}.npy")
            numpy.save(path, value)
            files.append(f"--eval-input={name}={path}")
        flags = ["--world-size=2", "--shard=full"]
        want = val_losses(s.train(flags)[0])
        got = val_losses(s.train(flags, extra=files)[0])
        return [] if got == want else [f"--eval-input val_loss {got} != --eval-data {want}"]
    return ("world 2: --eval-input windows give --eval-data's val_loss bits", body)


def refusal_rows(s):
    run, plan = s.args.fsdp_run, s.plan([])  # compile errors fail the whole test
    base = [run, plan, "--steps=2", f"--data={s.train_file}"]
    out_of_range = os.path.join(s.tmp, "bad-ids.npy")
    numpy.save(out_of_range, numpy.concatenate([s.val_tokens[:100], [64], s.val_tokens[:40]]))
    small = os.path.join(s.tmp, "small.npy")
    numpy.save(small, s.val_tokens[:s.T + 2])
    cases = [
        ("token id outside the vocabulary", base + [f"--eval-data={out_of_range}"],
         "outside the model's vocabulary [0, 64)"),
        ("fewer whole batches than --eval-batches",
         base + [f"--eval-data={s.val_file}", "--eval-batches=1000"], "whole evaluation batches"),
        ("a file smaller than one batch", base + [f"--eval-data={small}"],
         "0 whole evaluation batches"),
        ("--eval-every without data", base + ["--eval-every=2"], "needs evaluation data"),
        ("--eval-batches=0", base + [f"--eval-data={s.val_file}", "--eval-batches=0"],
         "must be an integer >= 1"),
        ("--eval-data with --eval-input",
         base + [f"--eval-data={s.val_file}", f"--eval-input=idx={s.val_file}"], "give one of"),
        ("--eval-input of an unknown input",
         base + [f"--eval-input={n}={s.val_file}" for n in ("idx", "targets", "nope")],
         "input 'nope'"),
        ("--eval-data on a forward plan",
         [run, s.plan(["--mode=forward"]), f"--eval-data={s.val_file}"],
         "only training plans"),
        ("--eval-data not a token file", base + [f"--eval-data={s.onnx}"], "--eval-data="),
    ]
    out = [(f"refused: {label}", (lambda c=command, p=pattern: s.refused(c, p)))
           for label, command, pattern in cases]

    def dropout():
        entry = s.export("transformer-dropout-op17-train")
        path = os.path.join(s.tmp, "dropout.plan")
        tp.run([s.args.fsdp_opt, os.path.join(s.tmp, entry["file"]), "-o", path])
        inputs = [f"--input={n}={os.path.join(s.tmp, f)}" for n, f in entry["input_files"].items()]
        evals = [f"--eval-input={n}={os.path.join(s.tmp, f)}"
                 for n, f in entry["input_files"].items()]
        return s.refused([run, path, "--steps=1"] + inputs + evals, "not implemented yet")
    out.append(("refused: active dropout in the forward (eval() mode not implemented yet)",
                dropout))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--mpirun", default=shutil.which("mpirun"))
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    torch.manual_seed(0)
    tmp = args.keep or tempfile.mkdtemp(prefix="eval-")
    if args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
    try:
        s = Session(args, tmp)
        full2 = ["--world-size=2", "--shard=full"]
        table = [
            parity_row(s, 1, []),
            parity_row(s, 2, full2),
            bitwise_row(s, "world 1: --shard=full, grad-op, none and --ckpt=blocks give the "
                           "unsharded val_loss bits", [],
                        [["--world-size=1", "--shard=full"], ["--world-size=1", "--shard=grad-op"],
                         ["--world-size=1", "--shard=none"], ["--ckpt=blocks"]]),
            bitwise_row(s, "world 2: grad-op, none, --ckpt=blocks, --prefetch=1, --offload=cpu "
                           "give full's val_loss bits", full2,
                        [["--world-size=2", "--shard=grad-op"],
                         ["--world-size=2", "--shard=none"],
                         full2 + ["--ckpt=blocks", "--prefetch=1"],
                         full2 + ["--offload=cpu"]]),
            # hybrid:G sums gradients in groups, so its weights are not
            # full's bits; at --lr=0 both evaluate the initial weights.
            bitwise_row(s, "world 4, --lr=0: hybrid:2 gives full's val_loss bits",
                        ["--world-size=4", "--shard=full"],
                        [["--world-size=4", "--shard=hybrid:2"]], extra=["--lr=0"]),
            # --grad-accum=K: evaluation fills micro-batch 0's rows with
            # e*b*N + j (no K) and runs its prefix; at --lr=0 both plans
            # evaluate the initial weights on the same samples.
            bitwise_row(s, "world 2, --lr=0: --grad-accum=2 gives K=1's val_loss bits",
                        full2, [full2 + ["--grad-accum=2"], full2 + ["--grad-accum=2",
                                                                     "--accum-reduce=last"]],
                        extra=["--lr=0"]),
            unchanged_row(s, []),
            unchanged_row(s, full2),
            eval_input_row(s),
            mpirun_row(s),
        ]
        results = rows.collect(rows=table + refusal_rows(s), failure=tp.Failure)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return rows.report(results)


if __name__ == "__main__":
    sys.exit(main())
