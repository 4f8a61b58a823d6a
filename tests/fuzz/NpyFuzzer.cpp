//===- NpyFuzzer.cpp - libFuzzer target: .npy inputs -----------------------===//
//
// fsdp-run --input=NAME=FILE.npy, --eval-input and per-input sample files
// are .npy files: the header is a Python dict literal with a dtype, a
// shape and an order, then the data. readNpy must parse any header and
// check the shape against the file size before it allocates.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Npy.h"
#include "tests/fuzz/FuzzSupport.h"

using namespace fsdp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rt::HostTensor tensor;
  (void)rt::readNpy(fuzz::writeScratchFile("input.npy", data, size), tensor);
  return 0;
}
