#!/usr/bin/python3
# End-to-end check of the ONNX frontend on real torch exports: exports the
# three model families (GPT-style decoder, torch.nn.Transformer, MLP) at
# opsets 14 and 17 in TRAINING and EVAL mode with tests/models/export_models.py,
# imports each with `fsdp-opt --emit=mlir --stop-after=import`, and checks the
# imported signature against torch's own names: every named_parameters()
# entry is an `nn.param` argument with the same shape, the only other
# parameters are torch buffers, the graph inputs keep their names and shapes,
# the loss output is a scalar, and the printed IR parses back. Prints one
# line per model and a closing "N passed, M failed" line.

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORT = os.path.join(HERE, "..", "models", "export_models.py")

ARG_RE = re.compile(r'%arg\d+: tensor<([^>]*)> \{nn\.(param|input) = "([^"]*)"\}')
RESULT_RE = re.compile(r'tensor<([^>]*)> \{nn\.output = "([^"]*)"\}')


def parse_shape(text):
    """'64x32xf32' -> ([64, 32], 'f32'); 'f32' -> ([], 'f32')."""
    parts = text.split("x")
    return [int(p) for p in parts[:-1]], parts[-1]


def check_model(fsdp_opt, path, entry):
    out = subprocess.run([fsdp_opt, path, "--emit=mlir", "--stop-after=import"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return "import failed: " + out.stderr.strip()
    reparse = subprocess.run([fsdp_opt, "-"], input=out.stdout, capture_output=True, text=True)
    if reparse.returncode != 0:
        return "printed IR does not parse back: " + reparse.stderr.strip()[:300]
    header = next((line for line in out.stdout.splitlines()
                   if line.lstrip().startswith("func.func @forward")), "")
    params, inputs = {}, {}
    for type_text, kind, name in ARG_RE.findall(header):
        (params if kind == "param" else inputs)[name] = parse_shape(type_text)[0]
    expected = {p["name"]: p["shape"] for p in entry["parameters"]}
    buffers = {b["name"] for b in entry.get("buffers", [])}
    for name, shape in expected.items():
        if name not in params:
            return f"torch parameter '{name}' is not an nn.param"
        if params[name] != shape:
            return f"'{name}' has shape {params[name]}, torch says {shape}"
    extra = set(params) - set(expected) - buffers
    if extra:
        return f"nn.param names torch does not know: {sorted(extra)}"
    for inp in entry["inputs"]:
        if inputs.get(inp["name"]) != inp["shape"]:
            return f"input '{inp['name']}' is {inputs.get(inp['name'])}, expected {inp['shape']}"
    results = RESULT_RE.findall(header)
    if results != [("f32", "loss")]:
        return f"outputs are {results}, expected one scalar f32 'loss'"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, EXPORT, tmp], check=True, stdout=subprocess.DEVNULL)
        manifest = json.load(open(os.path.join(tmp, "manifest.json")))
        passed = failed = 0
        for entry in manifest["models"]:
            problem = check_model(args.fsdp_opt, os.path.join(tmp, entry["file"]), entry)
            status = "PASS" if problem is None else "FAIL"
            print(f"{status}: {entry['file']} ({len(entry['parameters'])} torch parameters)"
                  + ("" if problem is None else f": {problem}"))
            passed += problem is None
            failed += problem is not None
        opsets = {e["opset"] for e in manifest["models"]}
        families = {e["family"] for e in manifest["models"]}
        if families != {"gpt", "transformer", "mlp"} or opsets != {14, 17}:
            print(f"FAIL: manifest covers families {families} and opsets {opsets}")
            failed += 1
        print(f"{passed} passed, {failed} failed")
        return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
