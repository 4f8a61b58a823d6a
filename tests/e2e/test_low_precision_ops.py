#!/usr/bin/env python3
# Per-op parity of the bf16 and f16 kernels with torch 2.x's CPU ops (issue
# 31, "Against torch, per op"). Each case is a forward plan around one nn
# op, written as nn MLIR: its float inputs arrive as f32 .npy files holding
# values that are exact in the low-precision dtype (npy has no bf16), are
# nn.cast to bf16 or f16 (exact), go through the op, and its float results
# are nn.cast back to f32 (exact) for --outputs. torch runs the same op on
# the same bf16/f16 tensors. Every result element is compared as bits of the
# low-precision dtype: the bitwise fraction and the worst distance in ulps
# (units in the last place of the output dtype).
#
# Each case names its claim:
#   exact    every element equal bit for bit (arithmetic torch computes per
#            element in float and rounds once, data movement, casts,
#            comparisons);
#   math     at least 99.9% bitwise and no element past 1 ulp: ops whose
#            float math is a library function (exp, erf, tanh, ...), where
#            torch's vectorized Sleef and our FastMath.h differ in the last
#            float bits and so, rarely, in the rounded result;
#   reduce   at least 99% within 1 ulp (sums in another order);
#   measure  printed only (the GEMMs: another helper owns them);
#   known    a measured deviation from torch not fixed yet (KNOWN below says
#            why): the row must stay at or above the bitwise fraction
#            measured when it was recorded, so it cannot get worse unseen.
# A kernel that rounded an intermediate value to bf16/f16, or computed in
# bf16 arithmetic, misses "exact" and "math" on far more than 0.2% of
# random elements: erf_grad, where torch's composite rounds every step and
# our kernel rounds once, agrees on 58% of them.
#
#   .venv/bin/python tests/e2e/test_low_precision_ops.py --fsdp-opt build/bin/fsdp-opt \
#       --fsdp-run build/bin/fsdp-run [--only SUBSTRING ...] [--keep DIR] [--device cpu|cuda-simt]
#
# Prints the table (op, dtype, bitwise fraction, worst ulps, claim), then
# "N passed, M failed"; any failure fails the test.

import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

import numpy
import torch
import torch.nn.functional as F

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
CLAIMS = {"exact": (1.0, 0), "math": (0.998, 1), "reduce": (None, 1), "measure": (None, None),
          "known": (None, None)}

# Rows that differ from torch 2.15 today: (case-name prefix, dtype) -> (the
# bitwise floor recorded, why). See the issue 31 note for the measurements.
KNOWN = {
    ("gelu[none]", "bf16"): (0.98, "torch's vectorized erf (A&S 7.1.26 for all |x|, Sleef exp) "
                             "differs from FastMath.h's erf where 1 + erf cancels (x < -3)"),
    # f16 matched at 99.8% on an AMD EPYC; on an Intel Xeon (AVX512, AMX)
    # torch 2.15 is 96.5% bitwise to round(f64 gelu) itself and 97.0% to
    # ours, every miss at x < -2.5, where 1 + erf cancels.
    ("gelu[none]", "f16"): (0.96, "as for bf16; f16 keeps more of the cancelled bits"),
    ("gelu_grad[none]", "f16"): (0.99, "gelu's erf difference (above)"),
    ("gelu[tanh]", "bf16"): (0.998, "Sleef's tanh against FastMath.h's where 1 + tanh cancels"),
    ("gelu[tanh]", "f16"): (0.998, "as for bf16"),
    ("gelu_grad[none]", "bf16"): (0.99, "gelu's erf difference (above)"),
    ("gelu_grad[tanh]", "bf16"): (0.998, "gelu's tanh difference (above)"),
    ("gelu_grad[tanh]", "f16"): (0.998, "gelu's tanh difference (above)"),
    ("log_softmax[axis=1]", "bf16"): (0.90, "torch's bf16 log_softmax is not round(f32 "
                                      "log_softmax) (94% bitwise to it); its algorithm is unknown"),
    ("log_softmax[axis=1]", "f16"): (0.90, "as for bf16"),
    ("softmax[axis=0]", "bf16"): (0.98, "torch's strided softmax differs from its f32 result too"),
    ("softmax[axis=0]", "f16"): (0.98, "as for bf16"),
    ("erf_grad", "bf16"): (0.55, "torch's erf backward is a composite of bf16 ops, each rounded"),
    ("erf_grad", "f16"): (0.55, "as for bf16"),
    ("softmax_cross_entropy", "bf16"): (0.0, "its log_prob is log_softmax's (above); the loss, "
                                        "one element, is 1 ulp off"),
    ("softmax_cross_entropy", "f16"): (0.0, "as for bf16"),
    ("sigmoid_grad", "f16"): (0.65, "torch's f16 sigmoid_backward rounds g*(1-y) and (1-y) to "
                               "f16 (bf16 computes in float)"),
}


def mlir_type(shape, element):
    return "tensor<" + "".join(f"{d}x" for d in shape) + element + ">"


class Case:
    """One op. `inputs`: name -> torch tensor (float ones are made exact in
    the dtype; int and bool pass as they are). `body(T, ty)` returns the MLIR
    lines computing the float results %r0, %r1, ... in dtype T from the
    float inputs %NAME (already cast); `ref(t)` returns torch's results from
    the dict of input tensors in the dtype. `claim` as in the header."""

    def __init__(self, name, inputs, body, ref, claim, result_types=None):
        self.name, self.inputs, self.body, self.ref, self.claim = name, inputs, body, ref, claim
        self.result_types = result_types


def is_float(t):
    return t.dtype.is_floating_point


def module(case, dtype_name, refs):
    """The forward function: f32/int/bool inputs, casts, the op, f32 outputs."""
    args, lines, rets, ret_types = [], [], [], []
    for name, value in case.inputs.items():
        shape = list(value.shape)
        if is_float(value):
            args.append(f"%{name}_in: {mlir_type(shape, 'f32')} {{nn.input = \"{name}\"}}")
            lines.append(f"    %{name} = nn.cast %{name}_in : {mlir_type(shape, 'f32')} to "
                         f"{mlir_type(shape, dtype_name)}")
        else:
            element = {torch.int64: "i64", torch.bool: "i1"}[value.dtype]
            args.append(f"%{name}: {mlir_type(shape, element)} {{nn.input = \"{name}\"}}")
    ty = lambda shape, element=dtype_name: mlir_type(shape, element)
    lines += ["    " + line for line in case.body(dtype_name, ty)]
    for index, ref in enumerate(refs):
        shape = list(ref.shape)
        if is_float(ref):
            element = (case.result_types or {}).get(index, dtype_name)
            lines.append(f"    %o{index} = nn.cast %r{index} : {ty(shape, element)} to {ty(shape, 'f32')}")
            rets.append(f"%o{index}")
            ret_types.append(ty(shape, "f32"))
        else:
            rets.append(f"%r{index}")
            ret_types.append(ty(shape, "i1"))
    outs = ", ".join(f"{t} {{nn.output = \"r{i}\"}}" for i, t in enumerate(ret_types))
    return ("module {\n  func.func @forward(" + ", ".join(args) + ") -> (" + outs + ") {\n"
            + "\n".join(lines) + "\n    return " + ", ".join(rets) + " : " + ", ".join(ret_types)
            + "\n  }\n}\n")


def ordered(bits):
    """16-bit float patterns as integers in the order of their values."""
    b = bits.astype(numpy.int32)
    return numpy.where(b & 0x8000, 0x8000 - (b & 0x7FFF), 0x8000 + (b & 0x7FFF))


def compare(ours, theirs, dtype):
    """(bitwise fraction, worst ulps) of two results in `dtype`."""
    if not theirs.dtype.is_floating_point:
        same = ours.astype(bool) == theirs.numpy()
        frac = float(same.mean()) if same.size else 1.0
        return frac, 0 if same.all() else 1, frac
    ours = numpy.asarray(ours, dtype=numpy.float32).reshape(-1)
    theirs = theirs.reshape(-1)
    mine = torch.from_numpy(ours).to(dtype).view(torch.int16).numpy().view(numpy.uint16)
    ref = theirs.to(dtype).contiguous().view(torch.int16).numpy().view(numpy.uint16)
    if mine.size == 0:
        return 1.0, 0, 1.0
    bitwise = float((mine == ref).mean())
    both_nan = numpy.isnan(ours) & torch.isnan(theirs.float()).numpy()
    ulps = numpy.abs(ordered(mine) - ordered(ref))
    ulps[both_nan] = 0
    return bitwise, int(ulps.max()), float((ulps <= 1).mean())


def run_case(args, case, dtype_name, directory):
    """Returns (rows, problem): one row per result."""
    dtype = DTYPES[dtype_name]
    tensors = {k: v.to(dtype) if is_float(v) else v for k, v in case.inputs.items()}
    refs = case.ref(tensors)
    refs = list(refs) if isinstance(refs, (list, tuple)) else [refs]
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "op.mlir")
    open(path, "w").write(module(case, dtype_name, refs))
    plan = os.path.join(directory, "op.plan")
    flags = []
    for name, value in tensors.items():
        npy = os.path.join(directory, name + ".npy")
        numpy.save(npy, value.float().numpy() if is_float(value) else value.numpy())
        flags.append(f"--input={name}={npy}")
    for command in ([args.fsdp_opt, path, "--mode=forward", "--emit=plan", "-o", plan],
                    [args.fsdp_run, plan, f"--device={args.device}",
                     f"--outputs={directory}/out"] + flags):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            return [], (os.path.basename(command[0]) + ": " + done.stderr.strip()[-400:])
    rows = []
    for index, ref in enumerate(refs):
        ours = numpy.load(os.path.join(directory, "out", f"r{index}.npy"))
        out_dtype = dtype
        element = (case.result_types or {}).get(index)
        if element == "f32":
            out_dtype = torch.float32
        if out_dtype == torch.float32:
            # An f32 result (statistics): ulps of f32.
            mine = torch.from_numpy(ours).view(torch.int32).numpy()
            theirs = ref.float().contiguous().view(torch.int32).numpy()
            ulps = numpy.abs(mine.astype(numpy.int64) - theirs.astype(numpy.int64))
            bitwise, worst, within1 = float((ulps == 0).mean()), int(ulps.max()), float((ulps <= 1).mean())
        else:
            bitwise, worst, within1 = compare(ours, ref, out_dtype)
        rows.append((f"{case.name}" + (f"[{index}]" if len(refs) > 1 else ""), bitwise, worst, within1))
    return rows, None


def verdict(claim, bitwise, worst, within1, known_floor=None):
    floor, max_ulps = CLAIMS[claim]
    if claim == "measure":
        return True
    if claim == "known":
        return bitwise >= known_floor
    if claim == "reduce":
        return within1 >= 0.99
    return bitwise >= floor and worst <= max_ulps


# ---------------------------------------------------------------------------
# The cases.

def randn(*shape, scale=1.0, gen=None):
    return torch.randn(*shape, generator=gen) * scale


def cases():
    g = torch.Generator().manual_seed(31)
    n = lambda *s, scale=1.0: randn(*s, scale=scale, gen=g)
    pos = lambda *s: n(*s).abs() + 0.01
    S = (16, 203)  # a row length that leaves vector tails
    out = []

    def unary(name, op, ref, claim, x=None):
        x = n(*S, scale=3.0) if x is None else x
        out.append(Case(name, {"x": x},
                        lambda T, ty, op=op: [f"%r0 = nn.{op} %x : {ty(S)}"], ref, claim))

    for name, op, ref in (("neg", "neg", torch.neg), ("relu", "relu", torch.relu)):
        unary(name, op, lambda t, ref=ref: ref(t["x"]), "exact")
    unary("exp", "exp", lambda t: torch.exp(t["x"]), "math")
    unary("log", "log", lambda t: torch.log(t["x"]), "math", x=pos(*S) * 3)
    unary("sqrt", "sqrt", lambda t: torch.sqrt(t["x"]), "exact", x=pos(*S) * 3)
    unary("reciprocal", "reciprocal", lambda t: torch.reciprocal(t["x"]), "exact", x=pos(*S) - 0.5)
    unary("erf", "erf", lambda t: torch.erf(t["x"]), "math", x=n(*S))
    unary("tanh", "tanh", lambda t: torch.tanh(t["x"]), "math", x=n(*S))
    unary("sigmoid", "sigmoid", lambda t: torch.sigmoid(t["x"]), "math")
    unary("sin", "sin", lambda t: torch.sin(t["x"]), "math")
    unary("cos", "cos", lambda t: torch.cos(t["x"]), "math")
    unary("softplus", "softplus", lambda t: F.softplus(t["x"]), "math")
    for approx in ("none", "tanh"):
        out.append(Case(f"gelu[{approx}]", {"x": n(*S, scale=2.0)},
                        lambda T, ty, a=approx: [f"%r0 = nn.gelu %x {{approximate = \"{a}\"}} : {ty(S)}"],
                        lambda t, a=approx: F.gelu(t["x"], approximate=a), "math"))
        out.append(Case(f"gelu_grad[{approx}]", {"x": n(*S, scale=2.0), "dy": n(*S)},
                        lambda T, ty, a=approx: [
                            f"%r0 = nn.gelu_grad %x, %dy {{approximate = \"{a}\"}} : {ty(S)}"],
                        lambda t, a=approx: torch.ops.aten.gelu_backward(t["dy"], t["x"], approximate=a),
                        "math"))

    def binary(name, op, ref, claim, a=None, b=None, shape_b=S):
        a = n(*S) if a is None else a
        b = n(*shape_b) if b is None else b
        out.append(Case(name, {"a": a, "b": b},
                        lambda T, ty, op=op, sb=list(b.shape): [
                            f"%r0 = nn.{op} %a, %b : ({ty(S)}, {ty(sb)}) -> {ty(S)}"],
                        ref, claim))

    binary("add", "add", lambda t: t["a"] + t["b"], "exact")
    binary("add[broadcast]", "add", lambda t: t["a"] + t["b"], "exact", shape_b=(S[1],))
    binary("sub", "sub", lambda t: t["a"] - t["b"], "exact")
    binary("mul", "mul", lambda t: t["a"] * t["b"], "exact")
    binary("div", "div", lambda t: t["a"] / t["b"], "exact")
    binary("max", "max", lambda t: torch.maximum(t["a"], t["b"]), "exact")
    binary("min", "min", lambda t: torch.minimum(t["a"], t["b"]), "exact")
    binary("pow", "pow", lambda t: torch.pow(t["a"], t["b"]), "math", a=pos(*S) * 2)

    # Mixed scalar operands: a rank-0 f32 tensor, torch's wrapped number.
    for name, op, value, scalar_first, ref in (
            ("mul[x*0.1]", "mul", 0.1, False, lambda t: t["a"] * 0.1),
            ("mul[0.1*x]", "mul", 0.1, True, lambda t: 0.1 * t["a"]),
            ("add[x+1e-5]", "add", 1e-5, False, lambda t: t["a"] + 1e-5),
            ("add[x+0.1]", "add", 0.1, False, lambda t: t["a"] + 0.1),
            ("add[0.1+x]", "add", 0.1, True, lambda t: 0.1 + t["a"]),
            ("sub[x-0.1]", "sub", 0.1, False, lambda t: t["a"] - 0.1),
            ("sub[1.0-x]", "sub", 1.0, True, lambda t: 1.0 - t["a"]),
            ("sub[0.1-x]", "sub", 0.1, True, lambda t: 0.1 - t["a"]),
            ("div[x/3.0]", "div", 3.0, False, lambda t: t["a"] / 3.0),
            ("div[x/0.3]", "div", 0.3, False, lambda t: t["a"] / 0.3),
            ("div[torch.div(0.3,x)]", "div", 0.3, True, lambda t: torch.div(0.3, t["a"]))):
        def body(T, ty, op=op, value=value, first=scalar_first):
            operands = "%s, %a" if first else "%a, %s"
            types = f"({ty([], 'f32')}, {ty(S)})" if first else f"({ty(S)}, {ty([], 'f32')})"
            return [f"%s = nn.constant dense<{float(numpy.float32(value))!r}> : {ty([], 'f32')}",
                    f"%r0 = nn.{op} {operands} : {types} -> {ty(S)}"]
        out.append(Case(name, {"a": n(*S) * 0.01 if "1e-5" in name else n(*S)}, body, ref, "exact"))

    out.append(Case("where", {"c": n(*S) > 0, "a": n(*S), "b": n(*S)},
                    lambda T, ty: [f"%r0 = nn.where %c, %a, %b : ({ty(S, 'i1')}, {ty(S)}, {ty(S)}) -> {ty(S)}"],
                    lambda t: torch.where(t["c"], t["a"], t["b"]), "exact"))
    for pred, ref in (("lt", torch.lt), ("eq", torch.eq), ("ge", torch.ge)):
        a = n(*S)
        b = torch.where(n(*S) > 0, a, n(*S))  # half equal
        out.append(Case(f"compare[{pred}]", {"a": a, "b": b},
                        lambda T, ty, p=pred: [f"%r0 = nn.compare \"{p}\" %a, %b : ({ty(S)}, {ty(S)}) -> {ty(S, 'i1')}"],
                        lambda t, ref=ref: ref(t["a"], t["b"]), "exact"))

    # Casts: f32 -> dtype rounds (any f32 value, so not made exact), dtype ->
    # the other 16-bit format.
    raw = n(*S, scale=100.0).float()
    out.append(Case("cast[f32->T]", {}, None, None, "exact"))
    cast_case = out[-1]
    cast_case.raw = raw
    for other in ("bf16", "f16"):
        out.append(Case(f"cast[T->{other}]", {"x": n(*S, scale=10.0)},
                        lambda T, ty, o=other: [f"%r0 = nn.cast %x : {ty(S)} to {ty(S, o)}"],
                        lambda t, o=other: t["x"].to(DTYPES[o]), "exact", result_types={0: other}))

    # Softmax family.
    for axis in (1, 0):
        out.append(Case(f"softmax[axis={axis}]", {"x": n(*S, scale=3.0)},
                        lambda T, ty, a=axis: [f"%r0 = nn.softmax %x {{axis = {a} : i64}} : {ty(S)}"],
                        lambda t, a=axis: torch.softmax(t["x"], a), "math"))
        out.append(Case(f"log_softmax[axis={axis}]", {"x": n(*S, scale=3.0)},
                        lambda T, ty, a=axis: [f"%r0 = nn.log_softmax %x {{axis = {a} : i64}} : {ty(S)}"],
                        lambda t, a=axis: torch.log_softmax(t["x"], a), "math"))
        out.append(Case(f"softmax_grad[axis={axis}]",
                        {"y": torch.softmax(n(*S, scale=3.0), axis), "dy": n(*S)},
                        lambda T, ty, a=axis: [f"%r0 = nn.softmax_grad %y, %dy {{axis = {a} : i64}} : {ty(S)}"],
                        lambda t, a=axis: torch.ops.aten._softmax_backward_data(
                            t["dy"], t["y"], a, t["y"].dtype), "math"))
        out.append(Case(f"log_softmax_grad[axis={axis}]",
                        {"y": torch.log_softmax(n(*S, scale=3.0), axis), "dy": n(*S)},
                        lambda T, ty, a=axis: [f"%r0 = nn.log_softmax_grad %y, %dy {{axis = {a} : i64}} : {ty(S)}"],
                        lambda t, a=axis: torch.ops.aten._log_softmax_backward_data(
                            t["dy"], t["y"], a, t["y"].dtype), "math"))

    # Layer norm over the last dim, statistics in the dtype (torch's
    # native_layer_norm returns them in the input's dtype).
    C = S[1]
    S1 = (S[0], 1)
    out.append(Case("layer_norm", {"x": n(*S, scale=2.0) + 0.5, "w": n(C), "b": n(C)},
                    lambda T, ty: [f"%r0, %r1, %r2 = nn.layer_norm %x, %w, %b {{axis = 1 : i64, epsilon = 1.0e-5 : f32}} : "
                                   f"({ty(S)}, {ty([C])}, {ty([C])}) -> ({ty(S)}, {ty(S1)}, {ty(S1)})"],
                    lambda t: torch.native_layer_norm(t["x"], [C], t["w"], t["b"], 1e-5), "math"))
    x = n(*S, scale=2.0) + 0.5
    mean = x.mean(1, keepdim=True)
    rstd = torch.rsqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    out.append(Case("layer_norm_grad", {"x": x, "w": n(C), "m": mean, "s": rstd, "dy": n(*S)},
                    lambda T, ty: [f"%r0, %r1, %r2 = nn.layer_norm_grad %x, %w, %m, %s, %dy {{axis = 1 : i64}} : "
                                   f"({ty(S)}, {ty([C])}, {ty(S1)}, {ty(S1)}, {ty(S)}) -> ({ty(S)}, {ty([C])}, {ty([C])})"],
                    lambda t: torch.ops.aten.native_layer_norm_backward(
                        t["dy"], t["x"], [C], t["m"], t["s"], t["w"], t["w"], [True, True, True]),
                    "reduce"))

    # Reductions.
    R = (24, 1100)
    for op, ref in (("reduce_sum", lambda v, d: v.sum(d, keepdim=True)),
                    ("reduce_mean", lambda v, d: v.mean(d, keepdim=True)),
                    ("reduce_max", lambda v, d: v.amax(d, keepdim=True))):
        for axis in (1, 0):
            rs = list(R)
            rs[axis] = 1
            out.append(Case(f"{op}[axis={axis}]", {"x": n(*R)},
                            lambda T, ty, op=op, a=axis, rs=rs: [
                                f"%r0 = nn.{op} %x {{axes = array<i64: {a}>}} : ({ty(R)}) -> {ty(rs)}"],
                            lambda t, ref=ref, a=axis: ref(t["x"], a),
                            "exact" if op == "reduce_max" else "reduce"))
    out.append(Case("cumsum", {"x": n(*S)},
                    lambda T, ty: [f"%r0 = nn.cumsum %x {{axis = 1 : i64}} : {ty(S)}"],
                    lambda t: torch.cumsum(t["x"], 1), "reduce"))

    # GEMMs (measured only).
    M, K, N = 32, 256, 48
    out.append(Case("matmul", {"a": n(M, K), "b": n(K, N)},
                    lambda T, ty: [f"%r0 = nn.matmul %a, %b : ({ty([M, K])}, {ty([K, N])}) -> {ty([M, N])}"],
                    lambda t: t["a"] @ t["b"], "measure"))
    out.append(Case("gemm[trans_b,bias]", {"a": n(M, K), "b": n(N, K), "c": n(N)},
                    lambda T, ty: [f"%r0 = nn.gemm %a, %b, %c {{trans_b = true}} : "
                                   f"({ty([M, K])}, {ty([N, K])}, {ty([N])}) -> {ty([M, N])}"],
                    lambda t: F.linear(t["a"], t["b"], t["c"]), "measure"))

    # Losses: mean over a batch, labels i64. torch's cross_entropy on a
    # bf16 tensor is nll_loss(log_softmax(x)), both in bf16.
    B, V = 64, 37
    labels = torch.randint(0, V, (B,), generator=g)
    out.append(Case("softmax_cross_entropy", {"x": n(B, V, scale=2.0), "l": labels},
                    lambda T, ty: [f"%r0, %r1 = nn.softmax_cross_entropy %x, %l {{reduction = \"mean\"}} : "
                                   f"({ty([B, V])}, {ty([B], 'i64')}) -> ({ty([])}, {ty([B, V])})"],
                    lambda t: (F.cross_entropy(t["x"], t["l"]), torch.log_softmax(t["x"], 1)), "math"))
    out.append(Case("nll_loss", {"x": torch.log_softmax(n(B, V, scale=2.0), 1), "l": labels},
                    lambda T, ty: [f"%r0 = nn.nll_loss %x, %l {{reduction = \"mean\"}} : "
                                   f"({ty([B, V])}, {ty([B], 'i64')}) -> {ty([])}"],
                    lambda t: F.nll_loss(t["x"], t["l"]), "reduce"))

    def xent_grad_ref(t):
        lp = t["lp"].detach().requires_grad_(False)
        g = torch.ops.aten.nll_loss_backward(t["dl"], lp, t["l"], None, 1, -100,
                                              torch.tensor(float(B), dtype=lp.dtype))
        return torch.ops.aten._log_softmax_backward_data(g, lp, 1, lp.dtype)
    out.append(Case("softmax_cross_entropy_grad",
                    {"dl": torch.tensor(1.0), "lp": torch.log_softmax(n(B, V, scale=2.0), 1), "l": labels},
                    lambda T, ty: [f"%r0 = nn.softmax_cross_entropy_grad %dl, %lp, %l {{reduction = \"mean\"}} : "
                                   f"({ty([])}, {ty([B, V])}, {ty([B], 'i64')}) -> {ty([B, V])}"],
                    xent_grad_ref, "math"))
    out.append(Case("nll_loss_grad", {"dl": torch.tensor(1.0), "l": labels},
                    lambda T, ty: [f"%r0 = nn.nll_loss_grad %dl, %l {{reduction = \"mean\"}} : "
                                   f"({ty([])}, {ty([B], 'i64')}) -> {ty([B, V])}"],
                    lambda t: torch.ops.aten.nll_loss_backward(
                        t["dl"], torch.zeros(B, V, dtype=t["dl"].dtype), t["l"], None, 1, -100,
                        torch.tensor(float(B), dtype=t["dl"].dtype)), "exact"))

    # Activation gradients.
    y = torch.tanh(n(*S))
    out.append(Case("relu_grad", {"y": torch.relu(n(*S)), "dy": n(*S)},
                    lambda T, ty: [f"%r0 = nn.relu_grad %y, %dy : {ty(S)}"],
                    lambda t: torch.ops.aten.threshold_backward(t["dy"], t["y"], 0), "exact"))
    out.append(Case("tanh_grad", {"y": y, "dy": n(*S)},
                    lambda T, ty: [f"%r0 = nn.tanh_grad %y, %dy : {ty(S)}"],
                    lambda t: torch.ops.aten.tanh_backward(t["dy"], t["y"]), "exact"))
    out.append(Case("sigmoid_grad", {"y": torch.sigmoid(n(*S)), "dy": n(*S)},
                    lambda T, ty: [f"%r0 = nn.sigmoid_grad %y, %dy : {ty(S)}"],
                    lambda t: torch.ops.aten.sigmoid_backward(t["dy"], t["y"]), "exact"))

    def erf_grad_ref(t):
        x = t["x"].detach().requires_grad_(True)
        torch.erf(x).backward(t["dy"])
        return x.grad
    out.append(Case("erf_grad", {"x": n(*S), "dy": n(*S)},
                    lambda T, ty: [f"%r0 = nn.erf_grad %x, %dy : {ty(S)}"], erf_grad_ref, "math"))

    # Gather (embedding) and its gradient with repeated ids.
    E, D = 50, 24
    ids = torch.randint(0, E, (8, 16), generator=g)
    out.append(Case("gather", {"w": n(E, D), "i": ids},
                    lambda T, ty: [f"%r0 = nn.gather %w, %i {{axis = 0 : i64}} : "
                                   f"({ty([E, D])}, {ty([8, 16], 'i64')}) -> {ty([8, 16, D])}"],
                    lambda t: F.embedding(t["i"], t["w"]), "exact"))

    def gather_grad_ref(t):
        w = torch.zeros(E, D, dtype=t["dy"].dtype, requires_grad=True)
        F.embedding(t["i"], w).backward(t["dy"])
        return w.grad
    out.append(Case("gather_grad", {"i": ids, "dy": n(8, 16, D)},
                    lambda T, ty: [f"%r0 = nn.gather_grad %i, %dy {{axis = 0 : i64}} : "
                                   f"({ty([8, 16], 'i64')}, {ty([8, 16, D])}) -> {ty([E, D])}"],
                    gather_grad_ref, "reduce"))

    # Dropout: inference is the identity; the gradient of a given mask.
    out.append(Case("dropout[eval]", {"x": n(*S)},
                    lambda T, ty: [f"%r0, %m = nn.dropout %x {{ratio = 0.1 : f32, training = false}} : "
                                   f"({ty(S)}) -> ({ty(S)}, {ty(S, 'i1')})"],
                    lambda t: t["x"], "exact"))
    out.append(Case("dropout_grad", {"dy": n(*S), "m": n(*S) > -1},
                    lambda T, ty: [f"%r0 = nn.dropout_grad %dy, %m {{ratio = 0.1 : f32}} : {ty(S)}, {ty(S, 'i1')}"],
                    lambda t: torch.ops.aten.native_dropout_backward(t["dy"], t["m"], 1 / 0.9), "exact"))

    # Data movement.
    out.append(Case("trilu", {"x": n(12, 12)},
                    lambda T, ty: [f"%r0 = nn.trilu %x {{upper = false, k = 0 : i64}} : {ty([12, 12])}"],
                    lambda t: torch.tril(t["x"]), "exact"))
    out.append(Case("pad", {"x": n(4, 6)},
                    lambda T, ty: [f"%v = nn.constant dense<0.5> : {ty([])}",
                                   f"%r0 = nn.pad %x, %v {{pads = array<i64: 1, 0, 2, 3>}} : "
                                   f"({ty([4, 6])}, {ty([])}) -> {ty([7, 9])}"],
                    lambda t: F.pad(t["x"], (0, 3, 1, 2), value=0.5), "exact"))
    out.append(Case("concat", {"a": n(4, 3), "b": n(4, 5)},
                    lambda T, ty: [f"%r0 = nn.concat %a, %b {{axis = 1 : i64}} : "
                                   f"({ty([4, 3])}, {ty([4, 5])}) -> {ty([4, 8])}"],
                    lambda t: torch.cat([t["a"], t["b"]], 1), "exact"))
    out.append(Case("transpose", {"x": n(5, 7)},
                    lambda T, ty: [f"%r0 = nn.transpose %x {{perm = array<i64: 1, 0>}} : {ty([5, 7])} to {ty([7, 5])}"],
                    lambda t: t["x"].t(), "exact"))
    return out


def run_cast_case(args, case, dtype_name, directory):
    """f32 -> dtype: the input is a raw f32 tensor (its rounding is the op)."""
    os.makedirs(directory, exist_ok=True)
    shape = list(case.raw.shape)
    text = ("module {\n  func.func @forward(%x: " + mlir_type(shape, "f32") + " {nn.input = \"x\"}) -> ("
            + mlir_type(shape, "f32") + " {nn.output = \"r0\"}) {\n"
            f"    %c = nn.cast %x : {mlir_type(shape, 'f32')} to {mlir_type(shape, dtype_name)}\n"
            f"    %o = nn.cast %c : {mlir_type(shape, dtype_name)} to {mlir_type(shape, 'f32')}\n"
            f"    return %o : {mlir_type(shape, 'f32')}\n  }}\n}}\n")
    path, plan = os.path.join(directory, "op.mlir"), os.path.join(directory, "op.plan")
    open(path, "w").write(text)
    numpy.save(os.path.join(directory, "x.npy"), case.raw.numpy())
    for command in ([args.fsdp_opt, path, "--mode=forward", "--emit=plan", "-o", plan],
                    [args.fsdp_run, plan, f"--device={args.device}", f"--outputs={directory}/out",
                     f"--input=x={directory}/x.npy"]):
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            return [], os.path.basename(command[0]) + ": " + done.stderr.strip()[-400:]
    ours = numpy.load(os.path.join(directory, "out", "r0.npy"))
    return [(case.name,) + compare(ours, case.raw.to(DTYPES[dtype_name]), DTYPES[dtype_name])], None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--keep")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(1)
    work = args.keep or tempfile.mkdtemp(prefix="lowprec-")
    jobs = []
    for case in cases():
        if args.only and not any(s in case.name for s in args.only):
            continue
        for dtype_name in DTYPES:
            jobs.append((case, dtype_name))

    def one(job):
        case, dtype_name = job
        directory = os.path.join(work, f"{case.name}-{dtype_name}".replace("/", "_"))
        runner = run_cast_case if hasattr(case, "raw") else run_case
        try:
            return job, runner(args, case, dtype_name, directory)
        except Exception as error:  # a case's own bug: report it, keep going
            return job, ([], f"{type(error).__name__}: {error}")

    passed = failed = 0
    print(f"{'op':34} {'dtype':5} {'bitwise':>9} {'worst':>6} {'<=1ulp':>8}  claim")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for (case, dtype_name), (rows, problem) in pool.map(one, jobs):
            if problem:
                print(f"FAIL {case.name} {dtype_name}: {problem}")
                failed += 1
                continue
            known = KNOWN.get((case.name, dtype_name))
            claim = "known" if known else case.claim
            for name, bitwise, worst, within1 in rows:
                ok = verdict(claim, bitwise, worst, within1, known and known[0])
                print(f"{name:34} {dtype_name:5} {bitwise:9.5f} {worst:6d} {within1:8.5f}  {claim}"
                      + ("" if ok else "  FAIL"))
                passed += ok
                failed += not ok
    print(f"{passed} passed, {failed} failed")
    if not args.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
