# Command-line seeds for fuzz-compile-flags and fuzz-run-flags: the
# fsdp-opt and fsdp-run command lines that README.md and the guides in
# docs/, docs/design.md's command-line contract, the lit tests' RUN lines
# and the e2e tests write, one argument per line without argv[0]
# (FuzzSupport.h's splitArguments).
# Synopsis forms (`--shard=full|grad-op`, `--steps=K`) and the e2e tests'
# f-string values (`f"--save={ckpt}"`) become a real value of the flag,
# picked by the metavar the tool's --help gives it, so each seed is a
# command line the parser accepts, the place mutations start from.

import glob
import os
import re
import shlex
import subprocess

# Values for the metavars of the two --help texts.
METAVAR_VALUES = {"N": "2", "K": "2", "M": "4", "X": "0.01", "MAX": "1.0", "G": "2",
                  "SECONDS": "30", "SIZE": "1GiB", "RE": "bias$", "S": "cosine:2:0.0001",
                  "NAME=FILE.npy": "x=x.npy", "FILE": "tokens.bin", "DIR": "ckpt",
                  "OUT": "step.plan", "MIN_LR": "0"}
FLAG = re.compile(r"--[a-z][a-z0-9-]*")
TOOLS = ("fsdp-opt", "fsdp-run")


def help_flags(tool):
    """{flag: metavar or None} from the tool's --help."""
    text = subprocess.run([tool, "--help"], capture_output=True, text=True, check=True).stdout
    flags = {}
    for match in re.finditer(r"(--[a-z][a-z0-9-]*)(?:=([^\s\]]+))?", text):
        if flags.get(match.group(1)) is None:
            flags[match.group(1)] = match.group(2)
    return flags


def value_for(metavar):
    if metavar is None:
        return "1"
    if "|" in metavar:
        return metavar.split("|")[0]
    return METAVAR_VALUES.get(metavar, metavar.lower())


def concrete(argument, metavars):
    """An argument with a synopsis value (`|` alternatives, an upper-case
    metavar) replaced by a real one."""
    name, eq, value = argument.partition("=")
    if eq and ("|" in value or re.fullmatch(r"[A-Z][A-Z_]*(?:[=.].*)?", value)):
        return name + "=" + value_for(value)
    return argument


def command_lines(text, metavars):
    """(tool, arguments) of each line of `text` that runs fsdp-opt or
    fsdp-run as a command (indented as code in Markdown, or a lit RUN
    line), continuation lines (`\\`) joined; shell operators, comments,
    `...` and synopsis brackets are dropped."""
    text = re.sub(r"\\\n\s*(?://\s*RUN:)?", " ", text)
    found = []
    for line in text.splitlines():
        if not re.match(r"\s{4}|\s*(//|#)\s*RUN:", line):
            continue  # prose that names a tool
        match = re.search(r"(?:^|[\s/])(fsdp-opt|fsdp-run)\s+(.*)", line)
        if not match:
            continue
        rest = re.split(r"\s(?:#|\||&&|;|2?>|<)", " " + match.group(2))[0]
        rest = rest.replace("[", " ").replace("]", " ")
        try:
            words = shlex.split(rest)
        except ValueError:
            words = rest.split()
        # lit's %t/x.plan and %fsdp_src/examples/m.onnx: the file's name.
        words = [re.sub(r"%[A-Za-z_]+/(?:.*/)?", "", w) for w in words]
        args = [concrete(w, metavars) for w in words if w not in ("...", "|") and "%" not in w]
        if args:
            found.append((match.group(1), args))
    return found


def design_synopsis(text, metavars):
    """The design's command-line block: a tool's synopsis continues on the
    indented lines under it."""
    block = re.search(r"## Command line.*?```\n(.*?)```", text, re.S)
    found, tool, args = [], None, []
    for line in (block.group(1) if block else "").splitlines():
        starts = next((t for t in TOOLS if line.startswith(t + " ")), None)
        if starts or not line.startswith(" "):
            if tool and args:
                found.append((tool, args))
            tool, args = starts, []
        if tool:
            args += [concrete(w, metavars) for w in re.findall(r"--[a-z][a-z0-9-]*(?:=[^\s),]*)?",
                                                            line.replace("[", " ").replace("]", " "))]
    if tool and args:
        found.append((tool, args))
    # "--lr=" and the like: the flag with a value for its metavar.
    return [(t, [a + value_for(metavars.get(a[:-1])) if a.endswith("=") else a for a in args])
            for t, args in found]


def e2e_flag_lists(path, metavars):
    """The flag literals ("--x=...", f"--x={expr}") on each line of an e2e
    test, f-string values replaced by a value for the flag's metavar."""
    found = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            literals = re.findall(r'f?"(--[a-z][a-z0-9-]*(?:=[^" ]*)?)"', line)
            args = []
            for literal in literals:
                name, eq, value = literal.partition("=")
                if "{" in value:
                    value = re.sub(r"\{[^}]*\}", value_for(metavars.get(name)), value)
                args.append(name + eq + value)
            if args:
                found.append(args)
    return found


def flag_seeds(repo, fsdp_opt, fsdp_run):
    """{"compile-flags": [(name, bytes)], "run-flags": [...]}."""
    known = {"fsdp-opt": help_flags(fsdp_opt), "fsdp-run": help_flags(fsdp_run)}
    metavars = {**known["fsdp-run"], **known["fsdp-opt"]}
    lines = []  # (source, tool, arguments)
    # The guides' examples (docs/*.md; design.md's synopsis is read below,
    # and the generated flag references list flags, not command lines).
    guides = [p for p in glob.glob(os.path.join(repo, "docs/*.md"))
              if os.path.basename(p) not in ("design.md", "flags.md", "run-flags.md")]
    for source in ["README.md", *sorted(os.path.relpath(p, repo) for p in guides),
                   *sorted(os.path.relpath(p, repo) for p in
                           glob.glob(os.path.join(repo, "tests/lit/**/*.test"), recursive=True))]:
        with open(os.path.join(repo, source), encoding="utf-8") as f:
            lines += [(source, t, a) for t, a in command_lines(f.read(), metavars)]
    with open(os.path.join(repo, "docs/design.md"), encoding="utf-8") as f:
        lines += [("design.md", t, a) for t, a in design_synopsis(f.read(), metavars)]
    for path in sorted(glob.glob(os.path.join(repo, "tests/e2e/**/*.py"), recursive=True)):
        for args in e2e_flag_lists(path, metavars):
            # A line's flags go to each tool that has them (--lr and
            # --world-size are both tools'); flags of neither are dropped.
            for tool in TOOLS:
                mine = [a for a in args if a.partition("=")[0] in known[tool]]
                if mine:
                    positional = "model.onnx" if tool == "fsdp-opt" else "step.plan"
                    lines.append((os.path.relpath(path, repo), tool, [positional, *mine]))
    seeds = {"compile-flags": [], "run-flags": []}
    seen = set()
    for source, tool, args in lines:
        data = "\n".join(args).encode()
        if (tool, data) in seen:
            continue
        seen.add((tool, data))
        target = "compile-flags" if tool == "fsdp-opt" else "run-flags"
        stem = re.sub(r"[^A-Za-z0-9]+", "-", os.path.splitext(os.path.basename(source))[0])
        seeds[target].append((f"{stem}-{len(seeds[target]):03d}.args", data))
    return seeds
