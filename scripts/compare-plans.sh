#!/bin/bash
# Byte-identity check for changes to how plans are built (the emitter, the
# kernel table, placement): compiles a fixed set of models x flag sets with
# two builds' fsdp-opt and compares the plan files, the weights written
# beside them and the --emit=report output byte for byte. Models: the
# example GPT (train and, from its logits graph, forward), the torch-exported
# test families (when /usr/bin/python3 has torch; exported once into the
# work directory) and the plan emitter's lit inputs that compile standalone.
# Prints one line per case ("same" or what differed) and exits 1 on any
# difference (a case one build compiles and the other refuses included).
#
#   scripts/compare-plans.sh BASELINE_BIN_DIR NEW_BIN_DIR [WORK_DIR]
#
# compare-builds.py goes further (it also trains each plan and compares
# losses); this script needs no fsdp-run and runs in about a minute.

set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 BASELINE_BIN_DIR NEW_BIN_DIR [WORK_DIR]" >&2
  exit 64
fi
OLD=$1/fsdp-opt
NEW=$2/fsdp-opt
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${3:-$(mktemp -d)}
mkdir -p "$WORK"
for tool in "$OLD" "$NEW"; do
  [ -x "$tool" ] || { echo "no fsdp-opt at $tool" >&2; exit 64; }
done

# Flag sets (name:flags): the strategies, schedules, dtypes, offload and
# optimizers the e2e tests cover.
FLAG_SETS=(
  "default:"
  "forward:--mode=forward"
  "full2-ckpt-prefetch:--world-size=2 --shard=full --ckpt=blocks --prefetch=1"
  "full2-prefetch2:--world-size=2 --shard=full --prefetch=2"
  "gradop2-ckpt:--world-size=2 --shard=grad-op --ckpt=blocks"
  "none2:--world-size=2 --shard=none"
  "hybrid4-selective:--world-size=4 --shard=hybrid:2 --ckpt=selective"
  "bf16:--world-size=2 --shard=full --param-dtype=bf16 --reduce-dtype=bf16"
  "offload:--world-size=2 --shard=full --offload=cpu"
  "sgd:--optimizer=sgd --lr=0.05 --momentum=0.9 --nesterov"
  "sgd-plain:--optimizer=sgd --weight-decay=0"
  "nofusion:--fusion=none --ckpt=blocks"
)

MODELS=("gpt-tiny:$ROOT/examples/gpt-tiny.onnx:all")
MODELS+=("gpt-tiny-logits:$ROOT/examples/gpt-tiny-logits.onnx:forward")
if /usr/bin/python3 -c 'import torch, onnx' 2>/dev/null; then
  if [ ! -f "$WORK/models/manifest.json" ]; then
    /usr/bin/python3 "$ROOT/tests/models/export_models.py" "$WORK/models" --only \
      gpt-op17-train gpt-tanh-tied-op17-train transformer-dropout-op17-train \
      mlp-op17-train mlp-op14-train >/dev/null 2>&1 ||
      echo "warning: exporting the test families failed; comparing without them" >&2
  fi
  for f in "$WORK"/models/*.onnx; do
    [ -f "$f" ] && MODELS+=("$(basename "$f" .onnx):$f:all")
  done
else
  echo "warning: /usr/bin/python3 has no torch; comparing without the test families" >&2
fi
# The emitter's lit inputs that need no weights beside them (forward plans).
for f in plan-emitter plan-emitter-views plan-emitter-fused plan-emitter-slice-views; do
  MODELS+=("$f:$ROOT/tests/lit/compiler/Target/$f.mlir:mlir")
done

# compile BIN OUTDIR MODEL FLAGS... -> writes OUTDIR/x.plan, its weights and
# OUTDIR/report.txt; returns non-zero when the compiler refuses.
compile() {
  local bin=$1 out=$2 model=$3
  shift 3
  mkdir -p "$out"
  "$bin" "$model" --emit=plan "$@" -o "$out/x.plan" >"$out/log" 2>&1 &&
    "$bin" "$model" "$@" --emit=report -o "$out/report.txt" >>"$out/log" 2>&1
}

cases=0
failures=0
for m in "${MODELS[@]}"; do
  IFS=: read -r mname mpath mkind <<<"$m"
  for fs in "${FLAG_SETS[@]}"; do
    fname=${fs%%:*}
    read -r -a flags <<<"${fs#*:}"
    case $mkind in
    forward) [ "$fname" = forward ] || continue ;;
    mlir) [ "$fname" = forward ] || continue ;;
    esac
    dir="$WORK/cases/$mname/$fname"
    rm -rf "$dir"
    compile "$OLD" "$dir/old" "$mpath" "${flags[@]}"
    old_rc=$?
    compile "$NEW" "$dir/new" "$mpath" "${flags[@]}"
    new_rc=$?
    cases=$((cases + 1))
    label=$(printf '%-34s %-20s' "$mname" "$fname")
    if [ $old_rc -ne 0 ] && [ $new_rc -ne 0 ]; then
      if cmp -s "$dir/old/log" "$dir/new/log"; then
        echo "$label same (both refuse)"
      else
        echo "$label DIFFERENT refusal messages"; failures=$((failures + 1))
      fi
      continue
    fi
    if [ $old_rc -ne $new_rc ]; then
      echo "$label FAILED to compile with $([ $old_rc -ne 0 ] && echo baseline || echo new)"
      failures=$((failures + 1))
      continue
    fi
    diffs=()
    for f in x.plan x.safetensors report.txt; do
      if [ -f "$dir/old/$f" ] || [ -f "$dir/new/$f" ]; then
        cmp -s "$dir/old/$f" "$dir/new/$f" || diffs+=("$f")
      fi
    done
    if [ ${#diffs[@]} -eq 0 ]; then
      echo "$label same"
    else
      echo "$label DIFFERENT: ${diffs[*]}"; failures=$((failures + 1))
    fi
  done
done
echo "$cases cases, $failures different (work directory: $WORK)"
[ $failures -eq 0 ]
