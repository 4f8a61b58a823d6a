//===- CostModel.h - predicted time of a plan's step on a named device ----===//
//
// `--device=h100|a100|cpu` names a device profile; the cost model predicts
// how long each instruction of an emitted plan (runtime/plan/plan.fbs)
// takes on it, and how long the step takes when the plan's streams run
// as their events order them. These are model predictions from datasheet
// rates, never measurements: a roofline per kernel (matmul and gemm by
// 2*M*N*K flops at the rate of their dtype or by bytes moved, whichever is
// slower; every other kernel by the bytes it reads and writes over memory
// bandwidth; a per-kernel floor for launch overhead) and the ring cost of
// NCCL's all-gather / reduce-scatter / all-reduce ((g-1)/g * S / B, twice
// that for all-reduce, plus a per-collective latency). They rank
// configurations and show where the time goes; they do not replace
// profiling.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_COSTMODEL_H
#define FSDP_COMPILER_ANALYSIS_COSTMODEL_H

#include "compiler/Pipelines/CompileOptions.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {
namespace plan {
struct Plan;
} // namespace plan

/// Datasheet rates of one accelerator and its interconnect. Rates are per
/// second; bandwidths in bytes per second.
struct DeviceProfile {
  std::string name;        // "h100", "a100", "cpu"
  std::string description; // one line for reports
  double bf16Flops = 0;    // dense bf16/f16 matmul peak
  double f32Flops = 0;     // dense f32 matmul peak (no TF32)
  double memoryBandwidth = 0;
  /// NCCL bus bandwidth of all-gather / reduce-scatter inside a node.
  double intraNodeBandwidth = 0;
  /// Per GPU across nodes (the network), used when a group spans nodes.
  double interNodeBandwidth = 0;
  uint32_t ranksPerNode = 8;
  double collectiveLatency = 0; // seconds per collective
  double kernelFloor = 0;       // seconds: launch overhead, the least a kernel takes
  /// --offload=cpu: copies between host and device memory (PCIe), and the
  /// host's memory bandwidth, which bounds the optimizer it runs.
  double hostLinkBandwidth = 0;
  double hostMemoryBandwidth = 0;
};

/// The profile --device names.
const DeviceProfile &deviceProfile(DeviceKind kind);

/// What bounds an instruction's predicted time.
enum class CostBound : uint8_t { None, Compute, Memory, Communication, Floor };

/// One instruction's prediction.
struct InstructionCost {
  double seconds = 0;
  double flops = 0;       // matmul/gemm only
  uint64_t bytes = 0;     // read + written (collectives: the full tensor S)
  uint32_t groupSize = 0; // collectives only
  CostBound bound = CostBound::None;
};

/// Predicts `inst` (an instruction of `plan`) on `device`. Views (a
/// data-movement kernel whose result is its operand's bytes) take zero.
InstructionCost predictInstruction(const plan::Plan &plan, uint32_t inst,
                                   const DeviceProfile &device);

/// The ring cost of one collective over a full tensor of `bytes` in a group
/// of `groupSize` ranks (an all-reduce moves twice an all-gather's or
/// reduce-scatter's share); a group of one is a local copy.
double collectiveSeconds(uint64_t bytes, uint32_t groupSize, bool allReduce,
                         const DeviceProfile &device);
/// 2 * M * N * K of a matrix product with `resultElements` = M * N (times
/// any batch) and reduction length K.
double matmulFlops(uint64_t resultElements, int64_t reduction);
/// The products of a flash-style attention over query [B, H, Tq, D] and
/// value [.., Tk, Dv]: the forward's two (q kᵀ and p v), the backward's
/// five (q kᵀ recomputed, dv, dp, dk, dq); a causal one computes about
/// half the score tiles.
double attentionFlops(llvm::ArrayRef<int64_t> query, llvm::ArrayRef<int64_t> value, bool causal,
                      bool backward);

/// The roofline of one compute kernel that reads and writes `bytes` and,
/// for a matmul or gemm, does `flops` (0 otherwise) at the bf16 rate when
/// `half`, else f32; never below the launch floor. predictInstruction
/// prices plan instructions with it, and the checkpoint stage the ops it
/// would recompute (compiler/Transforms/RecomputeActivations.h).
InstructionCost computeKernelCost(double flops, uint64_t bytes, bool half,
                                  const DeviceProfile &device);

/// The step on a timeline: every instruction's start and duration.
struct StepPrediction {
  std::string device;
  std::vector<InstructionCost> costs;
  std::vector<double> start;   // seconds from the step's start
  std::vector<uint8_t> stream; // 0 compute, 1 communication, 2 copy, 3 host
  /// Makespan of the step; the summed durations of device compute (any
  /// stream but the host stream) and of every collective and host copy
  /// wherever it runs; the part of communication not hidden under compute
  /// (the device streams' makespan - computeSeconds).
  double stepSeconds = 0, computeSeconds = 0, communicationSeconds = 0;
  double exposedCommunicationSeconds = 0;
  /// The summed durations on the host stream (--offload=cpu's optimizer,
  /// run by a host thread alongside the device's streams).
  double hostSeconds = 0;
  uint32_t numStreams = 1;
  /// Whether the plan's streams overlap (a second stream ordered by
  /// events); otherwise the step is the serial sum.
  bool overlapped = false;
};

/// Predicts the step of a verified plan. Each stream runs its instructions
/// in plan order; an instruction starts when its stream is free and every
/// event it waits for has been signalled (at the end of the instruction
/// that signals it). A plan with one stream is serial.
StepPrediction predictStep(const plan::Plan &plan, const DeviceProfile &device);

/// Seconds as "12.3 ms", "456 us", "1.23 s".
std::string formatSeconds(double seconds);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_COSTMODEL_H
