#!/usr/bin/env bash
# Runs every test: installs the Debian packages (idempotent), configures and
# builds with CMake + Ninja, then runs ctest, which drives the lit suite
# (FileCheck tests of the dialects, frontend and driver), the GoogleTest
# suites (including the ONNX node-test conformance count) and the torch
# model-family end-to-end test. Exit status is ctest's.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
BUILD=${BUILD_DIR:-build}
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$BUILD"
cd "$BUILD"
ctest --output-on-failure
