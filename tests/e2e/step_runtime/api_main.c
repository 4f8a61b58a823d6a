/* A program of a user's own driving an embedded step through the session
 * API of fsdp_step.h (plain C): trains --steps in calls of one step,
 * printing each loss with full precision, saves a checkpoint to
 * $FSDP_TEST_SAVE after the second step when set, then finalizes.
 * Exercises the refusals the API owes its caller too: a null session and a
 * run past --steps. */
#include "fsdp_step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const FsdpEmbeddedStep fsdp_embedded_step;

int main(int argc, char **argv) {
  fsdp_step_t *session = NULL;
  if (fsdp_step_run(NULL, 1, NULL) == 0 || strstr(fsdp_step_last_error(), "no session") == NULL) {
    fprintf(stderr, "api: a null session was not refused\n");
    return 1;
  }
  if (fsdp_step_init(&fsdp_embedded_step, argc, argv, &session) != 0) {
    fprintf(stderr, "api: init: %s\n", fsdp_step_last_error());
    return 1;
  }
  const char *save = getenv("FSDP_TEST_SAVE");
  double loss = 0;
  int64_t step;
  while (fsdp_step_run(session, 1, &loss) == 0) {
    step = fsdp_step_current(session);
    printf("api step %lld loss %.17g\n", (long long)step, loss);
    if (save && step == 2 && fsdp_step_save(session, save) != 0) {
      fprintf(stderr, "api: save: %s\n", fsdp_step_last_error());
      return 1;
    }
  }
  /* The loop ends when a step past --steps is refused. */
  printf("api stopped: %s\n", fsdp_step_last_error());
  if (fsdp_step_finalize(session) != 0) {
    fprintf(stderr, "api: finalize: %s\n", fsdp_step_last_error());
    return 1;
  }
  return 0;
}
