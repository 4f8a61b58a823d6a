//===- ExecutorCollectives.cpp - the executor's groups and channels -------===//
//
// Distributed plans: the group layouts of the collectives (and of the
// units, whose shards ModelState gathers over contiguous blocks of
// group_size ranks) are resolved once at creation to a channel per
// instruction, so run() only enqueues. Sub-communicators are split from
// the world in plan order, identically on every rank, and each device
// channel over a sub-group is split from the world's channel with the same
// colour and key. Collectives issued together go to their channel as one
// group (below), and watch() brackets each watched collective with the
// progress marks its CollectiveWatchdog reads.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"

#include "runtime/comm/NcclMapping.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/KernelTable.h"

#include <algorithm>

namespace fsdp::rt {

Status Executor::prepareCollectives() {
  const plan::Plan &plan = plan_.plan();
  const size_t numInstructions = launches_.size();
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

} // namespace fsdp::rt
