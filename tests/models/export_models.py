#!/usr/bin/python3
# Exports the small ONNX training graphs that fsdp-opt's tests and demo consume.
# Three model families (a GPT-style decoder, a torch.nn.Transformer
# encoder-decoder and a residual MLP classifier) are built with fixed seeds and
# exported with torch.onnx.export, with the loss computed inside forward() so it
# is part of the graph. Each family is exported in TRAINING mode at opsets 14 and
# 17 (opset 14 decomposes LayerNorm, opset 17 keeps LayerNormalization) and in
# EVAL mode at opset 17, always with static shapes and constant folding off so
# parameters stay visible as named initializers. A manifest.json records, per
# file, the inputs and the parameters exactly as torch names them, which the
# tests use as ground truth for parameter discovery and sharding.
# `--example OUT.onnx` instead writes the tiny byte-level GPT shipped in the repo
# (its training graph, and beside it OUT-logits.onnx, the same model returning
# logits, for sampling).
#
# Usage: /usr/bin/python3 tests/models/export_models.py OUTDIR [--only NAME ...]
#        /usr/bin/python3 tests/models/export_models.py --example OUT.onnx

import argparse
import contextlib
import inspect
import json
import math
import os
import re
import sys
import tempfile
import time
import warnings

import numpy
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 0


# --------------------------------------------------------------------------
# GPT-style decoder
# --------------------------------------------------------------------------

class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)  # fused projection: one weight to shard
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask):
        B, T, C = x.shape
        hd = C // self.heads
        q, k, v = self.qkv(x).split(C, dim=2)
        q = q.view(B, T, self.heads, hd).transpose(1, 2)
        k = k.view(B, T, self.heads, hd).transpose(1, 2)
        v = v.view(B, T, self.heads, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        att = att.masked_fill(~mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class GPTMLP(nn.Module):
    def __init__(self, d, hidden, gelu):
        super().__init__()
        self.fc = nn.Linear(d, hidden)
        self.act = nn.GELU(approximate="tanh" if gelu == "tanh" else "none")
        self.proj = nn.Linear(hidden, d)

    def forward(self, x):
        return self.proj(self.act(self.fc(x)))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, hidden, gelu):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = GPTMLP(d, hidden, gelu)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)  # pre-LN residual blocks
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, T=16, d=32, heads=4, layers=2, mlp_ratio=4,
                 gelu="erf", tied=False):
        super().__init__()
        self.vocab = vocab
        self.tok_emb = nn.Embedding(vocab, d)
        self.pos_emb = nn.Embedding(T, d)
        self.blocks = nn.ModuleList(
            GPTBlock(d, heads, mlp_ratio * d, gelu) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        if tied:
            # Shared Parameter object: named_parameters() reports it once,
            # as tok_emb.weight.
            self.head.weight = self.tok_emb.weight
        # One model-level bool buffer shared by every block; T is static, so
        # no slicing is needed. It is a buffer, not a parameter.
        self.register_buffer("causal_mask",
                             torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, idx, targets=None):
        T = idx.shape[1]
        pos = torch.arange(T, dtype=torch.long)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x, self.causal_mask)
        logits = self.head(self.ln_f(x))
        if targets is None:  # the sampling graph: logits for every position
            return logits
        return F.cross_entropy(logits.view(-1, self.vocab), targets.view(-1))


# --------------------------------------------------------------------------
# torch.nn.Transformer encoder-decoder (Lightning demo style)
# --------------------------------------------------------------------------

class PositionalEncoding(nn.Module):
    def __init__(self, d, T, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = torch.arange(T, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float)
                        * (-math.log(10000.0) / d))
        pe = torch.zeros(T, d)
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe)  # fixed sinusoid, not trained

    def forward(self, x):
        return self.dropout(x + self.pe)


class Seq2SeqTransformer(nn.Module):
    def __init__(self, vocab=64, T=16, d=32, heads=4, layers=2, ff=64,
                 dropout=0.0):
        super().__init__()
        self.vocab = vocab
        self.d = d
        self.embedding = nn.Embedding(vocab, d)  # shared by src and tgt
        self.pos = PositionalEncoding(d, T, dropout)
        self.transformer = nn.Transformer(
            d_model=d, nhead=heads, num_encoder_layers=layers,
            num_decoder_layers=layers, dim_feedforward=ff, dropout=dropout,
            batch_first=True)
        self.decoder = nn.Linear(d, vocab)
        # Float additive mask (0 / -inf) built once, exported as an initializer
        # rather than as mask-construction ops.
        self.register_buffer(
            "tgt_mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, src, tgt_in, tgt_out):
        scale = math.sqrt(self.d)
        s = self.pos(self.embedding(src) * scale)
        t = self.pos(self.embedding(tgt_in) * scale)
        out = self.transformer(s, t, tgt_mask=self.tgt_mask)
        logp = F.log_softmax(self.decoder(out), dim=-1)
        return F.nll_loss(logp.view(-1, self.vocab), tgt_out.view(-1))


# --------------------------------------------------------------------------
# Residual MLP classifier
# --------------------------------------------------------------------------

class ResBlock(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return x + self.fc2(F.relu(self.fc1(self.norm(x))))


class MLPClassifier(nn.Module):
    def __init__(self, in_dim=16, d=32, hidden=64, layers=2, classes=10):
        super().__init__()
        # `hidden` is every block's width, or one width per block: unequal
        # blocks, on which --ckpt=auto must choose which to recompute.
        widths = hidden if isinstance(hidden, (list, tuple)) else [hidden] * layers
        self.inp = nn.Linear(in_dim, d)
        self.layers = nn.ModuleList(ResBlock(d, h) for h in widths)
        self.out = nn.Linear(d, classes)

    def forward(self, x, labels):
        h = self.inp(x)
        for layer in self.layers:
            h = layer(h)
        return F.cross_entropy(self.out(h), labels)


# --------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------

def gpt_inputs(gen, vocab=64, T=16, batch=2):
    return {
        "idx": torch.randint(0, vocab, (batch, T), generator=gen),
        "targets": torch.randint(0, vocab, (batch, T), generator=gen),
    }


def transformer_inputs(gen, vocab=64, T=16, batch=2):
    return {
        "src": torch.randint(0, vocab, (batch, T), generator=gen),
        "tgt_in": torch.randint(0, vocab, (batch, T), generator=gen),
        "tgt_out": torch.randint(0, vocab, (batch, T), generator=gen),
    }


def mlp_inputs(gen, batch=8, in_dim=16, classes=10):
    return {
        "x": torch.randn(batch, in_dim, generator=gen),
        "labels": torch.randint(0, classes, (batch,), generator=gen),
    }


def variant(family, opset, mode, model_cls, inputs, tags=(), **config):
    """One export: file stem, model constructor config and example inputs.
    `tags` are the file-name suffixes; `config` goes to the manifest too."""
    return {
        "name": "-".join([family, *tags, f"op{opset}", mode]),
        "family": family,
        "opset": opset,
        "mode": mode,
        "config": config,
        "build": lambda: model_cls(**config),
        "inputs": inputs,
    }


def all_variants():
    out = []
    for opset in (14, 17):
        out.append(variant("gpt", opset, "train", GPT, gpt_inputs,
                           gelu="erf", tied=False))
        out.append(variant("gpt", opset, "train", GPT, gpt_inputs,
                           tags=("tanh", "tied"), gelu="tanh", tied=True))
    out.append(variant("gpt", 17, "eval", GPT, gpt_inputs,
                       gelu="erf", tied=False))
    for opset in (14, 17):
        out.append(variant("transformer", opset, "train", Seq2SeqTransformer,
                           transformer_inputs, dropout=0.0))
    out.append(variant("transformer", 17, "eval", Seq2SeqTransformer,
                       transformer_inputs, dropout=0.0))
    out.append(variant("transformer", 17, "train", Seq2SeqTransformer,
                       transformer_inputs, tags=("dropout",), dropout=0.1))
    for opset in (14, 17):
        out.append(variant("mlp", opset, "train", MLPClassifier, mlp_inputs))
    out.append(variant("mlp", 17, "eval", MLPClassifier, mlp_inputs))
    return out


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

@contextlib.contextmanager
def quiet():
    """Silence Python warnings and C++-level stdout/stderr chatter from the
    exporter, replaying it only if the export fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = (os.dup(1), os.dup(2))
    failed = False
    with tempfile.TemporaryFile(mode="w+") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
        except BaseException:
            failed = True
            raise
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)
            if failed:
                log.seek(0)
                sys.stderr.write(log.read())


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def export(model, inputs, path, opset, mode, output="loss"):
    """Export with one output (the loss unless told); weights are never
    folded."""
    training = (torch.onnx.TrainingMode.TRAINING if mode == "train"
                else torch.onnx.TrainingMode.EVAL)
    # Eval export must not take nn.Transformer's fused inference fast path
    # (aten::_transformer_encoder_layer_fwd, which the exporter cannot lower).
    # That path is skipped while grad is enabled and parameters require grad,
    # so force grad on in case the caller turned it off.
    # torch >= 2.9 exports through torch.export by default (dynamo=True),
    # which these seed models were never written for (nn.Transformer's mask
    # check is data-dependent there); they are the TorchScript exporter's.
    legacy = ({"dynamo": False}
              if "dynamo" in inspect.signature(torch.onnx.export).parameters else {})
    with quiet(), torch.enable_grad():
        torch.onnx.export(
            model, tuple(inputs.values()), path,
            input_names=list(inputs), output_names=[output],
            opset_version=opset, training=training,
            do_constant_folding=False, export_params=True, **legacy)


def describe(model, inputs):
    """Manifest entry body: torch's own names and shapes for inputs/params."""
    tensor = lambda name, t: {"name": name, "shape": list(t.shape),
                              "dtype": dtype_name(t)}
    return {
        "inputs": [tensor(n, t) for n, t in inputs.items()],
        "outputs": [{"name": "loss", "shape": [], "dtype": "float32"}],
        # named_parameters() de-duplicates shared Parameters (tied weights).
        "parameters": [tensor(n, p) for n, p in model.named_parameters()],
        "buffers": [tensor(n, b) for n, b in model.named_buffers()],
        "num_parameters": sum(p.numel() for p in model.parameters()),
    }


def break_symmetry(model):
    """Add small seeded noise to parameters that are not bit-unique.

    Fresh LayerNorm gains (ones) and zero biases are identical across layers,
    and nn.Transformer deep-copies one layer, so its 1-D biases repeat. The
    EVAL-mode exporter de-duplicates equal-valued initializers (it keeps one
    and rebinds the rest through Identity nodes), which would hide those torch
    parameter names. Making every tensor unique keeps each parameter a named
    initializer in every mode, with the same weights in train and eval files."""
    gen = torch.Generator().manual_seed(SEED + 1)
    seen = []
    with torch.no_grad():
        for p in model.parameters():
            flat = p.flatten()
            constant = p.numel() > 1 and bool((flat == flat[0]).all())
            repeated = any(q.shape == p.shape and torch.equal(q, p)
                           for q in seen)
            if constant or repeated:
                p.add_(0.01 * torch.randn(p.shape, generator=gen))
            seen.append(p.detach().clone())


def reference_forward(model, inputs, path, v):
    """Saves the batch as .npy beside the model and records torch's loss on
    it, so the runtime's forward pass can be checked against torch on the
    same weights and inputs. Dropout in training draws torch's own random
    mask, which no other implementation reproduces: no reference there."""
    stem = os.path.splitext(path)[0]
    files = {}
    for name, tensor in inputs.items():
        files[name] = os.path.basename(f"{stem}.{name}.npy")
        numpy.save(f"{stem}.{name}.npy", tensor.numpy())
    has_random_dropout = v["mode"] == "train" and v["config"].get("dropout", 0.0) > 0
    loss = None
    if not has_random_dropout:
        with torch.no_grad():
            loss = float(model(*inputs.values()))
    return {"input_files": files, "torch_loss": loss}


def run_variant(v, outdir):
    torch.manual_seed(SEED)  # same weights on every run and for every opset
    model = v["build"]()
    break_symmetry(model)
    model.train(v["mode"] == "train")
    gen = torch.Generator().manual_seed(SEED)
    inputs = v["inputs"](gen)
    path = os.path.join(outdir, v["name"] + ".onnx")
    start = time.time()
    export(model, inputs, path, v["opset"], v["mode"])
    entry = {"file": os.path.basename(path), "family": v["family"],
             "opset": v["opset"], "mode": v["mode"], "config": v["config"]}
    entry.update(describe(model, inputs))
    entry.update(reference_forward(model, inputs, path, v))
    print(f"{entry['file']}: {os.path.getsize(path)} bytes, "
          f"{time.time() - start:.2f}s", flush=True)
    return entry


def selected(v, only):
    return not only or v["family"] in only or v["name"] in only


def export_all(outdir, only):
    os.makedirs(outdir, exist_ok=True)
    variants = [v for v in all_variants() if selected(v, only)]
    if not variants:
        sys.exit(f"export_models.py: --only {' '.join(only)} matched nothing")
    entries = [run_variant(v, outdir) for v in variants]
    manifest = {"torch": torch.__version__, "seed": SEED, "models": entries}
    text = json.dumps(manifest, indent=2)
    # One line per tensor record keeps the manifest short and diffable.
    text = re.sub(r'\{\s*("name": "[^"]*",)\s*("shape": \[)([\d,\s]*)\],\s*'
                  r'("dtype": "\w+")\s*\}',
                  lambda m: "{%s %s%s], %s}" % (
                      m.group(1), m.group(2),
                      ", ".join(re.findall(r"\d+", m.group(3))), m.group(4)),
                  text)
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        f.write(text + "\n")


EXAMPLE_BATCH = 16  # per-step batch of the demo's training run


def export_example(path):
    """Byte-level GPT shipped in the repo, twice: PATH is the training graph
    (idx, targets -> loss, batch EXAMPLE_BATCH) and PATH's stem + "-logits.onnx"
    the sampling graph of the same model (idx [1, T] -> logits [1, T, 256]),
    whose parameters have the same names, so weights trained with the first
    run in the second. mlp_ratio 2 (not 4) keeps each file under ~500 KB."""
    torch.manual_seed(SEED)
    model = GPT(vocab=256, T=64, d=64, heads=4, layers=2, mlp_ratio=2,
                gelu="erf", tied=False)
    model.train()
    gen = torch.Generator().manual_seed(SEED)
    inputs = gpt_inputs(gen, vocab=256, T=64, batch=EXAMPLE_BATCH)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    export(model, inputs, path, 17, "train")
    logits_path = os.path.splitext(path)[0] + "-logits.onnx"
    # TRAINING mode like the first (the model has no dropout, so the graph is
    # the same): an EVAL export would merge equal-valued initializers (fresh
    # LayerNorm gains and biases) and lose their names.
    export(model, {"idx": inputs["idx"][:1]}, logits_path, 17, "train", output="logits")
    for p in (path, logits_path):
        print(f"{os.path.basename(p)}: {os.path.getsize(p)} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser(
        description="Export the fsdp-opt test models to ONNX.")
    ap.add_argument("outdir", nargs="?", help="directory for .onnx + manifest")
    ap.add_argument("--only", nargs="+", default=[], metavar="NAME",
                    help="family (gpt, transformer, mlp) or file stem")
    ap.add_argument("--example", metavar="OUT.onnx",
                    help="write only the embedded example GPT to OUT.onnx")
    args = ap.parse_args()
    if args.example:
        export_example(args.example)
    elif args.outdir:
        export_all(args.outdir, set(args.only))
    else:
        ap.error("need OUTDIR or --example OUT.onnx")


if __name__ == "__main__":
    main()
