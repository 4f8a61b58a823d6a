//===- TokenFileFuzzer.cpp - libFuzzer target: token files (--data) --------===//
//
// fsdp-run --data=FILE reads token ids as raw little-endian uint16 (.bin)
// or as an integer .npy of any shape. The input is read both ways, then a
// token source for a [2, 8] tokens/targets plan draws the first steps'
// batches from whatever was accepted, at two ranks of four, as a run
// would: windows must stay inside the file whatever its length.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/DataSource.h"
#include "tests/fuzz/FuzzSupport.h"

using namespace fsdp;

namespace {

void drawBatches(const std::string &path) {
  rt::HostTensor tokens;
  if (!rt::readTokenFile(path, tokens))
    return;
  const std::vector<rt::InputSpec> inputs = {{"tokens", rt::DType::I64, {2, 8}},
                                             {"targets", rt::DType::I64, {2, 8}}};
  for (int64_t rank : {0, 3}) {
    rt::RankLayout layout;
    layout.rank = rank;
    layout.worldSize = 4;
    std::unique_ptr<rt::DataSource> source;
    if (!rt::openTokenFile(inputs, path, layout, source))
      continue;
    for (int64_t step : {0, 1, 1000003})
      (void)source->fill(step);
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  drawBatches(fuzz::writeScratchFile("tokens.bin", data, size));
  drawBatches(fuzz::writeScratchFile("tokens.npy", data, size));
  return 0;
}
