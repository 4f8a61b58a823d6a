#!/usr/bin/python3
# The cases of test_gradcheck.py: one tiny model (opset 17, or the case's
# `opset` for newer operators) per differentiable
# ONNX operator (or attribute combination, broadcast, value used twice),
# each with its torch reference. A case's float operands are float64
# parameters with random values kept away from non-differentiable points;
# its integer operands (indices, labels, masks) are graph inputs or integer
# initializers. The harness (test_gradcheck.py) turns each into models,
# runs them through fsdp-opt and fsdp-run, and compares finite differences
# and torch autograd with the gradient the plan computed.

import numpy
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
STEP = 1e-6             # h of the central difference
FD_TOLERANCE = 1e-6     # |fd - <g,v>| <= FD_TOLERANCE * max(1, |fd|)
TORCH_TOLERANCE = 1e-10  # max |g - g_torch| per parameter, relative to max |g_torch|
LOSS_TOLERANCE = 1e-10  # forward loss at p against torch's, relative to max(1, |loss|)
DIRECTIONS = 3

DTYPES = {numpy.dtype("float64"): "F64", numpy.dtype("float32"): "F32"}


class Case:
    """One model under test: the nodes around the operator, its parameters
    and integer operands, and the torch function with the same meaning."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = numpy.random.default_rng(seed)
        self.nodes = []
        self.params = {}     # name -> float array (initializer = parameter)
        self.consts = {}     # name -> integer or bool array (initializer = constant)
        self.inputs = {}     # name -> integer array (graph input)
        self.constants = {}  # name -> float array (Constant node, not a parameter)
        self.outputs = []
        self.torch_fn = None
        self.shapes = None   # output shapes when there is no torch function
        self.reference = None  # (grads, probes) -> error, when there is no torch function
        self.refusal_ok = False  # a compile-time refusal of the training step passes
        self.is_loss = False
        self.f64_train_loss = False  # train on the f64 loss, without the final Cast
        self.step = STEP
        self.fd_tolerance = FD_TOLERANCE
        self.torch_tolerance = TORCH_TOLERANCE
        self.opset = OPSET  # ops defined only at later opsets set their own
        self.count = 0

    def fresh(self, prefix):
        self.count += 1
        return f"{prefix}{self.count}"

    def param(self, shape, low=None, high=None, away=0.0, dtype=numpy.float64):
        """A parameter: standard normal, uniform in [low, high), or normal
        pushed at least `away` from zero."""
        if low is not None:
            value = self.rng.uniform(low, high, shape)
        else:
            value = self.rng.standard_normal(shape)
            if away:
                value = numpy.sign(value) * (away + numpy.abs(value))
        name = self.fresh("p")
        self.params[name] = numpy.asarray(value, dtype=dtype)
        return name

    def const(self, array):
        name = self.fresh("c")
        self.consts[name] = numpy.asarray(array)
        return name

    def input(self, array):
        name = self.fresh("x")
        self.inputs[name] = numpy.asarray(array)
        return name

    def constant(self, array):
        """A float value as a Constant node, so it is not a parameter."""
        name = self.fresh("k")
        array = numpy.asarray(array, dtype=numpy.float64)
        self.constants[name] = array
        self.nodes.append(helper.make_node("Constant", [], [name],
                                           value=numpy_helper.from_array(array, name)))
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        names = [self.fresh("y") for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, **attrs))
        return names[0] if outputs == 1 else names

    def result(self, outputs, torch_fn=None, shapes=None, loss=False):
        self.outputs = outputs if isinstance(outputs, list) else [outputs]
        self.torch_fn = torch_fn
        self.shapes = shapes
        self.is_loss = loss


# ---------------------------------------------------------------------------
# The cases. Each builder takes a Case and calls its result().

CASES = []


def case(name, **options):
    def register(build):
        CASES.append((name, build, options))
        return build
    return register


def unary(name, op, fn, **param_options):
    @case(name)
    def build(c):
        x = c.param((3, 4), **param_options)
        c.result(c.node(op, [x]), lambda t: fn(t[x]))


def binary(name, op, fn, shape_a, shape_b, options_a=None, options_b=None):
    @case(name)
    def build(c):
        a = c.param(shape_a, **(options_a or {}))
        b = c.param(shape_b, **(options_b or {}))
        c.result(c.node(op, [a, b]), lambda t: fn(t[a], t[b]))


POSITIVE = {"low": 0.5, "high": 2.0}

for shapes in [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (3, 1)),
               ((3, 4), ())]:
    label = " ".join(str(list(s)) for s in shapes)
    binary(f"Add {label}", "Add", torch.add, *shapes)
    binary(f"Sub {label}", "Sub", torch.sub, *shapes)
    binary(f"Mul {label}", "Mul", torch.mul, *shapes)
    binary(f"Div {label}", "Div", torch.div, *shapes, options_b={"away": 0.5})
binary("Pow [3,4] [3,4]", "Pow", torch.pow, (3, 4), (3, 4), POSITIVE)
binary("Pow [3,4] [4]", "Pow", torch.pow, (3, 4), (4,), POSITIVE)
binary("Pow [3,1] [1,4]", "Pow", torch.pow, (3, 1), (1, 4), POSITIVE)


@case("Pow [3,4] int64 3")
def _(c):
    x = c.param((3, 4))
    e = c.const(numpy.array(3, dtype=numpy.int64))
    c.result(c.node("Pow", [x, e]), lambda t: t[x] ** 3)


@case("Pow [3,4] Constant 2.5")
def _(c):
    x = c.param((3, 4), **POSITIVE)
    e = c.constant(2.5)
    c.result(c.node("Pow", [x, e]), lambda t: t[x] ** 2.5)


@case("Where [3,4] [3,4] [3,4]")
def _(c):
    cond = c.const(c.rng.random((3, 4)) < 0.5)
    a, b = c.param((3, 4)), c.param((3, 4))
    c.result(c.node("Where", [cond, a, b]), lambda t: torch.where(t[cond], t[a], t[b]))


@case("Where [4] [3,1] [3,4] (broadcast)")
def _(c):
    cond = c.const(numpy.array([True, False, True, False]))
    a, b = c.param((3, 1)), c.param((3, 4))
    c.result(c.node("Where", [cond, a, b]), lambda t: torch.where(t[cond], t[a], t[b]))


# Max/Min: the gradient goes to the larger (smaller) operand and is split
# evenly on ties, as torch.maximum/minimum's (derivatives.yaml).
for shapes in [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4))]:
    label = " ".join(str(list(s)) for s in shapes)
    binary(f"Max {label}", "Max", torch.maximum, *shapes)
    binary(f"Min {label}", "Min", torch.minimum, *shapes)


@case("Max [3,4] with itself (every element a tie)")
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Max", [x, x]), lambda t: torch.maximum(t[x], t[x]))


@case("Min [3,4] ties with a clamp: Min(x, Max(x, y))")
def _(c):
    x, y = c.param((3, 4)), c.param((3, 4))
    m = c.node("Max", [x, y])
    c.result(c.node("Min", [x, m]), lambda t: torch.minimum(t[x], torch.maximum(t[x], t[y])))


@case("Max variadic [3,4] [4] [3,1]")
def _(c):
    a, b, d = c.param((3, 4)), c.param((4,)), c.param((3, 1))
    c.result(c.node("Max", [a, b, d]),
             lambda t: torch.maximum(torch.maximum(t[a], t[b]), t[d]))


@case("Where(IsNaN(x), 0, x) and a Greater mask (SDPA's guard)")
def _(c):
    x, y = c.param((3, 4)), c.param((3, 4))
    zero = c.constant(0.0)
    guarded = c.node("Where", [c.node("IsNaN", [x]), zero, x])
    keep = c.node("Greater", [x, y])
    c.result(c.node("Where", [keep, guarded, y]),
             lambda t: torch.where(t[x] > t[y], torch.where(torch.isnan(t[x]), 0.0, t[x]), t[y]))


unary("Neg", "Neg", torch.neg)
unary("Relu", "Relu", torch.relu, away=0.1)
unary("Exp", "Exp", torch.exp)
unary("Log", "Log", torch.log, **POSITIVE)
unary("Sqrt", "Sqrt", torch.sqrt, **POSITIVE)
unary("Erf", "Erf", torch.erf)
unary("Tanh", "Tanh", torch.tanh)
unary("Sigmoid", "Sigmoid", torch.sigmoid)
unary("Identity", "Identity", lambda x: x)


@case("Cast double->double")
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Cast", [x], to=TensorProto.DOUBLE), lambda t: t[x])


# A float parameter: its gradient (p0 - p1) and its perturbations are float32,
# and the loss is linear in it, so a large step is exact up to rounding.
@case("Cast float->double", step=1e-2, fd_tolerance=1e-4, torch_tolerance=1e-6)
def _(c):
    x = c.param((3, 4), dtype=numpy.float32)
    c.result(c.node("Cast", [x], to=TensorProto.DOUBLE), lambda t: t[x].double())


# The loss is piecewise constant in p at float32 resolution: differences need
# a large step; the gradient itself is R rounded to float32, as in torch.
@case("Cast double->float->double", step=1e-2, fd_tolerance=1e-3, torch_tolerance=1e-7)
def _(c):
    x = c.param((3, 4))
    y = c.node("Cast", [x], to=TensorProto.FLOAT)
    c.result(c.node("Cast", [y], to=TensorProto.DOUBLE), lambda t: t[x].float().double())


# Accumulation: a value feeding several uses sums their gradients.
@case("Mul(A, A) (same value twice)")
def _(c):
    a = c.param((3, 4))
    c.result(c.node("Mul", [a, a]), lambda t: t[a] * t[a])


@case("Exp(A) + A * B (A used twice)")
def _(c):
    a, b = c.param((3, 4)), c.param((3, 4))
    e = c.node("Exp", [a])
    m = c.node("Mul", [a, b])
    c.result(c.node("Add", [e, m]), lambda t: torch.exp(t[a]) + t[a] * t[b])


@case("MatMul(MatMul(X, W), W) (W used twice)")
def _(c):
    x, w = c.param((3, 4)), c.param((4, 4))
    h = c.node("MatMul", [x, w])
    c.result(c.node("MatMul", [h, w]), lambda t: t[x] @ t[w] @ t[w])


@case("Tanh(A) and Sigmoid(A) both probed (two outputs)")
def _(c):
    a = c.param((3, 4))
    c.result([c.node("Tanh", [a]), c.node("Sigmoid", [a])],
             lambda t: [torch.tanh(t[a]), torch.sigmoid(t[a])])


for shapes in [((3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 5)),
               ((3, 4), (2, 4, 5)), ((4,), (4, 5)), ((3, 4), (4,)), ((4,), (4,)),
               ((4,), (2, 4, 3))]:
    binary("MatMul " + " ".join(str(list(s)) for s in shapes), "MatMul", torch.matmul, *shapes)


def gemm_case(trans_a, trans_b, c_shape, alpha=1.0, beta=1.0):
    m, k, n = 3, 4, 5
    label = f"Gemm transA={trans_a} transB={trans_b} C={list(c_shape) if c_shape is not None else None}"
    label += f" alpha={alpha} beta={beta}"

    @case(label)
    def build(c):
        a = c.param((k, m) if trans_a else (m, k))
        b = c.param((n, k) if trans_b else (k, n))
        operands = [a, b]
        if c_shape is not None:
            operands.append(c.param(c_shape))

        # ONNX float attributes are float32: torch gets the same rounded values.
        alpha32, beta32 = float(numpy.float32(alpha)), float(numpy.float32(beta))

        def fn(t):
            y = alpha32 * ((t[a].T if trans_a else t[a]) @ (t[b].T if trans_b else t[b]))
            return y + beta32 * t[operands[2]] if c_shape is not None else y
        c.result(c.node("Gemm", operands, transA=trans_a, transB=trans_b, alpha=alpha,
                        beta=beta), fn)


for trans_a in (0, 1):
    for trans_b in (0, 1):
        gemm_case(trans_a, trans_b, (5,), alpha=0.7, beta=1.3)
gemm_case(0, 0, (3, 1), alpha=1.0, beta=-0.5)
gemm_case(1, 0, (3, 5), alpha=2.0, beta=0.25)
gemm_case(0, 1, (), alpha=0.5, beta=2.0)
gemm_case(1, 1, None, alpha=1.5)


for op, fn in (("Softmax", torch.softmax), ("LogSoftmax", torch.log_softmax)):
    for shape, axis in (((3, 5), -1), ((2, 3, 4), 1), ((2, 3, 4), 0)):
        @case(f"{op} {list(shape)} axis={axis}")
        def _(c, op=op, fn=fn, shape=shape, axis=axis):
            x = c.param(shape)
            c.result(c.node(op, [x], axis=axis), lambda t: fn(t[x], axis))


def layer_norm_case(shape, axis, bias=True):
    @case(f"LayerNormalization {list(shape)} axis={axis}" + ("" if bias else " no bias"))
    def build(c):
        norm = shape[axis:]
        x, scale = c.param(shape), c.param(norm)
        operands = [x, scale] + ([c.param(norm)] if bias else [])
        c.result(c.node("LayerNormalization", operands, axis=axis, epsilon=1e-5),
                 lambda t: F.layer_norm(t[x], norm, t[scale], t[operands[2]] if bias else None,
                                        float(numpy.float32(1e-5))))


layer_norm_case((2, 3, 4), -1)
layer_norm_case((2, 3, 4), -1, bias=False)
layer_norm_case((2, 3, 4), 1)
layer_norm_case((3, 6), 1, bias=False)
layer_norm_case((2, 3), 0)


def reduce_case(op, fn, axes, keepdims, axes_as_input):
    @case(f"{op} [2,3,4] axes={axes} keepdims={keepdims}")
    def build(c):
        x = c.param((2, 3, 4))
        attrs = {"keepdims": keepdims}
        operands = [x]
        if axes is not None:
            if axes_as_input:
                operands.append(c.const(numpy.array(axes, dtype=numpy.int64)))
            else:
                attrs["axes"] = axes
        dims = tuple(axes) if axes is not None else (0, 1, 2)
        c.result(c.node(op, operands, **attrs), lambda t: fn(t[x], dims, bool(keepdims)))


for axes, keepdims in (([1], 1), ([0, 2], 0), (None, 0), ([-1], 1)):
    reduce_case("ReduceSum", lambda x, d, k: torch.sum(x, d, keepdim=k), axes, keepdims, True)
    reduce_case("ReduceMean", lambda x, d, k: torch.mean(x, d, keepdim=k), axes, keepdims, False)
    reduce_case("ReduceMax", lambda x, d, k: torch.amax(x, d, keepdim=k), axes, keepdims, False)


@case("Reshape [2,3,4] -> [4,-1]")
def _(c):
    x = c.param((2, 3, 4))
    s = c.const(numpy.array([4, -1], dtype=numpy.int64))
    c.result(c.node("Reshape", [x, s]), lambda t: t[x].reshape(4, 6))


@case("Reshape [2,3,4] -> [0,-1]")
def _(c):
    x = c.param((2, 3, 4))
    s = c.const(numpy.array([0, -1], dtype=numpy.int64))
    c.result(c.node("Reshape", [x, s]), lambda t: t[x].reshape(2, 12))


@case("Unsqueeze [3,4] axes=[0,-1]")
def _(c):
    x = c.param((3, 4))
    a = c.const(numpy.array([0, -1], dtype=numpy.int64))
    c.result(c.node("Unsqueeze", [x, a]), lambda t: t[x].reshape(1, 3, 4, 1))


@case("Squeeze [3,1,4] axes=[1]")
def _(c):
    x = c.param((3, 1, 4))
    a = c.const(numpy.array([1], dtype=numpy.int64))
    c.result(c.node("Squeeze", [x, a]), lambda t: t[x].reshape(3, 4))


@case("Transpose [2,3,4] perm=[2,0,1]")
def _(c):
    x = c.param((2, 3, 4))
    c.result(c.node("Transpose", [x], perm=[2, 0, 1]), lambda t: t[x].permute(2, 0, 1))


@case("Transpose [2,3,4] default perm")
def _(c):
    x = c.param((2, 3, 4))
    c.result(c.node("Transpose", [x]), lambda t: t[x].permute(2, 1, 0))


@case("Concat [2,3] [2,1] [2,4] axis=1")
def _(c):
    xs = [c.param((2, n)) for n in (3, 1, 4)]
    c.result(c.node("Concat", xs, axis=1), lambda t: torch.cat([t[x] for x in xs], 1))


@case("Concat [2,3,2] [2,3,1] axis=-1")
def _(c):
    xs = [c.param((2, 3, n)) for n in (2, 1)]
    c.result(c.node("Concat", xs, axis=-1), lambda t: torch.cat([t[x] for x in xs], -1))


@case("Concat A, B, A axis=0 (A used twice)")
def _(c):
    a, b = c.param((2, 3)), c.param((1, 3))
    c.result(c.node("Concat", [a, b, a], axis=0), lambda t: torch.cat([t[a], t[b], t[a]], 0))


@case("Split [6,4] axis=0 split=[1,2,3]")
def _(c):
    x = c.param((6, 4))
    s = c.const(numpy.array([1, 2, 3], dtype=numpy.int64))
    c.result(c.node("Split", [x, s], outputs=3, axis=0), lambda t: list(torch.split(t[x], [1, 2, 3], 0)))


@case("Split [3,4] axis=1 equal halves")
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Split", [x], outputs=2, axis=1), lambda t: list(torch.split(t[x], 2, 1)))


@case("Split [3,6] axis=-1 one half unused")
def _(c):
    x = c.param((3, 6))
    halves = c.node("Split", [x], outputs=2, axis=-1)
    c.result(halves[1], lambda t: t[x][:, 3:])


def slice_case(shape, slices, starts, ends, axes=None, steps=None):
    """`slices` is the same selection as Python slices per dimension."""
    label = f"Slice {list(shape)} starts={starts} ends={ends} axes={axes} steps={steps}"

    @case(label)
    def build(c):
        x = c.param(shape)
        operands = [x, c.const(numpy.array(starts, dtype=numpy.int64)),
                    c.const(numpy.array(ends, dtype=numpy.int64))]
        if axes is not None:
            operands.append(c.const(numpy.array(axes, dtype=numpy.int64)))
        if steps is not None:
            operands.append(c.const(numpy.array(steps, dtype=numpy.int64)))

        def fn(t):
            y = t[x]
            for dim, s in enumerate(slices):
                index = torch.tensor(list(range(shape[dim]))[s], dtype=torch.int64)
                y = torch.index_select(y, dim, index)
            return y
        c.result(c.node("Slice", operands), fn)


ALL = slice(None)
slice_case((5, 6), [slice(1, 4), slice(0, 6, 2)], [1, 0], [4, 6], [0, 1], [1, 2])
slice_case((5, 6), [ALL, slice(-1, None, -2)], [-1], [-(2**63)], [1], [-2])
slice_case((5, 6), [slice(4, 0, -1), slice(1, 5)], [4, 1], [0, 5], [0, -1], [-1, 1])
slice_case((5, 6), [slice(1, 3), ALL], [1], [3])
slice_case((5, 6), [slice(2, None), ALL], [2], [1000], [0])


@case("Expand [3,1] -> [2,3,4]")
def _(c):
    x = c.param((3, 1))
    s = c.const(numpy.array([2, 3, 4], dtype=numpy.int64))
    c.result(c.node("Expand", [x, s]), lambda t: t[x].expand(2, 3, 4))


@case("Expand [2,1,4] -> [3,1] (result [2,3,4])")
def _(c):
    x = c.param((2, 1, 4))
    s = c.const(numpy.array([3, 1], dtype=numpy.int64))
    c.result(c.node("Expand", [x, s]), lambda t: t[x].expand(2, 3, 4))


@case("Expand [4] -> [3,1] (result [3,4])")
def _(c):
    x = c.param((4,))
    s = c.const(numpy.array([3, 1], dtype=numpy.int64))
    c.result(c.node("Expand", [x, s]), lambda t: t[x].expand(3, 4))


def gather_case(label, data_shape, indices, axis, as_input=False):
    @case(label)
    def build(c):
        x = c.param(data_shape)
        i = (c.input if as_input else c.const)(indices)

        def fn(t):
            a = axis % len(data_shape)
            flat = t[i].reshape(-1).long() % data_shape[a]
            y = torch.index_select(t[x], a, flat)
            return y.reshape(data_shape[:a] + indices.shape + data_shape[a + 1:])
        c.result(c.node("Gather", [x, i], axis=axis), fn)


gather_case("Gather [6,4] axis=0 idx [2,3] repeated (embedding)", (6, 4),
            numpy.array([[0, 2, 2], [5, 0, 2]], dtype=numpy.int64), 0)
gather_case("Gather [6,4] axis=0 idx input [5] repeated", (6, 4),
            numpy.array([3, 3, 1, 5, 3], dtype=numpy.int64), 0, as_input=True)
gather_case("Gather [3,5,2] axis=1 idx int32 [4] negative, repeated", (3, 5, 2),
            numpy.array([4, -1, 0, 4], dtype=numpy.int32), 1)
gather_case("Gather [3,5] axis=-1 idx [2,2]", (3, 5),
            numpy.array([[1, 0], [3, 1]], dtype=numpy.int64), -1)
gather_case("Gather [6,4] axis=0 idx scalar", (6, 4), numpy.array(3, dtype=numpy.int64), 0)


def trilu_case(shape, upper, k):
    @case(f"Trilu {list(shape)} upper={upper} k={k}")
    def build(c):
        x = c.param(shape)
        operands = [x] + ([c.const(numpy.array(k, dtype=numpy.int64))] if k is not None else [])
        fn = torch.triu if upper else torch.tril
        c.result(c.node("Trilu", operands, upper=upper), lambda t: fn(t[x], k or 0))


trilu_case((4, 5), 1, None)
trilu_case((4, 5), 0, -1)
trilu_case((4, 5), 1, 2)
trilu_case((2, 3, 3), 0, None)


def weighted_nll(log_probs, labels, weights, ignore_index, reduction):
    """F.nll_loss written out, differentiable in the class weights too."""
    keep = labels != ignore_index
    safe = torch.where(keep, labels, torch.zeros_like(labels))
    picked = -log_probs.gather(1, safe.unsqueeze(1)).squeeze(1)
    w = weights[safe] * keep
    if reduction == "none":
        return w * picked
    return (w * picked).sum() / (w.sum() if reduction == "mean" else 1.0)


def loss_case(op, label, scores_shape, labels, reduction, ignore_index=None, weights=None,
              weights_param=False, reduce_after=False, log_prob=False):
    name = f"{op} {list(scores_shape)} reduction={reduction}"
    name += f" ignore_index={ignore_index}" if ignore_index is not None else ""
    name += (" weights(param)" if weights_param else " weights") if weights is not None else ""
    name += " +ReduceSum" if reduce_after else ""
    name += " log_prob output" if log_prob else ""
    name += label

    # Class weights that are parameters: torch refuses to differentiate them;
    # fsdp-opt must either differentiate them or refuse, never train them with
    # a zero gradient.
    @case(name, refusal_ok=weights_param)
    def build(c):
        x = c.param(scores_shape)
        y = c.input(labels)
        operands = [x, y]
        if weights is not None:
            operands.append(c.param(weights.shape) if weights_param else c.constant(weights))
        attrs = {"reduction": reduction}
        if ignore_index is not None:
            attrs["ignore_index"] = ignore_index
        outputs = 2 if log_prob else 1
        result = c.node(op, operands, outputs=outputs, **attrs)

        def fn(t):
            w = t[operands[2]] if weights is not None else None
            ii = ignore_index if ignore_index is not None else -100
            scores = F.log_softmax(t[x], 1) if op == "SoftmaxCrossEntropyLoss" else t[x]
            if weights_param:
                # torch does not differentiate its losses in the class weights.
                loss = weighted_nll(scores, t[y], w, ii, reduction)
            else:
                loss = F.nll_loss(scores, t[y], weight=w, ignore_index=ii, reduction=reduction)
            if log_prob:
                return [loss, F.log_softmax(t[x], 1)]
            return loss.sum() if reduce_after else loss
        if log_prob:
            c.result(result, fn)
        elif reduce_after:
            c.result(c.node("ReduceSum", [result], keepdims=0), fn, loss=True)
        else:
            c.result(result, fn, loss=reduction != "none")


LABELS = numpy.array([2, 0, 3, 1, 2], dtype=numpy.int64)
LABELS_3D = numpy.array([[0, 3], [1, 1], [2, 0]], dtype=numpy.int64)
CLASS_WEIGHTS = numpy.array([0.5, 1.5, 1.0, 2.0])
for op in ("SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"):
    loss_case(op, "", (5, 4), LABELS, "mean")
    loss_case(op, "", (5, 4), LABELS, "sum")
    loss_case(op, "", (5, 4), LABELS, "none", reduce_after=True)
    loss_case(op, "", (5, 4), LABELS, "none")
    loss_case(op, "", (5, 4), LABELS, "mean", ignore_index=2)
    loss_case(op, "", (5, 4), LABELS, "mean", weights=CLASS_WEIGHTS)
    loss_case(op, "", (5, 4), LABELS, "sum", weights=CLASS_WEIGHTS, ignore_index=0)
    loss_case(op, "", (5, 4), LABELS, "mean", weights=CLASS_WEIGHTS, ignore_index=3)
    loss_case(op, "", (3, 4, 2), LABELS_3D, "mean")
    loss_case(op, "", (3, 4, 2), LABELS_3D, "mean", weights=CLASS_WEIGHTS, ignore_index=1)
    loss_case(op, "", (5, 4), LABELS, "mean", weights=CLASS_WEIGHTS, weights_param=True)
loss_case("SoftmaxCrossEntropyLoss", "", (5, 4), LABELS, "mean", log_prob=True)


@case("Dropout training ratio=0 (identity)")
def _(c):
    x = c.param((3, 4))
    ratio = c.constant(0.0)
    training = c.const(numpy.array(True))
    c.result(c.node("Dropout", [x, ratio, training], seed=5), lambda t: t[x])


@case("Dropout inference (identity)")
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Dropout", [x]), lambda t: t[x])


# The mask is a function of the seed attribute (and the step), the same in the
# training step and in each forward run, so differences see a fixed function.
# Without torch's mask, the gradient is checked for its form: each element is
# 0 or R / (1 - ratio), with both kinds present.
@case("Dropout training ratio=0.5 seed=7 (mask form)")
def _(c):
    x = c.param((6, 8))
    ratio = c.constant(0.5)
    training = c.const(numpy.array(True))

    def reference(grads, probes):
        g, kept = grads[x], probes[0] / 0.5
        error = numpy.minimum(numpy.abs(g), numpy.abs(g - kept)).max() / numpy.abs(kept).max()
        dropped = numpy.mean(numpy.abs(g) < 1e-300)
        return error if 0.2 < dropped < 0.8 else float("inf")
    c.reference = reference
    c.result(c.node("Dropout", [x, ratio, training], seed=7), shapes=[(6, 8)])


@case("LogSoftmax(Tanh(MatMul(X, W) + b)) (chain)")
def _(c):
    x, w, b = c.param((3, 4)), c.param((4, 5)), c.param((5,))
    h = c.node("Tanh", [c.node("Add", [c.node("MatMul", [x, w]), b])])
    c.result(c.node("LogSoftmax", [h], axis=-1),
             lambda t: torch.log_softmax(torch.tanh(t[x] @ t[w] + t[b]), -1))


# --- The math and data movement of torch 2.x exports ---
# Gelu (opset 20) and RMSNormalization (opset 23) need those opsets; the
# rest use the earliest opset they share with the harness (17).

@case("Gelu approximate=none", opset=20)
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Gelu", [x]), lambda t: F.gelu(t[x]))


@case("Gelu approximate=tanh", opset=20)
def _(c):
    x = c.param((3, 4))
    c.result(c.node("Gelu", [x], approximate="tanh"), lambda t: F.gelu(t[x], approximate="tanh"))


unary("Reciprocal", "Reciprocal", torch.reciprocal, away=0.5)
unary("Cos", "Cos", torch.cos)
unary("Sin", "Sin", torch.sin)
# ONNX Softplus has no threshold: torch's with one far above the inputs.
unary("Softplus", "Softplus", lambda x: F.softplus(x, threshold=1e6), low=-6.0, high=6.0)


@case("Cos(MatMul(P, F)) * X + Sin(MatMul(P, F)) * Y (rotary table)")
def _(c):
    pos, freq = c.param((5, 1)), c.param((1, 3))
    x, y = c.param((2, 5, 3)), c.param((2, 5, 3))
    angles = c.node("MatMul", [pos, freq])
    out = c.node("Add", [c.node("Mul", [c.node("Cos", [angles]), x]),
                         c.node("Mul", [c.node("Sin", [angles]), y])])
    c.result(out, lambda t: torch.cos(t[pos] @ t[freq]) * t[x] + torch.sin(t[pos] @ t[freq]) * t[y])


def pad_case(label, shape, pads, torch_pads, value=None):
    """ONNX pads (begins ++ ends) and torch's F.pad tuple for the same pad."""
    @case(f"Pad {list(shape)} pads={pads} value={value}")
    def build(c):
        x = c.param(shape)
        operands = [x, c.const(numpy.array(pads, dtype=numpy.int64))]
        if value == "param":
            operands.append(c.param(()))
        elif value is not None:
            operands.append(c.constant(value))
        v = operands[2] if value == "param" else None

        def fn(t):
            padded = F.pad(t[x], torch_pads, value=value if isinstance(value, float) else 0.0)
            if v is None:
                return padded
            # The padding value's positions, as a mask: its gradient sums them.
            mask = F.pad(torch.zeros_like(t[x]), torch_pads, value=1.0)
            return padded + t[v] * mask
        c.result(c.node("Pad", operands), fn)


pad_case("", (3, 4), [1, 0, 0, 2], (0, 2, 1, 0))
pad_case("", (3, 4), [1, 0, 0, 2], (0, 2, 1, 0), value=0.5)
pad_case("", (3, 4), [-1, 1, 0, -1], (1, -1, -1, 0))
pad_case("", (2, 3), [0, 1, 1, 0], (1, 0, 0, 1), value="param")


@case("Tile [2,3] repeats=[2,3]")
def _(c):
    x = c.param((2, 3))
    r = c.const(numpy.array([2, 3], dtype=numpy.int64))
    c.result(c.node("Tile", [x, r]), lambda t: t[x].repeat(2, 3))


@case("Tile [2,1,3] repeats=[1,4,2]")
def _(c):
    x = c.param((2, 1, 3))
    r = c.const(numpy.array([1, 4, 2], dtype=numpy.int64))
    c.result(c.node("Tile", [x, r]), lambda t: t[x].repeat(1, 4, 2))


def cumsum_case(shape, axis, exclusive, reverse):
    @case(f"CumSum {list(shape)} axis={axis} exclusive={exclusive} reverse={reverse}")
    def build(c):
        x = c.param(shape)
        a = c.const(numpy.array(axis, dtype=numpy.int64))

        def fn(t):
            v = torch.flip(t[x], [axis]) if reverse else t[x]
            y = torch.cumsum(v, axis) - (v if exclusive else 0)
            return torch.flip(y, [axis]) if reverse else y
        c.result(c.node("CumSum", [x, a], exclusive=int(exclusive), reverse=int(reverse)), fn)


for exclusive in (0, 1):
    for reverse in (0, 1):
        cumsum_case((3, 4), 1, exclusive, reverse)
cumsum_case((2, 3, 4), -3, 0, 0)


def rms_norm_case(shape, axis):
    @case(f"RMSNormalization {list(shape)} axis={axis}", opset=23)
    def build(c):
        x = c.param(shape)
        w = c.param(shape[axis:])
        dims = list(range(axis % len(shape), len(shape)))

        def fn(t):
            mean = (t[x] * t[x]).mean(dim=dims, keepdim=True)
            return t[x] * torch.rsqrt(mean + 1e-5) * t[w]
        # epsilon is a float attribute: 1e-5 as float, which the op widens.
        c.result(c.node("RMSNormalization", [x, w], axis=axis), fn)


rms_norm_case((2, 3, 4), -1)
rms_norm_case((2, 3, 4), 1)
