//===- CheckpointSolver.h - which blocks to recompute, as a chain problem -===//
//
// The choice behind --ckpt=auto (compiler/Pipelines/AutoCheckpoint.h) as a
// pure function of per-block numbers, so that it can be tested against
// brute force without compiling anything. The model is Rotor's chain
// (Beaumont et al., "Optimal checkpointing for heterogeneous chains",
// 2019) restricted to what the recompute pass can do: each block either
// keeps everything its backward reads (`heldBytes`), or is checkpointed,
// keeps `heldBytes - freedBytes` and recomputes the rest once, right
// before its own backward. Blocks run forward 0..n-1 and backward n-1..0,
// so the activations live at a point of the step are
//   at the forward/backward turn    sum over all blocks of what they keep
//   at block i's backward           what blocks 0..i-1 keep + heldBytes[i]
// (a checkpointed block's recomputation brings back everything it had
// dropped; later blocks have already been released). The rest of the step
// is not the same at the two kinds of point (the loss and its gradient are
// live at the turn, gradients in flight during a block's backward), so a
// selection is feasible when the turn fits `ChainCapacity::turn` and every
// block's backward fits `ChainCapacity::backward`: what the budget leaves
// for block activations at each. Among feasible selections the solver
// returns one of least summed `cost`.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_CHECKPOINTSOLVER_H
#define FSDP_COMPILER_ANALYSIS_CHECKPOINTSOLVER_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdp {

/// One block of the chain, in forward order.
struct ChainBlock {
  uint64_t heldBytes = 0;  // activations kept for backward without checkpointing
  uint64_t freedBytes = 0; // of those, what checkpointing releases (<= heldBytes)
  double cost = 0;         // what recomputing it adds (any unit, >= 0)
};

/// Bytes of block activations: live at the forward/backward turn, and the
/// most live at any block's backward.
struct ChainPeaks {
  uint64_t turn = 0, backward = 0;
};
using ChainCapacity = ChainPeaks; // the most each may be

/// The model's peaks of `blocks` with `chosen` checkpointed.
ChainPeaks chainPeaks(const std::vector<ChainBlock> &blocks, const std::vector<bool> &chosen);
/// Whether `peaks` are within `capacity` at both kinds of point.
inline bool fitsChain(const ChainPeaks &peaks, const ChainCapacity &capacity) {
  return peaks.turn <= capacity.turn && peaks.backward <= capacity.backward;
}

/// A selection: `chosen[i]` checkpoints block i.
struct ChainSelection {
  std::vector<bool> chosen;
  double cost = 0;
  ChainPeaks peaks;
};

/// A least-cost selection whose chainPeaks fit `capacity`, or nullopt when
/// none does. Ties in cost go to the selection with the most headroom (the
/// larger of the two smallest margins), which leaves the real plan room.
///
/// A dynamic program over the chain: after block i, a state is the bytes
/// blocks 0..i keep and the cost so far; a state that is both larger and
/// more expensive than another can never lead to a better end, so only the
/// Pareto frontier is carried. That is exact. The frontier has at most
/// 2^i states and in practice far fewer (a chain of k kinds of blocks has
/// at most (n/k + 1)^k distinct sums); past kMaxChainStates it is thinned
/// to evenly spaced states, which keeps every answer feasible but may lose
/// optimality, as Rotor's discretisation of memory does.
std::optional<ChainSelection> solveCheckpointChain(const std::vector<ChainBlock> &blocks,
                                                   const ChainCapacity &capacity);

inline constexpr size_t kMaxChainStates = 4096;

/// The chosen block indices as a compact list of ranges: "0-2,5,7-8";
/// "none" when nothing is chosen.
std::string formatBlockRanges(const std::vector<bool> &chosen);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_CHECKPOINTSOLVER_H
