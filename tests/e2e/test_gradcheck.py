#!/usr/bin/python3
# Numerical gradient check of every differentiable ONNX operator, in float64
# on the CPU backend. Each case (gradcheck_cases.py) is a tiny model (opset 17 unless
# the operator is newer) around one operator
# (or one attribute combination, broadcast, or a value used twice): its float
# operands are DOUBLE initializers, so they are parameters with random values
# kept away from non-differentiable points; its integer operands (indices,
# labels, masks) are graph inputs or integer initializers. The loss is
# ReduceSum(Mul(y, R)) for each output y, with R a fixed random Constant node
# (not a parameter), or the operator's own scalar for the loss operators.
#
# For every case:
#   1. `fsdp-opt --optimizer=sgd --lr=1 --weight-decay=0` and one step of
#      `fsdp-run --save-weights`: the gradient is p_before - p_after;
#   2. a forward plan run with `--weights=` files written here gives the
#      central difference (L(p + hv) - L(p - hv)) / 2h along random unit
#      directions v over all parameters, which must equal <g, v>;
#   3. torch autograd on the same values (float64) must agree with g
#      elementwise, and the forward loss at p with torch's loss.
# Finite differences see only projections of g; torch sees every element, so
# a rule that is wrong on a few elements cannot hide. Dropout with ratio > 0
# has no torch reference (its mask is ours): differences still apply, since
# the mask is fixed by the seed, and the gradient must have the mask's form.
#
# The training model ends in Cast(to=FLOAT): fsdp-run reads a training loss
# only as an f32 scalar. The seed gradient through that Cast is exactly 1, so
# the parameter gradients are unchanged; the case "loss f64 (train plan)"
# checks the f64 loss directly.
#
# Prints one row per case, then "N passed, M failed"; any failure, including
# a compile or run error, fails the test.
#
#   /usr/bin/python3 tests/e2e/test_gradcheck.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--only SUBSTRING ...] [--keep DIR] [--jobs N]
#       [--device cpu|cuda-simt|cuda]
#
# With --device=cuda-simt every step and forward pass runs on the CUDA
# backend's kernels under SIMT emulation: the same checks then prove the
# CUDA gradient kernels against torch and finite differences.

import argparse
import concurrent.futures
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

from gradcheck_cases import CASES, DIRECTIONS, DTYPES, LOSS_TOLERANCE, OPSET, Case

# ---------------------------------------------------------------------------
# Model files, safetensors, and the runs.

def tensor_type(dtype):
    """ONNX's element type of a numpy dtype: onnx.helper's function where it
    exists (onnx >= 1.13; onnx.mapping is gone from 1.17 on), onnx.mapping's
    table on Debian's onnx 1.12."""
    if hasattr(helper, "np_dtype_to_tensor_dtype"):
        return helper.np_dtype_to_tensor_dtype(numpy.dtype(dtype))
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[numpy.dtype(dtype)]


def save_model(c, probes, path, train):
    """The case's nodes, the probe of each output, and the loss named 'loss'
    (Cast to float for training, see the header)."""
    nodes = list(c.nodes)
    terms = []
    if c.is_loss:
        terms = [c.outputs[0]]
    else:
        for index, (output, probe) in enumerate(zip(c.outputs, probes)):
            r = f"probe{index}"
            nodes.append(helper.make_node("Constant", [], [r],
                                          value=numpy_helper.from_array(probe, r)))
            nodes.append(helper.make_node("Mul", [output, r], [f"probed{index}"]))
            nodes.append(helper.make_node("ReduceSum", [f"probed{index}"], [f"term{index}"],
                                          keepdims=0))
            terms.append(f"term{index}")
    total = terms[0]
    for index, term in enumerate(terms[1:]):
        nodes.append(helper.make_node("Add", [total, term], [f"sum{index}"]))
        total = f"sum{index}"
    if train and not c.f64_train_loss:
        nodes.append(helper.make_node("Cast", [total], ["loss"], to=TensorProto.FLOAT))
        loss_type = TensorProto.FLOAT
    else:
        nodes.append(helper.make_node("Identity", [total], ["loss"]))
        loss_type = TensorProto.DOUBLE
    initializers = [numpy_helper.from_array(v, k) for k, v in c.params.items()]
    initializers += [numpy_helper.from_array(v, k) for k, v in c.consts.items()]
    inputs = [helper.make_tensor_value_info(k, tensor_type(v.dtype), list(v.shape))
              for k, v in c.inputs.items()]
    graph = helper.make_graph(nodes, "gradcheck", inputs,
                              [helper.make_tensor_value_info("loss", loss_type, [])],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c.opset)])
    # This onnx may not know a newer case's opset; fsdp-opt validates itself.
    if c.opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(model)
    onnx.save(model, path)


def write_safetensors(path, tensors):
    header, offset = {}, 0
    for name, value in tensors.items():
        header[name] = {"dtype": DTYPES[value.dtype], "shape": list(value.shape),
                        "data_offsets": [offset, offset + value.nbytes]}
        offset += value.nbytes
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for value in tensors.values():
            f.write(numpy.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes())


def read_safetensors(path):
    data = open(path, "rb").read()
    size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + size])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = {"F64": "<f8", "F32": "<f4"}[entry["dtype"]]
        begin, end = entry["data_offsets"]
        out[name] = numpy.frombuffer(data[8 + size + begin:8 + size + end],
                                     dtype=dtype).reshape(entry["shape"])
    return out


class Failure(Exception):
    pass


class Refused(Exception):
    """A refusal the case accepts (see Case.refusal_ok)."""


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        text = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise Failure(f"{os.path.basename(command[0])} failed: " + " | ".join(text[-3:]))
    return done


def prepare(c):
    """Torch's loss and gradient on the case's values; the probes R."""
    t = {}
    for name, value in c.params.items():
        t[name] = torch.tensor(value, requires_grad=True)
    for name, value in {**c.consts, **c.inputs, **c.constants}.items():
        t[name] = torch.tensor(value)
    c.torch_loss, c.torch_grads = None, None
    if c.torch_fn is None:
        c.probes = [c.rng.standard_normal(s) for s in c.shapes]
        return
    out = c.torch_fn(t)
    out = out if isinstance(out, list) else [out]
    if c.is_loss:
        loss = out[0]
        c.probes = []
    else:
        c.probes = [c.rng.standard_normal(tuple(o.shape)) for o in out]
        loss = sum((o * torch.tensor(r)).sum() for o, r in zip(out, c.probes))
    loss.backward()
    c.torch_loss = float(loss)
    c.torch_grads = {name: t[name].grad.numpy() if t[name].grad is not None
                     else numpy.zeros_like(value) for name, value in c.params.items()}


def check(args, c, directory):
    """Runs the case; returns (fd error, torch error, loss error), raises Failure."""
    os.makedirs(directory)
    train_model, forward_model = (os.path.join(directory, f) for f in ("train.onnx", "fwd.onnx"))
    save_model(c, c.probes, train_model, train=True)
    save_model(c, c.probes, forward_model, train=False)
    input_flags = []
    for name, value in c.inputs.items():
        path = os.path.join(directory, name + ".npy")
        numpy.save(path, value)
        input_flags.append(f"--input={name}={path}")

    step_plan = os.path.join(directory, "step.plan")
    try:
        run([args.fsdp_opt, train_model, "--optimizer=sgd", "--lr=1", "--weight-decay=0",
             "-o", step_plan])
    except Failure as error:
        if c.refusal_ok:
            raise Refused(str(error))
        raise
    own = read_safetensors(os.path.join(directory, "step.safetensors"))
    for name, value in c.params.items():
        if name not in own or not numpy.array_equal(own[name], value):
            raise Failure(f"plan weights: parameter {name} differs from the initializer")
    after = os.path.join(directory, "after.safetensors")
    run([args.fsdp_run, step_plan, "--steps=1", f"--save-weights={after}", f"--device={args.device}"]
        + input_flags)
    updated = read_safetensors(after)
    grads = {name: value - updated[name] for name, value in c.params.items()}

    forward_plan = os.path.join(directory, "fwd.plan")
    run([args.fsdp_opt, forward_model, "--mode=forward", "-o", forward_plan])

    def loss_at(params, tag):
        weights = os.path.join(directory, tag + ".safetensors")
        write_safetensors(weights, params)
        outputs = os.path.join(directory, tag)
        run([args.fsdp_run, forward_plan, f"--weights={weights}", f"--outputs={outputs}",
             f"--device={args.device}"] + input_flags)
        return float(numpy.load(os.path.join(outputs, "loss.npy")))

    loss0 = loss_at(c.params, "p0")
    loss_error = None
    if c.torch_loss is not None:
        loss_error = abs(loss0 - c.torch_loss) / max(1.0, abs(c.torch_loss))

    fd_error = 0.0
    rng = numpy.random.default_rng(1234)
    for k in range(DIRECTIONS):
        v = {name: rng.standard_normal(value.shape) for name, value in c.params.items()}
        norm = numpy.sqrt(sum(float((d * d).sum()) for d in v.values()))
        v = {name: d / norm for name, d in v.items()}
        dtype = {name: value.dtype for name, value in c.params.items()}
        plus = {n: (c.params[n] + c.step * v[n]).astype(dtype[n]) for n in v}
        minus = {n: (c.params[n] - c.step * v[n]).astype(dtype[n]) for n in v}
        # The step actually taken, after rounding to the parameter's dtype.
        taken = {n: (plus[n].astype(numpy.float64) - minus[n]) / (2 * c.step) for n in v}
        fd = (loss_at(plus, f"plus{k}") - loss_at(minus, f"minus{k}")) / (2 * c.step)
        directional = sum(float((grads[n].astype(numpy.float64) * taken[n]).sum()) for n in v)
        fd_error = max(fd_error, abs(fd - directional) / max(1.0, abs(fd)))

    torch_error = None
    if c.reference is not None:
        torch_error = c.reference(grads, c.probes)
    if c.torch_grads is not None:
        torch_error = 0.0
        for name, expected in c.torch_grads.items():
            scale = max(float(numpy.abs(expected).max()), 1e-6)
            diff = float(numpy.abs(grads[name].astype(numpy.float64) - expected).max())
            torch_error = max(torch_error, diff / scale)
    return fd_error, torch_error, loss_error


def evaluate(args, c, directory):
    try:
        fd, th, ls = check(args, c, directory)
    except Refused as refusal:
        print(f"refused (accepted): {c.name}: {refusal}")
        return None, None, None, ""
    except Failure as error:
        return None, None, None, str(error)
    except Exception as error:  # a bug in this script still names its case
        return None, None, None, f"{type(error).__name__}: {error}"
    problems = []
    if fd > c.fd_tolerance:
        problems.append(f"finite difference off by {fd:.2e} (tolerance {c.fd_tolerance:.0e})")
    if th is not None and th > c.torch_tolerance:
        problems.append(f"gradient differs from torch by {th:.2e} "
                        f"(tolerance {c.torch_tolerance:.0e})")
    if ls is not None and ls > LOSS_TOLERANCE:
        problems.append(f"forward loss differs from torch by {ls:.2e}")
    return fd, th, ls, "; ".join(problems)


def build_cases(only):
    cases = []
    for index, (name, build, options) in enumerate(CASES):
        if only and not any(s in name for s in only):
            continue
        c = Case(name, seed=index)
        for key, value in options.items():
            setattr(c, key, value)
        build(c)
        cases.append(c)
    # The training loss as an f64 scalar, with no Cast: fsdp-run must read it.
    if not only or any(s in "loss f64 (train plan)" for s in only):
        c = Case("loss f64 (train plan)", seed=len(CASES))
        c.f64_train_loss = True
        x = c.param((3, 4))
        c.result(c.node("Tanh", [x]), lambda t: torch.tanh(t[x]))
        cases.append(c)
    return cases


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--only", nargs="*", default=[], help="cases whose name contains one of these")
    parser.add_argument("--keep", help="keep the models and plans in this directory")
    parser.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    parser.add_argument("--device", default="cpu",
                        help="fsdp-run's device: cpu, or cuda-simt for the CUDA kernels under "
                             "emulation, or cuda")
    args = parser.parse_args()
    start = time.time()
    torch.set_num_threads(1)

    cases = build_cases(args.only)
    for c in cases:
        prepare(c)
    tmp = args.keep or tempfile.mkdtemp(prefix="gradcheck-")
    try:
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda ic: evaluate(args, ic[1], os.path.join(tmp, f"case{ic[0]}")),
                                    enumerate(cases)))
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)

    width = max(len(c.name) for c in cases)
    print(f"{'case':<{width}}  params  fd rel err  torch rel  loss rel   result")
    failures = []
    for c, (fd, th, ls, problem) in zip(cases, results):
        count = sum(v.size for v in c.params.values())
        cell = lambda x: f"{x:10.2e}" if x is not None else f"{'-':>10}"
        status = "FAIL" if problem else "PASS"
        print(f"{c.name:<{width}}  {count:6d}  {cell(fd)}  {cell(th)}  {cell(ls)}  {status}")
        if problem:
            failures.append((c.name, problem))
    for name, problem in failures:
        print(f"FAIL: {name}: {problem}")
    print(f"{len(cases) - len(failures)} passed, {len(failures)} failed "
          f"({time.time() - start:.1f} s)")
    return 1 if failures or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
