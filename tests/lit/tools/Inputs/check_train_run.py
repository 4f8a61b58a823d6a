# Checks what `fsdp-run --metrics=M --save-weights=W` wrote for a training
# plan compiled from MODEL.onnx: every metrics line is JSON with the keys of
# docs/design.md, steps 1..K in order, a loss that is an exact f32 (printing the
# parsed float32 back gives the same text), and the weights file parses as
# safetensors with nothing but the standard library and numpy (8-byte
# little-endian header length, JSON header, raw little-endian data), holding
# every float initializer of the model under its name with its shape, and
# changed by training.
#
#   check_train_run.py METRICS.jsonl WEIGHTS.safetensors MODEL.onnx
import json
import struct
import sys

import numpy
import onnx
from onnx import numpy_helper

metrics_path, weights_path, model_path = sys.argv[1:4]

records = [json.loads(line) for line in open(metrics_path)]
keys = ["step", "loss", "lr", "samples_per_s", "tokens_per_s", "step_time_s", "peak_bytes"]
for i, r in enumerate(records):
    assert list(r) == keys, r
    assert r["step"] == i + 1, r
    assert isinstance(r["peak_bytes"], int) and r["peak_bytes"] > 0, r
    assert r["step_time_s"] > 0 and r["tokens_per_s"] > 0, r
    assert numpy.isfinite(r["loss"]), r
    # The text is %.9g of the f32 loss: parse, narrow, print, compare.
    assert float("%.9g" % float(numpy.float32(r["loss"]))) == r["loss"], r
lrs = [r["lr"] for r in records]
assert lrs == [0.002, 0.001, 0.0], lrs
print(f"metrics ok: {len(records)} steps")

data = open(weights_path, "rb").read()
(n,) = struct.unpack("<Q", data[:8])
header = json.loads(data[8:8 + n])
header.pop("__metadata__", None)
body = data[8 + n:]
tensors = {}
for name, entry in header.items():
    assert entry["dtype"] == "F32", (name, entry)
    begin, end = entry["data_offsets"]
    tensors[name] = numpy.frombuffer(body[begin:end], "<f4").reshape(entry["shape"])

initial = {i.name: numpy_helper.to_array(i) for i in onnx.load(model_path).graph.initializer
           if i.data_type == onnx.TensorProto.FLOAT}
assert set(tensors) == set(initial), (sorted(set(tensors) ^ set(initial)))
changed = 0
for name, value in initial.items():
    assert tensors[name].shape == value.shape, (name, tensors[name].shape, value.shape)
    changed += not numpy.array_equal(tensors[name], value)
assert changed > len(initial) // 2, f"only {changed} of {len(initial)} parameters changed"
print("weights ok")
