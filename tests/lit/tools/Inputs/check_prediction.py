"""Checks the cost prediction a plan carries (fsdp-run --dump's `predicted`
line) against fsdp-opt --emit=report's JSON for the same flags, and, given
fsdp-run --profile's output, its overlap section: exposed communication
within [0, step], the largest over the ranks at least rank 0's, and the
prediction printed as the plan holds it.

usage: check_prediction.py PLAN.dump REPORT.json PROFILE_NAME [PROFILE.txt]
"""
import json
import math
import re
import sys

NUMBER = r"([0-9.eE+-]+)"


def close(a, b, rel):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def main():
    dump, report, device = sys.argv[1:4]
    line = next(l for l in open(dump) if l.startswith("predicted "))
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    assert fields["device"] == device, fields
    with open(report) as f:
        json_report = json.load(f)
    assert json_report["device"] == device, json_report["device"]
    for key in ("step_s", "compute_s", "communication_s", "exposed_communication_s"):
        # The report prints 6 significant digits.
        plan_value, report_value = float(fields[key]), json_report["predicted_" + key]
        assert close(plan_value, report_value, 1e-5), (key, plan_value, report_value)
    assert float(fields["exposed_communication_s"]) <= float(fields["step_s"])
    print("prediction matches the report")
    if len(sys.argv) < 5:
        return
    text = open(sys.argv[4]).read()
    step, exposed = map(float, re.search(
        r"measured: step %s ms, exposed communication %s ms" % (NUMBER, NUMBER), text).groups())
    assert 0 <= exposed <= step, (exposed, step)
    largest = re.search(
        r"largest over \d+ ranks: step %s ms, exposed communication %s ms" % (NUMBER, NUMBER), text)
    if largest:
        assert float(largest.group(1)) >= step and float(largest.group(2)) >= exposed, text
    predicted = re.search(r"predicted for (\S+) .*: step %s ms, compute %s ms, communication %s ms, "
                          r"exposed communication %s ms" % (NUMBER, NUMBER, NUMBER, NUMBER), text)
    assert predicted and predicted.group(1) == device, text
    for value, key in zip(predicted.groups()[1:],
                          ("step_s", "compute_s", "communication_s", "exposed_communication_s")):
        assert close(float(value), float(fields[key]) * 1e3, 1e-3), (key, value, fields[key])
    print("overlap: 0 <= exposed <= step, largest >= rank 0, prediction as in the plan")


if __name__ == "__main__":
    main()
