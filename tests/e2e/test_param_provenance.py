#!/usr/bin/python3
# End-to-end check of which initializers fsdp-opt trains, on real torch
# (Debian's 1.13) exports of the tied GPT of tests/models/export_models.py:
#  1. the legacy exporter's default constant folding splits the tied
#     embedding/output weight into tok_emb.weight and a transposed
#     `onnx::MatMul_N` copy; fsdp-opt still imports (exit 0) and prints one
#     `fsdp-opt: warning:` naming both and saying how to re-export;
#  2. with a parameter manifest beside the model (MODEL.onnx.params.json,
#     the format fsdp_opt.export writes), pos_emb.weight frozen
#     (requires_grad=False) and head.weight listed as tied to tok_emb.weight,
#     a training run through fsdp-run --save-weights writes exactly torch's
#     named_parameters() names, the frozen parameter bit-identical to its
#     initial value and every trained one changed.
# Prints one line per check and a closing "N passed, M failed" line.

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import export_models as em  # noqa: E402


def tied_gpt():
    torch.manual_seed(em.SEED)
    model = em.GPT(vocab=64, T=16, d=32, heads=4, layers=2, gelu="erf", tied=True)
    em.break_symmetry(model)
    inputs = em.gpt_inputs(torch.Generator().manual_seed(em.SEED))
    return model, inputs


def legacy_folded_export(model, inputs, path):
    """torch.onnx.export's defaults of the legacy exporter (eval mode,
    do_constant_folding=True), which fold `x @ head.weight.T`."""
    model.eval()
    with em.quiet():
        torch.onnx.export(model, tuple(inputs.values()), path, input_names=list(inputs),
                          output_names=["loss"], opset_version=17)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, info in header.items():
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + start:8 + n + end], "<f4").reshape(info["shape"])
    return out


def write_manifest(model, onnx_path):
    """The manifest of fsdp_opt.export's format for a legacy export without
    constant folding, where every parameter keeps its torch name."""
    graph = onnx.load(onnx_path).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    entry = lambda name, p: {"name": name, "initializer": name, "shape": list(p.shape),
                             "dtype": em.dtype_name(p), "tied": []}
    params = [entry(n, p) for n, p in model.named_parameters() if p.requires_grad]
    frozen = [entry(n, p) for n, p in model.named_parameters() if not p.requires_grad]
    for p in params:
        if p["name"] == "tok_emb.weight":
            p["tied"] = ["head.weight"]
    manifest = {"format": "fsdp-opt.params", "version": 1, "torch": torch.__version__,
                "exporter": "torch.onnx.export(dynamo=False, do_constant_folding=False)",
                "parameters": params, "frozen": frozen,
                "buffers": [{"name": n, "initializer": n if n in inits else None,
                             "persistent": True} for n, _ in model.named_buffers()]}
    with open(onnx_path + ".params.json", "w") as f:
        json.dump(manifest, f, indent=1)
    return inits


def check_legacy_warning(fsdp_opt, tmp):
    model, inputs = tied_gpt()
    path = os.path.join(tmp, "folded.onnx")
    legacy_folded_export(model, inputs, path)
    copies = [i.name for i in onnx.load(path).graph.initializer
              if i.name.startswith("onnx::MatMul")]
    if not copies:
        return "precondition: the export holds no onnx::MatMul_N copy of the tied weight"
    out = subprocess.run([fsdp_opt, path, "--emit=summary"], capture_output=True, text=True)
    if out.returncode != 0:
        return "fsdp-opt failed: " + out.stderr.strip()[:400]
    warnings = [l for l in out.stderr.splitlines() if l.startswith("fsdp-opt: warning: ")]
    # Every folded Linear weight is an onnx::MatMul_N copy; only the tied
    # one still has its original beside it.
    named = [f"'{c}' is the transpose of 'tok_emb.weight'" for c in copies]
    if len(warnings) != 1 or sum(n in warnings[0] for n in named) != 1 or \
            "do_constant_folding=False" not in warnings[0]:
        return ("expected one warning naming an onnx::MatMul_N copy of tok_emb.weight, got: " +
                out.stderr.strip()[:600])
    return None


def check_manifest_training(fsdp_opt, fsdp_run, tmp):
    model, inputs = tied_gpt()
    model.pos_emb.weight.requires_grad_(False)
    model.train()
    path = os.path.join(tmp, "gpt.onnx")
    em.export(model, inputs, path, 17, "train")
    inits = write_manifest(model, path)
    plan = os.path.join(tmp, "gpt.plan")
    out = subprocess.run([fsdp_opt, path, "-o", plan], capture_output=True, text=True)
    if out.returncode != 0 or "warning" in out.stderr:
        return "fsdp-opt: " + (out.stderr.strip()[:400] or "failed")
    tokens = np.random.default_rng(3).integers(0, 64, 4000).astype("<u2")
    tokens.tofile(os.path.join(tmp, "tok.bin"))
    saved = os.path.join(tmp, "w.safetensors")
    out = subprocess.run([fsdp_run, plan, "--data=" + os.path.join(tmp, "tok.bin"),
                          "--steps=2", "--lr=0.01", "--save-weights=" + saved],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return "fsdp-run failed: " + out.stderr.strip()[:400]
    weights = read_safetensors(saved)
    names = {n for n, _ in model.named_parameters()}
    if set(weights) != names:
        return f"saved names {sorted(weights)} != torch's {sorted(names)}"
    if not np.array_equal(weights["pos_emb.weight"], inits["pos_emb.weight"]):
        return "the frozen pos_emb.weight changed in training"
    unchanged = [n for n in names - {"pos_emb.weight"} if np.array_equal(weights[n], inits[n])]
    if unchanged:
        return f"trained parameters left unchanged: {sorted(unchanged)}"
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    args = parser.parse_args()
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, check in [
                ("legacy tied export warns", lambda: check_legacy_warning(args.fsdp_opt, tmp)),
                ("manifest trains torch's parameters only",
                 lambda: check_manifest_training(args.fsdp_opt, args.fsdp_run, tmp))]:
            problem = check()
            print(f"{name}: {'ok' if problem is None else 'FAIL: ' + problem}", flush=True)
            passed += problem is None
            failed += problem is not None
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
