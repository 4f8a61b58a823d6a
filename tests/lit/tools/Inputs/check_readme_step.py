"""Every fsdp-opt flag that the page on compiled steps (docs/compiled-steps.md,
which the README links to) uses in a command appears in fsdp-opt --help
(argv: the page, the --help text)."""
import re
import sys

page, help_text = (open(path).read() for path in sys.argv[1:3])
if not page.startswith("# Compiled step binaries"):
    sys.exit(f"{sys.argv[1]} is not the page on compiled step binaries")
commands = [line for line in page.splitlines() if line.strip().startswith("fsdp-opt ")]
flags = {m.group(1) for line in commands for m in re.finditer(r"\s(--[a-z-]+)", line)}
missing = sorted(f for f in flags if f not in help_text)
if not commands or missing:
    sys.exit(f"compiled-step commands {commands} use flags --help lacks: {missing}")
print(f"{len(commands)} commands, flags {sorted(flags)} all in --help")
