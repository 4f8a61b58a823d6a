"""fsdp_opt.export: a torch.onnx.export call that keeps torch's parameters.

The dynamo exporter's default (optimize=True) merges initializers of equal
value, folds weight transposes into new tensors and stores masks and scales
as float initializers, so the graph no longer holds the module's parameters
one by one. With optimize=False and static shapes it keeps each parameter
as one initializer named by its module path; this module makes that call,
then checks the result against the module (every parameter present once,
under a torch name, with its shape and dtype) and writes the manifest
(see manifest.py) that lets fsdp-opt train exactly torch's parameters.
"""

import onnx
import torch

from .manifest import MANIFEST_FORMAT, MANIFEST_VERSION, write_manifest

# ONNX TensorProto element types and the torch dtypes they hold.
ONNX_DTYPES = {
    onnx.TensorProto.FLOAT: torch.float32, onnx.TensorProto.DOUBLE: torch.float64,
    onnx.TensorProto.FLOAT16: torch.float16, onnx.TensorProto.BFLOAT16: torch.bfloat16,
    onnx.TensorProto.INT64: torch.int64, onnx.TensorProto.INT32: torch.int32,
    onnx.TensorProto.INT16: torch.int16, onnx.TensorProto.INT8: torch.int8,
    onnx.TensorProto.UINT8: torch.uint8, onnx.TensorProto.BOOL: torch.bool,
}

# Settings export() owns: a caller's value for one of them would undo what
# the manifest promises.
OWNED = ("dynamo", "optimize", "dynamic_shapes", "dynamic_axes", "do_constant_folding")


class ExportError(RuntimeError):
    """The exported graph does not hold the module's parameters one by one."""


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def parameter_groups(model):
    """[(tensor, [names])] in named_parameters() order: tied parameters (one
    tensor under several module paths) form one group."""
    groups = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), (p, []))[1].append(name)
    return list(groups.values())


def used_state_names(program):
    """Parameter and buffer names the exported program reads, or None when
    the program does not say (then every tensor counts as used)."""
    ep = getattr(program, "exported_program", None)
    if ep is None:
        return None
    signature = ep.graph_signature
    lifted = {**signature.inputs_to_parameters, **signature.inputs_to_buffers}
    return {lifted[n.name] for n in ep.graph.nodes
            if n.op == "placeholder" and n.name in lifted and n.users}


def graph_initializers(path):
    """{name: (shape, torch dtype or None)} without reading external data."""
    graph = onnx.load(str(path), load_external_data=False).graph
    return {t.name: (list(t.dims), ONNX_DTYPES.get(t.data_type)) for t in graph.initializer}


def build_manifest(model, initializers, used, path, exporter):
    """The manifest of `model` exported to `initializers`; raises
    ExportError naming every parameter the graph merged, renamed, split or
    reshaped."""
    problems = []
    parameters, frozen, unused, claimed = [], [], [], set()
    for tensor, names in parameter_groups(model):
        entry = {"name": names[0], "shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype),
                 "tied": names[1:]}
        present = [n for n in names if n in initializers]
        if len(present) > 1:
            problems.append(f"parameter '{names[0]}' is stored as {len(present)} initializers "
                            f"{present}: the export split a tied tensor")
            continue
        if not present:
            if used is not None and not used & set(names):
                unused.append({**entry, "requires_grad": tensor.requires_grad})
            else:
                problems.append(f"parameter '{names[0]}' has no initializer of that name: the "
                                f"export merged, folded or renamed it")
            continue
        shape, dtype = initializers[present[0]]
        if shape != entry["shape"] or dtype != tensor.dtype:
            problems.append(f"parameter '{names[0]}' is {entry['dtype']} {entry['shape']} in "
                            f"torch but initializer '{present[0]}' is "
                            f"{dtype_name(dtype)} {shape}")
            continue
        claimed.add(present[0])
        (parameters if tensor.requires_grad else frozen).append(
            {"name": entry["name"], "initializer": present[0], "shape": entry["shape"],
             "dtype": entry["dtype"], "tied": entry["tied"]})
    if problems:
        raise ExportError(f"{path}: the graph does not keep torch's parameters:\n  "
                          + "\n  ".join(problems))

    persistent = set(model.state_dict().keys())
    buffers = []
    for name, _ in model.named_buffers(remove_duplicate=False):
        initializer = name if name in initializers and name not in claimed else None
        if initializer:
            claimed.add(initializer)
        buffers.append({"name": name, "initializer": initializer, "persistent": name in persistent})
    return {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "torch": torch.__version__,
            "exporter": exporter, "parameters": parameters, "frozen": frozen, "buffers": buffers,
            "unused": unused, "constants": [n for n in initializers if n not in claimed]}


def export(model, example_inputs, path, *, opset_version=None, external_data=True, verbose=False,
           **kwargs):
    """Exports `model` called on `example_inputs` (a tuple of tensors, or a
    single tensor) to the ONNX file `path` with static shapes, every
    parameter a named initializer, and writes `path + ".params.json"`.
    Other keyword arguments go to torch.onnx.export. Returns the manifest."""
    owned = sorted(set(kwargs) & set(OWNED))
    if owned:
        raise TypeError(f"fsdp_opt.export sets {', '.join(owned)} itself")
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    example_inputs = tuple(example_inputs)
    program = torch.onnx.export(model, example_inputs, str(path), dynamo=True, optimize=False,
                                opset_version=opset_version, external_data=external_data,
                                verbose=verbose, **kwargs)
    exporter = (f"torch.onnx.export(dynamo=True, optimize=False, opset_version={opset_version}, "
                f"external_data={external_data}, static shapes)")
    manifest = build_manifest(model, graph_initializers(path), used_state_names(program), path,
                              exporter)
    write_manifest(path, manifest)
    return manifest
