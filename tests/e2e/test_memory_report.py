#!/usr/bin/python3
# End-to-end check of `fsdp-opt --emit=report`: the memory report is read
# from the plan fsdp-run executes, so it must be the truth.
#
# 1. The report's peak_bytes equals what fsdp-run allocates for the same
#    plan (`--metrics` peak_bytes after one training step of the example
#    GPT on a token file; unsharded, --shard=full on 2 ranks, hybrid:2 with
#    bf16 parameters on 4, offload, gradient clipping), and every rank's row
#    adds up to it.
# 2. Under --shard=full --wrap=blocks, the persistent parameter and
#    optimizer-state bytes per rank fall as 1/N for world sizes 1, 2, 4
#    (up to the padding that makes each unit divide into N equal shards and
#    the 64-byte alignment of each buffer), and the report lists one row per
#    rank.
#
# Prints one line per check and a closing "N passed, M failed" line.
#
#   /usr/bin/python3 tests/e2e/test_memory_report.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
MODEL = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
TEXT = os.path.join(ROOT, "examples", "shakespeare.txt")
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "communication",
              "io", "fragmentation")


class Failure(Exception):
    pass


def run(command):
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        raise Failure(f"{' '.join(command)} failed:\n{out.stderr.strip()}")
    return out.stdout


def report(args, *flags):
    text = run([args.fsdp_opt, MODEL, "--emit=report", "--report-format=json", *flags])
    try:
        r = json.loads(text)
    except json.JSONDecodeError as e:
        raise Failure(f"report is not JSON ({e}):\n{text[:500]}")
    for key in ("peak_bytes", "activations_bytes", "world_size", "strategy", "ranks", "units"):
        if key not in r:
            raise Failure(f"report has no '{key}'")
    if len(r["ranks"]) != r["world_size"]:
        raise Failure(f"{len(r['ranks'])} rank rows for world size {r['world_size']}")
    for row in r["ranks"]:
        total = sum(row[c] for c in CATEGORIES)
        if total != row["peak"] or row["peak"] != r["peak_bytes"]:
            raise Failure(f"rank {row['rank']}: categories sum to {total}, peak "
                          f"{row['peak']}, report peak_bytes {r['peak_bytes']}")
    if r["peak_bytes"] != r["persistent_bytes"] + r["arena_bytes"]:
        raise Failure("peak_bytes is not persistent_bytes + arena_bytes")
    if r["arena_live_peak_bytes"] > r["arena_bytes"]:
        raise Failure("more arena bytes live than the arena holds")
    return r


def check_matches_runtime(args, workdir):
    """The report's peak is exactly what fsdp-run allocates, unsharded and
    sharded (fsdp-run runs the plan's ranks in process)."""
    tokens = os.path.join(workdir, "tokens.bin")
    with open(TEXT, "rb") as f:
        data = f.read()
    with open(tokens, "wb") as f:  # byte-level ids as raw little-endian uint16
        f.write(b"".join(bytes((b, 0)) for b in data))
    seen = []
    for flags in ([], ["--world-size=2", "--shard=full", "--wrap=blocks"],
                  ["--world-size=4", "--shard=hybrid:2", "--param-dtype=bf16"],
                  ["--world-size=2", "--shard=full", "--offload=cpu"],
                  # The gradient norm's buffers and the grad_norm output.
                  ["--world-size=2", "--shard=full", "--clip-grad-norm=1"],
                  ["--world-size=2", "--shard=none", "--clip-grad-norm=1",
                   "--clip-norm-type=inf"]):
        plan = os.path.join(workdir, "step.plan")
        run([args.fsdp_opt, MODEL, "-o", plan, *flags])
        metrics = os.path.join(workdir, "metrics.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        run([args.fsdp_run, plan, "--steps=1", f"--data={tokens}", f"--metrics={metrics}"])
        with open(metrics) as f:
            record = json.loads(f.readline())
        allocated, host = record["peak_bytes"], record.get("host_bytes", 0)
        r = report(args, *flags)
        if r["peak_bytes"] != allocated:
            raise Failure(f"{' '.join(flags) or 'unsharded'}: report peak_bytes "
                          f"{r['peak_bytes']} != fsdp-run's {allocated}")
        # Offloaded state is host memory, allocated apart and reported apart.
        if r["host_bytes"] != host or (host > 0) != ("--offload=cpu" in flags):
            raise Failure(f"{' '.join(flags) or 'unsharded'}: report host_bytes "
                          f"{r['host_bytes']} != fsdp-run's {host}")
        seen.append(f"{' '.join(flags) or 'unsharded'}: {allocated} B" +
                    (f" + host {host} B" if host else ""))
    return "; ".join(seen)


def check_scaling(args, _workdir):
    """Parameter and optimizer-state bytes per rank fall as 1/N."""
    rows = {}
    for world in (1, 2, 4):
        r = report(args, f"--world-size={world}", "--shard=full", "--wrap=blocks")
        if r["world_size"] != world or r["strategy"] != "full":
            raise Failure(f"world {world}: report says world {r['world_size']}, "
                          f"strategy {r['strategy']}")
        # A unit gathered in place (the root unit, gathered once) is held
        # whole on every rank: only the rest shards.
        whole = sum(4 * u["padded_numel"] for u in r["units"] if u["gathered_in_place"])
        if world > 1 and not any(u["gathered_in_place"] for u in r["units"]):
            raise Failure(f"world {world}: the root unit is not gathered in place")
        rows[world] = (dict(r["ranks"][0], parameters=r["ranks"][0]["parameters"] - whole),
                       len(r["units"]))
    base, units = rows[1]
    for world in (2, 4):
        row, _ = rows[world]
        for key in ("parameters", "optimizer_state"):
            ideal = base[key] / world
            # Each unit pads to a multiple of N elements and aligns to 64 B.
            slack = units * (world * 4 + 64) * (2 if key == "optimizer_state" else 1)
            if not ideal - slack <= row[key] <= ideal + slack:
                raise Failure(f"world {world}: {key} {row[key]} B, expected about "
                              f"{base[key]} / {world} = {ideal:.0f} B")
    return ", ".join(f"N={w}: params {rows[w][0]['parameters']} B, state "
                     f"{rows[w][0]['optimizer_state']} B" for w in (1, 2, 4))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--fsdp-opt", required=True)
    ap.add_argument("--fsdp-run", required=True)
    args = ap.parse_args()
    checks = [("matches-runtime", check_matches_runtime), ("shards-scale-1/N", check_scaling)]
    passed = failed = 0
    with tempfile.TemporaryDirectory() as workdir:
        for name, check in checks:
            try:
                print(f"{name}: ok ({check(args, workdir)})", flush=True)
                passed += 1
            except Failure as e:
                print(f"{name}: FAILED: {e}", flush=True)
                failed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
