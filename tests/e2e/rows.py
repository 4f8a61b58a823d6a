#!/usr/bin/env python3
"""Running an end-to-end script's rows and reporting them.

A row is (label, body): body() returns the row's problems, an empty list
when it passed. A group is (label, body) whose body returns several
(label, problems) rows at once. An exception of the script's failure type
fails the row (or the group, under its label) with its message. report()
prints one PASS/FAIL line per row with its problems, then the totals, and
returns the exit status: 0 only when every row passed and at least one ran.
"""


def collect(rows=(), groups=(), failure=Exception):
    results = []
    for label, body in rows:
        try:
            results.append((label, body()))
        except failure as e:
            results.append((label, [str(e)]))
    for label, body in groups:
        try:
            results += body()
        except failure as e:
            results.append((label, [str(e)]))
    return results


def report(results, suffix=""):
    passed = failed = 0
    for label, problems in results:
        ok = not problems
        passed, failed = passed + ok, failed + (not ok)
        print(f"{'PASS' if ok else 'FAIL'}  {label}" + "".join(f"\n      {p}" for p in problems),
              flush=True)
    print(f"{passed} passed, {failed} failed{suffix}")
    return 0 if failed == 0 and passed > 0 else 1
