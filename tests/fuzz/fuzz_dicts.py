# libFuzzer dictionaries for the fuzz targets, made from the tools and the
# sources rather than kept as lists that drift: ONNX operator types come
# from `fsdp-opt --list-ops` and attribute names from the ONNX node tests,
# flag names from both tools' --help, dialect op names from the lit tests,
# kernel names from runtime/plan/Kernels.def, dtype names from
# runtime/io/FileIO.h, COMMIT keywords from runtime/checkpoint/Checkpoint.cpp.
# A dictionary hands the mutator whole tokens (a key, an op name, a magic)
# that byte flips would take millions of inputs to spell. make_seeds.py
# calls write_dicts(); libFuzzer takes one -dict per run, so besides the
# topical dictionaries each target gets DIR/<target>.dict, the union of
# those it needs (TARGET_DICTS).

import glob
import os
import re
import subprocess

from seed_models import node_test_models

# Which topical dictionaries each fuzz target's -dict combines.
TARGET_DICTS = {
    "onnx-import": ["onnx"],
    "mlir-input": ["mlir"],
    "plan": ["plan"],
    "safetensors": ["json"],
    "npy": ["npy"],
    "token-file": ["npy"],
    "checkpoint": ["checkpoint", "json"],
    "param-manifest": ["json"],
    "compile-flags": ["flags"],
    "run-flags": ["flags"],
}


def escape(value):
    """A libFuzzer dictionary string: printable ASCII as is, the rest \\xNN."""
    if isinstance(value, str):
        value = value.encode()
    out = []
    for byte in value:
        if byte in (0x22, 0x5C) or not 0x20 <= byte < 0x7F:
            out.append("\\x%02X" % byte)
        else:
            out.append(chr(byte))
    return '"' + "".join(out) + '"'


def render(purpose, entries):
    """Dictionary text: a comment saying what it is for, then one entry a line."""
    lines = ["# " + line for line in purpose.strip().splitlines()]
    seen = set()
    for value in entries:
        key = value.encode() if isinstance(value, str) else value
        if key and key not in seen:
            seen.add(key)
            lines.append(escape(key))
    return "\n".join(lines) + "\n"


def tool_output(tool, *args):
    return subprocess.run([tool, *args], capture_output=True, text=True, check=True).stdout


def read(repo, path):
    with open(os.path.join(repo, path), encoding="utf-8") as f:
        return f.read()


def onnx_dict(repo, fsdp_opt):
    import onnx  # Debian's python3-onnx; only the dictionaries and seeds need it

    ops = re.findall(r"^\| (\w+) \| [\d-]+ \|", tool_output(fsdp_opt, "--list-ops"), re.M)
    attributes = set()
    for path in node_test_models():
        for node in onnx.load(path, load_external_data=False).graph.node:
            attributes.update(a.name for a in node.attribute)
    protobuf = ["ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training", "com.microsoft",
                "pytorch", "onnx", "external_data", "location", "offset", "length",
                "checksum", "model.onnx", "../", "/etc/passwd",
                # Field keys (tag bytes) of ModelProto, GraphProto, NodeProto
                # and TensorProto that the reader switches on.
                b"\x08\x08", b"\x3a", b"\x42", b"\x0a", b"\x2a", b"\x5a", b"\x62", b"\x6a",
                b"\x22", b"\x32", b"\x40", b"\x4a", b"\x70\x01", b"\x62\x0b",
                b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"]
    return ops + sorted(attributes) + protobuf


def json_dict(repo):
    dtypes = re.findall(r'\{DType::\w+, "(\w+)"', read(repo, "runtime/io/FileIO.h"))
    manifest = ["format", "fsdp-opt.params", "version", "torch", "exporter", "parameters",
                "frozen", "buffers", "name", "initializer", "shape", "dtype", "tied",
                "persistent", "float32", "float16", "bfloat16", "float64", "int64", "int32",
                "bool", "uint8"]
    safetensors = ["dtype", "shape", "data_offsets", "__metadata__", "fsdp-sharded-checkpoint",
                   "fsdp-full-checkpoint", "step", "rank", "world_size", "plan_hash"]
    syntax = ['":"', '","', "{", "}", "[", "]", "null", "true", "false", "-0", "1e309",
              "9223372036854775807", "18446744073709551616", "\\u0000", "\\ud800", "\\\"",
              b"\x08\x00\x00\x00\x00\x00\x00\x00", b"\xff\xff\xff\xff\xff\xff\xff\x7f"]
    return ['"%s"' % d for d in dtypes] + dtypes + ['"%s"' % k for k in manifest + safetensors] + syntax


def mlir_dict(repo):
    text = "".join(read(repo, os.path.relpath(p, repo))
                   for p in sorted(glob.glob(os.path.join(repo, "tests/lit/**/*.mlir"), recursive=True)))
    ops = set(re.findall(r"\b((?:nn|fsdp|func|arith|tensor|builtin|scf|memref)\.[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)", text))
    types = set(re.findall(r"!(?:nn|fsdp)\.[a-z_]+", text))
    attributes = set(re.findall(r"[{,]\s*([a-z_][a-z0-9_]*)\s*=", text))
    syntax = ["module", "func.func", "return", "tensor<", "memref<", "x", "?x", "f32", "f16",
              "bf16", "f64", "i1", "i8", "i32", "i64", "index", "->", "%arg0", "%0", "^bb0",
              "dense<", "dense_resource<", "array<i64:", "attributes", "loc(", "#loc",
              "{-#", "#-}", "// -----", "expected-error", "0x7FC00000", "-1", "9223372036854775807"]
    return sorted(ops) + sorted(types) + sorted(attributes) + syntax


def flags_dict(fsdp_opt, fsdp_run):
    help_text = tool_output(fsdp_opt, "--help") + tool_output(fsdp_run, "--help")
    names = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", help_text)))
    values = ["full", "grad-op", "none", "hybrid:2", "hybrid:", "blocks", "size:", "regex:",
              "selective", "auto", "each", "last", "adamw", "sgd", "train", "forward", "plan",
              "mlir", "binary", "report", "trace", "summary", "object", "llvm-ir", "json",
              "text", "f32", "bf16", "f16", "cpu", "cuda", "cuda-simt", "h100", "a100", "on",
              "off", "sharded", "xent:", "xent:logits,labels", "constant", "constant:",
              "cosine:", "linear:", "wsd:", "import", "shard", "schedule", "memory",
              "checkpoint", "elementwise", "inf", "nan", "-1", "0", "1e-308", "1e309", "0x10",
              "GiB", "MiB", "KB", "GB", "80GiB", "1.5GB", "18446744073709551616",
              "9223372036854775807", "idx=", ".npy", ".bin", ".safetensors", ".jsonl",
              "../", "/dev/null", "("]
    return names + [n + "=" for n in names] + values


def plan_dict(repo):
    kernels = re.findall(r"^FSDP_KERNEL\((\w+),", read(repo, "runtime/plan/Kernels.def"), re.M)
    version = re.search(r"kPlanFormatVersion = (\d+)", read(repo, "runtime/plan/PlanFile.h"))
    header = ["FSDPPLAN", int(version.group(1)).to_bytes(4, "little"), b"\x00\x00\x00\x00", "FSDP",
              b"\x40\x00\x00\x00\x00\x00\x00\x00", b"\xff\xff\xff\xff",
              b"\xff\xff\xff\xff\xff\xff\xff\xff", b"\x00\x00\x00\x80"]
    strings = ["train", "forward", "adamw", "sgd", "full", "grad-op", "hybrid:2", "f32", "bf16",
               "f16", "h100", "a100", "cpu", "loss", "grad_norm", "found_inf", "fsdp-opt",
               ".safetensors", "../"]
    return header + kernels + strings


def checkpoint_dict(repo):
    source = read(repo, "runtime/checkpoint/CheckpointManifest.cpp")
    format_line = re.search(r'kFormatLine = "([^"]+)"', source).group(1)
    keys = ["kind", "step", "world_size", "plan_hash", "data_position", "rng", "loss_scale",
            "loss_scale_growth_tracker", "optimizer_steps", "file"]
    return ([format_line + "\n", "\n--fsdp-fuzz-file--\n", "sharded", "full", " auto", "auto",
             "COMMIT", "plan.fsdp", "model.safetensors", "rank-00000-of-00001.safetensors",
             "rank-00000-of-00002.safetensors", "rank-00001-of-00002.safetensors", "step-",
             "65536", "nan", "inf", "-1", "ffffffffffffffff"]
            + [k + " " for k in keys] + ["\n" + k + " " for k in keys])


def npy_dict():
    codes = ["f4", "f8", "f2", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "b1"]
    return ([b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b"\x93NUMPY\x03\x00", b"\x93NUMPY",
             "{'descr': ", "'descr'", "'fortran_order'", "'shape'", "True", "False", "()",
             ",)", ", }", "<", "|", ">", "=", "\n", "        "]
            + ["'<%s'" % c for c in codes] + ["'|%s'" % c for c in codes]
            + [b"\xff\xff", b"\x00\x00\x00\x00\x00\x00\x00\x00", "9223372036854775807"])


PURPOSES = {
    "onnx": "ONNX protobuf models (fuzz-onnx-import): operator types fsdp-opt imports\n"
            "(--list-ops), attribute names of the ONNX node tests, domain and external-data\n"
            "strings, and the field keys of ModelProto/GraphProto/NodeProto/TensorProto.",
    "json": "JSON headers of safetensors files and --params manifests (fuzz-safetensors,\n"
            "fuzz-param-manifest, fuzz-checkpoint): dtype names, keys, hostile numbers.",
    "mlir": ".mlir input to fsdp-opt (fuzz-mlir-input): op names of our dialects and the\n"
            "builtin ones the lit tests use, their types and attribute names, MLIR syntax.",
    "flags": "fsdp-opt and fsdp-run command lines (fuzz-compile-flags, fuzz-run-flags): every\n"
             "flag name of both --help texts, with and without '=', and their values.",
    "plan": "Plan files (fuzz-plan): the 32-byte header's magic and version, the FlatBuffer\n"
            "identifier, kernel names of Kernels.def and the strings a plan carries.",
    "checkpoint": "Checkpoint step directories (fuzz-checkpoint): COMMIT's format line and\n"
                  "keywords, the multi-file separator of FuzzSupport.h and the file names.",
    "npy": ".npy arrays and token files (fuzz-npy, fuzz-token-file): the magic, header\n"
           "versions, header keys and every descr the runtime reads.",
}


def write_dicts(out, repo, fsdp_opt, fsdp_run):
    """Writes out/<topic>.dict and out/<target>.dict; returns {file: entries}."""
    os.makedirs(out, exist_ok=True)
    topics = {"onnx": onnx_dict(repo, fsdp_opt), "json": json_dict(repo), "mlir": mlir_dict(repo),
              "flags": flags_dict(fsdp_opt, fsdp_run), "plan": plan_dict(repo),
              "checkpoint": checkpoint_dict(repo), "npy": npy_dict()}
    written = {}
    for name, entries in topics.items():
        written[name] = render(PURPOSES[name], entries)
    for target, parts in TARGET_DICTS.items():
        purpose = "-dict of fuzz-%s: the union of %s." % (
            target, ", ".join(p + ".dict" for p in parts))
        entries = [e for p in parts for e in topics[p]]
        written[target] = render(purpose + "\n" + "\n".join(PURPOSES[p] for p in parts), entries)
    counts = {}
    for name, text in written.items():
        with open(os.path.join(out, name + ".dict"), "w") as f:
            f.write(text)
        counts[name] = sum(1 for line in text.splitlines() if line.startswith('"'))
    return counts
