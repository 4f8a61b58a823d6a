//===- PlanEmitter.cpp - nn module to plan file ---------------------------===//
//
// Three steps, each in its own file. Placement (PlanPlacement.cpp) decides
// every value's buffer, the instructions' order, streams and events.
// Lowering (here) asks each scheduled op's KernelOpInterface for its kernel
// and that kernel's operands and attributes; the one decision it adds is
// MatMul's transpose flags, because a transpose read in place by its
// matmuls is placement's finding, not the op's. The parameter and unit
// tables come from the step's arguments. Serialization (PlanSerializer.cpp)
// writes the weights, then the plan. A plan file also carries the cost
// model's prediction of its own step: the emitter serializes the plan once
// without it, predicts that (the prediction reads instructions, buffers
// and streams only, so it is the same plan's), and writes it with the
// numbers, exactly those --emit=report prints for the same flags.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/PlanEmitter.h"

#include "compiler/Analysis/CostModel.h"
#include "compiler/Target/EvalPrefix.h"
#include "compiler/Target/PlanPlacement.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace fsdp {
namespace {

/// The instruction of a scheduled op: its kernel encoding with operands
/// resolved to buffers. A copy of a returned value needs no op.
FailureOr<InstructionDesc> lower(const ScheduledInstruction &scheduled,
                                 const PlanPlacement &placement) {
  InstructionDesc inst;
  if (!scheduled.op) {
    inst = {plan::Kernel::Copy, {scheduled.copySource}, {scheduled.copyTarget}, {}, {},
            scheduled.copyName};
  } else {
    Operation *op = scheduled.op;
    auto kernelOp = dyn_cast<nn::KernelOpInterface>(op);
    if (!kernelOp)
      return op->emitOpError("has no runtime kernel");
    nn::KernelEncoding encoding = kernelOp.encodeKernel();
    inst.kernel = encoding.kernel;
    for (Value operand : encoding.operands)
      inst.inputs.push_back(placement.operandBuffer(operand));
    for (Value result : op->getResults())
      inst.outputs.push_back(placement.bufferOf(result));
    inst.ints = std::move(encoding.ints);
    inst.floats = std::move(encoding.floats);
    inst.name = locationName(op->getLoc());
    // A folded transpose is read with its product's transpose flag (a
    // gemm's own flag flips: a transposed operand read transposed again).
    if (auto matmul = dyn_cast<nn::MatMulOp>(op)) {
      bool lhs = placement.isFoldedTranspose(matmul.getLhs());
      bool rhs = placement.isFoldedTranspose(matmul.getRhs());
      if (lhs || rhs)
        inst.ints = {lhs, rhs}; // trans_a, trans_b
    } else if (auto gemm = dyn_cast<nn::GemmOp>(op)) {
      inst.ints = {gemm.getTransA() != placement.isFoldedTranspose(gemm.getA()),
                   gemm.getTransB() != placement.isFoldedTranspose(gemm.getB())};
    }
  }
  inst.stream = scheduled.stream;
  inst.waits = scheduled.waits;
  inst.signal = scheduled.signal;
  return inst;
}

/// The parameter and unit tables. An unsharded step has one root unit
/// holding every parameter in its own buffer; a sharded one has a unit per
/// flat-parameter shard argument (its fsdp.unit description) and keeps the
/// parameters without an update replicated, outside every unit.
LogicalResult buildParameterTable(func::FuncOp func, const PlanPlacement &placement,
                                  PlanDescription &plan) {
  const bool sharded = !placement.units.empty();
  uint64_t flatOffset = 0;
  for (const auto &[name, index] : placement.params) {
    const BufferDesc &d = placement.buffers[index];
    plan.parameters.push_back(
        {name, d.dtype, d.shape, index, sharded ? rt::kNoBuffer : 0, sharded ? 0 : flatOffset});
    flatOffset += d.size / rt::dtypeSize(d.dtype);
  }
  if (!sharded) {
    if (!placement.params.empty())
      plan.units.push_back({"root", flatOffset, flatOffset, flatOffset});
    return success();
  }
  for (const auto &[unit, index] : placement.units) {
    UnitEntry u;
    u.name = unit.getAs<StringAttr>("name").str();
    u.flatNumel = unit.getAs<IntegerAttr>("flat_numel").getInt();
    u.paddedNumel = unit.getAs<IntegerAttr>("padded_numel").getInt();
    u.groupSize = unit.getAs<IntegerAttr>("group_size").getInt();
    u.shardNumel = u.paddedNumel / std::max<uint64_t>(u.groupSize, 1);
    u.shardBuffer = index;
    u.dtype = placement.buffers[index].dtype;
    if (auto gathered = placement.gatheredBufferOf.find(index);
        gathered != placement.gatheredBufferOf.end())
      u.gatheredBuffer = gathered->second;
    for (Attribute a : unit.getAs<ArrayAttr>("params")) {
      auto p = cast<DictionaryAttr>(a);
      auto type = cast<RankedTensorType>(p.getAs<TypeAttr>("type").getValue());
      std::optional<rt::DType> dtype = planDType(type.getElementType());
      if (!dtype)
        return func.emitError("unit '") << u.name << "' holds a parameter of type " << type;
      plan.parameters.push_back({p.getAs<StringAttr>("name").str(),
                                 *dtype,
                                 {type.getShape().begin(), type.getShape().end()},
                                 rt::kNoBuffer,
                                 static_cast<uint32_t>(plan.units.size()),
                                 static_cast<uint64_t>(p.getAs<IntegerAttr>("offset").getInt())});
    }
    plan.units.push_back(std::move(u));
  }
  return success();
}

/// The evaluation prefix of a training step: up to the first instruction
/// of an op marked fsdp.eval_loss (recomputed clones copy the mark, but
/// the forward's own op comes first), reading its scalar float result.
/// Steps without the mark (IR written before it existed) get none.
void describeEvalPrefix(const PlanPlacement &placement, PlanDescription &plan) {
  for (size_t i = 0; i < placement.instructions.size(); ++i) {
    Operation *op = placement.instructions[i].op;
    if (!op || !op->hasAttr(dist::kEvalLossAttr))
      continue;
    for (Value result : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      if (!type || type.getNumElements() != 1 || !isa<FloatType>(type.getElementType()))
        continue;
      plan.evalEnd = evalPrefixEnd(plan.instructions, i);
      plan.evalLossBuffer = placement.bufferOf(result);
      return;
    }
    return;
  }
}

/// The plan's header fields from the options.
void describeStep(func::FuncOp func, const PlanEmitOptions &options, PlanDescription &plan) {
  auto source = func->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>(nn::kSourceAttr);
  plan.source = source ? source.str() : "";
  plan.mode = options.mode;
  plan.worldSize = options.worldSize;
  if (auto k = func->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(dist::kGradAccumAttr))
    plan.gradAccum = static_cast<uint32_t>(k.getInt());
  plan.optimizer = options.optimizer;
  plan.baseLr = options.baseLr;
  plan.strategy = options.strategy;
  plan.paramDtype = options.strategy.empty() ? "" : options.paramDtype;
  plan.reduceDtype = options.strategy.empty() ? "" : options.reduceDtype;
  plan.lossOutput =
      options.mode == "train" && !plan.outputs.empty() ? plan.outputs.front().first : "";
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (func.getResultAttr(i, nn::kFoundInfAttr))
      if (auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr))
        plan.foundInfOutput = name.str();
  if (!plan.foundInfOutput.empty())
    plan.lossScaleGrowthInterval = options.lossScaleGrowthInterval;
}

/// The cost model's prediction of `plan`'s step on `device`.
FailureOr<PredictionDesc> predictPlan(func::FuncOp func, const PlanDescription &plan,
                                      const DeviceProfile &device) {
  std::vector<uint8_t> bytes = serializePlan(plan);
  flatbuffers::Verifier verifier(bytes.data(), bytes.size());
  if (!plan::VerifyPlanBuffer(verifier))
    return func.emitError("internal error: the emitted plan fails verification");
  StepPrediction step = predictStep(*plan::GetPlan(bytes.data()), device);
  return PredictionDesc{device.name, step.stepSeconds, step.computeSeconds,
                        step.communicationSeconds, step.exposedCommunicationSeconds};
}

LogicalResult emitStep(func::FuncOp func, const PlanEmitOptions &options,
                       const WeightLookup &weights, EmittedPlan &result) {
  FailureOr<PlanPlacement> placed = placeStep(func);
  if (failed(placed))
    return failure();
  PlanPlacement &placement = *placed;
  PlanDescription plan;
  for (const ScheduledInstruction &scheduled : placement.instructions) {
    FailureOr<InstructionDesc> inst = lower(scheduled, placement);
    if (failed(inst))
      return failure();
    plan.instructions.push_back(std::move(*inst));
  }
  if (failed(buildParameterTable(func, placement, plan)))
    return failure();
  plan.inputs = std::move(placement.inputs);
  plan.outputs = std::move(placement.outputs);
  plan.state = std::move(placement.state);
  plan.lrBuffer = placement.lrBuffer;
  plan.stepBuffer = placement.stepBuffer;
  plan.lossScaleBuffer = placement.lossScaleBuffer;
  plan.invLossScaleBuffer = placement.invLossScaleBuffer;
  plan.persistentBytes = placement.persistentBytes;
  plan.arenaBytes = placement.arenaBytes;
  plan.hostBytes = placement.hostBytes;
  plan.numStreams = placement.numStreams;
  plan.numEvents = placement.numEvents;
  describeStep(func, options, plan);
  if (options.mode == "train")
    describeEvalPrefix(placement, plan);

  // In memory (a report) the plan needs no weights: a model planned
  // without its weight files on disk still gets its numbers.
  const bool hasWeights = !plan.parameters.empty();
  const std::string weightsPath = weightsPathFor(options.planPath);
  if (hasWeights)
    plan.weightsFile = weightsPath.substr(weightsPath.find_last_of('/') + 1);
  if (!options.planBytes && hasWeights && weights) {
    rt::Status status = writeWeights(plan.parameters, weights, weightsPath, plan.weightsHash);
    if (!status.isOk())
      return func.emitError(status.message());
  }
  result.persistentBytes = plan.persistentBytes;
  result.arenaBytes = plan.arenaBytes;
  result.arenaLowerBound = placement.arenaLowerBound;
  result.constantBytes = placement.constantData.size();
  result.instructions = plan.instructions.size();
  result.buffers = placement.buffers.size();
  result.weightsPath = !hasWeights || options.planBytes || !weights ? "" : weightsPath;
  plan.buffers = std::move(placement.buffers);
  plan.constantData = std::move(placement.constantData);
  if (options.planBytes) {
    *options.planBytes = serializePlan(plan);
    return success();
  }
  if (options.costDevice) {
    FailureOr<PredictionDesc> prediction = predictPlan(func, plan, *options.costDevice);
    if (failed(prediction))
      return failure();
    plan.prediction = std::move(*prediction);
  }
  if (options.fileBytes) {
    *options.fileBytes = serializePlan(plan);
    return success();
  }
  rt::Status status = writePlan(plan, options.planPath);
  if (!status.isOk())
    return func.emitError(status.message());
  return success();
}

} // namespace

std::string weightsPathFor(const std::string &planPath) {
  const std::string suffix = ".plan";
  if (planPath.size() > suffix.size() &&
      planPath.compare(planPath.size() - suffix.size(), suffix.size(), suffix) == 0)
    return planPath.substr(0, planPath.size() - suffix.size()) + ".safetensors";
  return planPath + ".safetensors";
}

FailureOr<EmittedPlan> emitPlan(ModuleOp module, const PlanEmitOptions &options,
                                const WeightLookup &weights) {
  StringRef name = options.mode == "train" ? "train_step" : "forward";
  func::FuncOp func = module.lookupSymbol<func::FuncOp>(name);
  if (!func || func.getBody().empty())
    return module.emitError("no @") << name << " function to emit";
  if (!func.getBody().hasOneBlock())
    return func.emitError("plans need a single-block function");
  if (auto sharded = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr))
    if (sharded.getInt() != static_cast<int64_t>(options.worldSize))
      return emitError(module.getLoc(), "the step was sharded for world size ")
             << sharded.getInt() << ", not " << options.worldSize
             << " (compile with --world-size=" << sharded.getInt() << ")";
  if (options.worldSize > 1 && !module->hasAttr(dist::kWorldSizeAttr))
    return emitError(module.getLoc(), "a plan for world size ")
           << options.worldSize << " needs a sharded step (run the shard stage)";
  EmittedPlan result;
  if (failed(emitStep(func, options, weights, result)))
    return failure();
  return result;
}

} // namespace fsdp
