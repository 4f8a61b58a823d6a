#!/usr/bin/env bash
# The main job on the embedded default: builds fsdp-opt and fsdp-run (after
# installing what they need), imports the example model shipped in examples/
# (a small byte-level GPT exported from torch) and prints its IR and a
# summary, compiles its training step (forward, backward, AdamW) into a plan,
# and trains it with fsdp-run on the embedded public-domain text
# (examples/shakespeare.txt, turned into a uint16 token file here), printing
# the falling loss. Then it compiles the same model's sampling graph as a
# forward plan and generates a little text with the trained weights.
# STEPS (default 600) sets the length of the training run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target fsdp-opt fsdp-run >/dev/null
MODEL=examples/gpt-tiny.onnx
SAMPLER=examples/gpt-tiny-logits.onnx
CORPUS=examples/shakespeare.txt
STEPS=${STEPS:-600}
echo "== fsdp-opt $MODEL --emit=mlir --stop-after=import"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=mlir --stop-after=import \
  --mlir-elide-elementsattrs-if-larger=16
echo
echo "== fsdp-opt $MODEL --emit=summary"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=summary

echo
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The data contract's raw token file: one little-endian uint16 per byte.
/usr/bin/python3 -c 'import sys, numpy
numpy.frombuffer(open(sys.argv[1], "rb").read(), dtype=numpy.uint8).astype("<u2").tofile(sys.argv[2])' \
  "$CORPUS" "$WORK/tokens.bin"
echo "== fsdp-opt $MODEL -o $WORK/train.plan --optimizer=adamw --lr=1e-2 --weight-decay=0.01"
"$BUILD/bin/fsdp-opt" "$MODEL" -o "$WORK/train.plan" --optimizer=adamw --lr=1e-2 \
  --weight-decay=0.01
echo
echo "== fsdp-run train.plan --data=tokens.bin ($(wc -c <"$CORPUS") bytes of $CORPUS) --steps=$STEPS --lr-schedule=cosine:20:1e-3"
"$BUILD/bin/fsdp-run" "$WORK/train.plan" --data="$WORK/tokens.bin" --steps="$STEPS" \
  --lr-schedule=cosine:20:1e-3 --metrics="$WORK/metrics.jsonl" \
  --save-weights="$WORK/trained.safetensors"

echo
echo "== fsdp-opt $SAMPLER --mode=forward; sampling with fsdp-run --weights=trained.safetensors"
"$BUILD/bin/fsdp-opt" "$SAMPLER" --mode=forward -o "$WORK/sample.plan" >/dev/null
/usr/bin/python3 examples/generate.py --fsdp-run "$BUILD/bin/fsdp-run" \
  --plan "$WORK/sample.plan" --weights "$WORK/trained.safetensors" --bytes 200
