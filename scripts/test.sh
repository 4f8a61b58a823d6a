#!/usr/bin/env bash
# Runs every test: installs the Debian packages and the torch 2.x test
# environment (scripts/setup.sh, scripts/setup-venv.sh; both idempotent),
# configures and builds with CMake + Ninja through the compiler cache
# (scripts/ccache-env.sh), then runs ctest, which drives the lit suite
# (FileCheck tests of the dialects, frontend and driver), the GoogleTest
# suites (including the ONNX node-test conformance count) and the
# end-to-end tests. Exit status is ctest's.
#
# ctest runs tests in parallel, one per core (CTEST_PARALLEL_LEVEL, or -j
# among CTEST_ARGS, chooses another number); the tests that must run alone
# say so in their properties (tests/CMakeLists.txt, tests/unit/).
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

# phase NAME: one line with the seconds since the previous one, so a CI
# log shows where its time went (set-up, venv, configure, build, ctest).
mark=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - mark)) s" >&2; mark=$SECONDS; }

./scripts/setup.sh
phase "Debian packages"
./scripts/setup-venv.sh
phase "torch 2.x venv"
source scripts/ccache-env.sh
export CTEST_PARALLEL_LEVEL=${CTEST_PARALLEL_LEVEL:-$(nproc)}
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
phase "configure"
cmake --build "$BUILD"
phase "build"
cd "$BUILD"
status=0
ctest --output-on-failure "${CTEST_ARGS[@]}" || status=$?
phase "ctest (-j$CTEST_PARALLEL_LEVEL)"
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
