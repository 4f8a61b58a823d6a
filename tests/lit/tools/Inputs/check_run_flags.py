"""Every flag of docs/run-flags.md's table (argv[1]) has a description and
appears in fsdp-run --help (argv[2]) as an entry: the flag as the table
spells it at the start of a line, followed by its first words of help."""
import re
import sys

page, help_text = (open(path).read() for path in sys.argv[1:3])
rows = re.findall(r"^\| `([^`]+)`[^|]*\| (any|training) \| (.+) \|$", page, re.M)
if not rows:
    sys.exit("no flag rows in the page")
problems = []
for spelled, _, description in rows:
    spelled = spelled.replace("\\|", "|")
    first = re.sub(r"\\(.)", r"\1", description).split()[0]
    if not re.search(r"^  " + re.escape(spelled) + r" +" + re.escape(first), help_text, re.M):
        problems.append(spelled)
if problems:
    sys.exit(f"--help lacks entries for {problems}")
print(f"{len(rows)} flags, each in --help with its help text")
