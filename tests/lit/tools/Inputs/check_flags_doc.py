"""Checks that every flag `fsdp-opt --help` prints has the same row in
docs/flags.md: the same `--name=SYNTAX` and the same description (the
help line unwrapped, with its default). Both are generated from
compiler/Pipelines/CompileFlags.def; this catches a page that was not
regenerated and a --help that stopped reading the declaration.

usage: check_flags_doc.py HELP_TEXT_FILE FLAGS_MD_FILE
"""
import re
import sys


def help_entries(text):
    """(flag, description) for each `  --flag` entry of --help."""
    entries, flag, words = [], None, []
    for line in text.splitlines():
        if line.startswith("  --"):
            if flag:
                entries.append((flag, " ".join(words)))
            left, _, rest = line[2:].partition(" ")
            flag, words = left, rest.split()
        elif flag and line.startswith(" " * 34):
            words += line.split()
        elif flag:
            entries.append((flag, " ".join(words)))
            flag, words = None, []
    if flag:
        entries.append((flag, " ".join(words)))
    return entries


def doc_rows(text):
    """{flag: description} of the page's table rows."""
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `(--[^`]*)` \|(.*)\|$", line)
        if not match:
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", match.group(2))]
        rows[match.group(1).replace("\\|", "|")] = cells[-1].replace("\\|", "|")
    return rows


def main():
    help_text = open(sys.argv[1]).read()
    rows = doc_rows(open(sys.argv[2]).read())
    entries = help_entries(help_text)
    problems = []
    for flag, description in entries:
        if flag not in rows:
            problems.append(f"{flag}: in --help, not in docs/flags.md")
        elif " ".join(rows[flag].split()) != description:
            problems.append(f"{flag}: --help says '{description}', docs/flags.md '{rows[flag]}'")
    helped = {flag for flag, _ in entries}
    problems += [f"{flag}: in docs/flags.md, not in --help" for flag in rows if flag not in helped]
    for problem in problems:
        print(problem)
    print(f"{len(entries)} flags, {len(problems)} disagreements")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
