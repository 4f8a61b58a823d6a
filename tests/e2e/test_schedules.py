#!/usr/bin/env python3
"""Learning-rate schedules and --max-steps, end to end through fsdp-run.

Trains the shipped byte-level GPT (tests/e2e/test_resume.py's Session) and
reads each step's "lr" from --metrics (printed with 17 significant digits,
so the double round-trips exactly). One row each:

  - every form of --lr-schedule (constant, constant:W, cosine:W[:MIN_LR],
    linear:W[:MIN_LR], wsd:W:D[:MIN_LR]) against transformers' definitions
    of the same schedules (get_constant_schedule_with_warmup,
    get_linear_schedule_with_warmup, get_cosine_schedule_with_warmup and
    get_cosine_with_min_lr_schedule_with_warmup, get_wsd_schedule with
    decay_type="linear"), written below from their documented formulas
    (transformers is not a dependency). The convention: our step t is
    1-based and runs at base * lambda(t), where transformers' lambda takes
    the 0-based count of completed scheduler steps, i.e. our step t runs at
    the rate a LambdaLR holds after t scheduler.step() calls (no step at
    rate 0; the last step K at MIN_LR). Every step must equal the reference
    within 1 ulp (all but step K, which is MIN_LR itself, are exact). Where
    transformers has no MIN_LR form (linear) the reference applies its
    min-lr rule (factor * (1 - r) + r, r = MIN_LR / base); get_wsd_schedule
    warms up from MIN_LR, ours from 0 like every schedule here, so wsd's
    warmup steps are checked against the constant schedule's warmup;
  - the same runs against torch's own schedulers, segment by segment
    (LinearLR for warmups and linear decays, CosineAnnealingLR for cosine
    decays), with the convention each needs; they compute recursively, so
    within 1e-12 relative;
  - --max-steps: three chained jobs (--steps=10, 20, 30 with --max-steps=30,
    each --resume'd from the last one's --save) give the uninterrupted
    30-step run's rates, losses and saved weights bit for bit; without
    --max-steps the first job's rates differ (the control);
  - refusals, exit 1 with the reason: WARMUP + DECAY past the run, MIN_LR
    above the base rate, --steps past --max-steps; and --max-steps makes
    room for a wsd schedule a short --steps could not hold.
"""

import argparse
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402
from test_resume import Failure, Session, run  # noqa: E402

K = 30
BASE = 1e-3


# --- transformers' schedules: lambda(c), c = completed scheduler steps ----

def tf_constant_warmup(w):
    return lambda c: float(c) / float(max(1.0, w)) if c < w else 1.0


def tf_linear_warmup(w, k, min_ratio=0.0):
    def lam(c):
        if c < w:
            return float(c) / float(max(1, w))
        factor = max(0.0, float(k - c) / float(max(1, k - w)))
        return factor if min_ratio == 0 else factor * (1 - min_ratio) + min_ratio
    return lam


def tf_cosine_warmup(w, k, min_ratio=0.0, num_cycles=0.5):
    def lam(c):
        if c < w:
            return float(c) / float(max(1, w))
        progress = float(c - w) / float(max(1, k - w))
        factor = 0.5 * (1.0 + math.cos(math.pi * float(num_cycles) * 2.0 * progress))
        if min_ratio:
            factor = factor * (1 - min_ratio) + min_ratio
        return max(0.0, factor)
    return lam


def tf_wsd(w, d, k, min_ratio=0.0):
    stable = k - w - d

    def lam(c):
        if c < w:  # get_wsd_schedule: from min_ratio; ours: from 0 (see above)
            return tf_constant_warmup(w)(c)
        if c < w + stable:
            return 1.0
        if c < w + stable + d:
            progress = float(c - w - stable) / float(max(1, d))
            factor = 1.0 - progress
            return max(0.0, factor * (1.0 - min_ratio) + min_ratio)
        return min_ratio
    return lam


def ulps(a, b):
    return abs(a - b) / math.ulp(max(abs(a), abs(b))) if a != b else 0.0


# --- torch's schedulers ------------------------------------------------------

def torch_after(make, calls):
    """The lr a torch scheduler holds after 0..calls scheduler.step() calls."""
    import torch
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=BASE)
    sched = make(opt)
    out = [opt.param_groups[0]["lr"]]
    for _ in range(calls):
        opt.step()
        sched.step()
        out.append(opt.param_groups[0]["lr"])
    return out


def torch_reference(kind, w, d, min_lr):
    """Our step t's rate (index t - 1) through torch's schedulers: warmup
    t <= W is LinearLR(1/W -> 1 over W - 1 iterations) during step t (after
    t - 1 calls); a decay that starts after step S is CosineAnnealingLR or
    LinearLR over K - S iterations after t - S calls."""
    from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR
    rates = [BASE] * K
    if w > 1:
        warm = torch_after(lambda o: LinearLR(o, 1.0 / w, 1.0, total_iters=w - 1), w - 1)
        rates[:w] = warm[:w]
    elif w == 1:
        rates[0] = BASE
    if kind == "constant":
        return rates
    start = K - d if kind == "wsd" else w
    if kind == "cosine":
        decay = torch_after(lambda o: CosineAnnealingLR(o, T_max=K - start, eta_min=min_lr),
                            K - start)
    else:
        decay = torch_after(lambda o: LinearLR(o, 1.0, min_lr / BASE, total_iters=K - start),
                            K - start)
    for t in range(start + 1, K + 1):
        rates[t - 1] = decay[t - start]
    return rates


CASES = [
    # (spec, kind, W, D, MIN_LR, transformers' lambda)
    ("constant", "constant", 0, 0, 0.0, lambda: (lambda c: 1.0)),
    ("constant:5", "constant", 5, 0, 0.0, lambda: tf_constant_warmup(5)),
    ("cosine:0", "cosine", 0, 0, 0.0, lambda: tf_cosine_warmup(0, K)),
    ("cosine:5", "cosine", 5, 0, 0.0, lambda: tf_cosine_warmup(5, K)),
    ("cosine:5:1e-4", "cosine", 5, 0, 1e-4, lambda: tf_cosine_warmup(5, K, 1e-4 / BASE)),
    ("linear:5", "linear", 5, 0, 0.0, lambda: tf_linear_warmup(5, K)),
    ("linear:7:3e-4", "linear", 7, 0, 3e-4, lambda: tf_linear_warmup(7, K, 3e-4 / BASE)),
    ("wsd:5:10", "wsd", 5, 10, 0.0, lambda: tf_wsd(5, 10, K)),
    ("wsd:4:9:1e-4", "wsd", 4, 9, 1e-4, lambda: tf_wsd(4, 9, K, 1e-4 / BASE)),
    ("wsd:0:30:2e-4", "wsd", 0, 30, 2e-4, lambda: tf_wsd(0, 30, K, 2e-4 / BASE)),
]


def rates_of(path):
    with open(path) as f:
        return [json.loads(line)["lr"] for line in f if line.strip()]


def schedule_rows(s, plan):
    results = []
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    for spec, kind, w, d, min_lr, lam in CASES:
        s.train(plan, K, f"--lr={BASE}", f"--lr-schedule={spec}")
        ours = rates_of(s.metrics)
        problems = []
        if len(ours) != K:
            problems.append(f"{len(ours)} steps logged, expected {K}")
        tf = [BASE * lam()(t) for t in range(1, K + 1)]
        worst, inexact = 0.0, []
        for t, (a, b) in enumerate(zip(ours, tf), 1):
            u = ulps(a, b)
            worst = max(worst, u)
            if u:
                inexact.append(t)
            if u > 1:
                problems.append(f"step {t}: lr {a!r}, transformers' {b!r} ({u:.0f} ulps)")
        if inexact and inexact != [K]:
            problems.append(f"steps {inexact} differ from transformers' (only step {K} may)")
        if ours[-1] != (min_lr if kind != "constant" else BASE):
            problems.append(f"the last step's lr {ours[-1]!r} is not {min_lr!r}")
        label = f"--lr-schedule={spec}: {K} steps vs transformers (max {worst:.0f} ulp)"
        results.append((label, problems))
        if not have_torch:
            results.append((f"--lr-schedule={spec} vs torch", ["torch is not installed"]))
            continue
        ref = torch_reference(kind, w, d, min_lr)
        rel = max(abs(a - b) / max(abs(b), 1e-300) for a, b in zip(ours, ref))
        results.append((f"--lr-schedule={spec} vs torch's schedulers (max rel {rel:.1e})",
                        [f"max relative difference {rel:.3e} > 1e-12: ours {ours}, torch {ref}"]
                        if rel > 1e-12 else []))
    return results


def chain_row(s, plan):
    spec = "cosine:5:1e-4"
    full_losses, full_weights, _ = s.train(plan, K, f"--lr-schedule={spec}")
    full_rates = rates_of(s.metrics)
    ckpt = os.path.join(s.fresh("ckpt"), "ckpt")
    chained_losses, chained_rates = [], []
    for steps in (10, 20, 30):
        resume = [f"--resume={ckpt}"] if steps > 10 else []
        got, weights, _ = s.train(plan, steps, f"--lr-schedule={spec}", f"--max-steps={K}",
                                  f"--save={ckpt}", *resume)
        chained_losses += got
        chained_rates += rates_of(s.metrics)
    problems = []
    if chained_rates != full_rates:
        problems.append(f"rates {chained_rates} != uninterrupted {full_rates}")
    if chained_losses != full_losses:
        problems.append(f"losses {chained_losses} != uninterrupted {full_losses}")
    if weights != full_weights:
        problems.append("saved weights differ from the uninterrupted run's")
    # The control: the same first job without --max-steps decays over 10.
    s.train(plan, 10, f"--lr-schedule={spec}")
    if rates_of(s.metrics) == full_rates[:10]:
        problems.append("without --max-steps the first job's rates did not change")
    return problems


def refusal_rows(s, plan):
    cases = [
        ("wsd:20:15 over 30 steps", [f"--steps={K}", "--lr-schedule=wsd:20:15"],
         f"--lr-schedule=wsd:20:15: WARMUP + DECAY = 35 steps, more than the run's {K} "
         "(--max-steps, default --steps)"),
        ("MIN_LR above --lr", ["--steps=3", "--lr=1e-3", "--lr-schedule=cosine:0:0.01"],
         "--lr-schedule=cosine:0:0.01: MIN_LR 0.01 is above the base learning rate 0.001"),
        ("MIN_LR above the plan's compiled --lr", ["--steps=3", "--lr-schedule=linear:0:1"],
         "--lr-schedule=linear:0:1: MIN_LR 1 is above the base learning rate"),
        ("--steps past --max-steps", ["--steps=31", f"--max-steps={K}"],
         f"--steps=31 is past --max-steps={K}"),
    ]
    results = []
    for label, flags, message in cases:
        out = run([s.args.fsdp_run, plan, f"--data={s.tokens}", *flags], expect_ok=False)
        problems = []
        if out.returncode != 1:
            problems.append(f"exit code {out.returncode}, expected 1")
        if message not in out.stderr:
            problems.append(f"stderr {out.stderr.strip()!r} lacks {message!r}")
        results.append((f"refused: {label}", problems))
    # --max-steps makes room for the same wsd schedule.
    out = run([s.args.fsdp_run, plan, f"--data={s.tokens}", "--steps=3", f"--max-steps={K}",
               "--lr-schedule=wsd:10:20"], expect_ok=False)
    results.append(("wsd:10:20 with --steps=3 --max-steps=30 runs",
                    [] if out.returncode == 0 else [out.stderr.strip()]))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="schedules-") as tmp:
        s = Session(args, tmp)
        plan = s.plan([])
        results = rows_report.collect(
            [("--max-steps: jobs of 10, 20, 30 steps = one 30-step run (rates, losses, "
              "weights)", lambda: chain_row(s, plan))],
            [("schedules", lambda: schedule_rows(s, plan)),
             ("refusals", lambda: refusal_rows(s, plan))], Failure)
    return rows_report.report(results)


if __name__ == "__main__":
    sys.exit(main())
