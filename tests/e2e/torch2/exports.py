#!/usr/bin/env python3
"""The ways a torch 2.x user exports a model, and what each does to it.

`dynamo`: the default call, torch.onnx.export(model, args, f) (the dynamo
exporter, optimize=True). `noopt`: the same with optimize=False. `opset23`:
the dynamo exporter at opset 23 with optimize=False, which writes ONNX
Attention for F.scaled_dot_product_attention (the optimizer's folding is
what `dynamo` already covers). `helper`:
fsdp_opt.export, which also writes the parameter manifest. `legacy` (only
measured, not trained): the TorchScript exporter at opset 17 with its
default constant folding. graph_stats() says what survived of torch's
parameters, and expectation() whether fsdp-opt can train the graph as torch
does or must warn.
"""

import contextlib
import io
import logging
import os
import sys
import warnings

import onnx
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import fsdp_opt  # noqa: E402
from fsdp_opt.export import ExportError, build_manifest, graph_initializers, parameter_groups  # noqa: E402

MODES = ("dynamo", "noopt", "opset23", "helper")
FLOAT = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16,
         onnx.TensorProto.DOUBLE)


@contextlib.contextmanager
def quiet():
    """The exporters' progress lines, warnings and graph dumps (some written
    by C++ straight to file descriptors 1 and 2), kept out of the table."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    logging.disable(logging.WARNING)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(logging.NOTSET)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved + [null]:
            os.close(fd)


def export(model, inputs, mode, path):
    with quiet():
        if mode == "dynamo":
            torch.onnx.export(model, inputs, path)
        elif mode == "noopt":
            torch.onnx.export(model, inputs, path, optimize=False)
        elif mode == "opset23":
            torch.onnx.export(model, inputs, path, opset_version=23, optimize=False)
        elif mode == "helper":
            fsdp_opt.export(model, inputs, path)
        elif mode == "legacy":
            torch.onnx.export(model, inputs, path, dynamo=False, opset_version=17)
        else:
            raise KeyError(mode)
    return path


def graph_stats(model, path):
    """Counts of what the graph kept: initializers, float ones, torch
    parameters (tensors, tied counted once) found under one of their names,
    and float initializers that are neither a parameter nor a buffer."""
    graph = onnx.load(path, load_external_data=False).graph
    inits = {t.name: t for t in graph.initializer}
    groups = parameter_groups(model)
    named = sum(any(n in inits for n in names) for _, names in groups)
    torch_names = {n for _, names in groups for n in names} | {
        n for n, _ in model.named_buffers(remove_duplicate=False)}
    strays = [n for n, t in inits.items() if t.data_type in FLOAT and n not in torch_names]
    return {"initializers": len(inits), "float": sum(t.data_type in FLOAT for t in inits.values()),
            "parameters": len(groups), "named": named, "strays": strays}


def expectation(model, path):
    """("train", []) when the graph holds every parameter once under a torch
    name and no float tensor that torch does not have; else ("warn", names)
    with the initializers and parameters a warning may name."""
    initializers = graph_initializers(path)
    stats = graph_stats(model, path)
    try:
        build_manifest(model, initializers, None, path, "")
    except ExportError:
        pass
    else:
        if not stats["strays"]:
            return "train", []
    names = list(initializers) + [n for _, ns in parameter_groups(model) for n in ns]
    return "warn", names
