//===- PlanSerializer.h - plan descriptions to plan and weights files -----===//
//
// The last step of emitting a plan: a PlanDescription becomes the plan
// FlatBuffer (runtime/plan/plan.fbs) and, through the runtime's own
// writers (writePlanFile, writeSafetensors), the plan file and the
// safetensors file of the parameters' initial values beside it, so the
// compiler and the runtime share one implementation of each format.
// Nothing here knows MLIR; errors are Status messages the emitter reports.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_PLANSERIALIZER_H
#define FSDP_COMPILER_TARGET_PLANSERIALIZER_H

#include "compiler/Target/PlanDescription.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fsdp {

/// A view of a parameter's initial value by name (ONNX initializers, for
/// instance), valid while the emitter runs; nullopt if the source has none.
/// Views, not copies: a large model's weights are written out without a
/// second copy in memory.
using WeightLookup = std::function<std::optional<rt::TensorRef>(const std::string &)>;

/// The plan FlatBuffer of `plan`, without the plan file's header.
std::vector<uint8_t> serializePlan(const PlanDescription &plan);

/// Writes `plan` as a plan file (header and FlatBuffer) at `path`.
rt::Status writePlan(const PlanDescription &plan, const std::string &path);

/// Writes each parameter's full initial value under its model name to the
/// safetensors file `path` (sharded or not: each rank takes its own slice
/// at load time), and its content hash to `hash`.
rt::Status writeWeights(const std::vector<ParamEntry> &parameters, const WeightLookup &weights,
                        const std::string &path, uint64_t &hash);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_PLANSERIALIZER_H
