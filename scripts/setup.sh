#!/usr/bin/env bash
# Installs the Debian packages fsdp-opt needs on a fresh Debian 12 machine,
# in two groups:
#
#   scripts/setup.sh            build + test: everything scripts/test.sh,
#                               scripts/fuzz.sh and CI need
#   scripts/setup.sh --build    build only: what configuring, building and
#                               scripts/demo.sh need (the demo runs no test)
#
# Idempotent: packages already present are skipped, so the README's commands
# and CI can call it unconditionally. Later issues append their packages to
# one of the two lists (nothing is installed by hand). The torch 2.x test
# environment (about 3 GB of PyPI wheels) is not a Debian package: it is
# scripts/setup-venv.sh's, which scripts/test.sh runs after this script.
set -euo pipefail

GROUP=test
case ${1:-} in
  "") ;;
  --build) GROUP=build ;;
  *) echo "setup.sh: unknown argument '$1' (usage: setup.sh [--build])" >&2; exit 1 ;;
esac

# Configuring (every find_package of the CMake tree, tests/ included) and
# building every target, plus what scripts/demo.sh runs beside the tools.
BUILD_PACKAGES=(
  # Build, with Debian's compiler cache (CMakeLists.txt uses it when found).
  cmake ninja-build g++ lld-19 ccache
  # Compiler side: MLIR 19 and its LLVM, lit/FileCheck.
  llvm-19-dev llvm-19-tools libmlir-19-dev mlir-19-tools
  # ONNX frontend.
  libonnx-dev libprotobuf-dev protobuf-compiler
  # The runtime's CPU kernels (OpenBLAS, so GEMMs are not 24x slower).
  libopenblas-dev
  # oneDNN: the CPU kernels' bf16/f16 GEMMs with f32 accumulation (torch's
  # CPU bf16 matmul library; runtime/backends/cpu/OneDnnMatmul.h).
  libdnnl-dev
  # Plans: the FlatBuffers schema compiler and headers.
  flatbuffers-compiler libflatbuffers-dev
  # The MPI communicator (multi-process runs under mpirun) and its tests,
  # which ctest runs under mpirun: Open MPI's headers, library and launcher.
  libopenmpi-dev openmpi-bin
  # The CUDA kernels' SIMT emulation (each CUDA thread a fiber) for their
  # tests on machines without a GPU.
  libboost-context-dev
  # GoogleTest: the tests' CMake files need it to configure.
  libgtest-dev libgmock-dev
  # The demo's token files (scripts/demo.sh, examples/generate.py).
  python3-numpy
)

# What the tests add: the ONNX node tests, torch as the oracle that exports
# the model families, the venv's interpreter, and the hardening tools.
TEST_PACKAGES=(
  libonnx-testdata python3-torch python3-onnx
  # The torch 2.x tests' virtual environment (scripts/setup-venv.sh).
  python3-venv
  # Hardening: clang with libFuzzer and the sanitizer runtimes, for the
  # fuzz targets (scripts/fuzz.sh) and the sanitizer builds
  # (scripts/test.sh --sanitize=...). The same LLVM release as MLIR's.
  clang-19 libclang-rt-19-dev
)

PACKAGES=("${BUILD_PACKAGES[@]}")
[[ $GROUP == test ]] && PACKAGES+=("${TEST_PACKAGES[@]}")

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
  echo "setup: all ${#PACKAGES[@]} packages present ($GROUP group)"
fi
