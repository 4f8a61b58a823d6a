#!/usr/bin/env bash
# The GPU tests in one command, for a machine with an NVIDIA GPU: configures
# and builds with the CUDA backend (FSDP_ENABLE_CUDA=ON, sm_80 and sm_90;
# nvcc must be on PATH or in /usr/local/cuda/bin), then runs
#   1. ctest -L gpu: tests/gpu/test_device_parity.py --device=cuda, the
#      GPU-vs-CPU comparison of whole plans (forward, training, offload,
#      checkpoint resume both ways, graphs off/on, memory, refusals,
#      test_gradcheck.py on the GPU, sharded plans at world sizes 2, 4
#      and 8 as far as the machine has GPUs: in-process ranks and mpirun,
#      collectives on NCCL, and a compiled step: gpt-tiny's ./step from
#      fsdp-opt --emit=binary, whose Fused chains run the generated PTX,
#      against fsdp-run on the GPU and the CPU, its --help naming the PTX
#      modules), gpu-generated-ptx (fsdp-gpu-ptx-tests: the CUDA device's
#      loader and Fused dispatch with a hand-written PTX fixture, in and
#      out of CUDA graphs), gpu-generated-ptx-programs
#      (fsdp-gpu-codegen-tests: the compiler's own PTX for programs
#      covering every Fused op code and broadcast position, on 1 to 3M
#      elements, launched directly, through the device's Fused launch and
#      from a CUDA graph, against the CPU interpreter bit for bit, 1 ulp
#      where log is involved), and gpu-nccl-channel (fsdp-gpu-nccl-tests:
#      the NCCL channel against the CPU communicator at world size 1 and
#      across every GPU);
#   2. fsdp-runtime-tests --gtest_filter='*cuda*:*Cuda*:GemmMapping*': the device
#      conformance suite instantiated for the CUDA device, the CUDA
#      kernels' SIMT tests and the cuBLAS mapping tests (FSDP_GTEST_FILTER
#      replaces the filter);
# and prints a summary. Logs go to BUILD/test-gpu-logs/.
#
# Exit status: 0 when everything ran on a GPU and passed; 1 when anything
# failed (build included, and a CUDA device that cannot be created on a
# machine that has a GPU); 2 when there is no GPU: the build still ran (so
# nvcc and ptxas accepted the device code), but no test ran on a GPU and
# nothing is reported as passed.
#
#   scripts/test-gpu.sh                 # BUILD_DIR (default build-gpu)
#   BUILD_DIR=build JOBS=16 scripts/test-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
FILTER=${FSDP_GTEST_FILTER:-'*cuda*:*Cuda*:GemmMapping*'}
LOGS="$BUILD/test-gpu-logs"
mkdir -p "$LOGS"

say() { printf '%s\n' "$*"; }
rule() { say "== $* =="; }

# --- Is there a GPU? (The driver's own view; fsdp-run is asked later.)
GPU="none"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >"$LOGS/nvidia-smi.txt" 2>&1 \
    && grep -q '^GPU ' "$LOGS/nvidia-smi.txt"; then
  GPU=$(grep '^GPU ' "$LOGS/nvidia-smi.txt" | head -1)
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader \
    >>"$LOGS/nvidia-smi.txt" 2>&1 || true
fi
rule "GPU"
if [ "$GPU" = "none" ]; then
  say "no GPU: nvidia-smi finds none (or is not installed); building only, no test runs on a GPU"
else
  say "$GPU"
fi

# --- Configure and build (fsdp-opt, fsdp-run, libfsdp_runtime.a, the tests).
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
LAUNCHER=()
if command -v ccache >/dev/null 2>&1; then
  LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
rule "build ($BUILD, FSDP_ENABLE_CUDA=ON, sm_80 + sm_90)"
if ! cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DFSDP_ENABLE_CUDA=ON \
    "-DCMAKE_CUDA_ARCHITECTURES=80-real;90" "${LAUNCHER[@]}" >"$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"
  say "FAILED: configure (log: $LOGS/configure.log)"
  exit 1
fi
if ! grep -q "CUDA backend ON" "$LOGS/configure.log"; then
  grep "CUDA backend" "$LOGS/configure.log"
  say "FAILED: the CUDA backend is not enabled (is nvcc installed?)"
  exit 1
fi
# fsdp_runtime: libfsdp_runtime.a, which fsdp-opt --emit=binary links (the
# compiled-step row of gpu-parity). fsdp-gpu-ptx-tests and
# fsdp-gpu-codegen-tests: generated PTX for Fused chains (gpu-generated-ptx,
# gpu-generated-ptx-programs).
TARGETS=(fsdp-opt fsdp-run fsdp_runtime fsdp-runtime-tests fsdp-gpu-ptx-tests
         fsdp-gpu-codegen-tests)
# The NCCL channel's GPU test exists when the build found nccl.h.
if grep -q "fsdp-gpu-nccl-tests" "$BUILD/build.ninja" 2>/dev/null; then
  TARGETS+=(fsdp-gpu-nccl-tests)
fi
if ! cmake --build "$BUILD" -j "$JOBS" --target "${TARGETS[@]}" \
    >"$LOGS/build.log" 2>&1; then
  grep -E "error|FAILED" "$LOGS/build.log" | head -40
  say "FAILED: build (log: $LOGS/build.log)"
  exit 1
fi
say "built"

# --- 1. The GPU suite (ctest label gpu).
rule "ctest -L gpu"
(cd "$BUILD" && ctest -L gpu --verbose --timeout 7200) >"$LOGS/ctest-gpu.log" 2>&1
CTEST_RC=$?
# The driver's own lines (rows, "N passed, M failed", or "no GPU: ...").
sed -n 's/^[0-9]*: //p' "$LOGS/ctest-gpu.log" | grep -v '^Test command:\|^Working Directory:\|^Environment variables:\|^Test timeout' || true
# ctest's own "100% tests passed" counts a skipped test as passed: count
# its per-test result lines instead.
CTEST_TOTAL=$(grep -cE "^[0-9]+/[0-9]+ Test +#" "$LOGS/ctest-gpu.log")
CTEST_PASSED=$(grep -cE "^[0-9]+/[0-9]+ Test +#.* Passed " "$LOGS/ctest-gpu.log")
CTEST_SKIPPED=$(grep -cE "^[0-9]+/[0-9]+ Test +#.*\*\*\*Skipped " "$LOGS/ctest-gpu.log")

# --- 2. The CUDA device conformance tests.
rule "fsdp-runtime-tests --gtest_filter='$FILTER'"
"$BUILD/bin/fsdp-runtime-tests" --gtest_filter="$FILTER" --gtest_brief=1 \
  >"$LOGS/conformance.log" 2>&1
GTEST_RC=$?
# --gtest_brief prints only failures (one line each) and the totals.
grep -E "^\[  (PASSED|FAILED|SKIPPED) " "$LOGS/conformance.log" | head -60
count() { sed -n "s/^\[  $1 *\] \([0-9]*\) tests\?\.\$/\1/p" "$LOGS/conformance.log" | head -1; }
G_PASSED=$(count PASSED); G_SKIPPED=$(count SKIPPED)
G_FAILED=$(grep -c "^\[  FAILED  \] .*(" "$LOGS/conformance.log")

# --- Summary.
rule "summary"
say "GPU:                 $GPU"
GPU_COUNT=$(grep -c '^GPU ' "$LOGS/nvidia-smi.txt" 2>/dev/null || echo 0)
say "GPUs:                $GPU_COUNT (sharded plans run at world sizes up to it; one GPU: world size 1 only, NCCL through gpu-nccl-channel)"
say "build:               ok (sm_80 + sm_90)"
say "ctest -L gpu:        passed $CTEST_PASSED, failed $((CTEST_TOTAL - CTEST_PASSED - CTEST_SKIPPED)), skipped $CTEST_SKIPPED (exit $CTEST_RC)"
say "conformance (gtest): passed ${G_PASSED:-0}, failed ${G_FAILED:-0}, skipped ${G_SKIPPED:-0} (exit $GTEST_RC)"
say "logs:                $LOGS"
if [ "$CTEST_RC" -ne 0 ] || [ "$GTEST_RC" -ne 0 ] || [ "$CTEST_TOTAL" -eq 0 ]; then
  say "RESULT: FAILED"
  exit 1
fi
if [ "$GPU" = "none" ]; then
  say "RESULT: no GPU: the build passed, no test ran on a GPU (nothing counts as passed)"
  exit 2
fi
if [ "$CTEST_SKIPPED" -ne 0 ] || [ "${G_SKIPPED:-0}" -ne 0 ]; then
  say "RESULT: FAILED: tests were skipped on a machine with a GPU (could fsdp-run not use it?)"
  exit 1
fi
say "RESULT: PASSED on $GPU"
exit 0
