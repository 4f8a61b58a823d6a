//===- CollectiveWatchdog.cpp - a timeout on every collective of a rank ---===//
//
// One mutex guards the watched state; the thread takes it for each look,
// the executor's thread when a step is issued or ends and around a host
// call. A timeout is handled outside it (the report may print 64 lines,
// the abort may block in MPI_Abort) but under abortMutex_, which
// setAbort() also takes: an executor that withdraws its abort before it is
// destroyed therefore never has it called afterwards.
//
// Started and finished times are those of the look that first saw a mark
// set, so they are late by at most one interval; a collective whose
// finish is seen before its start (both marks set between two looks)
// gets the same time for both. A mark says the stream went past it, not
// that the collective succeeded: on a rank whose watchdog did not fire,
// the collectives an abort fails read as finished when they failed.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/CollectiveWatchdog.h"

#include "runtime/checkpoint/StateLayout.h"
#include "runtime/plan/KernelTable.h"
#include "runtime/plan/plan_generated.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace fsdp::rt {

namespace {

/// The interval between looks: a twentieth of the timeout, within limits
/// that keep a long timeout responsive and a short one cheap.
std::chrono::microseconds lookInterval(double timeout) {
  const double seconds = std::clamp(timeout / 20, 0.005, 0.5);
  return std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
}

std::string timeoutText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

/// The unit of collective `index`: the one whose shard or gathered buffer
/// it reads or writes, directly or through a chain of casts, copies and
/// all-reduces (a bf16 all-gather gathers a cast of the shard; a gradient
/// shard may be cast, or all-reduced across groups, before the optimizer),
/// or the unit whose shard buffer the first other instruction reading its
/// result updates (the optimizer step of a reduce-scattered gradient);
/// else the only unit whose shard and flat sizes it moves; -1 when none of
/// these says.
int64_t unitOf(const plan::Plan &plan, size_t index, int64_t sent, int64_t received) {
  const size_t numUnits = plan.units() ? plan.units()->size() : 0;
  auto unitHolding = [&](uint32_t buffer) -> int64_t {
    for (size_t u = 0; u < numUnits; ++u) {
      const plan::Unit *unit = plan.units()->Get(u);
      if (buffer != kNoBuffer &&
          (buffer == unit->shard_buffer() || buffer == unit->gathered_buffer()))
        return static_cast<int64_t>(u);
    }
    return -1;
  };
  const auto &insts = *plan.instructions();
  // What carries a unit's values on unchanged in kind: casts, copies and
  // all-reduces (hybrid sharding all-reduces the reduce-scattered shard
  // across groups before the optimizer reads it).
  auto passesThrough = [](const plan::Instruction *inst) {
    const plan::Kernel k = inst->kernel();
    return (k == plan::Kernel::Cast || k == plan::Kernel::Copy || k == plan::Kernel::AllReduce) &&
           inst->inputs()->size() == 1 && inst->outputs()->size() == 1;
  };
  auto touches = [](const plan::Instruction *inst, uint32_t buffer, bool asInput) {
    const auto *list = asInput ? inst->inputs() : inst->outputs();
    return std::find(list->begin(), list->end(), buffer) != list->end();
  };
  // Back from the input through its casts and copies.
  uint32_t buffer = insts.Get(index)->inputs()->Get(0);
  for (size_t j = index + 1; j-- > 0;) {
    if (int64_t u = unitHolding(buffer); u >= 0)
      return u;
    if (j == index || !touches(insts.Get(j), buffer, false))
      continue;
    if (!passesThrough(insts.Get(j)))
      break;
    buffer = insts.Get(j)->inputs()->Get(0);
    if (int64_t u = unitHolding(buffer); u >= 0)
      return u;
  }
  // On from the result to its first reader that is not a cast or copy.
  buffer = insts.Get(index)->outputs()->Get(0);
  for (size_t j = index; j < insts.size(); ++j) {
    if (int64_t u = unitHolding(buffer); u >= 0)
      return u;
    const plan::Instruction *inst = insts.Get(j);
    if (j == index || !touches(inst, buffer, true))
      continue;
    if (passesThrough(inst)) {
      buffer = inst->outputs()->Get(0);
      continue;
    }
    for (const auto *list : {inst->inputs(), inst->outputs()})
      for (uint32_t b : *list)
        if (int64_t u = unitHolding(b); u >= 0)
          return u;
    break;
  }
  const auto kernel = insts.Get(index)->kernel();
  int64_t bySize = -1, matches = 0;
  for (size_t u = 0; u < numUnits; ++u) {
    const plan::Unit *unit = plan.units()->Get(u);
    const auto shard = static_cast<int64_t>(unit->shard_numel()),
               padded = static_cast<int64_t>(unit->padded_numel());
    const bool fits = kernel == plan::Kernel::AllGather       ? sent == shard && received == padded
                      : kernel == plan::Kernel::ReduceScatter ? sent == padded && received == shard
                          : sent == received && (sent == shard || sent == padded);
    if (fits && ++matches == 1)
      bySize = static_cast<int64_t>(u);
  }
  return matches == 1 ? bySize : -1;
}

} // namespace

std::string describeGroup(const int64_t *ranks, size_t numRanks, int64_t groupSize, int rank) {
  bool world = static_cast<size_t>(groupSize) == numRanks;
  for (size_t i = 0; world && i < numRanks; ++i)
    world = ranks[i] == static_cast<int64_t>(i);
  if (world)
    return "world";
  if (groupSize <= 0)
    return "?";
  const size_t position = std::find(ranks, ranks + numRanks, rank) - ranks;
  const size_t group = position / groupSize, groups = numRanks / groupSize;
  std::string members;
  for (size_t i = group * groupSize; i < std::min(numRanks, (group + 1) * groupSize); ++i)
    members += cat(members.empty() ? "" : ",", ranks[i]);
  return cat(group + 1, " of ", groups, ": ranks ", members);
}

WatchedCollective describePlanCollective(const LoadedPlan &loaded, size_t instruction, int rank) {
  const plan::Plan &plan = loaded.plan();
  const plan::Instruction *inst = plan.instructions()->Get(instruction);
  const auto kernel = static_cast<uint16_t>(inst->kernel());
  WatchedCollective out;
  out.kind = kernelName(kernel);
  const uint32_t in = inst->inputs()->Get(0), result = inst->outputs()->Get(0);
  const TensorRef send = bufferType(plan, in), recv = bufferType(plan, result);
  out.bytes = send.byteSize();
  CollectiveGroups groups;
  const auto *ints = inst->ints();
  if (ints && readCollectiveGroups(kernel, ints->data(), ints->size(), groups))
    out.group = describeGroup(groups.ranks, groups.numRanks, groups.groupSize, rank);
  else
    out.group = "?";
  const int64_t found = unitOf(plan, instruction, send.numElements(), recv.numElements());
  if (found < 0) {
    out.unit = "-";
  } else {
    const plan::Unit *unit = plan.units()->Get(static_cast<size_t>(found));
    const std::string name = unit->name() ? unit->name()->str() : "";
    out.unit = name.empty() ? cat(found) : cat(found, " '", name, "'");
  }
  return out;
}

CollectiveWatchdog::CollectiveWatchdog(double timeoutSeconds, int rank, FlightRecorder &recorder,
                                       Report report, Abort abort)
    : timeout_(timeoutSeconds), rank_(rank), recorder_(recorder), report_(std::move(report)),
      defaultAbort_(std::move(abort)), abort_(defaultAbort_) {
  thread_ = std::thread([this] { run(); });
}

CollectiveWatchdog::~CollectiveWatchdog() {
  {
    std::lock_guard<std::mutex> lock(stopMutex_);
    stop_ = true;
  }
  stopCv_.notify_all();
  thread_.join();
}

bool CollectiveWatchdog::fired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fired_;
}

std::string CollectiveWatchdog::message() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return message_;
}

void CollectiveWatchdog::setAbort(Abort abort) {
  std::lock_guard<std::mutex> lock(abortMutex_);
  abort_ = abort ? std::move(abort) : defaultAbort_;
}

void CollectiveWatchdog::watchSteps(std::vector<WatchedCollective> collectives, MarkSet *marks) {
  std::lock_guard<std::mutex> lock(mutex_);
  collectives_ = std::move(collectives);
  marks_ = marks;
  order_.clear();
  inFlight_.clear();
}

void CollectiveWatchdog::stepIssued(int64_t step, const std::vector<uint32_t> &order) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!marks_)
    return;
  marks_->clear();
  step_ = step;
  order_ = order;
  inFlight_.assign(order.size(), InFlight{});
  const double now = recorder_.now();
  for (size_t i = 0; i < order.size(); ++i) {
    const WatchedCollective &c = collectives_[order[i]];
    CollectiveRecord record;
    record.step = step;
    record.kind = c.kind;
    record.unit = c.unit;
    record.bytes = c.bytes;
    record.group = c.group;
    record.issued = now;
    inFlight_[i].sequence = recorder_.add(std::move(record));
  }
}

void CollectiveWatchdog::stepEnded() {
  std::lock_guard<std::mutex> lock(mutex_);
  readMarks(recorder_.now());
  order_.clear();
  inFlight_.clear();
}

CollectiveWatchdog::HostCall CollectiveWatchdog::hostCall(const std::string &kind,
                                                          const std::string &group,
                                                          uint64_t bytes, int64_t step) {
  CollectiveRecord record;
  record.step = step;
  record.kind = kind;
  record.unit = "-";
  record.bytes = bytes;
  record.group = group;
  std::lock_guard<std::mutex> lock(mutex_);
  const double now = recorder_.now();
  record.issued = record.started = now;
  host_ = InFlight{recorder_.add(std::move(record)), now, false};
  return HostCall(this, host_.sequence);
}

CollectiveWatchdog::HostCall::~HostCall() {
  if (!dog_)
    return;
  std::lock_guard<std::mutex> lock(dog_->mutex_);
  if (!dog_->fired_) // a timed-out call stays unfinished in the recorder
    dog_->recorder_.markFinished(sequence_, dog_->recorder_.now());
  if (dog_->host_.sequence == sequence_)
    dog_->host_ = InFlight{};
}

void CollectiveWatchdog::readMarks(double now) {
  // After a timeout the recorder keeps the picture it fired on: the
  // collectives the abort then fails would otherwise read as finished.
  if (!marks_ || fired_)
    return;
  for (size_t i = 0; i < order_.size(); ++i) {
    InFlight &f = inFlight_[i];
    if (f.finished)
      continue;
    const size_t k = order_[i];
    const bool finished = marks_->isSet(2 * k + 1);
    if (f.started < 0 && (finished || marks_->isSet(2 * k))) {
      f.started = now;
      recorder_.markStarted(f.sequence, now);
    }
    if (finished) {
      f.finished = true;
      recorder_.markFinished(f.sequence, now);
    }
  }
}

bool CollectiveWatchdog::poll() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fired_)
      return true;
    const double now = recorder_.now();
    readMarks(now);
    uint64_t sequence = 0;
    for (const InFlight &f : inFlight_)
      if (!f.finished && f.started >= 0 && now - f.started >= timeout_) {
        sequence = f.sequence;
        break;
      }
    if (!sequence && host_.sequence && now - host_.started >= timeout_)
      sequence = host_.sequence;
    CollectiveRecord late;
    if (!sequence || !recorder_.find(sequence, late))
      return false;
    fired_ = true;
    message_ = late.describe() + " did not complete in " + timeoutText(timeout_) + " s on rank " +
               std::to_string(rank_);
  }
  fire();
  return true;
}

void CollectiveWatchdog::fire() {
  const std::string message = this->message();
  std::lock_guard<std::mutex> lock(abortMutex_);
  if (report_)
    report_(message);
  if (abort_)
    abort_(message);
}

void CollectiveWatchdog::run() {
  const auto interval = lookInterval(timeout_);
  std::unique_lock<std::mutex> lock(stopMutex_);
  while (!stop_) {
    if (stopCv_.wait_for(lock, interval, [&] { return stop_; }))
      break;
    lock.unlock();
    const bool fired = poll();
    lock.lock();
    if (fired)
      break;
  }
}

} // namespace fsdp::rt
