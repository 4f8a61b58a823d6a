"""Every fsdp-opt flag the README's "Compiled step binaries" section uses in
a command appears in fsdp-opt --help (argv: README.md, the --help text)."""
import re
import sys

readme, help_text = (open(path).read() for path in sys.argv[1:3])
start = readme.index("### Compiled step binaries")
section = readme[start:readme.index("\n### ", start + 1)]
commands = [line for line in section.splitlines() if line.strip().startswith("fsdp-opt ")]
flags = {m.group(1) for line in commands for m in re.finditer(r"\s(--[a-z-]+)", line)}
missing = sorted(f for f in flags if f not in help_text)
if not commands or missing:
    sys.exit(f"README commands {commands} use flags --help lacks: {missing}")
print(f"{len(commands)} commands, flags {sorted(flags)} all in --help")
