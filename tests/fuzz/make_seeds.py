#!/usr/bin/python3
# Writes the seed corpora and dictionaries of the libFuzzer targets in
# tests/fuzz: OUT/<target>/ holds one directory of seeds per target, made
# from the test files and by the tools themselves (nothing is downloaded):
# ONNX node tests and lit generators, tiny exports of the e2e model
# families, plans compiled from them, the weights and checkpoints fsdp-run
# writes, numpy arrays of every dtype the runtime reads, the lit tests'
# .mlir cases, parameter manifests and the command lines of the docs and
# tests. OUT/dict/ holds the dictionaries (fuzz_dicts.py), one
# OUT/dict/<target>.dict per target. Seeds are deduplicated by content;
# one line per target gives its count and bytes. scripts/fuzz.sh runs this
# before fuzzing; the fuzz-seeds test runs it and checks what it wrote.
#
# Usage: /usr/bin/python3 tests/fuzz/make_seeds.py --out DIR \
#            --fsdp-opt build/bin/fsdp-opt --fsdp-run build/bin/fsdp-run

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz_dicts  # noqa: E402
import seed_flags  # noqa: E402
import seed_models  # noqa: E402

REPO = seed_models.REPO
TARGETS = ["onnx-import", "mlir-input", "plan", "safetensors", "npy", "token-file", "checkpoint",
           "param-manifest", "compile-flags", "run-flags"]


def mlir_seeds():
    """Every lit test .mlir file, cut into its `// -----` cases."""
    seeds = []
    for path in sorted(glob.glob(os.path.join(REPO, "tests/lit/**/*.mlir"), recursive=True)):
        with open(path, "rb") as f:
            cases = re.split(rb"^// -----$", f.read(), flags=re.M)
        stem = re.sub(r"[^A-Za-z0-9]+", "-", os.path.relpath(path, os.path.join(REPO, "tests/lit")))
        seeds += [(f"{stem}-{i}.mlir", case) for i, case in enumerate(cases)
                  if case.strip() and len(case) <= seed_models.MAX_SMALL_SEED]
    return seeds


# The dtypes readNpy reads (runtime/io/FileIO.h), by NumPy name.
NPY_DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8",
              "uint16", "uint32", "uint64", "bool"]


def npy_bytes(array, version=None):
    import io
    out = io.BytesIO()
    numpy.lib.format.write_array(out, array, version=version, allow_pickle=False)
    return out.getvalue()


def npy_seeds():
    """Each dtype in shapes (), (0,), (3,), (2, 3), (2, 3, 4), the 2- and
    3-d ones also in Fortran order; header versions 2.0 and 3.0; and the
    refusals' shapes: big-endian, a structured dtype."""
    seeds = []
    for dtype in NPY_DTYPES:
        for shape in [(), (0,), (3,), (2, 3), (2, 3, 4)]:
            array = (numpy.arange(int(numpy.prod(shape))) % 7).reshape(shape).astype(dtype)
            label = "x".join(map(str, shape)) or "scalar"
            seeds.append((f"{dtype}-{label}.npy", npy_bytes(array)))
            if len(shape) >= 2:
                seeds.append((f"{dtype}-{label}-fortran.npy", npy_bytes(numpy.asfortranarray(array))))
    sample = numpy.arange(6, dtype="float32").reshape(2, 3)
    seeds += [("float32-2x3-v2.0.npy", npy_bytes(sample, (2, 0))),
              ("float32-2x3-v3.0.npy", npy_bytes(sample, (3, 0))),
              ("float32-2x3-big-endian.npy", npy_bytes(sample.astype(">f4"))),
              ("structured.npy", npy_bytes(numpy.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")])))]
    return seeds


def token_seeds():
    """Raw uint16 token files of 0, 1, 10, 100 and 1000 tokens, and token
    arrays as int32, int64 and uint16 .npy (the target reads each input
    both ways)."""
    seeds = []
    for count in [0, 1, 10, 100, 1000]:
        tokens = (numpy.arange(count) * 7 % 64).astype("<u2")
        seeds.append((f"uint16-{count}.bin", tokens.tobytes()))
    tokens = numpy.arange(100) * 5 % 64
    for dtype in ["int32", "int64", "uint16"]:
        seeds.append((f"{dtype}-100.npy", npy_bytes(tokens.astype(dtype))))
    seeds.append(("int64-4x25.npy", npy_bytes(tokens.reshape(4, 25).astype("int64"))))
    seeds.append(("int64-hostile-ids.npy", npy_bytes(numpy.array([-1, 65536, 2**62], "int64"))))
    return seeds


def manifest(parameters, frozen=(), buffers=(), torch="1.13.0"):
    return {"format": "fsdp-opt.params", "version": 1, "torch": torch,
            "exporter": "torch.onnx.export(do_constant_folding=False)",
            "parameters": list(parameters), "frozen": list(frozen), "buffers": list(buffers)}


def manifest_seeds():
    """Manifests of ParamManifestFuzzer.cpp's fixed model (float
    initializers "w" [4, 3] and "b" [3]) in the forms the tests write, and
    those of the unit and lit tests (for other models) as they are."""
    w = {"name": "fc.weight", "initializer": "w", "shape": [4, 3], "dtype": "float32"}
    b = {"name": "fc.bias", "initializer": "b", "shape": [3], "dtype": "float32"}
    docs = {
        "fixed-both-trained.json": manifest([w, b]),
        "fixed-bias-frozen.json": manifest([w], frozen=[dict(b, tied=[])]),
        "fixed-tied.json": manifest([dict(w, tied=["head.weight", "lm_head.weight"]), b]),
        "fixed-buffers.json": manifest(
            [w], buffers=[{"name": "fc.bias", "initializer": "b", "persistent": True},
                          {"name": "cache", "initializer": None, "persistent": False}]),
        "fixed-empty.json": manifest([]),
        "fixed-wrong-shape.json": manifest([dict(w, shape=[3, 4]), b]),
        "other-names.json": manifest(
            [{"name": "wte.weight", "initializer": "wte.weight", "shape": [64, 32],
              "dtype": "float32", "tied": ["head.weight"]},
             {"name": "blocks.0.ln.weight", "initializer": "val_3", "shape": [32],
              "dtype": "bfloat16"}],
            buffers=[{"name": "rot.inv_freq", "initializer": "rot.inv_freq", "persistent": False}],
            torch="2.15.0"),
    }
    seeds = [(n, json.dumps(d, indent=1).encode()) for n, d in docs.items()]
    seeds.append(("fixed-compact.json", json.dumps(docs["fixed-both-trained.json"],
                                                   separators=(",", ":")).encode()))
    with open(os.path.join(REPO, "tests/unit/frontends/ParameterManifestTest.cpp"), "rb") as f:
        seeds += [(f"unit-test-{i}.json", m) for i, m in
                  enumerate(re.findall(rb'R"json\((.*?)\)json"', f.read(), re.S))]
    lit = os.path.join(seed_models.LIT_INPUTS, "provenance-manifest.json")
    seeds.append(("lit-provenance-manifest.json", seed_models.read_bytes(lit)))
    return seeds


def hand_safetensors_seeds():
    """Files of the dtypes and header forms the tools never write (they
    write F32 only): each dtype, a scalar, an empty tensor, metadata."""
    seeds = []
    for dtype, width in [("F16", 2), ("BF16", 2), ("F64", 8), ("I8", 1), ("I16", 2),
                         ("I32", 4), ("I64", 8), ("U8", 1), ("U16", 2), ("U32", 4),
                         ("U64", 8), ("BOOL", 1)]:
        header = {"__metadata__": {"format": "pt"},
                  "a": {"dtype": dtype, "shape": [2, 3], "data_offsets": [0, 6 * width]},
                  "s": {"dtype": dtype, "shape": [], "data_offsets": [6 * width, 7 * width]},
                  "e": {"dtype": dtype, "shape": [0, 4], "data_offsets": [7 * width, 7 * width]}}
        text = json.dumps(header, separators=(",", ":")).encode()
        text += b" " * (-len(text) % 8)
        data = bytes([1 if dtype == "BOOL" else i % 251 for i in range(7 * width)])
        seeds.append((f"hand-{dtype}.safetensors", len(text).to_bytes(8, "little") + text + data))
    return seeds


class Corpus:
    """OUT/<target>/<name>, each content once per target."""

    def __init__(self, out):
        self.out = out
        self.hashes = {t: set() for t in TARGETS}

    def add(self, target, seeds):
        os.makedirs(os.path.join(self.out, target), exist_ok=True)
        for name, data in seeds:
            digest = hashlib.sha1(data).digest()
            if digest in self.hashes[target]:
                continue
            self.hashes[target].add(digest)
            with open(os.path.join(self.out, target, name), "wb") as f:
                f.write(data)

    def summary(self, target):
        folder = os.path.join(self.out, target)
        sizes = [os.path.getsize(os.path.join(folder, n)) for n in os.listdir(folder)]
        return len(sizes), sum(sizes), max(sizes, default=0)


def main():
    parser = argparse.ArgumentParser(description="Seed corpora and dictionaries of tests/fuzz.")
    parser.add_argument("--out", required=True, help="directory for TARGET/ and dict/")
    parser.add_argument("--fsdp-opt", required=True)
    parser.add_argument("--fsdp-run", required=True)
    args = parser.parse_args()
    start = time.time()
    fsdp_opt, fsdp_run = os.path.abspath(args.fsdp_opt), os.path.abspath(args.fsdp_run)
    for target in TARGETS + ["dict"]:  # a rerun replaces what an earlier one wrote
        shutil.rmtree(os.path.join(args.out, target), ignore_errors=True)
    corpus = Corpus(args.out)
    with tempfile.TemporaryDirectory(prefix="fsdp-seeds-") as tmp:
        onnx, models = seed_models.onnx_seeds(tmp)
        corpus.add("onnx-import", onnx)
        plans = seed_models.compile_plans(fsdp_opt, models, os.path.join(tmp, "plans"))
        corpus.add("plan", [(stem + ".fsdp", seed_models.read_bytes(p)) for stem, p in plans.items()])
        dirs = seed_models.checkpoint_dirs(fsdp_run, plans, tmp)
        corpus.add("checkpoint", seed_models.checkpoint_seeds(dirs))
        corpus.add("safetensors", seed_models.safetensors_seeds(plans, dirs, tmp, fsdp_run)
                   + hand_safetensors_seeds())
        corpus.add("npy", npy_seeds() + seed_models.runtime_npy_seeds(plans, tmp, fsdp_run))
    corpus.add("mlir-input", mlir_seeds())
    corpus.add("token-file", token_seeds())
    corpus.add("param-manifest", manifest_seeds())
    for target, seeds in seed_flags.flag_seeds(REPO, fsdp_opt, fsdp_run).items():
        corpus.add(target, seeds)
    dicts = fuzz_dicts.write_dicts(os.path.join(args.out, "dict"), REPO, fsdp_opt, fsdp_run)

    total = 0
    for target in TARGETS:
        count, size, largest = corpus.summary(target)
        total += size
        print(f"{target:15s} {count:5d} seeds {size / 1024:9.1f} KiB  (largest {largest / 1024:.1f} KiB,"
              f" dict {dicts[target]} entries)")
    print(f"total {sum(corpus.summary(t)[0] for t in TARGETS)} seeds, {total / 2**20:.1f} MiB, "
          f"in {time.time() - start:.1f} s: {os.path.abspath(args.out)}")


if __name__ == "__main__":
    main()
