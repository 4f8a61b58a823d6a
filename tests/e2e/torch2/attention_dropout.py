#!/usr/bin/env python3
"""Fused attention with dropout trains as the unfused graph does.

A two-layer model whose attention is written out (q kᵀ / √d, a causal
masked_fill, softmax, F.dropout(p=0.2) in training, @ v) is exported with
fsdp_opt.export and compiled with --fuse-attention=on (one nn.attention per
layer, dropout_p 0.2: the kernels draw the keep bits themselves and store
no mask) and =off (nn.dropout on the materialized probabilities, its mask
saved for the backward). Both draw each probability's keep bit from the
same (seed, step, index), so every step's loss must agree within 1e-5
relative: at world size 1, at world size 2 (--shard=full --ckpt=blocks)
and with --grad-accum=2 (each micro-batch its own stream). The fused plan
must hold the dropout (its losses differ from the same model exported in
eval-mode dropout), so a kernel that ignored dropout_p fails here.

  .venv/bin/python tests/e2e/torch2/attention_dropout.py --fsdp-opt build/bin/fsdp-opt \\
      --fsdp-run build/bin/fsdp-run
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python"))
import fsdp_opt  # noqa: E402

VOCAB, D, HEADS, T, BATCH, STEPS, P = 64, 32, 2, 16, 2, 5, 0.2
TOLERANCE = 1e-5


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.register_buffer("causal", torch.tril(torch.ones(T, T, dtype=torch.bool)),
                             persistent=False)

    def forward(self, x):
        b = x.shape[0]
        q, k, v = (t.view(b, T, HEADS, D // HEADS).transpose(1, 2)
                   for t in self.qkv(x).split(D, 2))
        scores = (q @ k.transpose(-2, -1)) / (D // HEADS) ** 0.5
        probs = scores.masked_fill(~self.causal, float("-inf")).softmax(-1)
        y = F.dropout(probs, P, self.training) @ v
        return self.out(y.transpose(1, 2).reshape(b, T, D))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        self.layers = nn.ModuleList([Attention() for _ in range(2)])
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx, targets):
        x = self.embed(idx)
        for layer in self.layers:
            x = x + layer(x)
        return F.cross_entropy(self.head(x).reshape(-1, VOCAB), targets.reshape(-1))


def run(command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)}:\n{result.stderr}")
    return result


def losses(args, onnx_path, tokens, tmp, name, flags):
    plan, metrics = os.path.join(tmp, name + ".plan"), os.path.join(tmp, name + ".jsonl")
    run([args.fsdp_opt, onnx_path, "-o", plan, "--optimizer=sgd", "--lr=0.1"] + flags)
    world = [f for f in flags if f.startswith("--world-size=")]
    run([args.fsdp_run, plan, f"--steps={STEPS}", f"--data={tokens}", f"--metrics={metrics}"]
        + world)
    with open(metrics) as f:
        return numpy.array([json.loads(line)["loss"] for line in f if line.strip()])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fsdp-opt", required=True)
    p.add_argument("--fsdp-run", required=True)
    args = p.parse_args()
    failures = []
    with tempfile.TemporaryDirectory(prefix="attention-dropout-") as tmp:
        tokens = os.path.join(tmp, "tokens.bin")
        numpy.random.default_rng(1).integers(0, VOCAB, 400).astype("<u2").tofile(tokens)
        g = torch.Generator().manual_seed(0)
        inputs = tuple(torch.randint(0, VOCAB, (BATCH, T), generator=g) for _ in range(2))
        paths = {}
        for mode in ("train", "eval"):
            torch.manual_seed(0)
            model = Model().train(mode == "train")
            paths[mode] = os.path.join(tmp, mode + ".onnx")
            fsdp_opt.export(model, inputs, paths[mode])
        summary = run([args.fsdp_opt, paths["train"], "--fuse-attention=on", "--emit=summary"])
        if "attention:  2 fused into nn.attention, 0 left unfused" not in summary.stdout:
            failures.append("the dropout attentions are not both fused:\n" + summary.stdout)
        configs = {"ws1": [], "ws2": ["--world-size=2", "--shard=full", "--ckpt=blocks"],
                   "accum2": ["--grad-accum=2"]}
        for label, flags in configs.items():
            on = losses(args, paths["train"], tokens, tmp, label + "-on",
                        flags + ["--fuse-attention=on"])
            off = losses(args, paths["train"], tokens, tmp, label + "-off",
                         flags + ["--fuse-attention=off"])
            rel = float(numpy.max(numpy.abs(on - off) / numpy.abs(off)))
            ok = rel <= TOLERANCE
            print(f"{'PASS' if ok else 'FAIL'}  {label:<7} fused vs unfused loss rel {rel:.1e}")
            if not ok:
                failures.append(f"{label}: fused {on.tolist()} vs unfused {off.tolist()}")
            if label == "ws1":
                plain = losses(args, paths["eval"], tokens, tmp, "eval-on",
                               ["--fuse-attention=on"])
                differs = float(numpy.max(numpy.abs(on - plain))) > 1e-4
                print(f"{'PASS' if differs else 'FAIL'}  dropout changes the fused losses "
                      f"(max diff {float(numpy.max(numpy.abs(on - plain))):.1e})")
                if not differs:
                    failures.append("the fused plan's losses equal the no-dropout model's")
    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
