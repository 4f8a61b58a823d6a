#!/usr/bin/python3
# fp16 mixed precision with dynamic loss scaling (--param-dtype=f16, issue
# 19 item 3) against torch.amp.GradScaler driving test_fsdp_parity.py's
# oracle: fp32 master parameters, forward and backward with the parameters
# rounded to float16 (computing in fp32, as the CPU backend emulates it),
# each rank's loss scaled by GradScaler.scale before its backward,
# --reduce-dtype=f16 rounding each rank's gradient and the reduced mean to
# float16, then scaler.step (unscale_, found_inf, AdamW unless found) and
# scaler.update. Every step compares the loss (1e-5 relative), the scale
# the step used ("loss_scale" in --metrics) and whether it was skipped
# ("skipped"), exactly; the parameters after the last step within 5e-5
# relative L2 (DESIGN's tolerances). Each plan's `fsdp-run --dump` shows
# its loss_scaling line (scale and reciprocal buffers, found_inf output,
# growth interval).
#
# Rows:
#   noskip  f32 reduce, default growth interval (2000), at N=1 and N=2:
#           the scales and skips are GradScaler's, which skips exactly the
#           first step (the forward computes in f16, so the seed 65536
#           rounds to inf in the f16 loss's dtype, as in torch) and none
#           after
#   skip    f16 reduce with --loss-scale-growth-interval=1: the scale
#           doubles every good step until a scaled gradient overflows half
#           precision, so steps really get skipped (the row checks some
#           did) and the scale backs off, at N=1 and N=2 (full)
#   shard   grad-op and none at N=2 are bitwise the full run (losses,
#           scales, skips, saved weights), and each matches torch
#   neg     the f16 run against the fp32 reference must FAIL (the
#           rounding is there), and so must the skipping run against a
#           GradScaler that never grows (the skips matter)
#   resume  a run saved at step 5 and resumed to step 8 gives the
#           uninterrupted run's losses, scales, skips and weights bit for
#           bit (the checkpoint carries the scale, the growth tracker and
#           the optimizer's step count)
#   bad     --param-dtype=f16 --reduce-dtype=bf16 is refused before
#           anything runs (exit 1, naming both flags)
#
# torch.amp.GradScaler on the CPU needs torch >= 2.3: the venv's
# (--torch2-python; scripts/setup-venv.sh). The models are exported by
# Debian's torch (--export-python), as test_fsdp_parity.py's are. The set-up
# always makes that venv (scripts/test.sh), so without a usable torch 2 the
# test fails, naming what is missing: a skip would hide a broken set-up.
#
#   /usr/bin/python3 tests/e2e/test_loss_scaling.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run --torch2-python .venv/bin/python [--keep DIR]

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
STEPS = 8  # growth interval 1 overflows f16 by about step 4: several skips


def has_cpu_grad_scaler():
    try:
        import torch
        return hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler")
    except ImportError:
        return False


def export(args, tmp, model):
    """The test models, exported by Debian's torch as every parity test's
    are (torch 2's exporter names initializers differently)."""
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_train_parity as tp; "
              "json.dump(tp.export(sys.argv[2], [sys.argv[3]]), open(sys.argv[4], 'w'))")
    entries = os.path.join(tmp, "entries.json")
    out = subprocess.run([args.export_python, "-c", script, HERE, tmp, model, entries],
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"export failed:\n{out.stderr[-2000:]}")
    with open(entries) as f:
        return json.load(f)


def scaler_problems(records, log):
    """Per step, loss_scale and skipped as GradScaler's."""
    problems = []
    if len(records) != len(log):
        problems.append(f"{len(records)} steps logged, GradScaler took {len(log)}")
    for r, (scale, skipped) in zip(records, log):
        if r.get("loss_scale") != scale or r.get("skipped") is not skipped:
            problems.append(f"step {r['step']}: loss_scale {r.get('loss_scale')} skipped "
                            f"{r.get('skipped')}, GradScaler {scale} {skipped}")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--torch2-python", help="a Python with torch >= 2.3 (the venv's)")
    parser.add_argument("--export-python", default="/usr/bin/python3",
                        help="the Python whose torch exports the test models")
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    if not has_cpu_grad_scaler():
        python = args.torch2_python
        # A venv's python is a link to the system's: its path, not its
        # target, selects the venv; the environment marks the one re-run.
        if python and os.path.exists(python) and not os.environ.get("FSDP_LOSS_SCALING_RERUN"):
            os.environ["FSDP_LOSS_SCALING_RERUN"] = "1"
            os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
        print(f"FAIL: no torch.amp.GradScaler here ({sys.executable}) and no usable "
              f"--torch2-python ({python}); scripts/setup-venv.sh makes the torch 2.x venv")
        return 1

    import numpy
    import torch
    import test_fsdp_parity as fp
    import test_train_parity as tp
    fp.STEPS = STEPS
    torch.manual_seed(0)
    torch.set_num_threads(1)
    GPT = fp.GPT

    def session(args_, tmp, entries):
        return fp.Session(argparse.Namespace(fsdp_opt=args.fsdp_opt, fsdp_run=args.fsdp_run,
                                             mpirun=None, only=[]), tmp, entries)

    def rows(s):
        tmp = s.tmp

        def parity(spec, expect_skips):
            loss_rel, param_rel, problems = s.parity(spec)
            # The plan names the runtime's scalars, the flag and the interval.
            dump = fp.run([args.fsdp_run, s.plan(spec), "--dump"]).stdout
            if not re.search(r'^loss_scaling scale=%\d+ inv_scale=%\d+ found_inf="found_inf" '
                             rf'growth_interval={spec.growth_interval}$', dump, re.M):
                problems.append("fsdp-run --dump shows no loss_scaling line for the plan")
            records, log = s.train(spec)[0], s.reference(spec)[2]
            problems += scaler_problems(records, log)
            skipped = sum(bool(r.get("skipped")) for r in records)
            if expect_skips and not skipped:
                problems.append("no step was skipped: the row does not test skipping")
            if expect_skips is False and skipped:
                problems.append(f"{skipped} steps skipped")
            if expect_skips == "first" and [bool(r.get("skipped")) for r in records] != [
                    True] + [False] * (len(records) - 1):
                problems.append("not exactly the first step skipped")
            return loss_rel, param_rel, problems

        for world in (1, 2):
            spec = fp.Spec(GPT, world, "full", "f16", "f32")
            s.check("noskip", f"gpt N={world} f16/f32 reduce: GradScaler's scales, first step "
                    "skipped", lambda spec=spec: parity(spec, "first"))
            spec = fp.Spec(GPT, world, "full", "f16", "f16", growth_interval=1)
            s.check("skip", f"gpt N={world} f16/f16 reduce, growth interval 1: skips",
                    lambda spec=spec: parity(spec, True))
        full = fp.Spec(GPT, 2, "full", "f16", "f16", growth_interval=1)
        for shard in ("grad-op", "none"):
            spec = fp.Spec(GPT, 2, shard, "f16", "f16", growth_interval=1)

            def body(spec=spec):
                loss_rel, param_rel, problems = parity(spec, True)
                ours, theirs = s.train(spec), s.train(full)
                problems += fp.same_bits(ours, theirs)
                if [(r["loss_scale"], r["skipped"]) for r in ours[0]] != [
                        (r["loss_scale"], r["skipped"]) for r in theirs[0]]:
                    problems.append("scales or skips differ from the full run's")
                return loss_rel, param_rel, problems
            s.check("shard", f"gpt N=2 {shard} f16/f16 == full (bits) and torch", body)
        s.must_differ("neg", "gpt N=2 f16 run vs fp32 reference", fp.Spec(GPT, 2, "full", "f16", "f32"),
                      lambda: s.reference(fp.Spec(GPT, 2)), "the fp32 reference")
        s.must_differ("neg", "gpt N=2 skipping run vs GradScaler growing every 2000 steps",
                      full, lambda: s.reference(fp.Spec(GPT, 2, "full", "f16", "f16")),
                      "a scaler that never overflows")

        def resume():
            plan = s.plan(full)
            _, inputs = s.dataset(GPT, 2)
            feed = [f"--input={n}={f}" for n, f in inputs.items()]

            def train(name, steps, *extra):
                work = os.path.join(tmp, name)
                os.makedirs(work, exist_ok=True)
                metrics, weights = os.path.join(work, "m.jsonl"), os.path.join(work, "w.st")
                fp.run([args.fsdp_run, plan, f"--steps={steps}", f"--metrics={metrics}",
                        f"--save-weights={weights}", *feed, *extra])
                with open(metrics) as f, open(weights, "rb") as w:
                    return [json.loads(line) for line in f], w.read()
            whole, whole_weights = train("whole", STEPS)
            ckpt = os.path.join(tmp, "ckpt")
            first, _ = train("first", 5, f"--save={ckpt}")
            rest, rest_weights = train("rest", STEPS, f"--resume={ckpt}")
            keys = ("step", "loss", "loss_scale", "skipped")
            pick = lambda records: [tuple(r[k] for k in keys) for r in records]
            problems = []
            if not any(r["skipped"] for r in first):
                problems.append("no skip before the checkpoint: it does not carry a changed "
                                "optimizer step count")
            if pick(first) + pick(rest) != pick(whole):
                problems.append(f"resumed {pick(rest)} != uninterrupted {pick(whole)[5:]}")
            if rest_weights != whole_weights:
                problems.append("saved weights differ from the uninterrupted run's")
            return None, None, problems
        s.check("resume", "gpt N=2 f16/f16 saved at step 5, resumed to 8 (bits)", resume)

        def refused():
            out = subprocess.run([args.fsdp_opt, s.onnx(GPT), "-o", os.path.join(tmp, "bad.plan"),
                                  "--world-size=2", "--param-dtype=f16", "--reduce-dtype=bf16"],
                                 capture_output=True, text=True, timeout=120)
            problems = []
            if out.returncode != 1 or "--param-dtype=f16" not in out.stderr or \
                    "bf16" not in out.stderr:
                problems.append(f"exit {out.returncode}: {out.stderr.strip()[-500:]}")
            if os.path.exists(os.path.join(tmp, "bad.plan")):
                problems.append("a plan was written")
            return None, None, problems
        s.check("bad", "--param-dtype=f16 --reduce-dtype=bf16 refused (exit 1)", refused)
    return fp.run_suite(args, "loss-scaling-", rows, export=lambda tmp: export(args, tmp, GPT),
                        session=session)


if __name__ == "__main__":
    sys.exit(main())
