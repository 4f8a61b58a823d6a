"""fsdp_opt: PyTorch 2.x models in and out of fsdp-opt.

`export(model, example_inputs, "model.onnx")` writes an ONNX graph in which
every parameter is a named initializer (nothing merged, folded or renamed)
and, beside it, the manifest `model.onnx.params.json` that tells fsdp-opt
torch's parameter names, which of them are frozen, which are tied, and which
initializers are buffers. `load_weights(model, "trained.safetensors")` puts
fsdp-run's `--save-weights` (or `fsdp-ckpt export`) output back into the
torch module with `load_state_dict(strict=True)`.
"""

from .export import ExportError, export
from .manifest import MANIFEST_FORMAT, MANIFEST_VERSION, manifest_path, read_manifest
from .weights import WeightsError, load_weights

__all__ = ["export", "load_weights", "ExportError", "WeightsError", "read_manifest",
           "manifest_path", "MANIFEST_FORMAT", "MANIFEST_VERSION"]
