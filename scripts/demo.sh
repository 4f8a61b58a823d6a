#!/usr/bin/env bash
# The main job on the embedded default: builds fsdp-opt (after installing
# what it needs), imports the example model shipped in examples/ (a small
# byte-level GPT exported from torch) and prints its IR and a summary.
# Later issues make this compile a training plan and train it.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh >/dev/null
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target fsdp-opt >/dev/null
MODEL=${1:-examples/gpt-tiny.onnx}
echo "== fsdp-opt $MODEL --emit=mlir --stop-after=import"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=mlir --stop-after=import \
  --mlir-elide-elementsattrs-if-larger=16
echo
echo "== fsdp-opt $MODEL --emit=summary"
"$BUILD/bin/fsdp-opt" "$MODEL" --emit=summary
