//===- ExecutorTraining.cpp - a training step's scalars and evaluation ----===//
//
// What a training plan takes and gives besides its inputs and outputs: the
// learning rate and step number written into their scalar buffers before
// a step, fp16's loss scale and found_inf flag around it, the loss and
// other float scalars read back after it, and the evaluation prefix
// (runEval), which runs the step's forward part alone. Scalars go through
// the device's blocking copies, so they have landed before the step's
// work is enqueued.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "runtime/support/Half.h"

#include "runtime/plan/plan_generated.h"

#include <cstring>

namespace fsdp::rt {

Status Executor::writeScalar(uint32_t buffer, DType dtype, const void *value, const char *what) {
  const plan::Plan &plan = plan_.plan();
  if (buffer == kNoBuffer)
    return Status::error(plan_.path() + ": the plan has no " + what + " buffer" +
                         (isTraining() ? "" : " (forward plan; only training plans take one)"));
  if (!plan.buffers() || buffer >= plan.buffers()->size())
    return Status::error(cat(plan_.path(), ": ", what, " buffer ", buffer, " does not exist"));
  TensorRef target = viewOf(buffer);
  if (target.dtype != dtype || target.numElements() != 1)
    return Status::error(plan_.path() + ": " + what + " buffer is " + shapeText(target) +
                         ", not a " + dtypeName(dtype) + " scalar");
  return device_.copyToDevice(target.data, value, dtypeSize(dtype));
}

Status Executor::setLearningRate(double lr) {
  return writeScalar(plan_.plan().lr_buffer(), DType::F64, &lr, "learning-rate");
}

Status Executor::setStep(int64_t step) {
  if (step < 1)
    return Status::error(cat("step ", step, " is not a 1-based step number"));
  // SGD needs no step number, so its plans carry no step buffer; the step
  // still seeds dropout.
  bool optional = isTraining() && plan_.plan().step_buffer() == kNoBuffer;
  // Under loss scaling the optimizer counts only the updates it applied.
  const int64_t optimizerStep = scaler_ ? scaler_->nextOptimizerStep() : step;
  if (!optional)
    FSDP_RETURN_IF_ERROR(
        writeScalar(plan_.plan().step_buffer(), DType::I64, &optimizerStep, "step"));
  step_ = step > 0 ? static_cast<uint64_t>(step - 1) : 0;
  return Status::ok();
}

Status Executor::writeLossScale() {
  const float scale = scaler_->state().scale, inv = scaler_->invScale();
  FSDP_RETURN_IF_ERROR(
      writeScalar(plan_.plan().loss_scale_buffer(), DType::F32, &scale, "loss-scale"));
  return writeScalar(plan_.plan().inv_loss_scale_buffer(), DType::F32, &inv, "inverse loss-scale");
}

Status Executor::readFoundInf(bool &found) const {
  float flag = 0;
  FSDP_RETURN_IF_ERROR(device_.copyToHost(&flag, viewOf(foundInfBuffer_).data, sizeof(flag)));
  found = flag != 0.0f;
  return Status::ok();
}

/// A float scalar's value, from its raw bytes.
static double floatScalarToDouble(DType dtype, const uint8_t *bytes) {
  uint16_t half = 0;
  std::memcpy(&half, bytes, sizeof(half));
  switch (dtype) {
  case DType::F64: { double d; std::memcpy(&d, bytes, sizeof(d)); return d; }
  case DType::F16: return f16ToFloat(half);
  case DType::BF16: return bf16ToFloat(half);
  default: { float f; std::memcpy(&f, bytes, sizeof(f)); return f; }
  }
}

Status Executor::getLoss(double &loss, DType *dtype) const {
  std::string name = lossOutput();
  if (name.empty())
    return Status::error(plan_.path() + ": the plan names no loss output");
  return getScalarOutput(name, loss, dtype, "loss");
}

Status Executor::getScalarOutput(const std::string &name, double &value, DType *dtype,
                                 const char *what) const {
  uint32_t buffer;
  FSDP_RETURN_IF_ERROR(bindingBuffer(false, name, buffer));
  TensorRef source = viewOf(buffer);
  if (source.numElements() != 1 || !isFloat(source.dtype))
    return Status::error(plan_.path() + ": " + what + " output '" + name + "' is " +
                         shapeText(source) + ", not a float scalar");
  uint8_t bytes[8] = {};
  FSDP_RETURN_IF_ERROR(device_.copyToHost(bytes, source.data, dtypeSize(source.dtype)));
  value = floatScalarToDouble(source.dtype, bytes);
  if (dtype)
    *dtype = source.dtype;
  return Status::ok();
}

bool Executor::hasEvalPrefix() const { return plan_.plan().eval_end() > 0; }

Status Executor::runEval(double &loss) {
  if (!hasEvalPrefix())
    return Status::error(plan_.path() + ": the plan has no evaluation prefix (compile it again "
                                        "with this fsdp-opt)");
  // One call at a time, with no channel groups: an evaluation is rare and
  // its collectives are the forward's gathers.
  Status s;
  if (!streams_.empty())
    s = device_.beginStep(*streams_[0], step_);
  std::vector<uint32_t> watched;
  if (watchdog_) {
    for (uint32_t i : evalOrder_)
      if (watchIndex_[i] >= 0)
        watched.push_back(static_cast<uint32_t>(watchIndex_[i]));
    watchdog_->stepIssued(static_cast<int64_t>(step_), watched);
  }
  for (size_t n = 0; s && n < evalOrder_.size(); ++n)
    s = enqueue(evalOrder_[n], false);
  for (std::unique_ptr<Stream> &stream : streams_)
    if (Status synced = device_.synchronize(*stream); s && !synced)
      s = synced;
  if (watchdog_)
    watchdog_->stepEnded();
  if (s) {
    TensorRef source = viewOf(plan_.plan().eval_loss_buffer());
    uint8_t bytes[8] = {};
    s = device_.copyToHost(bytes, source.data, dtypeSize(source.dtype));
    loss = floatScalarToDouble(source.dtype, bytes);
  }
  if (!s && worldSize() > 1)
    abort(s.message());
  return s;
}

} // namespace fsdp::rt
