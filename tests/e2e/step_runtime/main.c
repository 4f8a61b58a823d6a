/* A compiled step binary's main, as fsdp-opt --emit=binary writes it: the
 * whole program is fsdp_step_main on the embedded step. */
#include "fsdp_step.h"

extern const FsdpEmbeddedStep fsdp_embedded_step;

int main(int argc, char **argv) { return fsdp_step_main(argc, argv, &fsdp_embedded_step); }
