#!/usr/bin/python3
# Gradient accumulation (--grad-accum=K, --accum-reduce=each|last|auto) against
# PyTorch and against itself. The plans come from test_fsdp_parity.py's
# session (same exported GPT, data sets, fsdp-opt/fsdp-run invocations and
# comparison); the torch reference here is torch's own accumulation: for each
# of the K micro-batches of a step, the mean of the N ranks' losses on their
# rows (docs/design.md: micro-batch k of rank r reads samples
# [k*b*N + r*b, k*b*N + (r+1)*b) of the step's B = b*N*K), backward of
# loss/K into .grad, then one optimizer step; the step's loss is the mean of
# the K micro-batch losses.
#
# Rows (tolerances as test_train_parity.py: loss 1e-5 relative every step,
# parameters 5e-5 relative L2 after the last step):
#   parity  K = 2, 4 at N = 1, 2, --shard=full, each and last (AdamW); SGD
#           with momentum at N = 2 (AdamW alone barely notices a wrong 1/K);
#           an unsharded N = 1 plan; --data=tokens.bin at N = 2; hybrid:2
#           at N = 4; nn.Transformer (three inputs, frozen buffers) at N = 2
#   neg     the SGD run against torch without the 1/K must FAIL
#   shard   grad-op and none are bitwise the full run at N = 2 (each, last)
#   ckpt    --ckpt=blocks is bitwise the run without it (N = 2, each)
#   offload --offload=cpu is bitwise the run on device (N = 2, each, last)
#   mpirun  mpirun -np 2 is bitwise the in-process ranks (each rank's data
#           source fills its own micro-batches)
#   k1      --grad-accum=1 writes the plan of no flag, byte for byte
#   report  --emit=report's per-unit choice and costs: auto without a budget
#           is last everywhere; auto under a budget equal to the all-each
#           plan's peak is each everywhere; each costs fewer bytes and more
#           predicted time than last at N = 2
#
#   /usr/bin/python3 tests/e2e/test_grad_accum.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--only ROW ...] [--keep DIR]

import json
import os
import subprocess
import sys

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_fsdp_parity as fp  # noqa: E402  (session, specs, bitwise comparison)
import test_train_parity as tp  # noqa: E402  (data, torch model, comparison)

GPT = fp.GPT
STEPS = fp.STEPS
Failure = tp.Failure


def accum(k, reduce):
    return (f"--grad-accum={k}", f"--accum-reduce={reduce}")


def torch_accumulated(entry, onnx_path, data, optim, freeze, steps, world, k, scale=True):
    """(losses as float32, {name: final parameter}) of torch accumulating K
    micro-batches per step; scale=False leaves out the 1/K (a negative
    control)."""
    model, _, optimizer = fp.torch_trainable(entry, onnx_path, optim, freeze)
    names = [spec["name"] for spec in entry["inputs"]]
    b = entry["inputs"][0]["shape"][0]
    samples = len(data[names[0]])
    losses = []
    for step in range(steps):
        rows = tp.batch_rows(step, b * world * k, samples)
        optimizer.zero_grad(set_to_none=True)
        micro_losses = []
        for m in range(k):
            per_rank = []
            for r in range(world):
                first = m * b * world + r * b
                micro = rows[first:first + b]
                per_rank.append(model(*[torch.from_numpy(data[n][micro]) for n in names]))
            loss = torch.stack(per_rank).mean()
            (loss / k if scale else loss).backward()
            micro_losses.append(loss.item())
        optimizer.step()
        losses.append(float(numpy.mean(numpy.array(micro_losses, dtype=numpy.float64))))
    final = {n: p.detach().numpy().copy() for n, p in model.named_parameters()}
    return numpy.array(losses, dtype=numpy.float32), final


class Session(fp.Session):
    """test_fsdp_parity's session with data sets large enough for K <= 4
    micro-batches without repeating a sample inside a step."""

    def dataset(self, model, world):
        return super().dataset(model, world * 4)

    def accumulated_reference(self, spec, k, scale=True):
        optim, freeze = spec.resolved()
        key = ("accum", spec.model, spec.world or 1, k, optim.describe(), freeze, scale)
        if key not in self._refs:
            data, _ = self.dataset(spec.model, spec.world or 1)
            self._refs[key] = torch_accumulated(self.entries[spec.model], self.onnx(spec.model),
                                                data, optim, freeze, STEPS, spec.world or 1, k,
                                                scale)
        return self._refs[key]

    def accum_parity(self, spec, k):
        return self.compare(spec, self.train(spec), self.accumulated_reference(spec, k))

    def report(self, flags):
        """The JSON --emit=report of the GPT under `flags`."""
        out = fp.run([self.args.fsdp_opt, self.onnx(GPT), "--emit=report", "--report-format=json",
                      "--device=cpu"] + list(flags)).stdout
        return json.loads(out)


def parity_rows(s):
    for world in (1, 2):
        for k in (2, 4):
            for reduce in ("each", "last"):
                spec = fp.Spec(GPT, world, "full", flags=accum(k, reduce))
                s.check("parity", f"gpt N={world} K={k} --accum-reduce={reduce}",
                        lambda spec=spec, k=k: s.accum_parity(spec, k))
    sgd = fp.Spec(GPT, 2, "full", optim=tp.SGD_MOMENTUM, flags=accum(2, "each"))
    s.check("parity", "gpt N=2 K=2 each, SGD momentum", lambda: s.accum_parity(sgd, 2))
    s.must_differ("neg", "gpt N=2 K=2 SGD vs torch without 1/K", sgd,
                  lambda: s.accumulated_reference(sgd, 2, scale=False), "unscaled gradients")
    unsharded = fp.Spec(GPT, None, flags=accum(2, "last"))
    s.check("parity", "gpt unsharded N=1 K=2", lambda: s.accum_parity(unsharded, 2))
    s.check("parity", "gpt N=2 K=2 last, --data=tokens.bin", lambda: token_parity(s))
    transformer = fp.Spec(fp.TRANSFORMER, 2, "full", flags=accum(2, "each"))
    s.check("parity", "transformer N=2 K=2 each",
            lambda: s.accum_parity(transformer, 2))
    hybrid = fp.Spec(GPT, 4, "hybrid:2", flags=accum(2, "last"))
    s.check("parity", "gpt N=4 K=2 last, --shard=hybrid:2", lambda: s.accum_parity(hybrid, 2))


def token_parity(s, world=2, k=2):
    """The token-file formula with B = b*N*K: windows s*B + j, j < B."""
    entry = s.entries[GPT]
    b, T = entry["inputs"][0]["shape"]
    workdir = os.path.join(s.tmp, "tokens")
    os.makedirs(workdir, exist_ok=True)
    rng = numpy.random.default_rng(1234)
    tokens = rng.integers(0, entry["config"].get("vocab", 64), 300).astype(numpy.uint16)
    binary = os.path.join(workdir, "tokens.bin")
    tokens.astype("<u2").tofile(binary)
    idx, targets = tp.token_windows(tokens, STEPS, b * world * k, T)
    names = [spec["name"] for spec in entry["inputs"]]
    spec = fp.Spec(GPT, world, "full", flags=accum(k, "last"))
    reference = torch_accumulated(entry, s.onnx(GPT), {names[0]: idx, names[1]: targets},
                                  *spec.resolved(), STEPS, world, k)
    return s.compare(spec, s.train(spec, data=binary), reference)


def same_bits_row(s, row, label, spec, other):
    def body():
        ours, theirs = s.train(spec), s.train(other)
        return 0.0, 0.0, fp.same_bits(ours, theirs)
    s.check(row, label, body)


def bitwise_rows(s):
    for reduce in ("each", "last"):
        full = fp.Spec(GPT, 2, "full", flags=accum(2, reduce))
        for shard in ("grad-op", "none"):
            same_bits_row(s, "shard", f"gpt N=2 K=2 {reduce}: {shard} == full (bits)",
                          fp.Spec(GPT, 2, shard, flags=accum(2, reduce)), full)
    for reduce in ("each", "last"):
        same_bits_row(s, "offload", f"gpt N=2 K=2 {reduce}: --offload=cpu == on device (bits)",
                      fp.Spec(GPT, 2, "full", offload=True, flags=accum(2, reduce)),
                      fp.Spec(GPT, 2, "full", flags=accum(2, reduce)))
    def mpirun():
        spec = fp.Spec(GPT, 2, "full", flags=accum(2, "last"))
        return 0.0, 0.0, fp.same_bits(s.train(spec, mpi=True), s.train(spec))
    s.check("mpirun", "gpt N=2 K=2 last: mpirun -np 2 == in-process ranks (bits)", mpirun)
    same_bits_row(s, "ckpt", "gpt N=2 K=2 each: --ckpt=blocks == no ckpt (bits)",
                  fp.Spec(GPT, 2, "full", flags=accum(2, "each") + ("--ckpt=blocks",)),
                  fp.Spec(GPT, 2, "full", flags=accum(2, "each")))


def k1_row(s):
    def body():
        plans = []
        for name, flags in (("none", []), ("k1", ["--grad-accum=1"])):
            workdir = os.path.join(s.tmp, f"k1-{name}")
            os.makedirs(workdir)
            path = os.path.join(workdir, "step.plan")
            fp.run([s.args.fsdp_opt, s.onnx(GPT), "-o", path, "--world-size=2"] + flags)
            with open(path, "rb") as f:
                plans.append(f.read())
        return 0.0, 0.0, [] if plans[0] == plans[1] else ["--grad-accum=1 changed the plan"]
    s.check("k1", "--grad-accum=1 plan == no flag (bytes)", body)


def report_rows(s):
    base = ["--world-size=2", "--shard=full", "--grad-accum=4"]

    def choices(report):
        return {a["unit"]: a["chosen"] for a in report["accumulation"]}

    def auto_unbudgeted():
        r = s.report(base)
        problems = []
        if r.get("grad_accum") != 4:
            problems.append(f"grad_accum {r.get('grad_accum')}, expected 4")
        units = [u["name"] for u in r["units"]]
        if sorted(choices(r)) != sorted(units) or set(choices(r).values()) != {"last"}:
            problems.append(f"auto without a budget chose {choices(r)} for units {units}")
        for a in r["accumulation"]:
            if not (a["each_bytes"] < a["last_bytes"] and a["each_predicted_s"] > a["last_predicted_s"]):
                problems.append(f"unit {a['unit']}: each should cost fewer bytes and more time: {a}")
        return None, None, problems
    s.check("report", "auto without --mem-budget: last everywhere; costs", auto_unbudgeted)

    def auto_budgeted():
        each = s.report(base + ["--accum-reduce=each"])
        last = s.report(base + ["--accum-reduce=last"])
        problems = []
        if set(choices(each).values()) != {"each"} or set(choices(last).values()) != {"last"}:
            problems.append(f"explicit choices not reported: {choices(each)}, {choices(last)}")
        if not last["peak_bytes"] > each["peak_bytes"]:
            problems.append(f"last's peak {last['peak_bytes']} not above each's {each['peak_bytes']}")
        tight = s.report(base + [f"--mem-budget={each['peak_bytes']}B"])
        if set(choices(tight).values()) != {"each"}:
            problems.append(f"auto under the all-each peak chose {choices(tight)}")
        roomy = s.report(base + [f"--mem-budget={last['peak_bytes']}B"])
        if set(choices(roomy).values()) != {"last"}:
            problems.append(f"auto under the all-last peak chose {choices(roomy)}")
        return None, None, problems
    s.check("report", "auto under --mem-budget: each at each's peak, last at last's",
            auto_budgeted)


def main():
    args = fp.suite_parser("run only these rows (parity, neg, shard, offload, mpirun, ckpt, "
                           "k1, report)", mpirun=True).parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)

    def rows(s):
        parity_rows(s)
        bitwise_rows(s)
        k1_row(s)
        report_rows(s)
    return fp.run_suite(args, "grad-accum-", rows, [GPT, fp.TRANSFORMER], session=Session)


if __name__ == "__main__":
    sys.exit(main())
