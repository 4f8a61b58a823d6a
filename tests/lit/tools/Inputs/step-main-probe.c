/* A stand-in for libfsdp_runtime.a's fsdp_step_main in the lit tests of
 * fsdp-opt's linking: it prints what the linked step carries (so a test
 * checks main's arguments, the ABI version, the plan's size, hash and
 * 64-byte alignment, the weights and --help's text) and writes the plan's
 * bytes to argv[1] so a test compares them with a plan file's. It runs no
 * step: the runtime's own tests (tests/e2e/test_binary_step.py) do. */
#include "runtime/embed/EmbeddedStep.h"

#include <stdio.h>

int fsdp_step_main(int argc, char **argv, const FsdpEmbeddedStep *step) {
  printf("argc %d\n", argc);
  printf("abi %u\n", step->abiVersion);
  printf("plan %llu bytes, hash %016llx, 64-byte aligned %s\n", (unsigned long long)step->planSize,
         (unsigned long long)step->planHash,
         ((unsigned long long)(size_t)step->plan % 64) == 0 ? "yes" : "no");
  printf("weights %s, embedded %llu bytes\n", step->weightsFile ? step->weightsFile : "(none)",
         (unsigned long long)step->weightsSize);
  printf("fused %u, ptx %s\n", step->numFused, step->ptxSm80 ? "yes" : "no");
  printf("info %s\n", step->info);
  if (argc > 1) {
    FILE *out = fopen(argv[1], "wb");
    if (!out || fwrite(step->plan, 1, step->planSize, out) != step->planSize)
      return 1;
    fclose(out);
  }
  if (argc > 2 && step->weights) {
    FILE *out = fopen(argv[2], "wb");
    if (!out || fwrite(step->weights, 1, step->weightsSize, out) != step->weightsSize)
      return 1;
    fclose(out);
  }
  return 0;
}
