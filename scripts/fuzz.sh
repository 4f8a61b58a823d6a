#!/usr/bin/env bash
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 30)
# and fails on any crash, leak, timeout or sanitizer report:
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 600 plan npy
#
# It configures the fuzz build (clang-19, ASan + UBSan, libFuzzer coverage:
# the build scripts/test.sh --sanitize=address,undefined makes, in the same
# directory) and builds there only the fuzz targets and the libraries they
# link (target fuzz-targets), through the compiler cache. It makes the seed
# corpora from the test files (tests/fuzz/make_seeds.py) with fsdp-opt and
# fsdp-run of the ordinary build (FUZZ_TOOLS_BUILD_DIR, default build: CI's
# scripts/test.sh has just built them; without that tree, the fuzz build's
# own), and runs the targets, FUZZ_JOBS at a time
# (default: the number of cores), each on its own corpus under
# $BUILD/fuzz-corpus/TARGET, which keeps what it found for the next run.
# A crashing input is saved under $BUILD/fuzz-artifacts/TARGET; rerun it
# with `$BUILD/bin/fuzz-TARGET FILE`. The table at the end gives each
# target's executions, edges covered (libFuzzer's cov), corpus size and
# outcome.
#
# FUZZ_SEED=N fixes libFuzzer's random seed (default: a fresh one each
# run). CI sets it, so that a CI run replays the same mutations from the
# same seed corpora and a red CI reruns the same way; finding new bugs is
# the long runs' job, with fresh seeds.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

SECONDS_EACH=${1:-30}
[[ $# -gt 0 ]] && shift
if ! [[ $SECONDS_EACH =~ ^[0-9]+$ ]] || ((SECONDS_EACH < 1)); then
  echo "fuzz.sh: SECONDS must be a whole number >= 1, got '$SECONDS_EACH'" >&2
  exit 1
fi
if [[ -n ${FUZZ_SEED:-} ]] && ! [[ $FUZZ_SEED =~ ^[1-9][0-9]{0,8}$ ]]; then
  echo "fuzz.sh: FUZZ_SEED must be a whole number from 1 to 999999999, got '$FUZZ_SEED'" >&2
  exit 1
fi
BUILD=${FUZZ_BUILD_DIR:-build-sanitize-address-undefined}
TOOLS_BUILD=${FUZZ_TOOLS_BUILD_DIR:-build}
JOBS=${FUZZ_JOBS:-$(nproc)}

./scripts/setup.sh >/dev/null
source scripts/ccache-env.sh
"$ROOT/scripts/configure-sanitized.sh" address,undefined "$BUILD"
# Every seed also runs through its sanitized fuzz target first (libFuzzer
# reads the whole corpus before mutating), so the tools that write the
# seeds need no sanitized build of their own: the fuzz build compiles what
# the fuzz targets link and nothing else.
fuzz_build_start=$SECONDS
if [[ -f $TOOLS_BUILD/CMakeCache.txt ]]; then
  cmake --build "$BUILD" --target fuzz-targets
  cmake --build "$TOOLS_BUILD" --target fsdp-opt fsdp-run
  TOOLS=$TOOLS_BUILD/bin
else
  cmake --build "$BUILD" --target fuzz-targets fsdp-opt fsdp-run
  TOOLS=$BUILD/bin
fi
echo "fuzz.sh: build took $((SECONDS - fuzz_build_start)) s" >&2

ALL_TARGETS=()
for exe in "$BUILD"/bin/fuzz-*; do
  ALL_TARGETS+=("$(basename "$exe" | sed 's/^fuzz-//')")
done
TARGETS=("$@")
((${#TARGETS[@]})) || TARGETS=("${ALL_TARGETS[@]}")
for t in "${TARGETS[@]}"; do
  [[ -x $BUILD/bin/fuzz-$t ]] || { echo "fuzz.sh: no target '$t' (have: ${ALL_TARGETS[*]})" >&2; exit 1; }
done

SEEDS=$BUILD/fuzz-seeds
if [[ ! -d $SEEDS || tests/fuzz/make_seeds.py -nt $SEEDS ]]; then
  rm -rf "$SEEDS"
  /usr/bin/python3 tests/fuzz/make_seeds.py --out "$SEEDS" \
    --fsdp-opt "$TOOLS/fsdp-opt" --fsdp-run "$TOOLS/fsdp-run"
fi

source scripts/sanitizers/env.sh
# The full unwind on every malloc that env.sh asks for (to match Open MPI's
# leaks, which no fuzz target reaches) would cost the fuzzers most of their
# speed: ASan's default fast unwinder here.
export ASAN_OPTIONS=${ASAN_OPTIONS//fast_unwind_on_malloc=0:/}

LOGS=$BUILD/fuzz-logs
mkdir -p "$LOGS"

# fuzz_one TARGET: one target's run; its log is $LOGS/TARGET.log.
fuzz_one() {
  local t=$1
  local corpus=$BUILD/fuzz-corpus/$t artifacts=$BUILD/fuzz-artifacts/$t/
  mkdir -p "$corpus" "$artifacts"
  local dict=()
  [[ -f $SEEDS/dict/$t.dict ]] && dict=(-dict="$SEEDS/dict/$t.dict")
  local seed=()
  [[ -n ${FUZZ_SEED:-} ]] && seed=(-seed="$FUZZ_SEED")
  # -close_fd_mask=3: the tools' own error messages are the expected
  # outcome of most inputs; libFuzzer's reports still reach the log.
  # -rss_limit_mb and -malloc_limit_mb: no input may make the tools take
  # more than 2 GiB, whatever sizes it declares.
  "$BUILD/bin/fuzz-$t" "$corpus" "$SEEDS/$t" "${dict[@]}" "${seed[@]}" \
    -max_total_time="$SECONDS_EACH" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
    -max_len=1048576 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$artifacts" \
    >"$LOGS/$t.log" 2>&1
}

echo "fuzz.sh: ${#TARGETS[@]} targets, ${SECONDS_EACH}s each, $JOBS at a time${FUZZ_SEED:+, seed $FUZZ_SEED}"
declare -A STATUS
pids=()
names=()
for t in "${TARGETS[@]}"; do
  while (($(jobs -rp | wc -l) >= JOBS)); do sleep 1; done
  fuzz_one "$t" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then STATUS[${names[$i]}]=ok; else STATUS[${names[$i]}]=FAILED; fi
done

failed=0
printf '\n%-16s %12s %10s %8s %10s  %s\n' target executions exec/s edges corpus outcome
for t in "${TARGETS[@]}"; do
  log=$LOGS/$t.log
  # A target that failed early has no statistics: '?' rather than an exit.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1) || true
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1) || true
  edges=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -1 | awk '{print $2}')
  corpus=$(find "$BUILD/fuzz-corpus/$t" -type f | wc -l)
  outcome=${STATUS[$t]}
  # Any crash, leak, timeout or out-of-memory input left from this run or
  # an earlier one fails the target. Slow units (over libFuzzer's 10 s
  # report, under the 25 s timeout) are listed, not failed: on a loaded
  # machine an input at one of the tools' budgets can pass 10 s.
  findings=$(find "$BUILD/fuzz-artifacts/$t" -type f ! -name 'slow-unit-*' | wc -l)
  slow=$(find "$BUILD/fuzz-artifacts/$t" -type f -name 'slow-unit-*' | wc -l)
  if [[ $outcome != ok ]] || ((findings)); then
    outcome="FAILED (log: $log; inputs: $BUILD/fuzz-artifacts/$t/)"
    failed=1
  elif ((slow)); then
    outcome="ok; slow inputs (over 10 s): $slow, in $BUILD/fuzz-artifacts/$t/"
  fi
  printf '%-16s %12s %10s %8s %10s  %s\n' "$t" "${execs:-?}" "${rate:-?}" "${edges:-?}" "$corpus" "$outcome"
done
if ((failed)); then
  echo "fuzz.sh: a target failed; its report is at the end of its log" >&2
  for t in "${TARGETS[@]}"; do
    [[ ${STATUS[$t]} == ok ]] || { echo "--- $t"; (grep -A30 -m1 'ERROR: \|runtime error\|deadly signal\|Timeout\|out-of-memory' "$LOGS/$t.log" || tail -40 "$LOGS/$t.log") | head -40; } >&2
  done
  exit 1
fi
echo "fuzz.sh: ${#TARGETS[@]} passed, 0 failed"
