#!/usr/bin/env python3
"""Soak: kill -9 during checkpoint saves, many trials (run on demand).

CI runs 20 sharded and 10 full trials inside tests/e2e/test_resume.py; this
runs as many as asked, in both formats, each trial with its own random kill
moment, and prints one line per format: every checkpoint a killed run left
committed must load, and --resume must pick the newest. Usage:

    /usr/bin/python3 tests/soak/checkpoint_kill_soak.py --build build --trials 200
"""

import argparse
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
import test_resume as tr  # noqa: E402  (Session, kill_rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", help="the CMake build directory")
    ap.add_argument("--trials", type=int, default=200, help="trials per format")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tools = os.path.join(args.build, "bin")
    args.fsdp_opt, args.fsdp_run, args.fsdp_ckpt = (os.path.join(tools, t) for t in
                                                    ("fsdp-opt", "fsdp-run", "fsdp-ckpt"))
    args.mpirun = shutil.which("mpirun")
    failed = False
    print(f"{'format':<8} {'trials':>6} {'seconds':>8}  result")
    for fmt in ("sharded", "full"):
        with tempfile.TemporaryDirectory(prefix="kill-soak-") as tmp:
            start = time.time()
            try:
                problems = tr.kill_rows(tr.Session(args, tmp), args.trials, fmt, args.seed)
            except tr.Failure as e:
                problems = [str(e)]
            failed |= bool(problems)
            print(f"{fmt:<8} {args.trials:>6} {time.time() - start:>8.1f}  "
                  f"{'PASS' if not problems else 'FAIL'}" +
                  "".join(f"\n      {p}" for p in problems[:10]), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
