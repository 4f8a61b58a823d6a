//===- SafetensorsFuzzer.cpp - libFuzzer target: safetensors files ---------===//
//
// Weights (--weights), checkpoint shards and full checkpoints are
// safetensors files from users and other machines. The input is read the
// three ways the runtime reads them: whole (SafetensorsFile::open, what
// --weights and checkpoint loads do), from memory (a compiled step's
// embedded weights) and by index with ranged reads of every tensor
// (resharding a checkpoint). Each must refuse bad bytes with a Status.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/Safetensors.h"
#include "tests/fuzz/FuzzSupport.h"

#include <vector>

using namespace fsdp;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = fuzz::writeScratchFile("input.safetensors", data, size);
  rt::SafetensorsFile whole;
  if (rt::SafetensorsFile::open(path, whole)) {
    for (const std::string &name : whole.names())
      (void)whole.find(name);
  }
  rt::SafetensorsFile embedded;
  (void)rt::SafetensorsFile::openMemory(data, size, "embedded", embedded);

  rt::SafetensorsIndex index;
  if (!rt::SafetensorsIndex::open(path, index))
    return 0;
  std::vector<uint8_t> buffer;
  for (const auto &[name, info] : index.tensors()) {
    // The index promises each tensor's bytes lie in the file: read the
    // first and last element-sized pieces (never the whole of a huge one).
    const uint64_t piece = std::min<uint64_t>(info.bytes, 64);
    buffer.resize(piece);
    (void)index.read(name, 0, piece, buffer.data());
    (void)index.read(name, info.bytes - piece, piece, buffer.data());
    // Past the end must be refused, not read.
    (void)index.read(name, info.bytes, 1, buffer.data());
  }
  return 0;
}
