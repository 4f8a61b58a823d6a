//===- Executor.cpp - runs a loaded plan on a device ----------------------===//
//
// All memory is resolved at preparation time: buffer views point at
// region base + planned offset, so the per-step loop only walks the launch
// array. Constant buffers point into the loaded plan's constant data (the
// CPU device reads host memory; device backends will copy constants into
// their persistent region at preparation instead). Training plans add
// three small things on top: a zeroed persistent region (optimizer state
// must start at zero whatever the device's allocator returns), the lr and
// step scalars written through the device before each step, and a read of
// the loss back to the host (the parameters are ModelState's).
//
// Distributed plans: the group layouts of the collectives (and of the units,
// whose shards ModelState gathers over contiguous blocks of group_size
// ranks) are resolved once at creation to a communicator per instruction,
// so run() only dispatches. The communicators used so far (in-process, MPI)
// work on host memory, and the step's collectives read device buffers in
// place, which is host memory on the CPU device.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Executor.h"
#include "runtime/support/Half.h"

#include "runtime/channels/InProcessCommunicator.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

namespace fsdp::rt {

/// The communication worker of a plan with two streams and the step's
/// events. Every field is guarded by `mutex`; `generation` counts steps
/// requested, `done` steps the worker finished (or abandoned).
struct Executor::Streams {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<uint8_t> signaled;   // per event, reset every step
  uint64_t generation = 0, done = 0;
  bool cancel = false;   // the compute stream failed: stop waiting
  bool shutdown = false; // the executor is going away
  bool failed = false;   // the communication stream failed this step
  Status error;
  std::vector<double> *kernelSeconds = nullptr; // the worker's own timings
  std::vector<double> commSeconds;
  std::thread thread;

  bool ready(const std::vector<uint32_t> &events) const {
    for (uint32_t e : events)
      if (!signaled[e])
        return false;
    return true;
  }
};

Executor::Executor(const LoadedPlan &plan, Device &device) : plan_(plan), device_(device) {}

Status Executor::create(const LoadedPlan &plan, Device &device, Communicator *comm,
                        std::unique_ptr<Executor> &out) {
  std::unique_ptr<Executor> executor(new Executor(plan, device));
  uint32_t world = plan.plan().world_size();
  if (!comm) {
    if (world != 1)
      return Status::error(cat(plan.path(), ": compiled for world size ", world,
                               ": it needs a communicator for its ranks"));
    std::vector<std::unique_ptr<Communicator>> ranks;
    FSDP_RETURN_IF_ERROR(comm::createInProcessGroup(1, ranks));
    executor->ownComm_ = std::move(ranks[0]);
    comm = executor->ownComm_.get();
  }
  if (comm->size() != static_cast<int>(world))
    return Status::error(cat(plan.path(), ": compiled for world size ", world, ", but the group has ",
                             comm->size(), " ranks"));
  executor->comm_ = comm;
  FSDP_RETURN_IF_ERROR(device.allocate(plan.plan().persistent_bytes(), executor->persistent_));
  FSDP_RETURN_IF_ERROR(device.allocate(plan.plan().arena_bytes(), executor->arena_));
  FSDP_RETURN_IF_ERROR(device.allocateHost(plan.plan().host_bytes(), executor->host_));
  FSDP_RETURN_IF_ERROR(executor->zeroPersistent());
  FSDP_RETURN_IF_ERROR(executor->prepare());
  out = std::move(executor);
  return Status::ok();
}

Executor::~Executor() {
  if (streams_ && streams_->thread.joinable()) {
    {
      std::lock_guard<std::mutex> lock(streams_->mutex);
      streams_->shutdown = true;
    }
    streams_->changed.notify_all();
    streams_->thread.join();
  }
  device_.release(persistent_);
  device_.release(arena_);
  device_.releaseHost(host_);
}

Status Executor::zeroPersistent() {
  // Through copyToDevice in bounded chunks: the device may not be host
  // memory, and a host copy of the whole region could be gigabytes.
  static const std::vector<char> zeros(1 << 20, 0);
  char *base = static_cast<char *>(persistent_.base);
  for (size_t done = 0; done < persistent_.size; done += zeros.size())
    FSDP_RETURN_IF_ERROR(device_.copyToDevice(
        base + done, zeros.data(), std::min(zeros.size(), persistent_.size - done)));
  return Status::ok();
}

TensorRef Executor::viewOf(uint32_t index) const {
  TensorRef ref;
  if (index == kNoBuffer)
    return ref; // data == nullptr marks an absent optional operand
  ref = bufferType(plan_.plan(), index);
  const plan::Buffer *buffer = plan_.plan().buffers()->Get(index);
  uint8_t *base = nullptr;
  switch (buffer->region()) {
  case plan::Region::Persistent: base = static_cast<uint8_t *>(persistent_.base); break;
  case plan::Region::Arena: base = static_cast<uint8_t *>(arena_.base); break;
  case plan::Region::Host: base = static_cast<uint8_t *>(host_.base); break;
  case plan::Region::Constant:
    base = const_cast<uint8_t *>(plan_.plan().constant_data()->data());
    break;
  }
  // A unit's shard inside its persistent gathered buffer: this rank's chunk.
  const uint64_t chunk = buffer->rank_group() > 1 ? rank() % buffer->rank_group() : 0;
  ref.data = base + buffer->offset() + chunk * buffer->rank_stride();
  return ref;
}

Status Executor::prepare() {
  const plan::Plan &plan = plan_.plan();
  size_t numInstructions = plan.instructions() ? plan.instructions()->size() : 0;
  size_t numOperands = 0;
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction *inst = plan.instructions()->Get(i);
    numOperands += inst->inputs()->size() + inst->outputs()->size();
  }
  // Reserve first: launches keep pointers into these vectors.
  operands_.reserve(numOperands);
  ints_.resize(numInstructions);
  floats_.resize(numInstructions);
  launches_.resize(numInstructions);
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction *inst = plan.instructions()->Get(i);
    Launch &launch = launches_[i];
    launch.kernel = static_cast<uint16_t>(inst->kernel());
    launch.inputs = operands_.data() + operands_.size();
    for (uint32_t b : *inst->inputs())
      operands_.push_back(viewOf(b));
    launch.numInputs = static_cast<int>(inst->inputs()->size());
    launch.outputs = operands_.data() + operands_.size();
    for (uint32_t b : *inst->outputs())
      operands_.push_back(viewOf(b));
    launch.numOutputs = static_cast<int>(inst->outputs()->size());
    if (inst->ints())
      ints_[i].assign(inst->ints()->begin(), inst->ints()->end());
    if (inst->floats())
      floats_[i].assign(inst->floats()->begin(), inst->floats()->end());
    launch.ints = ints_[i].data();
    launch.numInts = static_cast<int>(ints_[i].size());
    launch.floats = floats_[i].data();
    launch.numFloats = static_cast<int>(floats_[i].size());
    launch.stream = inst->stream();
    launch.name = inst->name() ? inst->name()->c_str() : "";
  }
  waits_.resize(numInstructions);
  signals_.resize(numInstructions);
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction *inst = plan.instructions()->Get(i);
    if (inst->wait_events())
      waits_[i].assign(inst->wait_events()->begin(), inst->wait_events()->end());
    signals_[i] = inst->signal_event();
    (launches_[i].stream == 0 ? computeLaunches_ : commLaunches_).push_back(i);
  }
  if (!commLaunches_.empty()) {
    streams_ = std::make_unique<Streams>();
    streams_->signaled.assign(plan.num_events(), 0);
  }
  // Communicators, in plan order so every rank splits the same groups in
  // the same order: the collectives' groups, then the units'.
  collectives_.resize(numInstructions);
  for (size_t i = 0; i < numInstructions; ++i) {
    if (!isCollective(launches_[i].kernel))
      continue;
    CollectiveGroups groups;
    if (!readCollectiveGroups(launches_[i].kernel, ints_[i].data(), ints_[i].size(), groups))
      return Status::error(cat(plan_.path(), ": instruction ", i, " has no group layout"));
    collectives_[i].op = groups.reduction == 1 ? ReduceOp::Avg : ReduceOp::Sum;
    FSDP_RETURN_IF_ERROR(
        groupComm(groups.ranks, groups.numRanks, groups.groupSize, collectives_[i].comm));
  }
  size_t numUnits = plan.units() ? plan.units()->size() : 0;
  unitComms_.assign(numUnits, nullptr);
  std::vector<int64_t> world(plan.world_size());
  for (size_t r = 0; r < world.size(); ++r)
    world[r] = static_cast<int64_t>(r);
  for (size_t u = 0; u < numUnits; ++u) {
    const plan::Unit *unit = plan.units()->Get(u);
    if (unit->shard_buffer() != kNoBuffer)
      FSDP_RETURN_IF_ERROR(groupComm(world.data(), world.size(), unit->group_size(), unitComms_[u]));
  }
  return Status::ok();
}

Status Executor::groupComm(const int64_t *ranks, size_t numRanks, int64_t groupSize,
                           Communicator *&out) {
  out = nullptr;
  if (groupSize == 1)
    return Status::ok();
  bool wholeWorld = groupSize == comm_->size();
  for (size_t i = 0; wholeWorld && i < numRanks; ++i)
    wholeWorld = ranks[i] == static_cast<int64_t>(i);
  if (wholeWorld) {
    out = comm_;
    return Status::ok();
  }
  std::vector<int64_t> key{groupSize};
  key.insert(key.end(), ranks, ranks + numRanks);
  for (auto &[layout, sub] : subComms_)
    if (layout == key) {
      out = sub.get();
      return Status::ok();
    }
  // This rank's group and position in it: the new communicator's color
  // and rank (the plan check made `ranks` a permutation of the world).
  size_t position = std::find(ranks, ranks + numRanks, comm_->rank()) - ranks;
  std::unique_ptr<Communicator> sub;
  Status s = comm_->split(static_cast<int>(position / groupSize),
                          static_cast<int>(position % groupSize), sub);
  if (!s)
    return Status::error(cat(plan_.path(), ": cannot form groups of ", groupSize, ": ",
                             s.message()));
  out = sub.get();
  subComms_.emplace_back(std::move(key), std::move(sub));
  return Status::ok();
}

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

Status Executor::runCollective(const Launch &launch, const Collective &collective) {
  const TensorRef &in = launch.inputs[0], &out = launch.outputs[0];
  // The communicator reads and writes the buffers directly: the device's
  // work on them must be done.
  FSDP_RETURN_IF_ERROR(device_.synchronize());
  Status s;
  if (!collective.comm) {
    // A group of one: every collective is the identity (avg divides by 1).
    Launch copy = launch;
    copy.kernel = static_cast<uint16_t>(plan::Kernel::Copy);
    copy.numInts = 0;
    s = device_.execute(copy, step_);
  } else {
    switch (static_cast<plan::Kernel>(launch.kernel)) {
    case plan::Kernel::AllGather: s = collective.comm->allGather(in, out); break;
    case plan::Kernel::ReduceScatter: s = collective.comm->reduceScatter(in, out, collective.op); break;
    default: s = collective.comm->allReduce(in, out, collective.op); break;
    }
  }
  if (!s)
    return Status::error(std::string(launch.name) + ": " + s.message());
  return s;
}

Status Executor::runLaunch(size_t i, std::vector<double> *kernelSeconds) {
  const Launch &launch = launches_[i];
  auto start = std::chrono::steady_clock::now();
  Status s = isCollective(launch.kernel) ? runCollective(launch, collectives_[i])
                                         : device_.execute(launch, step_);
  if (!s || !kernelSeconds)
    return s;
  FSDP_RETURN_IF_ERROR(device_.synchronize());
  if (kernelSeconds->size() <= launch.kernel)
    kernelSeconds->resize(launch.kernel + 1, 0.0);
  (*kernelSeconds)[launch.kernel] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

void Executor::commLoop() {
  Streams &st = *streams_;
  std::unique_lock<std::mutex> lock(st.mutex);
  for (;;) {
    st.changed.wait(lock, [&] { return st.shutdown || st.generation > st.done; });
    if (st.shutdown)
      return;
    std::vector<double> *seconds = st.kernelSeconds ? &st.commSeconds : nullptr;
    for (size_t i : commLaunches_) {
      st.changed.wait(lock, [&] { return st.cancel || st.ready(waits_[i]); });
      if (st.cancel)
        break;
      lock.unlock();
      Status s = runLaunch(i, seconds);
      lock.lock();
      if (!s) {
        st.failed = true;
        st.error = s;
        break;
      }
      if (signals_[i] >= 0)
        st.signaled[signals_[i]] = 1;
      st.changed.notify_all();
    }
    st.done = st.generation;
    st.changed.notify_all();
  }
}

Status Executor::runStreams(std::vector<double> *kernelSeconds) {
  Streams &st = *streams_;
  std::unique_lock<std::mutex> lock(st.mutex);
  std::fill(st.signaled.begin(), st.signaled.end(), 0);
  st.cancel = st.failed = false;
  st.error = Status::ok();
  st.kernelSeconds = kernelSeconds;
  st.commSeconds.clear();
  ++st.generation;
  if (!st.thread.joinable())
    st.thread = std::thread([this] { commLoop(); });
  st.changed.notify_all();
  Status s;
  for (size_t i : computeLaunches_) {
    st.changed.wait(lock, [&] { return st.failed || st.ready(waits_[i]); });
    if (st.failed)
      break;
    lock.unlock();
    s = runLaunch(i, kernelSeconds);
    lock.lock();
    if (!s)
      break;
    if (signals_[i] >= 0) {
      st.signaled[signals_[i]] = 1;
      st.changed.notify_all();
    }
  }
  if (!s || st.failed) {
    // Stop the worker waiting for this stream; the abort fails a
    // collective it may be blocked in (and every other rank's).
    st.cancel = true;
    st.changed.notify_all();
    std::string reason = !s ? s.message() : st.error.message();
    lock.unlock();
    if (worldSize() > 1)
      abort(reason);
    lock.lock();
  }
  st.changed.wait(lock, [&] { return st.done == st.generation; });
  if (s && st.failed)
    s = st.error;
  if (kernelSeconds)
    for (size_t k = 0; k < st.commSeconds.size(); ++k) {
      if (kernelSeconds->size() <= k)
        kernelSeconds->resize(k + 1, 0.0);
      (*kernelSeconds)[k] += st.commSeconds[k];
    }
  st.kernelSeconds = nullptr;
  return s;
}

Status Executor::run(std::vector<double> *kernelSeconds) {
  if (streams_) {
    Status s = runStreams(kernelSeconds);
    if (s)
      s = device_.synchronize();
    if (!s)
      return s;
    ++step_;
    return Status::ok();
  }
  Status s;
  for (size_t i = 0; s && i < launches_.size(); ++i)
    s = runLaunch(i, kernelSeconds);
  if (s)
    s = device_.synchronize();
  if (!s) {
    // The other ranks would wait for this one in its next collective.
    if (worldSize() > 1)
      abort(s.message());
    return s;
  }
  ++step_;
  return Status::ok();
}

void Executor::abort(const std::string &reason) {
  comm_->abort(reason);
  for (auto &entry : subComms_)
    entry.second->abort(reason);
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
  if (!optional)
    FSDP_RETURN_IF_ERROR(writeScalar(plan_.plan().step_buffer(), DType::I64, &step, "step"));
  step_ = step > 0 ? static_cast<uint64_t>(step - 1) : 0;
  return Status::ok();
}

bool Executor::isTraining() const { return plan_.isTraining(); }

std::string Executor::lossOutput() const {
  return plan_.plan().loss_output() ? plan_.plan().loss_output()->str() : "";
}

double Executor::baseLearningRate() const { return plan_.plan().base_lr(); }

uint32_t Executor::worldSize() const { return plan_.plan().world_size(); }

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
  uint32_t buffer;
  FSDP_RETURN_IF_ERROR(bindingBuffer(false, name, buffer));
  TensorRef source = viewOf(buffer);
  if (source.numElements() != 1 || !isFloat(source.dtype))
    return Status::error(plan_.path() + ": loss output '" + name + "' is " + shapeText(source) +
                         ", not a float scalar");
  uint8_t bytes[8] = {};
  FSDP_RETURN_IF_ERROR(device_.copyToHost(bytes, source.data, dtypeSize(source.dtype)));
  loss = floatScalarToDouble(source.dtype, bytes);
  if (dtype)
    *dtype = source.dtype;
  return Status::ok();
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
