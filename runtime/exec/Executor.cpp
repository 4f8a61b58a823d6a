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
// Distributed plans: the group layouts of the collectives (and of the units,
// whose shards ModelState gathers over contiguous blocks of group_size
// ranks) are resolved once at creation to a channel per instruction, so
// run() only enqueues. The order it enqueues in is fixed at creation too: a
// device wait refers to the last record enqueued before it, so every record
// must be enqueued before the waits on it, which plan order alone does not
// promise (a compute instruction may wait for a later collective).
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
#include "runtime/support/Half.h"

#include "runtime/channels/InProcessCommunicator.h"
#include "runtime/channels/NcclMapping.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/checkpoint/StateLayout.h"

#include <algorithm>
#include <cstring>

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
  // Communicators, in plan order so every rank splits the same groups in
  // the same order: the collectives' groups, then the units'.
  collectives_.resize(numInstructions);
  for (size_t i = 0; i < numInstructions; ++i) {
    if (!isCollective(launches_[i].kernel))
      continue;
    CollectiveGroups groups;
    if (!readCollectiveGroups(launches_[i].kernel, ints_[i].data(), ints_[i].size(), groups))
      return Status::error(cat(plan_.path(), ": instruction ", i, " has no group layout"));
    collectives_[i].op = groups.reduction == 1   ? ReduceOp::Avg
                          : groups.reduction == 2 ? ReduceOp::Max
                                                  : ReduceOp::Sum;
    Communicator *group = nullptr;
    FSDP_RETURN_IF_ERROR(groupComm(groups.ranks, groups.numRanks, groups.groupSize, group));
    FSDP_RETURN_IF_ERROR(channelOf(group, collectives_[i].channel));
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
  formBatches();
  return Status::ok();
}

// --- Collectives issued together (Channel::beginGroup/endGroup) -----------
//
// Consecutive collectives of the issue order on one stream and one channel
// are one plan point: nothing else is enqueued between them, so they go to
// the channel as one group (one ncclGroupStart/End on NCCL). Their waits
// are enqueued before the group and their signals after it: a record
// between the calls of a group would complete before the group's kernels,
// which NCCL launches at the group's end. Moving the waits earlier waits
// for nothing new (every record they wait for was enqueued before the
// batch's first call), unless one waits for a signal of the batch itself,
// which ends the batch.

void Executor::formBatches() {
  batchLength_.assign(issueOrder_.size(), 1);
  for (size_t n = 0; n < issueOrder_.size();) {
    const uint32_t first = issueOrder_[n];
    size_t length = 1;
    if (collectives_[first].channel && collectives_[first].channel->groupsCalls()) {
      std::vector<int32_t> signalled{signals_[first]};
      while (n + length < issueOrder_.size()) {
        const uint32_t next = issueOrder_[n + length];
        bool joins = collectives_[next].channel == collectives_[first].channel &&
                     streamOf_[next] == streamOf_[first];
        for (uint32_t e : waits_[next])
          joins = joins && std::find(signalled.begin(), signalled.end(),
                                     static_cast<int32_t>(e)) == signalled.end();
        if (!joins)
          break;
        signalled.push_back(signals_[next]);
        ++length;
      }
    }
    batchLength_[n] = static_cast<uint32_t>(length);
    n += length;
  }
}

Status Executor::enqueueBatch(size_t position, bool timed) {
  const size_t length = batchLength_[position];
  // Timing events bracket each call, so profiled steps go one by one.
  if (length == 1 || timed) {
    Status s;
    for (size_t k = 0; s && k < length; ++k)
      s = enqueue(issueOrder_[position + k], timed);
    return s;
  }
  const uint32_t first = issueOrder_[position];
  Stream &stream = *streams_[streamOf_[first]];
  Channel &channel = *collectives_[first].channel;
  for (size_t k = 0; k < length; ++k)
    for (uint32_t e : waits_[issueOrder_[position + k]])
      FSDP_RETURN_IF_ERROR(device_.waitEvent(stream, *events_[e]));
  // Watched collectives of a group start and finish together, as NCCL
  // launches a group as one: every start mark before it, every finish
  // mark after it.
  FSDP_RETURN_IF_ERROR(setBatchMarks(position, length, 0));
  FSDP_RETURN_IF_ERROR(channel.beginGroup());
  Status s;
  for (size_t k = 0; s && k < length; ++k) {
    const uint32_t i = issueOrder_[position + k];
    if (s = enqueueCollective(stream, launches_[i], collectives_[i]); !s)
      s = Status::error(std::string(launches_[i].name) + ": " + s.message());
  }
  // Closed even after a failure, so the channel is not left collecting.
  if (Status ended = channel.endGroup(); s && !ended)
    s = ended;
  if (s)
    s = setBatchMarks(position, length, 1);
  for (size_t k = 0; s && k < length; ++k)
    if (int32_t signal = signals_[issueOrder_[position + k]]; signal >= 0)
      s = device_.recordEvent(stream, *events_[signal]);
  return s;
}

Status Executor::setBatchMarks(size_t position, size_t length, int which) {
  if (!watchdog_)
    return Status::ok();
  const uint32_t first = issueOrder_[position];
  for (size_t k = 0; k < length; ++k)
    if (int32_t watched = watchIndex_[issueOrder_[position + k]]; watched >= 0)
      FSDP_RETURN_IF_ERROR(device_.setMark(*streams_[streamOf_[first]], *marks_,
                                           2 * watched + which));
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
  for (SubGroup &sub : subComms_)
    if (sub.layout == key) {
      out = sub.comm.get();
      return Status::ok();
    }
  // This rank's group and position in it: the new communicator's color
  // and rank (the plan check made `ranks` a permutation of the world), as
  // a device channel's ncclCommSplit would form them (NcclMapping.h).
  nccl::Split split;
  std::unique_ptr<Communicator> sub;
  Status s = nccl::splitForGroups(ranks, numRanks, groupSize, comm_->rank(), split);
  if (s)
    s = comm_->split(split.color, split.key, sub);
  if (!s)
    return Status::error(cat(plan_.path(), ": cannot form groups of ", groupSize, ": ",
                             s.message()));
  out = sub.get();
  subComms_.push_back(SubGroup{std::move(key), std::move(sub), split});
  return Status::ok();
}

Status Executor::channelOf(Communicator *group, Channel *&out) {
  out = nullptr;
  if (!group)
    return Status::ok(); // a group of one needs no channel
  for (auto &[comm, channel] : channels_)
    if (comm == group) {
      out = channel.get();
      return Status::ok();
    }
  std::unique_ptr<Channel> channel;
  if (group == comm_) {
    FSDP_RETURN_IF_ERROR(device_.createChannel(*group, channel));
  } else {
    // A sub-group's channel is split from the world's with the colour and
    // key its communicator was split by, so both rank the group alike: on
    // NCCL one ncclCommSplit, with no unique id to exchange again.
    Channel *world = nullptr;
    FSDP_RETURN_IF_ERROR(channelOf(comm_, world));
    auto sub = std::find_if(subComms_.begin(), subComms_.end(),
                            [&](const SubGroup &g) { return g.comm.get() == group; });
    if (sub == subComms_.end())
      return Status::error(cat(plan_.path(), ": a channel for a group the executor did not form"));
    FSDP_RETURN_IF_ERROR(world->split(sub->split.color, sub->split.key, channel));
  }
  out = channel.get();
  channels_.emplace_back(group, std::move(channel));
  return Status::ok();
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

Status Executor::enqueueCollective(Stream &stream, const Launch &launch,
                                   const Collective &collective) {
  const TensorRef &in = launch.inputs[0], &out = launch.outputs[0];
  if (!collective.channel) // a group of one: every collective is the identity (avg divides by 1)
    return device_.copyAsync(stream, out.data, in.data, in.byteSize(), CopyKind::DeviceToDevice);
  switch (static_cast<plan::Kernel>(launch.kernel)) {
  case plan::Kernel::AllGather: return collective.channel->allGather(stream, in, out);
  case plan::Kernel::ReduceScatter:
    return collective.channel->reduceScatter(stream, in, out, collective.op);
  default: return collective.channel->allReduce(stream, in, out, collective.op);
  }
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

//===----------------------------------------------------------------------===//
// Profiling: timing events on the plan's own streams, enqueued between its
// work (so the streams still overlap as in any step), read back once the
// step has synchronized. Device time only, through Device.h, so the CPU
// and CUDA devices measure alike. A profiled step enqueues eagerly
// (enqueueStep), since a captured graph holds no events between kernels.
//===----------------------------------------------------------------------===//

Status Executor::beginProfiledStep() {
  if (timing_.empty()) {
    const size_t n = launches_.size();
    waitTimer_.assign(n, -1);
    size_t count = 2 * n;
    for (size_t i = 0; i < n; ++i)
      if (!waits_[i].empty())
        waitTimer_[i] = static_cast<int32_t>(count++);
    originTimer_ = count;
    count += 2 * streams_.size();
    timing_.resize(count);
    for (std::unique_ptr<Event> &event : timing_)
      if (Status s = device_.createEvent(EventFlags::Timing, event); !s) {
        timing_.clear();
        return s;
      }
  }
  // Every stream's start, before any of its work: the streams are idle
  // (the last step synchronized them), and the first to start work starts
  // the step, whichever its worker or hardware queue reaches first.
  for (size_t q = 0; q < streams_.size(); ++q)
    FSDP_RETURN_IF_ERROR(device_.recordEvent(*streams_[q], *timing_[originTimer_ + q]));
  return Status::ok();
}

Status Executor::endProfiledStep() {
  const size_t numStreams = streams_.size();
  for (size_t q = 0; q < numStreams; ++q)
    FSDP_RETURN_IF_ERROR(
        device_.recordEvent(*streams_[q], *timing_[originTimer_ + numStreams + q]));
  return Status::ok();
}

Status Executor::addProfile(StepProfile &profile) {
  const size_t n = launches_.size(), numStreams = streams_.size();
  if (profile.steps == 0) {
    profile.instructionSeconds.assign(n, 0.0);
    profile.streamBusySeconds.assign(numStreams, 0.0);
    profile.streamWaitSeconds.assign(numStreams, 0.0);
  }
  if (profile.instructionSeconds.size() != n || profile.streamBusySeconds.size() != numStreams)
    return Status::error(cat(plan_.path(), ": the step profile holds another plan's steps"));
  auto elapsed = [&](size_t from, size_t to, double &seconds) {
    return device_.elapsedSeconds(*timing_[from], *timing_[to], seconds);
  };
  // Times from stream 0's start (another stream's may be earlier: then
  // negative). The step runs from the first device stream's start to the
  // last one's end; stream 0 ends with its own work. The host stream
  // (--offload=cpu's optimizer) keeps the host's clock, which a GPU's
  // events cannot be compared with: it reports its own busy and waiting
  // time only, and is neither compute nor communication (as predicted).
  double stepStart = 0, stepEnd = 0, computeEnd = 0;
  for (size_t q = 0; q < std::min<size_t>(numStreams, kHostStream); ++q) {
    double start = 0, end = 0;
    FSDP_RETURN_IF_ERROR(elapsed(originTimer_, originTimer_ + q, start));
    FSDP_RETURN_IF_ERROR(elapsed(originTimer_, originTimer_ + numStreams + q, end));
    stepStart = std::min(stepStart, start);
    stepEnd = std::max(stepEnd, end);
    if (q == 0)
      computeEnd = end;
  }
  double exposed = std::max(0.0, stepEnd - computeEnd);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t q = streamOf_[i];
    double seconds = 0, waited = 0;
    FSDP_RETURN_IF_ERROR(elapsed(2 * i, 2 * i + 1, seconds));
    if (waitTimer_[i] >= 0)
      FSDP_RETURN_IF_ERROR(elapsed(waitTimer_[i], 2 * i, waited));
    profile.instructionSeconds[i] += seconds;
    profile.streamBusySeconds[q] += seconds;
    profile.streamWaitSeconds[q] += waited;
    if (q == 0)
      exposed += waited + (isCollective(launches_[i].kernel) ? seconds : 0.0);
  }
  profile.stepSeconds += stepEnd - stepStart;
  profile.exposedCommunicationSeconds += exposed;
  ++profile.steps;
  return Status::ok();
}

Status Executor::watch(CollectiveWatchdog &watchdog) {
  if (watchdog_)
    return Status::error("the executor is watched already");
  if (warm_ || graph_)
    return Status::error("watch() comes before the first run()");
  // Collectives of a group of one are local copies: nothing to wait for.
  std::vector<WatchedCollective> watched;
  watchIndex_.assign(launches_.size(), -1);
  for (size_t i = 0; i < launches_.size(); ++i)
    if (isCollective(launches_[i].kernel) && collectives_[i].channel) {
      watchIndex_[i] = static_cast<int32_t>(watched.size());
      watched.push_back(describePlanCollective(plan_, i, rank()));
    }
  for (uint32_t i : issueOrder_)
    if (watchIndex_[i] >= 0)
      watchOrder_.push_back(static_cast<uint32_t>(watchIndex_[i]));
  FSDP_RETURN_IF_ERROR(device_.createMarks(2 * watched.size(), marks_));
  watchdog.watchSteps(std::move(watched), marks_.get());
  watchdog.setAbort([this](const std::string &reason) { abort(reason); });
  watchdog_ = &watchdog;
  return Status::ok();
}

void Executor::abort(const std::string &reason) {
  comm_->abort(reason);
  for (SubGroup &sub : subComms_)
    sub.comm->abort(reason);
  // A device channel may hold a group of its own (NCCL's communicator); on
  // the CPU it is the communicator's, aborted already.
  for (auto &entry : channels_)
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
  // Under loss scaling the optimizer counts only the updates it applied.
  const int64_t optimizerStep = scaler_ ? scaler_->nextOptimizerStep() : step;
  if (!optional)
    FSDP_RETURN_IF_ERROR(
        writeScalar(plan_.plan().step_buffer(), DType::I64, &optimizerStep, "step"));
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
