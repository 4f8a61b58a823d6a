//===- fsdp-run.cpp - executes a compiled plan ----------------------------===//
//
// fsdp-run's entry point. The program is the runner library (runtime/run,
// FSDPRunDriver), which compiled step binaries share: see runtime/run/
// Driver.cpp for what it does and `fsdp-run --help` for its command line.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Driver.h"

int main(int argc, char **argv) { return fsdp::run::runDriver(argc, argv, nullptr); }
