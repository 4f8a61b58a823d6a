//===- CheckpointSolver.cpp - which blocks to recompute, as a chain problem ===//
//
// The frontier of each step is kept sorted by kept bytes (ascending) with
// strictly falling cost, so pruning is one pass after a sort; every state
// remembers its parent in the previous step's frontier and whether it
// checkpointed the block, so the selection is read back from the end. A
// state also carries the largest backward-time live set on its path, so
// that ties in cost can go to the selection with the most headroom.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/CheckpointSolver.h"

#include <algorithm>
#include <tuple>

namespace fsdp {
namespace {

struct State {
  uint64_t kept = 0; // bytes blocks 0..i keep for backward
  double cost = 0;
  uint64_t backward = 0; // the largest live set at a block's backward so far
  uint32_t parent = 0;
  bool chosen = false;
};

/// The Pareto frontier of `states` in (kept, cost): sorted by kept, each
/// state cheaper than every state before it; of states equal in both, the
/// one with the lower backward peak.
std::vector<State> prune(std::vector<State> states) {
  std::sort(states.begin(), states.end(), [](const State &a, const State &b) {
    return std::tie(a.kept, a.cost, a.backward) < std::tie(b.kept, b.cost, b.backward);
  });
  std::vector<State> frontier;
  for (const State &s : states)
    if (frontier.empty() || s.cost < frontier.back().cost)
      frontier.push_back(s);
  if (frontier.size() <= kMaxChainStates)
    return frontier;
  // Thinning keeps both ends (the smallest and the cheapest state) and
  // evenly spaced ones between: every state kept is still feasible.
  std::vector<State> thinned;
  thinned.reserve(kMaxChainStates);
  for (size_t j = 0; j < kMaxChainStates; ++j)
    thinned.push_back(frontier[j * (frontier.size() - 1) / (kMaxChainStates - 1)]);
  return thinned;
}

/// The smaller of the two margins of `peaks` under `capacity` (both fit).
uint64_t headroom(const ChainPeaks &peaks, const ChainCapacity &capacity) {
  return std::min(capacity.turn - peaks.turn, capacity.backward - peaks.backward);
}

} // namespace

ChainPeaks chainPeaks(const std::vector<ChainBlock> &blocks, const std::vector<bool> &chosen) {
  ChainPeaks peaks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    peaks.backward = std::max(peaks.backward, peaks.turn + blocks[i].heldBytes);
    peaks.turn += blocks[i].heldBytes - (chosen[i] ? blocks[i].freedBytes : 0);
  }
  return peaks;
}

std::optional<ChainSelection> solveCheckpointChain(const std::vector<ChainBlock> &blocks,
                                                   const ChainCapacity &capacity) {
  // steps[i] is the frontier before block i; steps[n] the final one.
  std::vector<std::vector<State>> steps(1, std::vector<State>(1));
  for (const ChainBlock &block : blocks) {
    const std::vector<State> &before = steps.back();
    std::vector<State> after;
    after.reserve(2 * before.size());
    for (uint32_t s = 0; s < before.size(); ++s) {
      // Block i's backward sees what blocks before it keep plus all it
      // holds, whether it recomputes or not: its choice only matters later.
      uint64_t live = before[s].kept + block.heldBytes;
      if (live > capacity.backward)
        continue;
      uint64_t backward = std::max(before[s].backward, live);
      after.push_back({live, before[s].cost, backward, s, false});
      after.push_back({live - block.freedBytes, before[s].cost + block.cost, backward, s, true});
    }
    steps.push_back(prune(std::move(after)));
  }

  // The turn: everything kept is live at once.
  const std::vector<State> &last = steps.back();
  std::optional<uint32_t> best;
  uint64_t bestHeadroom = 0;
  for (uint32_t s = 0; s < last.size(); ++s) {
    ChainPeaks peaks{last[s].kept, last[s].backward};
    if (!fitsChain(peaks, capacity))
      continue;
    uint64_t room = headroom(peaks, capacity);
    if (!best || last[s].cost < last[*best].cost ||
        (last[s].cost == last[*best].cost && room > bestHeadroom)) {
      best = s;
      bestHeadroom = room;
    }
  }
  if (!best)
    return std::nullopt;

  ChainSelection selection;
  selection.chosen.assign(blocks.size(), false);
  selection.cost = last[*best].cost;
  selection.peaks = {last[*best].kept, last[*best].backward};
  uint32_t index = *best;
  for (size_t i = blocks.size(); i > 0; --i) {
    selection.chosen[i - 1] = steps[i][index].chosen;
    index = steps[i][index].parent;
  }
  return selection;
}

std::string formatBlockRanges(const std::vector<bool> &chosen) {
  std::string text;
  for (size_t i = 0; i < chosen.size();) {
    if (!chosen[i]) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end + 1 < chosen.size() && chosen[end + 1])
      ++end;
    if (!text.empty())
      text += ',';
    text += std::to_string(i);
    if (end > i)
      text += '-' + std::to_string(end);
    i = end + 1;
  }
  return text.empty() ? "none" : text;
}

} // namespace fsdp
