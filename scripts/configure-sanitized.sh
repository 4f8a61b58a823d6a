#!/usr/bin/env bash
# Configures a sanitizer build: configure-sanitized.sh SANITIZERS BUILD_DIR,
# SANITIZERS being address,undefined or thread. clang-19 (the LLVM release
# of MLIR, with libFuzzer and the sanitizer runtimes), -O1, CUDA off (no
# sanitizer sees into a GPU). The address,undefined build also carries
# libFuzzer's instrumentation and builds the fuzz targets, so one build
# serves scripts/test.sh --sanitize=address,undefined and scripts/fuzz.sh.
# Objects go through the compiler cache as in every build (CMakeLists.txt;
# the callers source scripts/ccache-env.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
SANITIZERS=$1
BUILD=$2
case $SANITIZERS in
  address,undefined) FUZZ=ON ;;
  thread) FUZZ=OFF ;;
  *) echo "configure-sanitized.sh: unknown sanitizers '$SANITIZERS' (valid: address,undefined, thread)" >&2; exit 1 ;;
esac
CC=clang-19 CXX=clang++-19 cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DFSDP_ENABLE_CUDA=OFF -DFSDP_SANITIZE="$SANITIZERS" -DFSDP_FUZZ=$FUZZ >/dev/null
