#!/usr/bin/env bash
# Installs every Debian package fsdp-opt needs to build and test on a fresh
# Debian 12 machine. Idempotent: packages already present are skipped, so the
# README's commands and CI can call it unconditionally. Later issues append
# their packages to PACKAGES (one list, so nothing is installed by hand).
set -euo pipefail

PACKAGES=(
  # Build.
  cmake ninja-build g++ lld-19
  # Compiler side: MLIR 19 and its LLVM, lit/FileCheck.
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  # ONNX frontend.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # Tests: GoogleTest, the ONNX node tests, torch as the oracle that exports
  # the model families (with OpenBLAS so torch is not 24x slower).
  libgtest-dev libgmock-dev libonnx-testdata
  python3-torch python3-onnx python3-numpy libopenblas-dev
  # Plans: the FlatBuffers schema compiler and headers.
  flatbuffers-compiler libflatbuffers-dev
  # The MPI communicator (multi-process runs under mpirun) and its tests,
  # which ctest runs under mpirun: Open MPI's headers, library and launcher.
  libopenmpi-dev openmpi-bin
  # The torch 2.x tests' virtual environment (scripts/setup-venv.sh).
  python3-venv
  # The CUDA kernels' SIMT emulation (each CUDA thread a fiber) for their
  # tests on machines without a GPU.
  libboost-context-dev
  # Hardening: clang with libFuzzer and the sanitizer runtimes, for the
  # fuzz targets (scripts/fuzz.sh) and the sanitizer builds
  # (scripts/test.sh --sanitize=...). The same LLVM release as MLIR's.
  clang-19 libclang-rt-19-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#PACKAGES[@]} packages present"
fi

# torch 2.x from PyPI for the tests of python/fsdp_opt and tests/e2e/torch2,
# in a virtual environment beside the checkout (after python3-venv above).
"$(dirname "$0")/setup-venv.sh"
