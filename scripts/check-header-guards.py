#!/usr/bin/python3
# Lint for header guards: every header the project writes (.h and .cuh
# under git, generated and third-party files excluded) opens its guard with
# FSDP_<PATH>_H, where PATH is its path from the repository root in upper
# case with '/', '.', '-' as '_' (runtime/exec/Executor.h ->
# FSDP_RUNTIME_EXEC_EXECUTOR_H), defines the same name on the next line and
# closes with `#endif // NAME`. A guard that names another path (a file
# moved since it was written) would still compile but would collide when a
# header of that old path comes back; this test keeps guards and paths
# one. ctest runs it as `header-guards`; `--fix` rewrites wrong guards in
# place.
#
#   scripts/check-header-guards.py [--fix]

import os
import re
import sys

ROOT = os.environ.get("FSDP_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def expected_guard(path):
    return "FSDP_" + re.sub(r"[/.\-]", "_", path).upper()


# The folders that hold the project's sources (build trees and the venv
# beside them are not walked).
SOURCE_DIRS = ["compiler", "dialects", "frontends", "runtime", "tools", "tests", "bench"]


def headers():
    found = []
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, top)):
            dirnames.sort()
            for name in sorted(filenames):
                # Generated (flatc) headers are not ours to name.
                if name.endswith((".h", ".cuh")) and not name.endswith("_generated.h"):
                    found.append(os.path.relpath(os.path.join(dirpath, name), ROOT))
    return found


def check(path, fix):
    """Returns a problem description, or None if the guard is right."""
    full = os.path.join(ROOT, path)
    with open(full) as f:
        text = f.read()
    want = expected_guard(path)
    ifndef = re.search(r"^#ifndef (\w+)\n#define (\w+)\n", text, re.M)
    endif = list(re.finditer(r"^#endif\s*//\s*(\w+)\s*$", text, re.M))
    if not ifndef:
        return "no '#ifndef NAME' / '#define NAME' guard"
    have = ifndef.group(1)
    ok = (have == want and ifndef.group(2) == want and endif
          and endif[-1].group(1) == want and text.rstrip().endswith(endif[-1].group(0).rstrip()))
    if ok:
        return None
    if fix:
        text = re.sub(r"\b%s\b" % re.escape(have), want, text)
        if ifndef.group(2) != have:
            text = re.sub(r"^#define %s\n" % re.escape(ifndef.group(2)), "#define %s\n" % want,
                          text, count=1, flags=re.M)
        last = list(re.finditer(r"^#endif.*$", text, re.M))
        if last:
            m = last[-1]
            text = text[:m.start()] + "#endif // " + want + text[m.end():]
        with open(full, "w") as f:
            f.write(text)
    return "guard %s, expected %s" % (have, want)


def main():
    fix = "--fix" in sys.argv[1:]
    problems = [(p, why) for p in headers() for why in [check(p, fix)] if why]
    for path, why in problems:
        print("%s: %s%s" % (path, why, " (fixed)" if fix else ""))
    total = len(headers())
    print("header-guards: %d of %d headers %s" %
          (len(problems), total, "fixed" if fix else "wrong"))
    return 1 if problems and not fix else 0


if __name__ == "__main__":
    sys.exit(main())
