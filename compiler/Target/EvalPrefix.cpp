//===- EvalPrefix.cpp - the part of a training step an evaluation runs ----===//
//
// A depth-first walk back from the loss instruction over its producers:
// for a buffer read at instruction i, the latest writer before i, none if
// no instruction writes it before i (a parameter or an input, held from
// before the step; the optimizer rewriting it later is no producer);
// for an event waited on, the latest signaller before i, or the first
// signaller at all when none precedes it (a schedule error the prefix must
// still cover, so the runtime would wait for it rather than hang).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/EvalPrefix.h"

#include <algorithm>

namespace fsdp {
namespace {

/// The latest index < `before` in `indices` (sorted ascending); when none
/// is earlier, the first one if `orLater`, else -1 (as for an empty list).
int64_t latestBefore(const std::vector<uint32_t> &indices, size_t before, bool orLater) {
  auto it = std::lower_bound(indices.begin(), indices.end(), before);
  if (it != indices.begin())
    return *std::prev(it);
  if (orLater && !indices.empty())
    return indices.front();
  return -1;
}

} // namespace

uint32_t evalPrefixEnd(const std::vector<InstructionDesc> &instructions, size_t lossInstruction) {
  // Writers of each buffer and signallers of each event, in plan order.
  std::vector<std::vector<uint32_t>> writers, signallers;
  for (size_t i = 0; i < instructions.size(); ++i) {
    for (uint32_t out : instructions[i].outputs) {
      if (out >= writers.size())
        writers.resize(out + 1);
      writers[out].push_back(static_cast<uint32_t>(i));
    }
    if (int32_t e = instructions[i].signal; e >= 0) {
      if (static_cast<size_t>(e) >= signallers.size())
        signallers.resize(e + 1);
      signallers[e].push_back(static_cast<uint32_t>(i));
    }
  }
  std::vector<uint8_t> seen(instructions.size(), 0);
  std::vector<size_t> work{lossInstruction};
  seen[lossInstruction] = 1;
  size_t last = lossInstruction;
  auto visit = [&](int64_t producer) {
    if (producer >= 0 && !seen[producer]) {
      seen[producer] = 1;
      work.push_back(static_cast<size_t>(producer));
    }
  };
  while (!work.empty()) {
    size_t i = work.back();
    work.pop_back();
    last = std::max(last, i);
    for (uint32_t in : instructions[i].inputs)
      if (in < writers.size())
        visit(latestBefore(writers[in], i, /*orLater=*/false));
    for (uint32_t e : instructions[i].waits)
      if (e < signallers.size())
        visit(latestBefore(signallers[e], i, /*orLater=*/true));
  }
  return static_cast<uint32_t>(last + 1);
}

} // namespace fsdp
