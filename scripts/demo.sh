#!/usr/bin/env bash
# The main job on the embedded default: builds fsdp-opt (after installing
# what it needs), imports the example model shipped in examples/ (a small
# byte-level GPT exported from torch) and prints its IR and a summary, then
# compiles a forward plan and runs it with fsdp-run on a byte-level batch,
# printing the loss. Later issues make this compile a training plan and
# train it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target fsdp-opt fsdp-run >/dev/null
MODEL=${1:-examples/gpt-tiny.onnx}
echo "== fsdp-opt $MODEL --emit=mlir --stop-after=import"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=mlir --stop-after=import \
  --mlir-elide-elementsattrs-if-larger=16
echo
echo "== fsdp-opt $MODEL --emit=summary"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=summary

echo
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "== fsdp-opt $MODEL --mode=forward -o $WORK/gpt.plan"
"$BUILD/bin/fsdp-opt" "$MODEL" --mode=forward -o "$WORK/gpt.plan"
# A byte-level batch: two windows of text, targets shifted by one byte.
/usr/bin/python3 - "$WORK" <<'PY'
import sys, numpy
text = (b"It was the best of times, it was the worst of times, it was the age of "
        b"wisdom, it was the age of foolishness, it was the epoch of belief...")
tokens = numpy.frombuffer(text, dtype=numpy.uint8).astype(numpy.int64)
starts = [0, 40]
numpy.save(f"{sys.argv[1]}/idx.npy", numpy.stack([tokens[s:s + 64] for s in starts]))
numpy.save(f"{sys.argv[1]}/targets.npy", numpy.stack([tokens[s + 1:s + 65] for s in starts]))
PY
echo "== fsdp-run gpt.plan --input=idx=... --input=targets=... --outputs=..."
"$BUILD/bin/fsdp-run" "$WORK/gpt.plan" --input=idx="$WORK/idx.npy" \
  --input=targets="$WORK/targets.npy" --outputs="$WORK/out" --time
/usr/bin/python3 -c "import numpy, sys; print('loss (untrained, ln 256 = 5.545):', float(numpy.load(sys.argv[1])))" "$WORK/out/loss.npy"
