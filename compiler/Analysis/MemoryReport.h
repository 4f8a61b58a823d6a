//===- MemoryReport.h - where a plan's bytes go, per rank -----------------===//
//
// `fsdp-opt --emit=report` answers "how much memory will each rank take, and
// for what" before launch. The answer is read from the emitted plan itself
// (runtime/plan/plan.fbs), the exact thing fsdp-run allocates, not from an
// estimate of the IR: the peak is the plan's persistent region plus its
// arena. The persistent region is split by what its buffers hold
// (parameter shards or replicated parameters, optimizer state, and io: graph
// inputs, outputs and the lr/step scalars). The arena is split by replaying
// the instruction stream: each arena byte range is live from the
// instruction that writes it to the last one that reads it or a view of it,
// and is a gathered parameter (communication: AllGather results and send
// buffers), a gradient (Flatten operands and results, ReduceScatter
// results, AllReduce results unless the operand is an activation such as
// the loss, what an optimizer reads as its gradient) or an activation
// (everything else); a
// Cast or Copy of a gathered parameter or a gradient (mixed precision's
// casts around the collectives) stays in its source's category. The
// categories are reported at the instruction where live arena bytes peak,
// so they add up to that peak; the arena bytes the allocator could not
// reuse there are reported as fragmentation, so a rank's row adds up to
// the bytes fsdp-run allocates.
// State offloaded to host memory (--offload=cpu, the plan's Host region)
// is reported apart as host bytes: it is not device memory, so not in the
// peak.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_MEMORYREPORT_H
#define FSDP_COMPILER_ANALYSIS_MEMORYREPORT_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fsdp {
namespace plan {
struct Plan;
} // namespace plan

/// One rank's bytes. Every field is a byte count; the seven categories sum
/// to `peak`.
struct RankMemory {
  uint32_t rank = 0;
  // Persistent region.
  uint64_t parameters = 0, optimizerState = 0, io = 0;
  // Arena, at the instruction where live arena bytes peak.
  uint64_t gradients = 0, activations = 0, communication = 0;
  /// Arena bytes allocated but not live at that instruction.
  uint64_t fragmentation = 0;
  /// persistent + arena: what fsdp-run allocates for this rank.
  uint64_t peak = 0;
  /// The largest activation bytes live at any instruction (may be at
  /// another instruction than the arena's peak).
  uint64_t activationsPeak = 0;
};

/// An arena tensor live at the peak: what a user would shrink first.
struct LiveTensor {
  std::string name;     // the plan buffer's value name
  uint64_t bytes = 0;   // its aligned extent in the arena
  std::string category; // "activation", "gradient" or "gathered parameters"
  size_t first = 0, last = 0; // live over instructions [first, last]
};

/// How many of the largest tensors live at the peak a report lists.
inline constexpr size_t kLargestAtPeak = 8;

/// One shard unit (FSDP's FlatParameter) as the plan lays it out.
struct UnitMemory {
  std::string name;
  uint64_t parameters = 0; // parameters the unit holds
  uint64_t flatNumel = 0, paddedNumel = 0, shardNumel = 0;
  uint32_t groupSize = 1;
  std::string dtype;
  uint64_t bytesPerRank = 0; // shard_numel x dtype size
  /// Gathered once per step into a persistent buffer that holds the shard
  /// in place: the rank holds the whole padded unit, not bytesPerRank.
  bool gatheredInPlace = false;
};

/// The cost model's prediction of the reported plan's step, filled by the
/// caller from compiler/Analysis/CostModel.h (a prediction from datasheet
/// rates, not a measurement).
struct PredictedTime {
  std::string device, deviceDescription;
  double stepSeconds = 0, computeSeconds = 0, communicationSeconds = 0;
  /// Communication not hidden under compute.
  double exposedSeconds = 0;
  /// The optimizer on the host stream (--offload=cpu), beside the device.
  double hostSeconds = 0;
  bool overlapped = false; // the plan's streams overlap
};

/// One row of the configuration comparison: the same model at the same
/// world size planned under other flags.
struct ConfigurationRow {
  std::string name;  // "none (DDP)", "grad-op", "full", "full + ckpt" ...
  std::string flags; // "--shard=full --ckpt=blocks"
  bool chosen = false;
  /// Absent when the configuration was not planned; `note` says why.
  std::optional<uint64_t> peakBytes;
  std::optional<double> stepSeconds;
  std::string note;
};

/// One unit's gradient accumulation under --grad-accum (filled from
/// compiler/Analysis/AccumulationCost.h): the accumulator bytes per rank and
/// the predicted reduction time per step of each choice, and the choice.
struct UnitAccumulation {
  std::string name;
  std::string chosen; // "each" or "last"; "" when the step does not say
  uint64_t eachBytes = 0, lastBytes = 0;
  double eachSeconds = 0, lastSeconds = 0;
};

struct MemoryReport {
  std::string source, mode, optimizer;
  /// The plan's --shard, param and reduce dtypes; plans compiled before
  /// sharding existed say "" and are reported as "unsharded" and "f32".
  std::string strategy, paramDtype, reduceDtype;
  uint32_t worldSize = 1;
  uint64_t persistentBytes = 0, arenaBytes = 0, constantBytes = 0;
  /// Host memory the plan keeps state in (--offload=cpu): not device bytes,
  /// so not part of peakBytes.
  uint64_t hostBytes = 0;
  /// persistentBytes + arenaBytes, the same on every rank.
  uint64_t peakBytes = 0;
  /// Largest simultaneously live arena bytes (<= arenaBytes) and the first
  /// instruction where it is reached (0 when the plan has none).
  uint64_t arenaLivePeak = 0;
  size_t peakInstruction = 0;
  std::string peakInstructionName;
  /// The largest activation bytes live at any instruction, over all ranks.
  uint64_t activationsBytes = 0;
  size_t instructions = 0;
  /// The largest arena tensors live at the peak instruction, largest first.
  std::vector<LiveTensor> largestAtPeak;
  /// One row per rank, rank order. The plan is SPMD (every rank runs the
  /// same instructions over the same buffer layout), so the rows are equal;
  /// they are listed per rank because that is the question a user asks.
  std::vector<RankMemory> ranks;
  std::vector<UnitMemory> units;
  /// Rendered when set / non-empty (--emit=report sets both).
  std::optional<PredictedTime> predicted;
  std::vector<ConfigurationRow> configurations;
  /// --grad-accum's K (the plan's grad_accum) and, when K > 1 and the
  /// caller filled it, the choice per unit; rendered only when K > 1.
  uint32_t gradAccum = 1;
  std::vector<UnitAccumulation> accumulation;
};

/// Analyzes a verified plan.
MemoryReport analyzeMemory(const plan::Plan &plan);

/// The arena replay analyzeMemory measures its peak with, instruction by
/// instruction: element t is the union of the arena bytes live while
/// instruction t runs (the timeline of --emit=trace's memory counter).
std::vector<uint64_t> arenaLiveBytes(const plan::Plan &plan);

/// The report as an aligned text table (human sizes and exact bytes) or as
/// one JSON object (byte counts; keys as the struct fields in snake_case:
/// peak_bytes, activations_bytes, world_size, strategy, ranks[], units[] ...;
/// with a prediction device and predicted_step_s, with configurations
/// configurations[]), written through llvm::json (MemoryReportRender.cpp).
std::string renderMemoryReport(const MemoryReport &report, bool json);

/// `s` quoted and escaped as a JSON string.
std::string jsonString(const std::string &s);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_MEMORYREPORT_H
