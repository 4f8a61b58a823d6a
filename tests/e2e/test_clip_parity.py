#!/usr/bin/python3
# Gradient clipping parity with PyTorch (fsdp-opt --clip-grad-norm=MAX
# --clip-norm-type=2|inf, --log-grad-norm; compiler/Transforms/ClipGradients.h).
# The torch side is test_fsdp_parity.py's reference at world size N (per-rank
# gradients averaged in rank order) with torch.nn.utils.clip_grad_norm_ on
# the averaged gradients before each optimizer step; fsdp-run's metrics
# carry the step's total norm as "grad_norm".
#
# MAX is chosen from torch's own norms on the run without clipping: "clips"
# is half the smallest norm of any step (every step is clipped), "no-clip"
# ten times the largest (no step is).
#
# Rows (tolerances as test_train_parity.py; grad_norm within 1e-5
# relative every step):
#   clip    AdamW at N=1 (no FSDP flag, and --shard=full), N=2 full,
#           grad-op and none, and hybrid:2 at N=4, norm types 2 and inf,
#           MAX clips / no-clip
#   sgd     SGD with momentum at N=2 (AdamW hardly sees a uniform gradient
#           scale): the clipped run against torch without clipping must
#           FAIL, so the clip is really applied
#   bits    grad-op and none give the full run's bits (losses, grad_norm,
#           saved weights) at N=2 (norm types 2 and inf) and N=3 (padded
#           shards; GPT and Transformer); so do --ckpt=blocks, --prefetch=2
#           and --offload=cpu with clipping at N=2
#   log     --log-grad-norm trains the bits of the plan without it and logs
#           torch's norm; the console line shows grad_norm
#   device  the CUDA kernels under emulation (--device=cuda-simt) give the
#           CPU's bits at N=2 (full, none; norm inf: the max all-reduce)
#   flags   bad values and combinations exit 1 with a message naming the flag
#
#   /usr/bin/python3 tests/e2e/test_clip_parity.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--only ROW ...] [--keep DIR]

import os
import subprocess
import sys
import tempfile

import numpy
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_fsdp_parity as fp  # noqa: E402  (torch reference at N, Session, rows table)
import test_train_parity as tp  # noqa: E402

Failure = tp.Failure
GPT = fp.GPT
NORM_TOLERANCE = 1e-5  # relative, every step
STEPS = 8  # the Transformer's N=3 row needs 8 to show a misaligned sum


def clip_flags(max_norm, norm_type):
    flags = [f"--clip-grad-norm={max_norm!r}"]
    if norm_type != 2:
        flags.append("--clip-norm-type=inf")
    return tuple(flags)


class ClipSession(fp.Session):
    """test_fsdp_parity's Session with clipping references and norm
    checks."""

    def __init__(self, args, tmp, entries):
        # fp.Session's fields, with the norm column's table.
        self.args, self.tmp, self.entries = args, tmp, entries
        self.table = NormTable()
        self._data, self._plans, self._runs, self._refs = {}, {}, {}, {}
        self._clip_refs = {}

    def clip_reference(self, world, optim, max_norm, norm_type, model=GPT):
        """(losses, final parameters, per-step norms) of torch with
        clip_grad_norm_(MAX, norm_type) at world size `world`."""
        key = (model, world, optim.describe(), max_norm, norm_type)
        if key not in self._clip_refs:
            data, _ = self.dataset(model, world)
            norms = []
            losses, final, _ = fp.torch_reference(self.entries[model], self.onnx(model), data,
                                                  optim, fp.SETUP[model][1], fp.STEPS, world,
                                                  clip=(max_norm, norm_type), norms=norms)
            self._clip_refs[key] = (losses, final, numpy.array(norms))
        return self._clip_refs[key]

    def thresholds(self, world, optim, norm_type, model=GPT):
        """MAX that clips every step, and one that clips none."""
        norms = self.clip_reference(world, optim, float("inf"), norm_type, model)[2]
        return float(numpy.float32(norms.min() / 2)), float(numpy.float32(norms.max() * 10))

    def norm_problems(self, records, norms):
        """grad_norm of every step against torch's; (max rel diff, problems)."""
        ours = [r.get("grad_norm") for r in records]
        if any(n is None for n in ours):
            return None, [f"metrics lack grad_norm: {ours}"]
        rel = numpy.abs(numpy.array(ours, dtype=numpy.float64) - norms) / norms
        worst = float(rel.max())
        if not worst <= NORM_TOLERANCE:
            return worst, [f"grad_norm {ours} vs torch {norms.tolist()} (rel {worst:.2e})"]
        return worst, []

    def clip_parity(self, spec, max_norm, norm_type, reference=None):
        """spec's run against torch clipped at MAX (or `reference`):
        (loss rel, param rel, grad_norm rel, problems)."""
        optim, _ = spec.resolved()
        ref = reference or self.clip_reference(spec.world or 1, optim, max_norm, norm_type,
                                               spec.model)
        result = self.train(spec)
        loss_rel, param_rel, problems = self.compare(spec, result, ref[:2])
        norm_rel, more = self.norm_problems(result[0], ref[2])
        return loss_rel, param_rel, norm_rel, problems + more


class NormTable(fp.Table):
    """fp.Table with a grad_norm column."""

    def __init__(self):
        self.passed = self.failed = 0
        print(f"{'row':<6} {'check':<58} {'loss rel':>9} {'param L2':>9} {'norm rel':>9}  result",
              flush=True)

    def row(self, row, check, loss_rel, param_rel, problems, norm_rel=None):
        ok = not problems
        self.passed += ok
        self.failed += not ok
        fmt = lambda x: "-" if x is None else f"{x:.2e}"
        print(f"{row:<6} {check:<58} {fmt(loss_rel):>9} {fmt(param_rel):>9} {fmt(norm_rel):>9}  "
              f"{'PASS' if ok else 'FAIL'}", flush=True)
        for p in problems:
            print(f"    {p}", flush=True)


def check(s, row, label, body):
    """Runs one row whose body returns (loss rel, param rel, norm rel,
    problems)."""
    if s.args.only and row not in s.args.only:
        return
    try:
        loss_rel, param_rel, norm_rel, problems = body()
    except Failure as e:
        loss_rel = param_rel = norm_rel = None
        problems = [str(e)]
    s.table.row(row, label, loss_rel, param_rel, problems, norm_rel)


def same_norm_bits(a, b):
    x = tp.float32_bits([r.get("grad_norm", float("nan")) for r in a[0]])
    y = tp.float32_bits([r.get("grad_norm", float("nan")) for r in b[0]])
    return [] if numpy.array_equal(x, y) else ["grad_norm bits differ"]


# --------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------

def clip_rows(s):
    configs = [(None, "full"), (1, "full"), (2, "full"), (2, "grad-op"), (2, "none"),
               (4, "hybrid:2")]
    for norm_type in (2, float("inf")):
        for which in ("clips", "no-clip"):
            for world, shard in configs:
                if which == "no-clip" and world not in (None, 2):
                    continue  # enough to show an unclipped step is untouched
                def body(world=world, shard=shard, norm_type=norm_type, which=which):
                    small, large = s.thresholds(world or 1, tp.ADAMW, norm_type)
                    max_norm = small if which == "clips" else large
                    spec = fp.Spec(GPT, world, shard, flags=clip_flags(max_norm, norm_type))
                    return s.clip_parity(spec, max_norm, norm_type)
                where = "no FSDP flag" if world is None else f"N={world} --shard={shard}"
                check(s, "clip", f"{where} norm {norm_type:g} {which}", body)


def sgd_rows(s):
    optim = tp.SGD_MOMENTUM
    for norm_type in (2, float("inf")):
        def body(norm_type=norm_type):
            small, _ = s.thresholds(2, optim, norm_type)
            spec = fp.Spec(GPT, 2, "full", optim=optim, flags=clip_flags(small, norm_type))
            loss_rel, param_rel, norm_rel, problems = s.clip_parity(spec, small, norm_type)
            # Negative control: torch without clipping must not match.
            unclipped = s.clip_reference(2, optim, float("inf"), norm_type)
            _, _, wrong = s.compare(spec, s.train(spec), unclipped[:2])
            if not wrong:
                problems.append("the clipped run also matches torch without clipping")
            return loss_rel, param_rel, norm_rel, problems
        check(s, "sgd", f"N=2 full sgd norm {norm_type:g} clips (and differs unclipped)", body)


def bits_rows(s):
    # At N=3 full's shards of the Transformer's units are padded only,
    # grad-op's also aligned: without fsdp-shard-parameters' align-shards
    # the ranks' partial sums cover different elements, and step 8's norm
    # differs in its last bit.
    for model, world, norm_type in ((GPT, 2, 2), (GPT, 2, float("inf")), (GPT, 3, 2),
                                    (fp.TRANSFORMER, 3, 2)):
        def variants(model=model, world=world, norm_type=norm_type):
            small, _ = s.thresholds(world, fp.SETUP[model][0], norm_type, model)
            flags = clip_flags(small, norm_type)
            return small, fp.Spec(model, world, "full", flags=flags), flags
        for shard in ("grad-op", "none"):
            def body(model=model, world=world, shard=shard, variants=variants,
                     norm_type=norm_type):
                small, full, flags = variants()
                other = fp.Spec(model, world, shard, flags=flags)
                a, b = s.train(full), s.train(other)
                loss_rel, param_rel, norm_rel, problems = s.clip_parity(other, small, norm_type)
                return (loss_rel, param_rel, norm_rel,
                        fp.same_bits(a, b) + same_norm_bits(a, b) + problems)
            check(s, "bits", f"{fp.SHORT[model]} N={world} --shard={shard} == full (bits), "
                  f"norm {norm_type:g}", body)
    small, _ = s.thresholds(2, tp.ADAMW, 2)
    flags = clip_flags(small, 2)
    for extra, offload in ((("--ckpt=blocks",), False), (("--prefetch=2",), False), ((), True)):
        def body(extra=extra, offload=offload):
            spec = fp.Spec(GPT, 2, "full", offload=offload, flags=flags + extra)
            a, b = s.train(fp.Spec(GPT, 2, "full", flags=flags)), s.train(spec)
            loss_rel, param_rel, norm_rel, problems = s.clip_parity(spec, small, 2)
            return (loss_rel, param_rel, norm_rel,
                    fp.same_bits(a, b) + same_norm_bits(a, b) + problems)
        label = " ".join(extra) + (" --offload=cpu" if offload else "")
        check(s, "bits", f"N=2 full clips {label} == without (bits)", body)


def log_rows(s):
    for world, shard in ((None, "full"), (2, "full"), (2, "none")):
        def body(world=world, shard=shard):
            spec = fp.Spec(GPT, world, shard, flags=("--log-grad-norm",))
            plain = fp.Spec(GPT, world, shard)
            result = s.train(spec)
            problems = fp.same_bits(s.train(plain), result)
            if any("grad_norm" in r for r in s.train(plain)[0]):
                problems.append("a plan without clipping logs grad_norm")
            loss_rel, param_rel, norm_rel, more = s.clip_parity(spec, float("inf"), 2)
            return loss_rel, param_rel, norm_rel, problems + more
        where = "no FSDP flag" if world is None else f"N={world} --shard={shard}"
        check(s, "log", f"{where} --log-grad-norm == without (bits), torch's norm", body)

    def console():
        plan = s.plan(fp.Spec(GPT, 2, "full", flags=("--log-grad-norm",)))
        inputs = s.dataset(GPT, 2)[1]
        out = fp.run([s.args.fsdp_run, plan, "--steps=2"] +
                     [f"--input={n}={f}" for n, f in inputs.items()]).stdout
        lines = [l for l in out.splitlines() if l.startswith("step ")]
        ok = len(lines) == 2 and all(" grad_norm " in l for l in lines)
        return None, None, None, [] if ok else [f"progress lines lack grad_norm: {lines}"]
    check(s, "log", "fsdp-run's progress line shows grad_norm", console)


def device_rows(s):
    """The CUDA kernels (under cuda-simt's emulation) compute the CPU's
    bits (its reference GEMM route, FSDP_CPU_GEMM=naive) for the clipping
    ops, the max all-reduce included; skipped when
    fsdp-run was built without the CUDA backend."""
    for shard in ("full", "none"):
        def body(shard=shard):
            small, _ = s.thresholds(2, tp.ADAMW, float("inf"))
            spec = fp.Spec(GPT, 2, shard, flags=clip_flags(small, float("inf")))
            workdir = tempfile.mkdtemp(dir=s.tmp)
            metrics = os.path.join(workdir, "metrics.jsonl")
            weights = os.path.join(workdir, "weights.safetensors")
            inputs = s.dataset(GPT, 2)[1]
            out = subprocess.run([s.args.fsdp_run, s.plan(spec), "--device=cuda-simt",
                                  f"--steps={fp.STEPS}", f"--metrics={metrics}",
                                  f"--save-weights={weights}"] +
                                 [f"--input={n}={f}" for n, f in inputs.items()],
                                 capture_output=True, text=True, timeout=fp.TIMEOUT)
            if out.returncode != 0:
                raise Failure(f"exit {out.returncode}: {out.stderr.strip()[-500:]}")
            simt = (tp.read_metrics(metrics, fp.STEPS), tp.read_safetensors(weights))
            # The emulated device's GEMMs are OpenBLAS's (its cuBLAS mapping):
            # the CPU bits to match are its naive route's (f32 by OpenBLAS).
            cpu = s.train(spec, gemm="naive")
            return None, None, None, fp.same_bits(cpu, simt) + same_norm_bits(cpu, simt)
        check(s, "device", f"N=2 --shard={shard} norm inf clips: cuda-simt == cpu (bits)", body)


def flag_rows(s):
    """Bad clipping flags: exit 1 with a message naming the flag, before
    anything is compiled."""
    cases = [
        (["--clip-grad-norm=-1"], "--clip-grad-norm: invalid value '-1'; must be > 0"),
        (["--clip-grad-norm=0"], "--clip-grad-norm: invalid value '0'; must be > 0"),
        (["--clip-grad-norm=abc"], "--clip-grad-norm: invalid value 'abc'; must be a finite"),
        (["--clip-grad-norm=1", "--clip-norm-type=1"],
         "--clip-norm-type: invalid value '1'; valid: 2, inf"),
        (["--clip-norm-type=inf"], "--clip-norm-type requires --clip-grad-norm=MAX"),
        (["--mode=forward", "--clip-grad-norm=1"], "--clip-grad-norm requires --mode=train"),
        (["--emit=mlir", "--stop-after=train", "--log-grad-norm"],
         "--log-grad-norm acts after the shard stage"),
    ]
    for flags, message in cases:
        def body(flags=flags, message=message):
            out = subprocess.run([s.args.fsdp_opt, s.onnx(GPT), "-o",
                                  os.path.join(s.tmp, "bad.plan")] + flags,
                                 capture_output=True, text=True, timeout=fp.TIMEOUT)
            ok = out.returncode == 1 and message in out.stderr
            return None, None, None, [] if ok else [
                f"exit {out.returncode}, stderr {out.stderr.strip()!r}; expected 1 and {message!r}"]
        check(s, "flags", " ".join(flags) + ": exit 1", body)


def main():
    args = fp.suite_parser("run only these rows (clip, sgd, bits, log, device, flags)").parse_args()
    args.mpirun = None
    fp.STEPS = STEPS
    torch.manual_seed(0)
    torch.set_num_threads(1)

    def rows(s):
        clip_rows(s)
        sgd_rows(s)
        bits_rows(s)
        log_rows(s)
        device_rows(s)
        flag_rows(s)
    return fp.run_suite(args, "fsdp-clip-", rows, [GPT, fp.TRANSFORMER], session=ClipSession)


if __name__ == "__main__":
    sys.exit(main())
