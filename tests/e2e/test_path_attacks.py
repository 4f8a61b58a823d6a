#!/usr/bin/env python3
"""Path attacks on the tools' files and flags (issue 20), one row each.

Every row plants something hostile where a tool reads or writes (a FIFO, a
device, a directory, a symlink or hard link, a '..' or absolute name, a file
swapped after it was checked) and asserts the outcome a careful tool gives:
a refusal with exit code 1 and one line naming the path and the reason, or,
where the layout is legitimate, success with nothing outside the target
touched. Every command runs under a timeout (SIGKILL: fsdp-run treats
SIGTERM as "stop after this step"), so a tool that waits on a FIFO or reads
/dev/zero forever fails its row instead of hanging the suite.

Covered: fsdp-run --data, --eval-data, --input, --weights, the plan file,
--save-weights, --outputs, --metrics, --plot, --save (and --keep), --resume
(COMMIT and the files it names); fsdp-ckpt inspect; fsdp-plot; fsdp-opt's
model file (ONNX and .mlir), -o and ONNX external data (tests/lit's
make_model.py builds the models). docs/security.md states the rules these rows check;
`--show` prints each row's exit code and message.
"""

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import rows as rows_report  # noqa: E402

MODEL = os.path.join(ROOT, "examples", "gpt-tiny.onnx")
TEXT = os.path.join(ROOT, "examples", "shakespeare.txt")
MAKE_MODEL = os.path.join(ROOT, "tests", "lit", "frontends", "onnx", "Inputs", "make_model.py")
TIMEOUT = 30  # seconds; every command here takes well under one


class Failure(Exception):
    pass


def run(command):
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:  # subprocess.run kills with SIGKILL
        raise Failure(f"{' '.join(command)} still runs after {TIMEOUT} s: a hang")


OBSERVED = []  # (exit code, first stderr line) of each checked command, for --show


def expect(out, rc, pattern=None):
    """Problems unless `out` exited `rc` and (refusals) printed exactly one
    line matching `pattern` on stderr."""
    OBSERVED.append((out.returncode, (out.stderr.strip().splitlines() or [""])[0][:300]))
    problems = []
    if out.returncode != rc:
        problems.append(f"exit code {out.returncode}, want {rc}: {out.stderr.strip()[-400:]}")
    if pattern is not None:
        lines = out.stderr.strip().splitlines()
        if len(lines) != 1 or not re.search(pattern, lines[0]):
            shown = [line[:400] for line in lines[:5]]  # a refusal may quote a huge line
            problems.append(f"stderr {shown!r} is not one line matching {pattern!r}")
    return problems


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def check(condition, problem):
    return [] if condition else [problem]


class Session:
    """A temporary directory with what the rows share: a training plan of
    the shipped GPT, its tokens, a forward plan, and a one-step sharded
    checkpoint to copy and damage."""

    def __init__(self, args, tmp):
        self.args, self.tmp, self.count = args, tmp, 0
        self.tokens = os.path.join(tmp, "tokens.bin")
        write(self.tokens, b"".join(bytes((b, 0)) for b in read(TEXT)[:20000]))
        self.plan = os.path.join(tmp, "train", "step.plan")
        os.makedirs(os.path.dirname(self.plan))
        self.opt([MODEL, "-o", self.plan])
        self.checkpoint = os.path.join(tmp, "ckpt")
        self.train(f"--save={self.checkpoint}", expect_ok=True)
        self.step_dir = os.path.join(self.checkpoint, "step-00000001")
        self.shard = "rank-00000-of-00001.safetensors"
        # A forward plan y = relu(x) and its input.
        self.relu_onnx = self.make_model("relu", self.fresh("relu"))
        self.forward = os.path.join(os.path.dirname(self.relu_onnx), "f.plan")
        self.opt([self.relu_onnx, "--mode=forward", "-o", self.forward])
        self.x = os.path.join(tmp, "x.npy")
        np.save(self.x, np.arange(6, dtype=np.float32).reshape(2, 3))

    def fresh(self, name):
        self.count += 1
        path = os.path.join(self.tmp, f"{self.count}-{name}")
        os.makedirs(path)
        return path

    def opt(self, argv):
        out = run([self.args.fsdp_opt, *argv])
        if out.returncode != 0:
            raise Failure(f"fsdp-opt {' '.join(argv)} failed: {out.stderr.strip()}")

    def make_model(self, case, directory):
        """An ONNX model from make_model.py's `case` (hostile_* builders
        write their external data beside it), or the relu model."""
        path = os.path.join(directory, case + ".onnx")
        if case == "relu":
            return self.relu(path, "y")
        out = run(["/usr/bin/python3", MAKE_MODEL, case, path])
        if out.returncode != 0:
            raise Failure(f"make_model.py {case}: {out.stderr.strip()}")
        return path

    def relu(self, path, output):
        code = ("import onnx, sys\nfrom onnx import helper, TensorProto as T\n"
                "o = sys.argv[2]\n"
                "g = helper.make_graph([helper.make_node('Relu', ['x'], [o], name='r')], 'g',"
                " [helper.make_tensor_value_info('x', T.FLOAT, [2, 3])],"
                " [helper.make_tensor_value_info(o, T.FLOAT, [2, 3])])\n"
                "onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid('', 17)]),"
                " sys.argv[1])\n")
        out = run(["/usr/bin/python3", "-c", code, path, output])
        if out.returncode != 0:
            raise Failure(f"building {path}: {out.stderr.strip()}")
        return path

    def train(self, *extra, plan=None, expect_ok=False):
        out = run([self.args.fsdp_run, plan or self.plan, f"--data={self.tokens}", "--steps=1",
                   *extra])
        if expect_ok and out.returncode != 0:
            raise Failure(f"fsdp-run {' '.join(extra)} failed: {out.stderr.strip()}")
        return out

    def copy_checkpoint(self):
        """A fresh copy of the good checkpoint: (root, step dir)."""
        root = os.path.join(self.fresh("ckpt"), "ckpt")
        shutil.copytree(self.checkpoint, root)
        return root, os.path.join(root, "step-00000001")

    def resume(self, root, pattern=None, rc=1):
        return expect(self.train(f"--resume={root}", "--steps=2"), rc, pattern)


def replace(path, make):
    """Replaces `path` by what make(path) creates."""
    if os.path.lexists(path):
        os.remove(path)
    make(path)


# --- readers: fsdp-run's inputs ---------------------------------------------

def reader_rows(s):
    def fifo_data():
        d = s.fresh("fifo")
        f = os.path.join(d, "tokens.bin")
        os.mkfifo(f)
        return expect(run([s.args.fsdp_run, s.plan, f"--data={f}"]), 1,
                      r"token file '.*tokens\.bin': not a regular file \(a FIFO\)")

    def zero_eval_data():
        d = s.fresh("zero")
        f = os.path.join(d, "eval.bin")
        os.symlink("/dev/zero", f)
        return expect(s.train(f"--eval-data={f}"), 1,
                      r"eval\.bin': not a regular file \(a character device\)")

    def directory_input():
        d = s.fresh("dir")
        x = os.path.join(d, "x.npy")
        os.mkdir(x)
        return expect(run([s.args.fsdp_run, s.forward, f"--input=x={x}"]), 1,
                      r"x\.npy'?: not a regular file \(a directory\)")

    def fifo_weights():
        d = s.fresh("fifow")
        w = os.path.join(d, "w.safetensors")
        os.mkfifo(w)
        return expect(s.train(f"--weights={w}"), 1, r"w\.safetensors'?: not a regular file \(a FIFO\)")

    def fifo_plan():
        d = s.fresh("fifop")
        p = os.path.join(d, "step.plan")
        os.mkfifo(p)
        return expect(run([s.args.fsdp_run, p, f"--data={s.tokens}"]), 1,
                      r"step\.plan: not a regular file \(a FIFO\)")

    return [
        ("--data=FIFO: refused, not waited on", fifo_data),
        ("--eval-data=symlink to /dev/zero: refused, not read forever", zero_eval_data),
        ("--input=x=DIRECTORY: refused", directory_input),
        ("--weights=FIFO: refused", fifo_weights),
        ("plan file is a FIFO: refused", fifo_plan),
    ]


# --- writers: fsdp-run's outputs --------------------------------------------

def writer_rows(s):
    def planted_tmp(kind):
        def body():
            d = s.fresh("planted")
            victim = os.path.join(d, "victim")
            write(victim, b"victim")
            out = os.path.join(d, "w.safetensors")
            tmp = out + ".tmp"
            {"symlink": lambda: os.symlink(victim, tmp), "hardlink": lambda: os.link(victim, tmp),
             "fifo": lambda: os.mkfifo(tmp)}[kind]()
            problems = expect(s.train(f"--save-weights={out}"), 0)
            problems += check(read(victim) == b"victim", f"the victim now holds {read(victim)[:16]!r}")
            problems += check(stat.S_ISREG(os.lstat(out).st_mode) and read(out)[8:9] == b"{",
                              f"{out} is not the safetensors file")
            problems += check(not os.path.lexists(tmp), f"{tmp} left behind")
            return problems
        return body

    def fifo_target():
        d = s.fresh("fifot")
        out = os.path.join(d, "w.safetensors")
        os.mkfifo(out)
        problems = expect(s.train(f"--save-weights={out}"), 1,
                          r"w\.safetensors' is a FIFO, not a regular file; refusing to replace it")
        return problems + check(stat.S_ISFIFO(os.lstat(out).st_mode), "the FIFO was replaced")

    def symlink_target():
        d = s.fresh("linkt")
        target = os.path.join(d, "kept")
        write(target, b"kept")
        out = os.path.join(d, "w.safetensors")
        os.symlink(target, out)
        problems = expect(s.train(f"--save-weights={out}"), 0)
        problems += check(read(target) == b"kept", "the link's target was written")
        return problems + check(stat.S_ISREG(os.lstat(out).st_mode), "the link is still a link")

    def escaping_output_name():
        d = s.fresh("escape")
        onnx = s.relu(os.path.join(d, "esc.onnx"), "../escape")
        plan = os.path.join(d, "esc.plan")
        s.opt([onnx, "--mode=forward", "-o", plan])
        outputs = os.path.join(d, "out", "sub")
        os.makedirs(outputs)
        problems = expect(run([s.args.fsdp_run, plan, f"--input=x={s.x}", f"--outputs={outputs}"]),
                          1, r"output name '\.\./escape' is not a plain file name")
        return problems + check(not os.path.exists(os.path.join(d, "out", "escape.npy")),
                                "escape.npy written outside --outputs")

    def fifo_output_file():
        d = s.fresh("fifoo")
        os.mkfifo(os.path.join(d, "y.npy"))
        return expect(run([s.args.fsdp_run, s.forward, f"--input=x={s.x}", f"--outputs={d}"]), 1,
                      r"y\.npy' is a FIFO, not a regular file; refusing to replace it")

    def symlinked_outputs_dir():
        d = s.fresh("linko")
        real = os.path.join(d, "real")
        os.mkdir(real)
        os.symlink(real, os.path.join(d, "out"))
        problems = expect(run([s.args.fsdp_run, s.forward, f"--input=x={s.x}",
                               f"--outputs={os.path.join(d, 'out')}"]), 0)
        return problems + check(os.path.isfile(os.path.join(real, "y.npy")), "no y.npy in the target")

    def metrics_device():
        return expect(s.train("--metrics=/dev/null"), 0)

    def fifo_plot():
        d = s.fresh("fifoplot")
        p = os.path.join(d, "run.html")
        os.mkfifo(p)
        return expect(s.train(f"--plot={p}"), 1, r"run\.html' is a FIFO, not a regular file")

    return [
        ("--save-weights=F, F.tmp a planted symlink: the link is never written through",
         planted_tmp("symlink")),
        ("--save-weights=F, F.tmp a planted hard link: the other name keeps its bytes",
         planted_tmp("hardlink")),
        ("--save-weights=F, F.tmp a planted FIFO: replaced, not waited on", planted_tmp("fifo")),
        ("--save-weights=FIFO: refused, the FIFO kept", fifo_target),
        ("--save-weights=symlink: accepted, the link replaced, its target untouched", symlink_target),
        ("--outputs: plan output named '../escape': refused, nothing outside DIR", escaping_output_name),
        ("--outputs=DIR with DIR/y.npy a FIFO: refused", fifo_output_file),
        ("--outputs=symlink to a directory: accepted (the user's own path)", symlinked_outputs_dir),
        ("--metrics=/dev/null: accepted (a log stream)", metrics_device),
        ("--plot=FIFO: refused", fifo_plot),
    ]


# --- --save: the checkpoint directory ---------------------------------------

def save_rows(s):
    def victim_dir(d):
        victim = os.path.join(d, "victim")
        os.mkdir(victim)
        write(os.path.join(victim, "COMMIT"), b"not ours")
        return victim

    def planted(name, *extra):
        def body():
            d = s.fresh("save")
            victim = victim_dir(d)
            root = os.path.join(d, "ckpt")
            os.mkdir(root)
            os.symlink(victim, os.path.join(root, name))
            problems = expect(s.train(f"--save={root}", *extra), 0)
            problems += check(os.listdir(victim) == ["COMMIT"] and
                              read(os.path.join(victim, "COMMIT")) == b"not ours",
                              f"the victim directory now holds {os.listdir(victim)}")
            step = os.path.join(root, "step-00000001")
            return problems + check(os.path.isfile(os.path.join(step, "COMMIT")) and
                                    not os.path.islink(step), "no real step-00000001 committed")
        return body

    def symlinked_root():
        d = s.fresh("linkroot")
        real = os.path.join(d, "real")
        os.mkdir(real)
        os.symlink(real, os.path.join(d, "ckpt"))
        problems = expect(s.train(f"--save={os.path.join(d, 'ckpt')}"), 0)
        return problems + check(os.path.isfile(os.path.join(real, "step-00000001", "COMMIT")),
                                "no checkpoint in the link's target")

    def file_root():
        d = s.fresh("fileroot")
        f = os.path.join(d, "ckpt")
        write(f, b"a file")
        problems = expect(s.train(f"--save={f}"), 1, r"ckpt/\.tmp-step-00000001")
        return problems + check(read(f) == b"a file", "the file was changed")

    return [
        ("--save=DIR, DIR/.tmp-step-N a planted symlink: the link removed, its target untouched",
         planted(".tmp-step-00000001")),
        ("--save=DIR, DIR/step-N a planted symlink: replaced as a link, the target's COMMIT kept",
         planted("step-00000001")),
        ("--save=DIR --keep=1, an old step-N a symlink: pruned as a link, the target kept",
         planted("step-00000000", "--keep=1")),
        ("--save=symlink to a directory: accepted (the user's own path)", symlinked_root),
        ("--save=a regular file: refused", file_root),
    ]


# --- --resume: COMMIT and the files it names ---------------------------------

def resume_rows(s):
    def commit(make, pattern):
        def body():
            root, step = s.copy_checkpoint()
            replace(os.path.join(step, "COMMIT"), make)
            return s.resume(root, pattern)
        return body

    def commit_line(line, pattern):
        def body():
            root, step = s.copy_checkpoint()
            with open(os.path.join(step, "COMMIT"), "a") as f:
                f.write(line + "\n")
            return s.resume(root, pattern)
        return body

    def huge_commit(path):
        with open(path, "wb") as f:
            f.truncate(32 << 20)  # sparse: costs no disk

    def shard(make, pattern, rc=1):
        def body():
            root, step = s.copy_checkpoint()
            replace(os.path.join(step, s.shard), lambda p: make(p, step))
            return s.resume(root, pattern, rc)
        return body

    def outside_copy(flip):
        def make(path, step):
            data = bytearray(read(os.path.join(s.step_dir, s.shard)))
            if flip:
                data[-1] ^= 1
            outside = os.path.join(os.path.dirname(os.path.dirname(step)), "outside.safetensors")
            write(outside, bytes(data))
            os.symlink(outside, path)
        return make

    def hard_link(path, step):
        outside = os.path.join(os.path.dirname(os.path.dirname(step)), "linked.safetensors")
        shutil.copyfile(os.path.join(s.step_dir, s.shard), outside)
        os.link(outside, path)

    def symlinked_resume_dir():
        d = s.fresh("linkresume")
        os.symlink(s.checkpoint, os.path.join(d, "ckpt"))
        return s.resume(os.path.join(d, "ckpt"), rc=0)

    return [
        ("--resume: COMMIT a FIFO: refused, not waited on",
         commit(os.mkfifo, r"COMMIT: not a regular file \(a FIFO\)")),
        ("--resume: COMMIT a symlink to /dev/zero: refused, not read forever",
         commit(lambda p: os.symlink("/dev/zero", p), r"COMMIT: not a regular file \(a character device\)")),
        ("--resume: COMMIT a directory: refused",
         commit(os.mkdir, r"COMMIT: not a regular file \(a directory\)")),
        ("--resume: COMMIT of 32 MiB: refused before it is read",
         commit(huge_commit, r"COMMIT: 33554432 bytes; a COMMIT file is at most")),
        ("--resume: COMMIT names '../x': refused",
         commit_line("file ../x.safetensors 8 00000000000000ff",
                     r"file name '\.\./x\.safetensors' is not a plain name")),
        ("--resume: COMMIT names an absolute path: refused",
         commit_line("file /etc/passwd 8 00000000000000ff", r"file name '/etc/passwd' is not a plain name")),
        ("--resume: shard a FIFO: refused",
         shard(lambda p, _: os.mkfifo(p), r"safetensors: not a regular file \(a FIFO\)")),
        ("--resume: shard a symlink to /dev/zero: refused",
         shard(lambda p, _: os.symlink("/dev/zero", p), r"not a regular file \(a character device\)")),
        ("--resume: shard a directory: refused",
         shard(lambda p, _: os.mkdir(p), r"not a regular file \(a directory\)")),
        ("--resume: shard a symlink to an identical file outside: accepted (content hash verified)",
         shard(outside_copy(False), None, rc=0)),
        ("--resume: shard a symlink to another file of the same size: refused (content hash)",
         shard(outside_copy(True), r"content hash [0-9a-f]+ does not match")),
        ("--resume: shard a hard link: accepted (content hash verified)", shard(hard_link, None, rc=0)),
        ("--resume=symlink to a --save directory: accepted (the user's own path)", symlinked_resume_dir),
    ]


def toctou_rows(s):
    """A shard replaced after its hash was checked, before it is read: the
    unit test drives the window deterministically (verifyCheckpointFile,
    swap, read through the verified descriptor)."""
    def body():
        if not s.args.runtime_tests:
            raise Failure("no --runtime-tests binary given")
        out = run([s.args.runtime_tests,
                   "--gtest_filter=CheckpointTest.AVerifiedFileIsReadThroughTheDescriptorThatWasHashed"])
        return check(out.returncode == 0 and "[  PASSED  ] 1 test" in out.stdout,
                     f"the unit test did not pass: {out.stdout[-600:]}")

    def swapped_after_commit():
        root, step = s.copy_checkpoint()
        shard = os.path.join(step, s.shard)
        data = bytearray(read(shard))
        data[-1] ^= 1
        os.remove(shard)
        write(shard, bytes(data))  # another inode, same size
        return s.resume(root, r"content hash [0-9a-f]+ does not match")

    return [
        ("TOCTOU: shard swapped between verification and reading: the verified bytes are read", body),
        ("shard replaced after COMMIT (same size, other bytes): refused (content hash)",
         swapped_after_commit),
    ]


# --- other tools ---------------------------------------------------------------

def tool_rows(s):
    def ckpt_inspect_fifo():
        root, step = s.copy_checkpoint()
        replace(os.path.join(step, "COMMIT"), os.mkfifo)
        return expect(run([s.args.fsdp_ckpt, "inspect", root]), 1, r"COMMIT: not a regular file")

    def plot_zero():
        d = s.fresh("plot")
        return expect(run([s.args.fsdp_plot, "/dev/zero", "-o", os.path.join(d, "p.html")]), 1,
                      r"line 1: longer than 1048576 bytes")

    def onnx(case, pattern, rc=1, tweak=None):
        def body():
            d = s.fresh("onnx")
            model = s.make_model(case, d)
            if tweak:
                tweak(d)
            return expect(run([s.args.fsdp_opt, model, "--emit=summary"]), rc, pattern)
        return body

    def fifo_data(d):
        replace(os.path.join(d, "weights.bin"), os.mkfifo)

    def zero_data(d):
        replace(os.path.join(d, "weights.bin"), lambda p: os.symlink("/dev/zero", p))

    def outside_link(d):
        outside = os.path.join(os.path.dirname(d), "outside.bin")
        shutil.copyfile(os.path.join(d, "weights.bin"), outside)
        replace(os.path.join(d, "weights.bin"), lambda p: os.symlink(outside, p))

    def hard_linked(d):
        outside = os.path.join(os.path.dirname(d), "outside-hard.bin")
        shutil.copyfile(os.path.join(d, "weights.bin"), outside)
        replace(os.path.join(d, "weights.bin"), lambda p: os.link(outside, p))

    def model_fifo():
        d = s.fresh("fifomodel")
        m = os.path.join(d, "m.onnx")
        os.mkfifo(m)
        return expect(run([s.args.fsdp_opt, m, "--emit=summary"]), 1, r"m\.onnx: not a regular file")

    def mlir_input(make):
        def body():
            d = s.fresh("mlir")
            m = os.path.join(d, "m.mlir")
            make(m)
            return expect(run([s.args.fsdp_opt, m, "--emit=summary"]), 1, r"m\.mlir: not a regular file")
        return body

    def opt_output(make, rc, pattern):
        def body():
            d = s.fresh("opto")
            victim = os.path.join(d, "victim")
            write(victim, b"victim")
            out = os.path.join(d, "f.plan")
            make(out, victim)
            problems = expect(run([s.args.fsdp_opt, s.relu_onnx, "--mode=forward", "-o", out]), rc,
                              pattern if rc else None)
            return problems + check(read(victim) == b"victim", "the victim was written")
        return body

    return [
        ("fsdp-ckpt inspect: COMMIT a FIFO: refused", ckpt_inspect_fifo),
        ("fsdp-plot /dev/zero: refused at 1 MiB, not read forever", plot_zero),
        ("fsdp-opt: model file a FIFO: refused", model_fifo),
        ("fsdp-opt: .mlir input a FIFO: refused, not waited on", mlir_input(os.mkfifo)),
        ("fsdp-opt: .mlir input a symlink to /dev/zero: refused, not read forever",
         mlir_input(lambda p: os.symlink("/dev/zero", p))),
        ("fsdp-opt: external data at an absolute path: refused",
         onnx("ext_absolute", r"must be a relative path inside the model's directory")),
        ("fsdp-opt: external data location with '..': refused", onnx("ext_dotdot", r"must not contain '\.\.'")),
        ("fsdp-opt: external data a symlink out of the model's directory: refused",
         onnx("ext_ok", r"'weights\.bin' goes through a symlink", tweak=outside_link)),
        ("fsdp-opt: external data a symlink to /dev/zero: refused",
         onnx("ext_ok", r"'weights\.bin' goes through a symlink", tweak=zero_data)),
        ("fsdp-opt: external data a FIFO: refused, not waited on",
         onnx("ext_ok", r"'weights\.bin' is not a regular file", tweak=fifo_data)),
        ("fsdp-opt: external data location a directory: refused",
         onnx("ext_directory", r"'adir' is not a regular file")),
        ("fsdp-opt: external data offset near 2^63: refused", onnx("ext_offset_huge", r"lies outside")),
        ("fsdp-opt: external data a hard link to a file elsewhere: accepted",
         onnx("ext_ok", None, rc=0, tweak=hard_linked)),
        ("fsdp-opt -o FIFO: refused, the FIFO kept",
         opt_output(lambda out, _: os.mkfifo(out), 1, r"f\.plan' is a FIFO, not a regular file")),
        ("fsdp-opt -o F, F.tmp a planted symlink: the link never written through",
         opt_output(lambda out, victim: os.symlink(victim, out + ".tmp"), 0, None)),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for tool in ("fsdp-opt", "fsdp-run", "fsdp-ckpt", "fsdp-plot"):
        parser.add_argument("--" + tool, required=True)
    parser.add_argument("--runtime-tests", help="the fsdp-runtime-tests binary (the TOCTOU row)")
    parser.add_argument("--show", action="store_true",
                        help="also print each row's exit code and message, as a markdown table")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fsdp-path-attacks-") as tmp:
        s = Session(args, tmp)
        table = (reader_rows(s) + writer_rows(s) + save_rows(s) + resume_rows(s) + toctou_rows(s) +
                 tool_rows(s))
        shown = []

        def observing(label, body):
            def run_row():
                del OBSERVED[:]
                try:
                    return body()
                finally:
                    shown.append((label, list(OBSERVED)))
            return label, run_row

        status = rows_report.report(rows_report.collect([observing(*row) for row in table],
                                                        failure=Failure))
        if args.show:
            print("| attack | exit | message |\n|---|---|---|")
            for label, observed in shown:
                for rc, line in observed or [("", "(unit test)")]:
                    print(f"| {label} | {rc} | {line.replace('|', '/')} |")
        return status


if __name__ == "__main__":
    sys.exit(main())
