//===- NcclMapping.cpp - channel calls as NCCL calls ----------------------===//
//
// See NcclMapping.h. The buffers' byte extents below are the ones NCCL
// reads and writes on this rank; a batch is split into groups with them,
// and every rank splits alike because the executor gives every rank the
// same memory plan (the same buffers at the same offsets of its arena).
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/NcclMapping.h"

#include <algorithm>
#include <limits>

namespace fsdp::rt::nccl {
namespace {

using comm::CallKind;

/// A byte range of this rank's memory.
struct Extent {
  const void *base = nullptr;
  size_t bytes = 0;
};

bool overlaps(const Extent &a, const Extent &b) {
  return comm::overlaps(a.base, a.bytes, b.base, b.bytes);
}

/// What `call` reads and writes on this rank (broadcast: the buffer, both).
void extents(const ChannelCall &call, int size, Extent &reads, Extent &writes) {
  const size_t bytes = comm::byteCount(call.desc.count, call.desc.dtype);
  const size_t all = bytes * static_cast<size_t>(size);
  switch (call.desc.kind) {
  case CallKind::AllGather: reads = {call.send, bytes}; writes = {call.recv, all}; break;
  case CallKind::ReduceScatter: reads = {call.send, all}; writes = {call.recv, bytes}; break;
  default: reads = {call.send, bytes}; writes = {call.recv, bytes}; break;
  }
}

Function functionOf(CallKind kind) {
  switch (kind) {
  case CallKind::AllGather: return Function::AllGather;
  case CallKind::ReduceScatter: return Function::ReduceScatter;
  case CallKind::AllReduce: return Function::AllReduce;
  default: return Function::Broadcast;
  }
}

} // namespace

const char *functionName(Function f) {
  switch (f) {
  case Function::AllGather: return "ncclAllGather";
  case Function::ReduceScatter: return "ncclReduceScatter";
  case Function::AllReduce: return "ncclAllReduce";
  case Function::Broadcast: return "ncclBroadcast";
  case Function::GroupStart: return "ncclGroupStart";
  case Function::GroupEnd: return "ncclGroupEnd";
  }
  return "unknown NCCL function";
}

const char *dataTypeName(DataType t) {
  static const char *names[] = {"ncclInt8",   "ncclUint8",   "ncclInt32",   "ncclUint32",
                                "ncclInt64",  "ncclUint64",  "ncclFloat16", "ncclFloat32",
                                "ncclFloat64", "ncclBfloat16"};
  const auto i = static_cast<size_t>(t);
  return i < sizeof(names) / sizeof(names[0]) ? names[i] : "unknown NCCL type";
}

size_t dataTypeSize(DataType t) {
  switch (t) {
  case DataType::Int8: case DataType::Uint8: return 1;
  case DataType::Float16: case DataType::Bfloat16: return 2;
  case DataType::Int32: case DataType::Uint32: case DataType::Float32: return 4;
  case DataType::Int64: case DataType::Uint64: case DataType::Float64: return 8;
  }
  return 0;
}

bool nativeType(DType dtype, DataType &out) {
  switch (dtype) {
  case DType::F32: out = DataType::Float32; return true;
  case DType::F64: out = DataType::Float64; return true;
  case DType::F16: out = DataType::Float16; return true;
  case DType::BF16: out = DataType::Bfloat16; return true;
  case DType::I8: out = DataType::Int8; return true;
  case DType::I32: out = DataType::Int32; return true;
  case DType::I64: out = DataType::Int64; return true;
  case DType::U8: out = DataType::Uint8; return true;
  case DType::U32: out = DataType::Uint32; return true;
  case DType::U64: out = DataType::Uint64; return true;
  case DType::I16: case DType::U16: case DType::Bool: return false;
  }
  return false;
}

Status mapCall(const ChannelCall &call, int rank, int size, Call &out) {
  const comm::CallDesc &d = call.desc;
  if (d.kind == CallKind::Barrier || d.kind == CallKind::Split)
    return Status::error(cat("nccl: ", d.describe(), " is not a collective a channel enqueues"));
  if (size < 1 || rank < 0 || rank >= size)
    return Status::error(cat("nccl: ", d.describe(), ": rank ", rank, " is outside a group of ",
                             size));
  const void *send = d.kind == CallKind::Broadcast ? call.recv : call.send;
  // Returned as is (no location appended): the communicators' words.
  if (Status s = comm::checkCall(d, size, send, call.recv); !s)
    return s;

  // NCCL's in-place layouts are Communicator.h's; any other overlap is
  // undefined on NCCL.
  const size_t bytes = comm::byteCount(d.count, d.dtype);
  const auto *recvBytes = static_cast<const uint8_t *>(call.recv);
  const auto *sendBytes = static_cast<const uint8_t *>(send);
  bool inPlace = true;
  const char *layout = "";
  switch (d.kind) {
  case CallKind::AllGather:
    inPlace = sendBytes == recvBytes + static_cast<size_t>(rank) * bytes;
    layout = "send == recv + rank * sendCount";
    break;
  case CallKind::ReduceScatter:
    inPlace = recvBytes == sendBytes + static_cast<size_t>(rank) * bytes;
    layout = "recv == send + rank * recvCount";
    break;
  case CallKind::AllReduce:
    inPlace = recvBytes == sendBytes;
    layout = "recv == send";
    break;
  default: break; // broadcast: one buffer
  }
  Extent reads, writes;
  extents({d, send, call.recv}, size, reads, writes);
  if (!inPlace && overlaps(reads, writes))
    return Status::error(cat("nccl: ", d.describe(), " on rank ", rank,
                             ": send and recv overlap outside NCCL's in-place layout (", layout,
                             ")"));

  out = Call{};
  out.function = functionOf(d.kind);
  out.sendbuff = send;
  out.recvbuff = call.recv;
  out.count = static_cast<size_t>(d.count);
  if (!nativeType(d.dtype, out.datatype)) {
    // Only copies reach here: checkCall refused reductions of these types.
    out.datatype = DataType::Uint8;
    out.count *= dtypeSize(d.dtype);
  }
  out.op = d.op == ReduceOp::Avg   ? RedOp::Avg
           : d.op == ReduceOp::Max ? RedOp::Max
                                   : RedOp::Sum;
  out.root = d.kind == CallKind::Broadcast ? d.root : 0;
  return Status::ok();
}

bool dependsOn(const ChannelCall &later, const ChannelCall &earlier, int size) {
  Extent laterReads, laterWrites, earlierReads, earlierWrites;
  extents(later, size, laterReads, laterWrites);
  extents(earlier, size, earlierReads, earlierWrites);
  return overlaps(laterReads, earlierWrites) || overlaps(laterWrites, earlierWrites) ||
         overlaps(laterWrites, earlierReads);
}

Status mapBatch(const ChannelCall *calls, size_t numCalls, int rank, int size,
                std::vector<Call> &out) {
  out.clear();
  std::vector<Call> mapped;
  std::vector<size_t> index; // which call each mapped one is
  for (size_t i = 0; i < numCalls; ++i) {
    Call c;
    if (Status s = mapCall(calls[i], rank, size, c); !s)
      return numCalls == 1 ? s
                           : Status::error(cat(s.message(), " (call ", i + 1, " of ", numCalls,
                                               " issued together)"));
    // An empty collective moves nothing on any rank (the ranks agree on
    // counts), and NCCL would check its possibly null buffers.
    if (c.count == 0)
      continue;
    mapped.push_back(c);
    index.push_back(i);
  }
  // Runs of independent calls, each one group when it has several calls.
  size_t begin = 0;
  auto flush = [&](size_t end) {
    if (end - begin > 1)
      out.push_back(Call{Function::GroupStart});
    out.insert(out.end(), mapped.begin() + begin, mapped.begin() + end);
    if (end - begin > 1)
      out.push_back(Call{Function::GroupEnd});
    begin = end;
  };
  for (size_t k = 0; k < mapped.size(); ++k) {
    bool dependent = false;
    for (size_t j = begin; j < k && !dependent; ++j)
      dependent = dependsOn(calls[index[k]], calls[index[j]], size);
    if (dependent)
      flush(k);
  }
  flush(mapped.size());
  return Status::ok();
}

Status mapSplit(int color, int key, Split &out) {
  comm::CallDesc desc{CallKind::Split};
  if (Status s = comm::checkCall(desc, 1, nullptr, nullptr, color); !s)
    return s;
  out = {color, key};
  return Status::ok();
}

Status splitForGroups(const int64_t *ranks, size_t numRanks, int64_t groupSize, int rank,
                      Split &out) {
  if (groupSize < 1 || numRanks % static_cast<size_t>(groupSize) != 0 ||
      numRanks > static_cast<size_t>(std::numeric_limits<int>::max()))
    return Status::error(cat("groups of ", groupSize, " do not divide ", numRanks, " ranks"));
  const int64_t *at = std::find(ranks, ranks + numRanks, rank);
  if (at == ranks + numRanks)
    return Status::error(cat("rank ", rank, " is in none of the groups"));
  const auto position = static_cast<int64_t>(at - ranks);
  out = {static_cast<int>(position / groupSize), static_cast<int>(position % groupSize)};
  return Status::ok();
}

} // namespace fsdp::rt::nccl
