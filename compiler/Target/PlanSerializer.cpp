//===- PlanSerializer.cpp - plan descriptions to plan and weights files ---===//
//
// One FlatBufferBuilder pass over the description's tables in plan.fbs's
// order (buffers, instructions, parameters, units, bindings, constants,
// the cost prediction, then the root). The order of the builder's calls
// is the plan's byte layout: keep it when editing, or plans stop being
// byte-identical across builds (scripts/compare-builds.py checks).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/PlanSerializer.h"

#include "runtime/io/Safetensors.h"
#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

namespace fsdp {
namespace {

void build(const PlanDescription &p, flatbuffers::FlatBufferBuilder &fbb) {
  std::vector<flatbuffers::Offset<plan::Buffer>> fbBuffers;
  for (const BufferDesc &d : p.buffers)
    fbBuffers.push_back(plan::CreateBuffer(
        fbb, fbb.CreateString(d.name), rt::toPlanDType(d.dtype), fbb.CreateVector(d.shape),
        d.region, d.offset, d.size, d.rankStride, d.rankGroup));
  std::vector<flatbuffers::Offset<plan::Instruction>> fbInstructions;
  for (const InstructionDesc &i : p.instructions)
    fbInstructions.push_back(plan::CreateInstruction(
        fbb, i.kernel, fbb.CreateVector(i.inputs), fbb.CreateVector(i.outputs),
        fbb.CreateVector(i.ints), fbb.CreateVector(i.floats), i.stream, fbb.CreateString(i.name),
        fbb.CreateVector(i.waits), i.signal));
  std::vector<flatbuffers::Offset<plan::Parameter>> fbParams;
  for (const ParamEntry &param : p.parameters)
    fbParams.push_back(plan::CreateParameter(
        fbb, fbb.CreateString(param.name), rt::toPlanDType(param.dtype),
        fbb.CreateVector(param.shape), param.buffer, param.unit, param.flatOffset));
  std::vector<flatbuffers::Offset<plan::Unit>> fbUnits;
  for (const UnitEntry &u : p.units)
    fbUnits.push_back(plan::CreateUnit(fbb, fbb.CreateString(u.name), u.flatNumel, u.paddedNumel,
                                       u.shardNumel, u.shardBuffer, u.groupSize,
                                       rt::toPlanDType(u.dtype), u.gatheredBuffer));
  auto bindings = [&](const Bindings &list) {
    std::vector<flatbuffers::Offset<plan::Binding>> out;
    for (const auto &[name, index] : list)
      out.push_back(plan::CreateBinding(fbb, fbb.CreateString(name), index));
    return fbb.CreateVector(out);
  };
  auto fbInputs = bindings(p.inputs), fbOutputs = bindings(p.outputs), fbState = bindings(p.state);
  fbb.ForceVectorAlignment(p.constantData.size(), 1, rt::kBufferAlignment);
  auto fbConstants = fbb.CreateVector(p.constantData);
  flatbuffers::Offset<plan::CostPrediction> fbPrediction;
  if (const std::optional<PredictionDesc> &c = p.prediction)
    fbPrediction = plan::CreateCostPrediction(fbb, fbb.CreateString(c->device), c->stepSeconds,
                                              c->computeSeconds, c->communicationSeconds,
                                              c->exposedSeconds);
  auto root = plan::CreatePlan(
      fbb, rt::kPlanFormatVersion, fbb.CreateString("fsdp-opt"), fbb.CreateString(p.source),
      fbb.CreateString(p.mode), p.worldSize, fbb.CreateVector(fbBuffers),
      fbb.CreateVector(fbInstructions), fbb.CreateVector(fbParams), fbb.CreateVector(fbUnits),
      fbInputs, fbOutputs, p.persistentBytes, p.arenaBytes, p.numStreams, fbConstants,
      fbb.CreateString(p.weightsFile), p.weightsHash, p.numEvents, fbState, p.lrBuffer,
      p.stepBuffer, fbb.CreateString(p.lossOutput), fbb.CreateString(p.optimizer), p.baseLr,
      fbb.CreateString(p.strategy), fbb.CreateString(p.paramDtype), fbb.CreateString(p.reduceDtype),
      p.hostBytes, fbPrediction, p.evalEnd, p.evalLossBuffer, p.gradAccum, p.lossScaleBuffer,
      p.invLossScaleBuffer, p.foundInfOutput.empty() ? 0 : fbb.CreateString(p.foundInfOutput),
      p.lossScaleGrowthInterval);
  plan::FinishPlanBuffer(fbb, root);
}

} // namespace

std::vector<uint8_t> serializePlan(const PlanDescription &plan) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  build(plan, fbb);
  return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

rt::Status writePlan(const PlanDescription &plan, const std::string &path) {
  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  build(plan, fbb);
  return rt::writePlanFile(path, fbb.GetBufferPointer(), fbb.GetSize());
}

rt::Status writeWeights(const std::vector<ParamEntry> &parameters, const WeightLookup &weights,
                        const std::string &path, uint64_t &hash) {
  std::vector<rt::NamedTensor> named;
  for (const ParamEntry &param : parameters) {
    const std::string &name = param.name;
    std::optional<rt::TensorRef> value = weights(name);
    if (!value)
      return rt::Status::error("parameter '" + name + "' has no initial value in the source model");
    if (value->dtype != param.dtype ||
        std::vector<int64_t>(value->dims, value->dims + value->rank) != param.shape)
      return rt::Status::error("initial value of parameter '" + name + "' does not match its type");
    named.push_back({name, *value});
  }
  return rt::writeSafetensors(path, named, {{"producer", "fsdp-opt"}}, &hash);
}

} // namespace fsdp
