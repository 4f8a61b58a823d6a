//===- CollectiveCall.cpp - describing, checking and judging calls --------===//
//
// The wording of every mismatch and argument error the communicators
// report, in one place; see CollectiveCall.h.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/CollectiveCall.h"

#include "runtime/comm/RankOrderReduce.h"

#include <cstring>
#include <limits>

namespace fsdp::rt::comm {

namespace {

const char *kindName(CallKind kind) {
  switch (kind) {
  case CallKind::AllGather: return "allGather";
  case CallKind::ReduceScatter: return "reduceScatter";
  case CallKind::AllReduce: return "allReduce";
  case CallKind::Broadcast: return "broadcast";
  case CallKind::Barrier: return "barrier";
  case CallKind::Split: return "split";
  }
  return "unknown collective";
}

} // namespace

std::string CallDesc::describe() const {
  switch (kind) {
  case CallKind::AllGather:
    return cat("allGather(", count, " x ", dtypeName(dtype), ")");
  case CallKind::ReduceScatter:
  case CallKind::AllReduce:
    return cat(kindName(kind), "(", count, " x ", dtypeName(dtype), ", ", reduceOpName(op), ")");
  case CallKind::Broadcast:
    return cat("broadcast(", count, " x ", dtypeName(dtype), ", root ", root, ")");
  case CallKind::Barrier:
  case CallKind::Split:
    return cat(kindName(kind), "()");
  }
  return "unknown collective";
}

Status checkCall(const CallDesc &desc, int size, const void *send, const void *recv, int color) {
  const char *name = kindName(desc.kind);
  if (desc.kind == CallKind::Split)
    return color >= 0 ? Status::ok()
                      : Status::error(cat("split: color ", color, " is negative"));
  if (desc.kind == CallKind::Barrier)
    return Status::ok();
  if (dtypeSize(desc.dtype) == 0)
    return Status::error(cat(name, ": invalid element type ", static_cast<int>(desc.dtype)));
  if (desc.count < 0)
    return Status::error(cat(name, ": negative element count ", desc.count));
  // The largest buffer a call touches is count * size elements.
  if (desc.count > std::numeric_limits<int64_t>::max() / 8 / size)
    return Status::error(cat(name, ": element count ", desc.count, " is too large"));
  if (desc.count > 0 && (!send || !recv))
    return Status::error(cat(name, ": null buffer for ", desc.count, " elements"));
  if (desc.kind == CallKind::ReduceScatter || desc.kind == CallKind::AllReduce)
    return checkReducible(desc.dtype, desc.op, name);
  if (desc.kind == CallKind::Broadcast && (desc.root < 0 || desc.root >= size))
    return Status::error(cat("broadcast: root ", desc.root, " is outside the group of ", size));
  return Status::ok();
}

std::string judgeCalls(const std::vector<CallDesc> &descs,
                       const std::vector<std::string> &localErrors) {
  for (size_t r = 0; r < localErrors.size(); ++r)
    if (!localErrors[r].empty())
      return cat("rank ", r, " cannot take part: ", localErrors[r]);
  for (size_t r = 1; r < descs.size(); ++r)
    if (descs[r] != descs[0])
      return cat("ranks disagree: rank 0 called ", descs[0].describe(), " but rank ", r,
                 " called ", descs[r].describe());
  return {};
}

WireCall toWire(const CallDesc &desc, const Status &local) {
  WireCall wire{};
  wire.kind = static_cast<int64_t>(desc.kind);
  wire.count = desc.count;
  wire.dtype = static_cast<int64_t>(desc.dtype);
  wire.op = static_cast<int64_t>(desc.op);
  wire.root = desc.root;
  std::strncpy(wire.localError, local.message().c_str(), sizeof(wire.localError) - 1);
  return wire;
}

std::string judgeWireCalls(const WireCall *calls, size_t size) {
  std::vector<CallDesc> descs(size);
  std::vector<std::string> localErrors(size);
  for (size_t r = 0; r < size; ++r) {
    const WireCall &w = calls[r];
    descs[r] = CallDesc{static_cast<CallKind>(w.kind), w.count, static_cast<DType>(w.dtype),
                        static_cast<ReduceOp>(w.op), static_cast<int>(w.root)};
    localErrors[r].assign(w.localError, strnlen(w.localError, sizeof(w.localError)));
  }
  return judgeCalls(descs, localErrors);
}

} // namespace fsdp::rt::comm
