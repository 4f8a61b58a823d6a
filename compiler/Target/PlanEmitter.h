//===- PlanEmitter.h - nn module to plan file -----------------------------===//
//
// The translation from the compiler's IR to the runtime's plan
// (runtime/plan/plan.fbs): every SSA value becomes a buffer with a
// planned place (parameters, graph inputs and outputs in the persistent
// region, constants in the plan's constant data, everything else in the
// arena by lifetime; optimizer state persistent and updated in place;
// PlanPlacement.h), every op one instruction of the kernel its
// KernelOpInterface names, and the parameter table lists each parameter
// under its source name. The parameters' initial values are written beside
// the plan as safetensors, and the plan records that file's content hash
// (PlanSerializer.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_PLANEMITTER_H
#define FSDP_COMPILER_TARGET_PLANEMITTER_H

#include "compiler/Target/PlanSerializer.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace fsdp {

struct DeviceProfile;

struct PlanEmitOptions {
  std::string planPath;      // where to write; the weights go beside it
  std::string mode = "forward"; // "train" emits @train_step, "forward" @forward
  uint32_t worldSize = 1;
  std::string optimizer; // train plans: "adamw" or "sgd"
  double baseLr = 0.0;   // train plans: the learning rate schedules scale
  std::string strategy;  // sharded plans: --shard as written; "" unsharded
  std::string paramDtype = "f32", reduceDtype = "f32";
  /// f16 plans: GradScaler's growth_interval (0: no loss scaling).
  uint32_t lossScaleGrowthInterval = 0;
  /// When set, receives the serialized plan FlatBuffer (without the file
  /// header) instead of a plan file being written, and no weights file is
  /// written either: what --emit=report analyzes. planPath still names the
  /// plan (its weights file name is recorded) but nothing is written there.
  std::vector<uint8_t> *planBytes = nullptr;
  /// When set, a plan file carries the cost model's prediction of its step
  /// on this profile (plan.fbs CostPrediction; compiler/Analysis/
  /// CostModel.h's predictStep, which --emit=report prints). In-memory
  /// plans (planBytes) leave it out: their callers predict them directly.
  const DeviceProfile *costDevice = nullptr;
  /// When set, receives the FlatBuffer a plan file at planPath would carry
  /// after its header (its prediction included) instead of the file being
  /// written; the weights file is written beside planPath as for a plan
  /// file. What a compiled step embeds (--emit=object, --emit=binary).
  std::vector<uint8_t> *fileBytes = nullptr;
};

/// What was written, for the driver's summary line.
struct EmittedPlan {
  std::string weightsPath;
  uint64_t persistentBytes = 0, arenaBytes = 0, constantBytes = 0;
  uint64_t arenaLowerBound = 0; // peak of simultaneously live arena bytes
  size_t instructions = 0, buffers = 0;
};

/// Emits `@train_step` (train mode) or `@forward` of `module`. In a
/// training step, results marked `nn.update` are written in place into the
/// parameter or state argument they replace. Errors are reported as diagnostics on the
/// offending op (an op without a kernel, a parameter without a value).
/// An empty `weights` (a model compiled from shapes only) writes no
/// weights file: the plan names it with content hash 0.
mlir::FailureOr<EmittedPlan> emitPlan(mlir::ModuleOp module, const PlanEmitOptions &options,
                                      const WeightLookup &weights);

/// Weights file name for a plan path: "m.plan" -> "m.safetensors".
std::string weightsPathFor(const std::string &planPath);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_PLANEMITTER_H
