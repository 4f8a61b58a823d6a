# Sourced by scripts/test.sh --sanitize and scripts/fuzz.sh: the sanitizer
# runtimes' options for every process a test starts (the tools the e2e
# tests run included). Every finding is fatal and fails its test; the
# suppression files name only Debian's uninstrumented libraries (Open MPI,
# OpenBLAS), never our code. Options already set in the environment win.
_sanitizers_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:fast_unwind_on_malloc=0:allocator_may_return_null=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$_sanitizers_dir/lsan.supp:print_suppressions=0}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$_sanitizers_dir/tsan.supp}
# With FSDP_SANITIZER_REPORTS set (scripts/test.sh sets it), every report
# also lands in a file there, report.PID: a test that expects its process
# to fail (a refused input, exit 1) would otherwise pass over a finding,
# since a sanitizer's exit status is 1 as well. test.sh fails on any file.
if [[ -n ${FSDP_SANITIZER_REPORTS:-} ]]; then
  for _v in ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS TSAN_OPTIONS; do
    export "$_v=${!_v}:log_path=$FSDP_SANITIZER_REPORTS/report:log_exe_name=1"
  done
  unset _v
fi
# fast_unwind_on_malloc=0: Open MPI's components leak at MPI_Finalize and
# are unloaded before LeakSanitizer looks; frame pointers stop at their
# uninstrumented frames, and only the full unwind reaches libmpi.so's
# frames, which lsan.supp names.
# One BLAS thread: OpenBLAS's own threads are not instrumented.
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
unset _sanitizers_dir
