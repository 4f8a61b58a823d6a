#!/usr/bin/python3
# Keeps docs/design.md's op-family table true. The frontend, the nn dialect
# and the two kernel backends each keep one file per op family, but their
# families are cut differently where the layers differ (the frontend has
# one file per group of ONNX operators, the dialect one per group of nn
# ops, the kernels one per group of plan kernels); the table in the section
# "Op families" names, for every family, its file in each layer. This check
# fails when a file it names does not exist, when a family file of any
# layer is not in the table, or when a file is listed twice, so that a file
# added, renamed or removed has to update the map. ctest runs it as
# `op-families`.
#
#   scripts/check-op-families.py

import os
import re
import sys

ROOT = os.environ.get("FSDP_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = "docs/design.md"

# Column heading -> (folder, the family files of that folder). Kernels are
# one column for both backends: a name stands for cpu/NAME.cpp and
# cuda/NAME.cu, which must both exist (KERNEL_FILES).
LAYERS = {
    "frontend": ("frontends/onnx/ops", re.compile(r"^[A-Z]\w*\.cpp$")),
    "dialect": ("dialects/nn", re.compile(r"^(NN\w+Ops\.td|\w+Ops\.cpp)$")),
    "gradients": ("dialects/nn/gradients", re.compile(r"^\w+Gradients\.cpp$")),
}
# The kernels column: NAME stands for both backends' files.
KERNEL_FILES = [("runtime/backends/cpu/kernels", ".cpp"), ("runtime/backends/cuda/kernels", ".cu")]
# NNOps.td only includes the family files; it is not a family.
NOT_FAMILIES = {"dialects/nn/NNOps.td"}


def table_rows(text):
    section = re.search(r"^## Op families\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if not section:
        raise SystemExit("%s: no '## Op families' section" % DOC)
    rows = [line for line in section.group(1).splitlines() if line.startswith("|")]
    header = [c.strip().strip("`").lower() for c in rows[0].strip("|").split("|")]
    body = [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]
    return header, body


def main():
    with open(os.path.join(ROOT, DOC)) as f:
        header, body = table_rows(f.read())
    problems = []
    listed = {}
    for row in body:
        family = row[0]
        for column, cell in zip(header[1:], row[1:]):
            if column.startswith("notes"):
                continue
            layer = next((k for k in list(LAYERS) + ["kernels"] if column.startswith(k)), None)
            if layer is None:
                problems.append("unknown column '%s'" % column)
                continue
            names = re.findall(r"`([^`]+)`", cell)
            if layer == "kernels":
                paths = ["%s/%s%s" % (d, n, ext) for n in names for d, ext in KERNEL_FILES]
            else:
                paths = ["%s/%s" % (LAYERS[layer][0], n) for n in names]
            for path in paths:
                if path in listed:
                    problems.append("%s is listed for %s and %s" % (path, listed[path], family))
                listed[path] = family
                if not os.path.isfile(os.path.join(ROOT, path)):
                    problems.append("%s (family %s) does not exist" % (path, family))
    folders = list(LAYERS.items()) + [("kernels", (d, re.compile(r"^\w+Kernels\%s$" % ext)))
                                      for d, ext in KERNEL_FILES]
    for layer, (folder, pattern) in folders:
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            path = "%s/%s" % (folder, name)
            if pattern.match(name) and path not in listed and path not in NOT_FAMILIES:
                problems.append("%s is a %s family file missing from the table" % (path, layer))
    for p in problems:
        print("%s: %s" % (DOC, p))
    print("op-families: %d families, %d files, %d problems" % (len(body), len(listed), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
