#!/usr/bin/env python3
"""Unit tests of python/fsdp_opt (the checkout's sources, run by ctest with
the torch 2.x virtual environment's interpreter).

A tiny module with every kind of tensor the manifest describes (a tied
embedding/head pair, a frozen parameter, an unused parameter, persistent and
non-persistent buffers) is exported: the manifest must name each, and every
parameter's initializer must be in the graph with its shape. Graphs that
merged, renamed, split or reshaped a parameter must be refused by name.
load_weights must round-trip a trained file into a fresh module (tied names,
frozen parameters and buffers filled in) and refuse a missing, unexpected or
misshapen tensor by name.
"""

import json
import os
import sys
import tempfile
import unittest

import onnx
import torch
import torch.nn as nn
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import fsdp_opt  # noqa: E402
from fsdp_opt.export import ExportError, build_manifest  # noqa: E402


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.norm = nn.LayerNorm(4)
        self.norm.bias.requires_grad_(False)  # frozen
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.emb.weight  # tied
        self.unused = nn.Linear(2, 2)
        self.register_buffer("scale", torch.tensor(2.0))
        self.register_buffer("offset", torch.full((4,), 0.5), persistent=False)

    def forward(self, idx):
        x = self.emb(idx) * self.scale + self.offset
        return self.head(self.norm(x)).logsumexp(-1).mean()


def tiny(seed=0):
    torch.manual_seed(seed)
    return Tiny()


def inputs():
    return (torch.tensor([[1, 2, 3], [4, 5, 6]]),)


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "tiny.onnx")
        cls.model = tiny()
        cls.returned = fsdp_opt.export(cls.model, inputs(), cls.path)
        with open(cls.path + ".params.json") as f:
            cls.manifest = json.load(f)
        graph = onnx.load(cls.path, load_external_data=False).graph
        cls.initializers = {t.name: list(t.dims) for t in graph.initializer}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_header(self):
        m = self.manifest
        self.assertEqual((m["format"], m["version"]), ("fsdp-opt.params", 1))
        self.assertEqual(m["torch"], torch.__version__)
        self.assertIn("optimize=False", m["exporter"])
        self.assertEqual(m, self.returned)
        self.assertEqual(fsdp_opt.read_manifest(self.path), m)

    def test_parameters(self):
        by_name = {p["name"]: p for p in self.manifest["parameters"]}
        self.assertEqual(sorted(by_name), ["emb.weight", "norm.weight"])
        tied = by_name["emb.weight"]
        self.assertEqual(tied["tied"], ["head.weight"])
        self.assertEqual((tied["shape"], tied["dtype"]), ([10, 4], "float32"))
        for p in self.manifest["parameters"] + self.manifest["frozen"]:
            self.assertIn(p["initializer"], self.initializers)
            self.assertEqual(self.initializers[p["initializer"]], p["shape"])
            self.assertIn(p["initializer"], [p["name"]] + p["tied"])

    def test_frozen_unused_buffers(self):
        self.assertEqual([p["name"] for p in self.manifest["frozen"]], ["norm.bias"])
        self.assertEqual(sorted(p["name"] for p in self.manifest["unused"]),
                         ["unused.bias", "unused.weight"])
        buffers = {b["name"]: b for b in self.manifest["buffers"]}
        self.assertEqual(sorted(buffers), ["offset", "scale"])
        self.assertTrue(buffers["scale"]["persistent"])
        self.assertFalse(buffers["offset"]["persistent"])
        for b in buffers.values():
            self.assertTrue(b["initializer"] is None or b["initializer"] in self.initializers)
        named = {p["initializer"] for p in self.manifest["parameters"] + self.manifest["frozen"]}
        named |= {b["initializer"] for b in buffers.values()}
        self.assertEqual(sorted(set(self.initializers) - named), sorted(self.manifest["constants"]))

    def test_owned_settings_refused(self):
        with self.assertRaisesRegex(TypeError, "optimize"):
            fsdp_opt.export(self.model, inputs(), os.path.join(self.tmp.name, "x.onnx"),
                            optimize=True)

    def graph(self, **changes):
        """The tiny model's initializers with some renamed, dropped or
        reshaped: {name: (shape, dtype)}."""
        inits = {n: (dims, torch.float32) for n, dims in self.initializers.items()}
        for name, value in changes.items():
            name = name.replace("__", ".")
            if value is None:
                del inits[name]
            else:
                inits[name] = value
        return inits

    def refused(self, inits, *words):
        with self.assertRaises(ExportError) as e:
            build_manifest(self.model, inits, None, "tiny.onnx", "test")
        for word in words:
            self.assertIn(word, str(e.exception))

    def test_refuses_merged_or_renamed(self):
        # norm.weight merged into another tensor, or renamed by the exporter.
        self.refused(self.graph(norm__weight=None), "'norm.weight'", "merged, folded or renamed")

    def test_refuses_split_tied(self):
        # A tied pair stored twice, as the legacy exporter's folding does.
        self.refused(self.graph(emb__weight=([10, 4], torch.float32)), "'emb.weight'", "split")

    def test_refuses_reshaped(self):
        # A weight stored transposed (a folded Transpose).
        name = self.manifest["parameters"][0]["initializer"]
        self.refused(self.graph(**{name.replace(".", "__"): ([4, 10], torch.float32)}),
                     "[4, 10]", "[10, 4]")

    def test_unused_needs_evidence(self):
        # Without the exported program's word that it is unused, a missing
        # parameter is an error, never silently left out.
        self.refused(self.graph(), "'unused.weight'")


class LoadWeightsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.export_dir = tempfile.TemporaryDirectory()
        cls.onnx = os.path.join(cls.export_dir.name, "tiny.onnx")
        fsdp_opt.export(tiny(), inputs(), cls.onnx)  # its manifest says what is unused

    @classmethod
    def tearDownClass(cls):
        cls.export_dir.cleanup()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.trained = tiny(seed=1)  # stands for the weights fsdp-run trained
        self.file = os.path.join(self.tmp.name, "w.safetensors")

    def tearDown(self):
        self.tmp.cleanup()

    def save(self, **names):
        tensors = {"emb.weight": self.trained.emb.weight, "norm.weight": self.trained.norm.weight}
        for name, value in names.items():
            name = name.replace("__", ".")
            if value is None:
                tensors.pop(name)
            else:
                tensors[name] = value
        save_file({n: t.detach().contiguous() for n, t in tensors.items()}, self.file)

    def test_round_trip(self):
        self.save()
        model = tiny()
        frozen, scale = model.norm.bias.clone(), model.scale.clone()
        self.assertIs(fsdp_opt.load_weights(model, self.file, manifest=self.onnx), model)
        self.assertTrue(torch.equal(model.emb.weight, self.trained.emb.weight))
        self.assertTrue(torch.equal(model.head.weight, self.trained.emb.weight))
        self.assertTrue(torch.equal(model.norm.weight, self.trained.norm.weight))
        self.assertTrue(torch.equal(model.norm.bias, frozen))
        self.assertTrue(torch.equal(model.scale, scale))

    def test_tied_alias_and_manifest(self):
        # A graph that kept the head's name for the tied tensor saves it so.
        self.save(emb__weight=None, head__weight=self.trained.emb.weight)
        model = fsdp_opt.load_weights(tiny(), self.file, manifest=self.onnx + ".params.json")
        self.assertTrue(torch.equal(model.emb.weight, self.trained.emb.weight))

    def test_saved_frozen_and_buffer(self):
        self.save(norm__bias=self.trained.norm.bias, scale=torch.tensor(3.0))
        model = fsdp_opt.load_weights(tiny(), self.file, manifest=self.onnx)
        self.assertTrue(torch.equal(model.norm.bias, self.trained.norm.bias))
        self.assertEqual(model.scale.item(), 3.0)

    def test_missing(self):
        self.save(norm__weight=None)
        with self.assertRaisesRegex(fsdp_opt.WeightsError, "missing.*norm.weight"):
            fsdp_opt.load_weights(tiny(), self.file, manifest=self.onnx)

    def test_unused_without_manifest(self):
        # Only the manifest knows the graph does not use `unused`.
        self.save()
        with self.assertRaisesRegex(fsdp_opt.WeightsError, "missing.*unused.weight.*manifest="):
            fsdp_opt.load_weights(tiny(), self.file)

    def test_unexpected(self):
        self.save(extra__weight=torch.zeros(3))
        with self.assertRaisesRegex(fsdp_opt.WeightsError, "does not have: extra.weight"):
            fsdp_opt.load_weights(tiny(), self.file)

    def test_wrong_shape(self):
        self.save(norm__weight=torch.zeros(5))
        with self.assertRaisesRegex(fsdp_opt.WeightsError, r"'norm.weight' is \[5\]"):
            fsdp_opt.load_weights(tiny(), self.file)

    def test_tied_disagree(self):
        self.save(head__weight=torch.zeros(10, 4))
        with self.assertRaisesRegex(fsdp_opt.WeightsError, "tied.*differ"):
            fsdp_opt.load_weights(tiny(), self.file)

    def test_not_safetensors(self):
        with open(self.file, "wb") as f:
            f.write(b"not a safetensors file")
        with self.assertRaisesRegex(fsdp_opt.WeightsError, "cannot read"):
            fsdp_opt.load_weights(tiny(), self.file)

    def test_bad_manifest(self):
        bad = os.path.join(self.tmp.name, "bad.params.json")
        with open(bad, "w") as f:
            json.dump({"format": "other", "version": 1}, f)
        with self.assertRaisesRegex(ValueError, "not a fsdp-opt.params version 1"):
            fsdp_opt.read_manifest(bad)


if __name__ == "__main__":
    unittest.main(verbosity=1)
