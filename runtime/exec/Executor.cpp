//===- Executor.cpp - runs a loaded plan on a device ----------------------===//
//
// All memory is resolved at preparation time: buffer views point at
// region base + planned offset, so the per-step loop only walks the launch
// array. The plan's constant data is copied into device memory once at
// creation and constant buffers point there, so kernels read only device
// memory on every backend (on the CPU that is one copy at load). Training
// plans add three small things on top: a zeroed persistent region
// (optimizer state must start at zero whatever the device's allocator
// returns), the lr and step scalars written through the device before each
// step, and a read of the loss back to the host (the parameters are
// ModelState's).
//
// The order run() enqueues in is fixed at creation: a device wait refers
// to the last record enqueued before it, so every record must be enqueued
// before the waits on it, which plan order alone does not promise (a
// compute instruction may wait for a later collective). The collectives'
// channels and batches are ExecutorCollectives.cpp's, profiled steps'
// timing events ExecutorProfile.cpp's, the training scalars and the
// evaluation prefix ExecutorTraining.cpp's, and the named bindings
// ExecutorBindings.cpp's.
//
// Every step starts with Device::beginStep on stream 0, the plan's compute
// stream (a no-op on the CPU; the CUDA device writes the step word its
// dropout reads there, which also orders it before a replayed graph). The
// learning rate, step number and inputs are written with blocking copies
// before run(), so they have landed before anything of the step, replayed
// or not, is enqueued. Capture is legal for a plan's step because every
// wait in it refers to a record enqueued earlier in the same step (the
// issue order guarantees it), so no captured wait reaches outside the
// graph; and the graph stays valid for the executor's life, because no
// operand address or attribute changes after prepare().
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Executor.h"
#include "runtime/exec/CollectiveWatchdog.h"

#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>

namespace fsdp::rt {

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
  const auto *constants = plan.plan().constant_data();
  const size_t constantBytes = constants ? constants->size() : 0;
  FSDP_RETURN_IF_ERROR(device.allocate(constantBytes, executor->constants_));
  if (constantBytes)
    FSDP_RETURN_IF_ERROR(
        device.copyToDevice(executor->constants_.base, constants->data(), constantBytes));
  FSDP_RETURN_IF_ERROR(executor->zeroPersistent());
  FSDP_RETURN_IF_ERROR(executor->prepare());
  if (uint32_t interval = plan.plan().loss_scale_growth_interval()) {
    // Resolved once: run() reads the flag after every step.
    uint32_t &found = executor->foundInfBuffer_;
    FSDP_RETURN_IF_ERROR(
        executor->bindingBuffer(false, plan.plan().found_inf_output()->str(), found));
    TensorRef flag = executor->viewOf(found);
    if (flag.dtype != DType::F32 || flag.numElements() != 1)
      return Status::error(plan.path() + ": found_inf output is " + shapeText(flag) +
                           ", not an f32 scalar");
    executor->scaler_.emplace(interval);
  }
  out = std::move(executor);
  return Status::ok();
}

Executor::~Executor() {
  // The watchdog stops watching (and aborting) this executor first.
  if (watchdog_) {
    watchdog_->setAbort(nullptr);
    watchdog_->watchSteps({}, nullptr);
  }
  // run() leaves the streams idle; they, the events and the channels go
  // before the memory and the communicators they use.
  graph_.reset();
  streams_.clear();
  events_.clear();
  timing_.clear();
  channels_.clear();
  device_.release(persistent_);
  device_.release(arena_);
  device_.releaseHost(host_);
  device_.release(constants_);
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
  case plan::Region::Constant: base = static_cast<uint8_t *>(constants_.base); break;
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
    launch.name = inst->name() ? inst->name()->c_str() : "";
  }
  FSDP_RETURN_IF_ERROR(prepareStreams());
  return prepareCollectives();
}

Status Executor::prepareStreams() {
  const plan::Plan &plan = plan_.plan();
  const size_t numInstructions = launches_.size();
  streamOf_.resize(numInstructions);
  waits_.resize(numInstructions);
  signals_.resize(numInstructions);
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction *inst = plan.instructions()->Get(i);
    streamOf_[i] = inst->stream();
    if (inst->wait_events())
      waits_[i].assign(inst->wait_events()->begin(), inst->wait_events()->end());
    signals_[i] = inst->signal_event();
  }
  streams_.resize(plan.num_streams());
  for (size_t s = 0; s < streams_.size(); ++s)
    FSDP_RETURN_IF_ERROR(s == kHostStream ? device_.createHostStream(streams_[s])
                                          : device_.createStream(streams_[s]));
  events_.resize(plan.num_events());
  for (std::unique_ptr<Event> &event : events_)
    FSDP_RETURN_IF_ERROR(device_.createEvent(EventFlags::None, event));
  // The enqueue order: each stream's instructions in plan order, an
  // instruction once the records of the events it waits for are enqueued.
  // Collectives go as early as their events allow, since the device runs
  // them alongside the compute stream; the plan check proved this ends.
  std::vector<std::vector<uint32_t>> queues(streams_.size());
  for (size_t i = 0; i < numInstructions; ++i)
    queues[streamOf_[i]].push_back(static_cast<uint32_t>(i));
  std::vector<size_t> heads(queues.size(), 0);
  std::vector<uint8_t> recorded(events_.size(), 0);
  auto issue = [&](size_t q) {
    if (heads[q] == queues[q].size())
      return false;
    uint32_t i = queues[q][heads[q]];
    for (uint32_t e : waits_[i])
      if (!recorded[e])
        return false;
    if (signals_[i] >= 0)
      recorded[signals_[i]] = 1;
    issueOrder_.push_back(i);
    ++heads[q];
    return true;
  };
  issueOrder_.reserve(numInstructions);
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t q = queues.size(); q-- > 1;)
      while (issue(q))
        progress = true;
    progress |= issue(0);
  }
  if (issueOrder_.size() != numInstructions)
    return Status::error(cat(plan_.path(), ": the streams' waits cannot be ordered"));
  // The prefix is closed under its waits (EvalPrefixCheck.h), so the step's
  // order restricted to it is an order of its own.
  for (uint32_t i : issueOrder_)
    if (i < plan.eval_end())
      evalOrder_.push_back(i);
  return Status::ok();
}

Status Executor::enqueue(size_t i, bool timed) {
  const Launch &launch = launches_[i];
  Stream &stream = *streams_[streamOf_[i]];
  if (timed && waitTimer_[i] >= 0)
    if (Status s = device_.recordEvent(stream, *timing_[waitTimer_[i]]); !s)
      return s;
  for (uint32_t e : waits_[i])
    if (Status s = device_.waitEvent(stream, *events_[e]); !s)
      return s;
  if (timed)
    if (Status s = device_.recordEvent(stream, *timing_[2 * i]); !s)
      return s;
  // A watched collective sits between its two progress marks.
  const int32_t watched = watchdog_ ? watchIndex_[i] : -1;
  if (watched >= 0)
    if (Status s = device_.setMark(stream, *marks_, 2 * watched); !s)
      return s;
  Status s = isCollective(launch.kernel) ? enqueueCollective(stream, launch, collectives_[i])
                                         : device_.launch(stream, launch, step_);
  if (!s)
    return Status::error(std::string(launch.name) + ": " + s.message());
  if (watched >= 0)
    if (s = device_.setMark(stream, *marks_, 2 * watched + 1); !s)
      return s;
  if (timed)
    if (s = device_.recordEvent(stream, *timing_[2 * i + 1]); !s)
      return s;
  if (signals_[i] >= 0)
    return device_.recordEvent(stream, *events_[signals_[i]]);
  return s;
}

bool Executor::hasHostStream() const { return streams_.size() > kHostStream; }

Status Executor::useGraphs(bool on) {
  if (on && !device_.canCapture())
    return Status::error(cat("device '", device_.name(), "' cannot replay a step as a graph"));
  // A host thread's work cannot be recorded into a device's graph.
  if (on && hasHostStream())
    return Status::error(cat(plan_.path(), ": its optimizer runs on the host stream "
                                           "(--offload=cpu), which a graph cannot capture"));
  graphs_ = on;
  return Status::ok();
}

Status Executor::enqueueStep(bool timed) {
  if (!graphs_ || timed || streams_.empty() || (!graph_ && !warm_)) {
    Status s;
    for (size_t n = 0; s && n < issueOrder_.size(); n += batchLength_[n])
      s = enqueueBatch(n, timed);
    // Whether this step did the one-time set-up the synchronize decides
    // (run() resets warm_ when the step fails).
    warm_ = true;
    return s;
  }
  if (!graph_)
    if (Status s = captureStep(); !s)
      return s;
  return device_.replay(*streams_[0], *graph_);
}

Status Executor::captureStep() {
  std::vector<Stream *> streams;
  for (std::unique_ptr<Stream> &stream : streams_)
    streams.push_back(stream.get());
  Status s = device_.beginCapture(streams.data(), streams.size());
  if (!s)
    return s;
  for (size_t n = 0; s && n < issueOrder_.size(); n += batchLength_[n])
    s = enqueueBatch(n, false);
  // The capture ends whatever happened, or the streams stay recording.
  std::unique_ptr<Graph> graph;
  Status ended = device_.endCapture(graph);
  if (!s)
    return s;
  if (!ended)
    return ended;
  graph_ = std::move(graph);
  return Status::ok();
}

Status Executor::run(StepProfile *profile) {
  // The step's loss scale, written as the learning rate is: before any of
  // its work is enqueued.
  Status s = scaler_ ? writeLossScale() : Status::ok();
  if (s && profile)
    s = beginProfiledStep();
  if (s && !streams_.empty())
    s = device_.beginStep(*streams_[0], step_);
  if (s && watchdog_) // the streams are idle: the marks may be cleared
    watchdog_->stepIssued(static_cast<int64_t>(step_) + 1, watchOrder_);
  if (s)
    s = enqueueStep(profile != nullptr);
  if (s && profile)
    s = endProfiledStep();
  // Every stream drains, even after a failure, so no work of this step is
  // left running; the first stream's failure is the step's.
  for (std::unique_ptr<Stream> &stream : streams_)
    if (Status synced = device_.synchronize(*stream); s && !synced)
      s = synced;
  if (watchdog_)
    watchdog_->stepEnded();
  if (s && profile)
    s = addProfile(*profile);
  if (!s) {
    // A failed eager step may not have set everything up: warm up again.
    warm_ = false;
    // The other ranks would wait for this one in its next collective.
    if (worldSize() > 1)
      abort(s.message());
    return s;
  }
  ++step_;
  if (scaler_) {
    bool found = false;
    FSDP_RETURN_IF_ERROR(readFoundInf(found));
    lastLossScale_ = LossScaleOutcome{scaler_->state().scale, found};
    scaler_->update(found);
  }
  return Status::ok();
}

} // namespace fsdp::rt
