"""fsdp_opt.load_weights: fsdp-run's trained weights back into torch.

fsdp-run --save-weights and fsdp-ckpt export write a safetensors file of the
trained parameters under their torch names. A state dict for
load_state_dict(strict=True) also needs the other names of tied tensors,
the frozen parameters fsdp-run did not train, and the persistent buffers:
those come from the manifest (when given) and from the module itself, whose
values are the ones the export saw. Anything in the file that the module
does not have, or a trained parameter the file lacks, is an error naming
the tensor, not a silent partial load.
"""

import torch
from safetensors.torch import load_file

from .export import parameter_groups
from .manifest import read_manifest


class WeightsError(RuntimeError):
    """The weights file does not match the module."""


def trained_names(model, manifest):
    """Names of the tensors fsdp-run trains: the manifest's parameters when
    there is one, else the module's parameters with requires_grad."""
    if manifest is not None:
        return {p["name"] for p in manifest["parameters"]}
    return {names[0] for tensor, names in parameter_groups(model) if tensor.requires_grad}


def load_weights(model, path, manifest=None):
    """Loads the safetensors file `path` into `model` with
    load_state_dict(strict=True). `manifest` (the export's .params.json, or
    its model's path) names the trained parameters; without it they are the
    module's parameters with requires_grad. Returns the module."""
    path = str(path)
    if manifest is not None and not isinstance(manifest, dict):
        manifest = read_manifest(manifest)
    try:
        saved = load_file(path)
    except Exception as e:  # safetensors reports a bad header as several types
        raise WeightsError(f"{path}: cannot read safetensors file: {e}") from e
    current = model.state_dict()
    unexpected = sorted(n for n in saved if n not in current)
    if unexpected:
        raise WeightsError(f"{path}: tensors the module does not have: {', '.join(unexpected)}")

    state, missing = {}, []
    trained = trained_names(model, manifest)
    for tensor, names in parameter_groups(model):
        found = [n for n in names if n in saved]
        for other in found[1:]:
            if not torch.equal(saved[other], saved[found[0]]):
                raise WeightsError(f"{path}: tied parameters '{found[0]}' and '{other}' differ")
        if found:
            value = saved[found[0]]
        elif names[0] in trained:
            missing.append(names[0])
            continue
        else:
            value = tensor.detach()  # frozen or unused: the module's own value
        if list(value.shape) != list(tensor.shape):
            raise WeightsError(f"{path}: '{found[0]}' is {list(value.shape)}, the module's "
                               f"parameter is {list(tensor.shape)}")
        for name in names:
            if name in current:
                state[name] = value
    if missing:
        hint = "" if manifest is not None else (
            " (parameters the graph does not use are not trained: pass manifest= the exported "
            "model's path to say which)")
        raise WeightsError(f"{path}: trained parameters missing from the file: "
                           f"{', '.join(missing)}{hint}")
    for name, value in current.items():
        state.setdefault(name, saved.get(name, value))  # buffers
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise WeightsError(f"{path}: {e}") from e
    return model
