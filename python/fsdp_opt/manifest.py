"""The parameter manifest written beside an exported model: the contract
between this package and fsdp-opt's importer.

`model.onnx.params.json`:

    {"format": "fsdp-opt.params", "version": 1,
     "torch": torch.__version__, "exporter": "<the export call>",
     "parameters": [{"name", "initializer", "shape", "dtype", "tied"}],  # requires_grad
     "frozen":     [same fields],                                         # requires_grad=False
     "buffers":    [{"name", "initializer", "persistent"}],
     "unused":     [{"name", "shape", "dtype", "tied", "requires_grad"}],
     "constants":  [initializer names that are neither]}

`name` is the first name torch's named_parameters() gives a tensor, `tied`
the other module paths of the same tensor, `initializer` the graph's name for
it. A buffer's initializer is null when the exporter folded it away or the
graph does not use it. `unused` lists parameters the graph does not read (the
exporter drops them; torch's optimizer skips them, as they get no gradient),
and `constants` the remaining initializers (tensors the exporter lifted from
forward, such as an arange), so a reader never has to guess what an
initializer is. The last two keys are additive: a version-1 reader that
knows only the first five may ignore them.
"""

import json

MANIFEST_FORMAT = "fsdp-opt.params"
MANIFEST_VERSION = 1


def manifest_path(onnx_path):
    return str(onnx_path) + ".params.json"


def write_manifest(onnx_path, manifest):
    with open(manifest_path(onnx_path), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def read_manifest(path):
    """Reads a manifest, given its own path or its model's."""
    path = str(path)
    if not path.endswith(".params.json"):
        path = manifest_path(path)
    with open(path) as f:
        manifest = json.load(f)
    if manifest.get("format") != MANIFEST_FORMAT or manifest.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{path}: not a {MANIFEST_FORMAT} version {MANIFEST_VERSION} manifest "
                         f"(format {manifest.get('format')!r}, version {manifest.get('version')!r})")
    return manifest
