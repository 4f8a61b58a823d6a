#!/usr/bin/env bash
# The main job on the embedded default: builds fsdp-opt and fsdp-run (after
# installing what they need) and shows the product on the example model
# shipped in examples/ (a small byte-level GPT exported from torch) and the
# embedded public-domain text (examples/shakespeare.txt):
#   1. the memory report of a sharded plan (--world-size=2 --shard=full
#      --ckpt=blocks): what each rank will hold, before anything runs;
#   2. that plan compiled (forward, backward, gradient clipping, AdamW) and
#      trained on two in-process ranks with a cosine schedule with warmup,
#      validated every EVAL_EVERY steps on a held-back slice of the text
#      (the last tenth, never trained on), the falling loss printed, the
#      metrics and a page of charts (--plot) written to DEMO_OUT;
#   3. the same model's sampling graph compiled as a forward plan, which
#      generates a little text with the trained weights.
# STEPS (default 300) sets the length of the training run, EVAL_EVERY
# (default 50) how often it validates; DEMO_OUT (default $BUILD/demo) keeps
# run.html and metrics.jsonl after the script ends.
#
# It installs only what it runs: the build's Debian packages (setup.sh
# --build), not the tests' (Debian's torch, clang, the ONNX test data) nor
# their torch 2.x venv (scripts/test.sh makes those).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --build >/dev/null
source scripts/ccache-env.sh
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD" --target fsdp-opt fsdp-run >/dev/null
MODEL=examples/gpt-tiny.onnx
SAMPLER=examples/gpt-tiny-logits.onnx
CORPUS=examples/shakespeare.txt
STEPS=${STEPS:-300}
EVAL_EVERY=${EVAL_EVERY:-50}
OUT=${DEMO_OUT:-$BUILD/demo}
FSDP_OPT="$BUILD/bin/fsdp-opt"
FSDP_RUN="$BUILD/bin/fsdp-run"
PLAN_FLAGS=(--world-size=2 --shard=full --ckpt=blocks)

# The demo shows every part of a training run; a build without one of them
# says which instead of training something else.
require_flag() { # TOOL FLAG
  local help
  help=$("$1" --help 2>&1 || true)
  if ! grep -qF -- "$2" <<<"$help"; then
    echo "demo.sh: error: $(basename "$1") has no $2 flag (this build predates it)" >&2
    exit 1
  fi
}
require_flag "$FSDP_OPT" --clip-grad-norm
for flag in --eval-data --eval-every --eval-batches --plot; do
  require_flag "$FSDP_RUN" "$flag"
done

echo "== fsdp-opt $MODEL --emit=summary"
"$FSDP_OPT" "$MODEL" --emit=summary
echo
echo "== fsdp-opt $MODEL ${PLAN_FLAGS[*]} --emit=report (what each rank will hold)"
"$FSDP_OPT" "$MODEL" "${PLAN_FLAGS[@]}" --emit=report

echo
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
# The data contract's raw token files, one little-endian uint16 per byte:
# the first nine tenths of the text to train on, the last tenth held back
# for validation.
/usr/bin/python3 -c 'import sys, numpy
tokens = numpy.frombuffer(open(sys.argv[1], "rb").read(), dtype=numpy.uint8).astype("<u2")
split = len(tokens) * 9 // 10
tokens[:split].tofile(sys.argv[2])
tokens[split:].tofile(sys.argv[3])' "$CORPUS" "$WORK/train.bin" "$WORK/val.bin"
TRAIN_FLAGS=(--optimizer=adamw --lr=1e-2 --weight-decay=0.01 --clip-grad-norm=1.0)
echo "== fsdp-opt $MODEL -o train.plan ${PLAN_FLAGS[*]} ${TRAIN_FLAGS[*]}"
"$FSDP_OPT" "$MODEL" -o "$WORK/train.plan" "${PLAN_FLAGS[@]}" "${TRAIN_FLAGS[@]}"
echo
RUN_FLAGS=(--world-size=2 --steps="$STEPS" --lr-schedule=cosine:20:1e-3
           --eval-every="$EVAL_EVERY" --eval-batches=3)
echo "== fsdp-run train.plan --data=train.bin --eval-data=val.bin" \
     "($(wc -c <"$CORPUS") bytes of $CORPUS: 90% train, 10% held back) ${RUN_FLAGS[*]}"
"$FSDP_RUN" "$WORK/train.plan" --data="$WORK/train.bin" --eval-data="$WORK/val.bin" \
  "${RUN_FLAGS[@]}" --metrics="$OUT/metrics.jsonl" --plot="$OUT/run.html" \
  --save-weights="$WORK/trained.safetensors"
echo "the run's charts: $OUT/run.html (metrics: $OUT/metrics.jsonl)"

echo
echo "== fsdp-opt $SAMPLER --mode=forward; sampling with fsdp-run --weights=trained.safetensors"
"$FSDP_OPT" "$SAMPLER" --mode=forward -o "$WORK/sample.plan" >/dev/null
/usr/bin/python3 examples/generate.py --fsdp-run "$FSDP_RUN" \
  --plan "$WORK/sample.plan" --weights "$WORK/trained.safetensors" --bytes 200
