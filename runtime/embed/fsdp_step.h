/*===- fsdp_step.h - C entry points of a compiled training step ---------===//
//
// For programs that embed a step compiled with `fsdp-opt --emit=object`
// (an object defining fsdp_embedded_step, EmbeddedStep.h) and link it with
// libfsdp_runtime.a and the flags in libfsdp_runtime.link. Two ways in:
//
//  - fsdp_step_main(argc, argv, &fsdp_embedded_step) is fsdp-run with the
//    plan built in (what `--emit=binary`'s main calls): fsdp-run's flags,
//    messages (prefixed with argv[0]'s name) and exit codes, no plan
//    argument; `--help` also says what the step was compiled from.
//
//  - The session API trains a step a few steps at a time from the caller's
//    own loop: fsdp_step_init takes fsdp-run's flags as argv (argv[0]
//    names the program; --steps=K, the step the run ends at, is required;
//    data from --data or --input like the CLI; --resume, --metrics,
//    --save, --lr-schedule, --device ... as fsdp-run), sets up the plan's
//    ranks exactly as fsdp-run would (a plan for N ranks runs them as N
//    threads of this process, each keeping its thread; under mpirun or
//    torchrun this process is its one rank, and every process must make
//    the same calls), and loads the weights. fsdp_step_run takes the next
//    steps, fsdp_step_save writes a checkpoint (fsdp-run --resume and the
//    binary read it), fsdp_step_finalize ends the run as fsdp-run's end
//    does (--save, --save-weights, --outputs) and frees the session.
//    Training plans only. One session at a time under mpirun (MPI is
//    initialized once per process).
//
// Every function returns 0 on success and 1 on failure (never throws or
// aborts on a usage error); fsdp_step_last_error() then says why, in
// fsdp-run's words. As in fsdp-run, a rank that fails during a multi-rank
// run aborts its group (under mpirun that ends the job); the session then
// only accepts fsdp_step_finalize.
//
//===--------------------------------------------------------------------===*/

#ifndef FSDP_RUNTIME_EMBED_FSDP_STEP_H
#define FSDP_RUNTIME_EMBED_FSDP_STEP_H

#include "EmbeddedStep.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fsdp-run's program on `step`; returns the exit code (0, or 1 on error). */
int fsdp_step_main(int argc, char **argv, const FsdpEmbeddedStep *step);

typedef struct fsdp_step fsdp_step_t;

/* Starts a training session of `step` with fsdp-run's flags in argv
 * (argv[0] is the program's name); *out receives it, or null on error. */
int fsdp_step_init(const FsdpEmbeddedStep *step, int argc, char **argv, fsdp_step_t **out);

/* Takes the next `steps` steps (the run may not pass --steps); with
 * last_loss non-null, stores the last step's loss there. */
int fsdp_step_run(fsdp_step_t *session, int64_t steps, double *last_loss);

/* The number of the last step taken (0 before any; after --resume, the
 * checkpoint's step), or -1 for a null session. */
int64_t fsdp_step_current(const fsdp_step_t *session);

/* Writes a checkpoint of the state after the last step taken to
 * DIR/step-N (--save-format, sharded by default; --keep applies). */
int fsdp_step_save(fsdp_step_t *session, const char *dir);

/* Ends the run (summary; --save's final checkpoint, --save-weights,
 * --outputs as at the end of an fsdp-run run) and frees the session, also
 * when that fails or the session had failed. A null session is a no-op. */
int fsdp_step_finalize(fsdp_step_t *session);

/* Why the last failed call of this thread failed ("" when none). */
const char *fsdp_step_last_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif // FSDP_RUNTIME_EMBED_FSDP_STEP_H
