//===- ExecutorBindings.cpp - the plan's named inputs, outputs and facts --===//
//
// The executor's side of the plan's bindings: inputs and outputs by name
// (a name the plan lacks is refused listing the names it has), copies of
// plan buffers to the host, the parameter names, and the few facts of the
// plan (mode, loss output, base learning rate, world size) its callers
// ask for. None of it enqueues work.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Executor.h"

#include "runtime/plan/plan_generated.h"

namespace fsdp::rt {

Status Executor::bindingBuffer(bool input, const std::string &name, uint32_t &buffer) const {
  const auto *bindings = input ? plan_.plan().inputs() : plan_.plan().outputs();
  if (bindings)
    for (const plan::Binding *binding : *bindings)
      if (binding->name()->string_view() == name) {
        buffer = binding->buffer();
        return Status::ok();
      }
  std::string known;
  for (const std::string &n : input ? inputNames() : outputNames())
    known += (known.empty() ? "" : ", ") + n;
  return Status::error(std::string(input ? "input" : "output") + " '" + name +
                       "' is not in the plan (it has: " + known + ")");
}

Status Executor::setInput(const std::string &name, const TensorRef &value) {
  uint32_t buffer;
  FSDP_RETURN_IF_ERROR(bindingBuffer(true, name, buffer));
  TensorRef target = viewOf(buffer);
  if (!sameType(value, target))
    return Status::error("input '" + name + "' is " + shapeText(value) + ", the plan needs " +
                         shapeText(target));
  return device_.copyToDevice(target.data, value.data, target.byteSize());
}

Status Executor::copyToHost(uint32_t buffer, HostTensor &out) const {
  TensorRef source = viewOf(buffer);
  out.dtype = source.dtype;
  out.shape.assign(source.dims, source.dims + source.rank);
  out.data.resize(source.byteSize());
  return device_.copyToHost(out.data.data(), source.data, source.byteSize());
}

Status Executor::getOutput(const std::string &name, HostTensor &out) const {
  uint32_t buffer;
  FSDP_RETURN_IF_ERROR(bindingBuffer(false, name, buffer));
  return copyToHost(buffer, out);
}

Status Executor::inputType(const std::string &name, DType &dtype,
                           std::vector<int64_t> &shape) const {
  uint32_t buffer;
  FSDP_RETURN_IF_ERROR(bindingBuffer(true, name, buffer));
  TensorRef ref = viewOf(buffer);
  dtype = ref.dtype;
  shape.assign(ref.dims, ref.dims + ref.rank);
  return Status::ok();
}

bool Executor::isTraining() const { return plan_.isTraining(); }

std::string Executor::lossOutput() const {
  return plan_.plan().loss_output() ? plan_.plan().loss_output()->str() : "";
}

double Executor::baseLearningRate() const { return plan_.plan().base_lr(); }

uint32_t Executor::worldSize() const { return plan_.plan().world_size(); }

std::vector<std::string> Executor::parameterNames() const {
  std::vector<std::string> names;
  if (plan_.plan().parameters())
    for (const plan::Parameter *p : *plan_.plan().parameters())
      names.push_back(p->name()->str());
  return names;
}

/// Names of a plan's bindings, in order.
static std::vector<std::string>
bindingNames(const flatbuffers::Vector<flatbuffers::Offset<plan::Binding>> *bindings) {
  std::vector<std::string> names;
  if (bindings)
    for (const plan::Binding *b : *bindings)
      names.push_back(b->name()->str());
  return names;
}

std::vector<std::string> Executor::inputNames() const { return bindingNames(plan_.plan().inputs()); }

std::vector<std::string> Executor::outputNames() const {
  return bindingNames(plan_.plan().outputs());
}

} // namespace fsdp::rt
