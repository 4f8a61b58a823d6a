//===- PlanDescription.h - a plan as plain data, before serialization -----===//
//
// What the plan emitter decides, in the shape of plan.fbs's tables but as
// plain structs: buffers with their places (from PlanPlacement), the
// instructions (kernels from KernelOpInterface), the parameter and unit
// tables, the bindings and the plan's header fields. PlanSerializer turns
// one into the FlatBuffer and writes the weights; nothing here knows MLIR,
// so another emitter can fill it too.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_PLANDESCRIPTION_H
#define FSDP_COMPILER_TARGET_PLANDESCRIPTION_H

#include "runtime/plan/KernelTable.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::plan {
enum class Region : uint8_t;
} // namespace fsdp::plan

namespace fsdp {

/// A row of the plan's buffer table (plan.fbs Buffer).
struct BufferDesc {
  std::string name;
  rt::DType dtype;
  std::vector<int64_t> shape;
  plan::Region region;
  uint64_t offset = 0, size = 0;
  uint64_t rankStride = 0; // plan.fbs Buffer.rank_stride / rank_group
  uint32_t rankGroup = 1;
};

/// A row of the plan's parameter table (plan.fbs Parameter).
struct ParamEntry {
  std::string name;
  rt::DType dtype;
  std::vector<int64_t> shape;
  uint32_t buffer = rt::kNoBuffer; // kNoBuffer: lives in its unit's shards
  uint32_t unit = rt::kNoBuffer;   // 0xFFFFFFFF: replicated, in no unit
  uint64_t flatOffset = 0;
};

/// A row of the plan's unit table (plan.fbs Unit).
struct UnitEntry {
  std::string name;
  uint64_t flatNumel = 0, paddedNumel = 0, shardNumel = 0;
  uint32_t shardBuffer = rt::kNoBuffer, groupSize = 1;
  rt::DType dtype = rt::DType::F32;
  uint32_t gatheredBuffer = rt::kNoBuffer;
};

/// A row of the plan's instruction table (plan.fbs Instruction).
struct InstructionDesc {
  plan::Kernel kernel;
  std::vector<uint32_t> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string name;
  uint8_t stream = 0;
  std::vector<uint32_t> waits;
  int32_t signal = -1;
};

using Bindings = std::vector<std::pair<std::string, uint32_t>>;

/// The cost model's step prediction the plan carries (plan.fbs
/// CostPrediction).
struct PredictionDesc {
  std::string device;
  double stepSeconds = 0, computeSeconds = 0, communicationSeconds = 0;
  double exposedSeconds = 0;
};

/// Everything plan.fbs's Plan holds, by field.
struct PlanDescription {
  std::vector<BufferDesc> buffers;
  std::vector<InstructionDesc> instructions;
  std::vector<ParamEntry> parameters;
  std::vector<UnitEntry> units;
  Bindings inputs, outputs, state;
  std::vector<uint8_t> constantData;
  std::string source, mode, optimizer, strategy, paramDtype, reduceDtype;
  std::string weightsFile; // relative to the plan's directory; "" without weights
  uint64_t weightsHash = 0;
  uint32_t worldSize = 1;
  uint32_t gradAccum = 1; // --grad-accum's K
  uint64_t persistentBytes = 0, arenaBytes = 0, hostBytes = 0;
  uint8_t numStreams = 1;
  uint32_t numEvents = 0;
  uint32_t lrBuffer = rt::kNoBuffer, stepBuffer = rt::kNoBuffer;
  std::string lossOutput;
  double baseLr = 0.0;
  /// fp16 dynamic loss scaling (plan.fbs): the scale's and its reciprocal's
  /// buffers, the found_inf output, the growth interval (0: none).
  uint32_t lossScaleBuffer = rt::kNoBuffer, invLossScaleBuffer = rt::kNoBuffer;
  std::string foundInfOutput;
  uint32_t lossScaleGrowthInterval = 0;
  std::optional<PredictionDesc> prediction;
  /// The evaluation prefix (plan.fbs eval_end, eval_loss_buffer).
  uint32_t evalEnd = 0, evalLossBuffer = rt::kNoBuffer;
};

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_PLANDESCRIPTION_H
