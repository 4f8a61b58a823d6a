# Checks an --emit=trace JSON file against the --emit=report JSON of the
# same flags: argv = trace.json report.json expected-ranks.
import json
import sys

trace = json.load(open(sys.argv[1]))
report = json.load(open(sys.argv[2]))
ranks = int(sys.argv[3])
events = trace["traceEvents"]
n = report["instructions"]
assert trace["otherData"]["instructions"] == n, (trace["otherData"], n)

names = {(e["pid"], e.get("tid"), e["args"]["name"]) for e in events
         if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")}
assert {p for p, _, _ in names} == set(range(ranks)), names
assert all((p, 0, "compute stream") in names for p in range(ranks)), names
print("ranks", ranks, "streams ok")

x = [e for e in events if e["ph"] == "X"]
assert len(x) == n * ranks, (len(x), n, ranks)
for e in x:
    assert e["name"] and isinstance(e["args"]["inputs"], list), e
    assert e["dur"] > 0 or e["args"]["bound"] == "view", e
    assert e["ts"] >= 0, e
assert sum(e["dur"] for e in x) > 0
# Ranks are copies of one plan.
per_rank = [[(e["name"], e["ts"], e["dur"]) for e in x if e["pid"] == r] for r in range(ranks)]
assert all(p == per_rank[0] for p in per_rank)
step_us = trace["otherData"]["predicted_step_s"] * 1e6
assert abs(step_us - report["predicted_step_s"] * 1e6) <= 1e-3 * step_us + 1e-3, (step_us, report["predicted_step_s"])
assert max(e["ts"] + e["dur"] for e in x) <= step_us * (1 + 1e-5) + 1e-3
print("events ok")

c = [e for e in events if e["ph"] == "C" and e["pid"] == 0]
assert c and all(e["name"] == "memory" for e in c)
assert all(e["args"]["persistent bytes"] == report["persistent_bytes"] for e in c)
live = max(e["args"]["arena live bytes"] for e in c)
assert live == report["arena_live_peak_bytes"], (live, report["arena_live_peak_bytes"])
assert live <= report["arena_bytes"]
print("counter ok")
