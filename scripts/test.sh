#!/usr/bin/env bash
# Runs every test: installs the Debian packages (idempotent), configures and
# builds with CMake + Ninja, then runs ctest, which drives the lit suite
# (FileCheck tests of the dialects, frontend and driver), the GoogleTest
# suites (including the ONNX node-test conformance count) and the torch
# model-family end-to-end test. Exit status is ctest's.
#
#   scripts/test.sh [--sanitize=address,undefined|thread] [-- CTEST_ARGS...]
#
# --sanitize builds the tree a second time with those sanitizers
# (scripts/configure-sanitized.sh; build-sanitize-NAMES) and runs the
# suites there with every finding fatal (scripts/sanitizers/env.sh sets
# the runtime options). CTEST_ARGS select tests (-L unit, -R regex).
set -euo pipefail
cd "$(dirname "$0")/.."

SANITIZE=""
CTEST_ARGS=()
while (($#)); do
  case $1 in
    --sanitize=*) SANITIZE=${1#--sanitize=} ;;
    --) shift; CTEST_ARGS=("$@"); break ;;
    *) echo "test.sh: unknown argument '$1' (usage: test.sh [--sanitize=address,undefined|thread] [-- CTEST_ARGS])" >&2; exit 1 ;;
  esac
  shift
done

./scripts/setup.sh
if [[ -z $SANITIZE ]]; then
  BUILD=${BUILD_DIR:-build}
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
else
  BUILD=${BUILD_DIR:-build-sanitize-${SANITIZE//,/-}}
  ./scripts/configure-sanitized.sh "$SANITIZE" "$BUILD"
  export FSDP_SANITIZER_REPORTS=$PWD/$BUILD/sanitizer-reports
  rm -rf "$FSDP_SANITIZER_REPORTS"
  mkdir -p "$FSDP_SANITIZER_REPORTS"
  source scripts/sanitizers/env.sh
fi
cmake --build "$BUILD"
cd "$BUILD"
status=0
ctest --output-on-failure "${CTEST_ARGS[@]}" || status=$?
# Every sanitizer report fails the run, even one from a process whose
# failure its test expected (scripts/sanitizers/env.sh).
if [[ -n $SANITIZE ]] && compgen -G "$FSDP_SANITIZER_REPORTS/report*" >/dev/null; then
  for report in "$FSDP_SANITIZER_REPORTS"/report*; do
    echo "=== sanitizer report $report"
    cat "$report"
  done
  echo "test.sh: $(ls "$FSDP_SANITIZER_REPORTS" | wc -l) sanitizer report(s) under $FSDP_SANITIZER_REPORTS" >&2
  ((status)) || status=1
fi
exit $status
