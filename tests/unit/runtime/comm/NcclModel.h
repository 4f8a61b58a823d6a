//===- NcclModel.h - NCCL's semantics on the CPU, for the mapping tests ---===//
//
// What NCCL would compute for nccl::mapBatch's calls, on the CPU: a small
// interpreter of ncclAllGather, ncclReduceScatter, ncclAllReduce,
// ncclBroadcast, ncclGroupStart/End and ncclCommSplit, with its own
// arithmetic per ncclDataType_t and ncclRedOp_t (reductions in rank order
// as the CPU's), that reports NCCL's undefined cases - buffers overlapping
// outside the in-place layouts, dependent calls inside one group, ranks
// disagreeing on a call - as failures. Beside it, what both mapping suites
// (NcclMappingTest.cpp: the calls against the in-process communicator;
// NcclMappingCallsTest.cpp: arguments, groups and refusals) run the
// communicator with: a channel call on a Communicator, per-rank values,
// and the compiler's rank layouts.
//
// The interpreter models NCCL's specified results: real NCCL reduces in
// its ring or tree order and computes ncclAvg of floats as a sum of
// pre-scaled inputs, so a GPU's sums differ from these in rounding; GPU
// runs are held to the numerics contract (tests/gpu), not to bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_COMM_NCCLMODEL_H
#define FSDP_TESTS_UNIT_RUNTIME_COMM_NCCLMODEL_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/NcclMapping.h"
#include "runtime/support/Half.h"
#include "tests/unit/runtime/comm/CommTestData.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace fsdp::rt::nccltest {

using comm::CallDesc;
using comm::CallKind;
using commtest::Bytes;
using nccl::Call;
using nccl::ChannelCall;
using nccl::DataType;
using nccl::dataTypeSize;
using nccl::Function;
using nccl::functionName;
using nccl::RedOp;
using nccl::Split;

// --- The interpreter ----------------------------------------------------------

/// A communicator of the model: world ranks in their NCCL rank order.
struct ModelComm {
  std::vector<int> members;
};

template <typename T> T loadAs(const uint8_t *p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T> void storeAs(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

/// out = reduction over inputs (in order) of `count` elements of NCCL type
/// `t`: floats in their compute type (float for the 16-bit ones, rounded
/// once when stored), integers wrapping; avg divides the sum once; max
/// keeps the largest.
template <typename Stored, typename Compute, typename Load, typename Store>
void reduceTyped(const std::vector<const uint8_t *> &in, uint8_t *out, size_t count, RedOp op,
                 Load load, Store store) {
  const size_t es = sizeof(Stored);
  for (size_t i = 0; i < count; ++i) {
    Compute acc = load(in[0] + i * es);
    for (size_t s = 1; s < in.size(); ++s) {
      Compute x = load(in[s] + i * es);
      if (op == RedOp::Max)
        acc = acc < x ? x : acc;
      else if constexpr (std::is_integral_v<Compute>)
        acc = static_cast<Compute>(static_cast<std::make_unsigned_t<Compute>>(acc) +
                                   static_cast<std::make_unsigned_t<Compute>>(x));
      else
        acc = acc + x;
    }
    if (op == RedOp::Avg)
      acc = static_cast<Compute>(acc / static_cast<Compute>(in.size()));
    store(out + i * es, acc);
  }
}

template <typename T>
void reducePlain(const std::vector<const uint8_t *> &in, uint8_t *out, size_t count, RedOp op) {
  reduceTyped<T, T>(in, out, count, op, loadAs<T>, storeAs<T>);
}

inline std::string reduceNccl(DataType t, RedOp op, const std::vector<const uint8_t *> &in,
                              uint8_t *out, size_t count) {
  if (op != RedOp::Sum && op != RedOp::Avg && op != RedOp::Max)
    return "unknown ncclRedOp_t";
  switch (t) {
  case DataType::Int8: reducePlain<int8_t>(in, out, count, op); break;
  case DataType::Uint8: reducePlain<uint8_t>(in, out, count, op); break;
  case DataType::Int32: reducePlain<int32_t>(in, out, count, op); break;
  case DataType::Uint32: reducePlain<uint32_t>(in, out, count, op); break;
  case DataType::Int64: reducePlain<int64_t>(in, out, count, op); break;
  case DataType::Uint64: reducePlain<uint64_t>(in, out, count, op); break;
  case DataType::Float32: reducePlain<float>(in, out, count, op); break;
  case DataType::Float64: reducePlain<double>(in, out, count, op); break;
  case DataType::Float16:
    reduceTyped<uint16_t, float>(
        in, out, count, op, [](const uint8_t *p) { return f16ToFloat(loadAs<uint16_t>(p)); },
        [](uint8_t *p, float v) { storeAs<uint16_t>(p, floatToF16(v)); });
    break;
  case DataType::Bfloat16:
    reduceTyped<uint16_t, float>(
        in, out, count, op, [](const uint8_t *p) { return bf16ToFloat(loadAs<uint16_t>(p)); },
        [](uint8_t *p, float v) { storeAs<uint16_t>(p, floatToBf16(v)); });
    break;
  default: return "unknown ncclDataType_t";
  }
  return {};
}

inline bool rangesOverlap(const void *a, size_t an, const void *b, size_t bn) {
  auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return an > 0 && bn > 0 && x < y + bn && y < x + an;
}

/// What one member's call reads and writes, in NCCL's terms.
struct Touch {
  const uint8_t *read;
  size_t readBytes;
  uint8_t *write;
  size_t writeBytes;
};

inline Touch touchOf(const Call &c, int n) {
  const size_t bytes = c.count * dataTypeSize(c.datatype);
  auto *send = static_cast<const uint8_t *>(c.sendbuff);
  auto *recv = static_cast<uint8_t *>(c.recvbuff);
  switch (c.function) {
  case Function::AllGather: return {send, bytes, recv, bytes * n};
  case Function::ReduceScatter: return {send, bytes * n, recv, bytes};
  default: return {send, bytes, recv, bytes};
  }
}

/// A collective every member made (calls[i] by member i): its reads, then
/// (by `write`, after every read of its group) its writes. "" or why NCCL
/// would not define it.
struct Pending {
  std::vector<Call> calls; // by member
  std::vector<Bytes> reads;
};

inline std::string readPhase(Pending &p) {
  const int n = static_cast<int>(p.calls.size());
  const Call &c0 = p.calls[0];
  for (int i = 0; i < n; ++i) {
    const Call &c = p.calls[i];
    if (c.function != c0.function || c.count != c0.count || c.datatype != c0.datatype ||
        c.op != c0.op || c.root != c0.root)
      return cat("members 0 and ", i, " disagree on a ", functionName(c0.function));
    if (dataTypeSize(c.datatype) == 0)
      return "unknown ncclDataType_t";
    if (c.function == Function::Broadcast && (c.root < 0 || c.root >= n))
      return cat("root ", c.root, " outside ", n, " ranks");
    const Touch t = touchOf(c, n);
    const size_t bytes = c.count * dataTypeSize(c.datatype);
    auto *send = static_cast<const uint8_t *>(c.sendbuff);
    auto *recv = static_cast<const uint8_t *>(c.recvbuff);
    bool inPlace = false;
    switch (c.function) {
    case Function::AllGather: inPlace = send == recv + i * bytes; break;
    case Function::ReduceScatter: inPlace = recv == send + i * bytes; break;
    default: inPlace = send == recv; break;
    }
    if (!inPlace && rangesOverlap(t.read, t.readBytes, t.write, t.writeBytes))
      return cat(functionName(c.function), " of member ", i,
                 ": send and recv overlap outside the in-place layout (undefined)");
    if (c.count > 0 && (!c.sendbuff || !c.recvbuff))
      return cat(functionName(c.function), ": null buffer");
    p.reads.emplace_back(t.read, t.read + t.readBytes);
  }
  return {};
}

inline std::string writePhase(const Pending &p) {
  const int n = static_cast<int>(p.calls.size());
  const Call &c0 = p.calls[0];
  const size_t bytes = c0.count * dataTypeSize(c0.datatype);
  for (int i = 0; i < n; ++i) {
    auto *recv = static_cast<uint8_t *>(p.calls[i].recvbuff);
    if (bytes == 0)
      continue;
    std::vector<const uint8_t *> in;
    switch (c0.function) {
    case Function::AllGather:
      for (int j = 0; j < n; ++j)
        std::memcpy(recv + j * bytes, p.reads[j].data(), bytes);
      break;
    case Function::ReduceScatter:
      for (int j = 0; j < n; ++j)
        in.push_back(p.reads[j].data() + i * bytes);
      if (std::string e = reduceNccl(c0.datatype, c0.op, in, recv, c0.count); !e.empty())
        return e;
      break;
    case Function::AllReduce:
      for (int j = 0; j < n; ++j)
        in.push_back(p.reads[j].data());
      if (std::string e = reduceNccl(c0.datatype, c0.op, in, recv, c0.count); !e.empty())
        return e;
      break;
    case Function::Broadcast: std::memcpy(recv, p.reads[c0.root].data(), bytes); break;
    default: return "not a collective";
    }
  }
  return {};
}

/// Runs every member's call list (perMember[i]: member i's) in lockstep.
/// "" when NCCL defines the result, else why not.
inline std::string interpret(const std::vector<std::vector<Call>> &perMember) {
  const size_t n = perMember.size();
  for (size_t i = 1; i < n; ++i)
    if (perMember[i].size() != perMember[0].size())
      return cat("member ", i, " makes ", perMember[i].size(), " calls, member 0 ",
                 perMember[0].size());
  const size_t length = n ? perMember[0].size() : 0;
  for (size_t k = 0; k < length;) {
    std::vector<Pending> group;
    bool grouped = perMember[0][k].function == Function::GroupStart;
    size_t end = k + 1;
    if (grouped) {
      while (end < length && perMember[0][end].function != Function::GroupEnd)
        ++end;
      if (end == length)
        return "ncclGroupStart without ncclGroupEnd";
    }
    const size_t first = grouped ? k + 1 : k, last = grouped ? end : end; // [first, last)
    for (size_t j = first; j < last; ++j) {
      Pending p;
      for (size_t i = 0; i < n; ++i) {
        const Function f = perMember[i][j].function;
        if (f == Function::GroupStart || f == Function::GroupEnd)
          return "nested or misaligned groups";
        p.calls.push_back(perMember[i][j]);
      }
      group.push_back(std::move(p));
    }
    for (size_t i = 0; grouped && i < n; ++i)
      if (perMember[i][k].function != Function::GroupStart ||
          perMember[i][end].function != Function::GroupEnd)
        return cat("member ", i, " groups differently");
    // Inside a group NCCL may run the operations in any order or at once:
    // one that touches another's output is undefined.
    for (size_t a = 0; a < group.size(); ++a)
      for (size_t b = a + 1; b < group.size(); ++b)
        for (size_t i = 0; i < n; ++i) {
          const Touch x = touchOf(group[a].calls[i], static_cast<int>(n));
          const Touch y = touchOf(group[b].calls[i], static_cast<int>(n));
          if (rangesOverlap(x.write, x.writeBytes, y.write, y.writeBytes) ||
              rangesOverlap(x.write, x.writeBytes, y.read, y.readBytes) ||
              rangesOverlap(x.read, x.readBytes, y.write, y.writeBytes))
            return cat("dependent calls ", a, " and ", b, " in one group (undefined)");
        }
    for (Pending &p : group)
      if (std::string e = readPhase(p); !e.empty())
        return e;
    for (const Pending &p : group)
      if (std::string e = writePhase(p); !e.empty())
        return e;
    k = grouped ? end + 1 : end;
  }
  return {};
}

/// ncclCommSplit of `parent` with every member's (color, key): each world
/// rank's new communicator (shared by its members) and rank in it.
inline void modelSplit(const ModelComm &parent, const std::vector<Split> &byMember,
                std::map<int, std::shared_ptr<ModelComm>> &commOfWorld,
                std::map<int, int> &rankOfWorld) {
  std::map<int, std::vector<std::pair<std::pair<int, int>, int>>> colors;
  for (size_t i = 0; i < parent.members.size(); ++i)
    colors[byMember[i].color].push_back({{byMember[i].key, static_cast<int>(i)},
                                          parent.members[i]});
  for (auto &[color, entries] : colors) {
    std::sort(entries.begin(), entries.end());
    auto comm = std::make_shared<ModelComm>();
    for (auto &e : entries)
      comm->members.push_back(e.second);
    for (size_t r = 0; r < comm->members.size(); ++r) {
      commOfWorld[comm->members[r]] = comm;
      rankOfWorld[comm->members[r]] = static_cast<int>(r);
    }
  }
}

// --- The in-process communicator's side --------------------------------------

/// `call` on a communicator, as the executor issues it.
inline Status runOn(Communicator &c, const ChannelCall &call) {
  const CallDesc &d = call.desc;
  switch (d.kind) {
  case CallKind::AllGather: return c.allGather(call.send, call.recv, d.count, d.dtype);
  case CallKind::ReduceScatter:
    return c.reduceScatter(call.send, call.recv, d.count, d.dtype, d.op);
  case CallKind::AllReduce: return c.allReduce(call.send, call.recv, d.count, d.dtype, d.op);
  case CallKind::Broadcast: return c.broadcast(call.recv, d.count, d.dtype, d.root);
  default: return Status::error("not a channel collective");
  }
}

/// Deterministic, uneven values of every type (finite floats of mixed
/// magnitude and sign, so sums round differently in different orders).
inline void fillValues(DType dtype, uint8_t *p, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 17);
  for (size_t i = 0; i < count; ++i) {
    const double v =
        std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, static_cast<int>(rng() % 9) - 4) /
        997.0;
    uint8_t *e = p + i * dtypeSize(dtype);
    switch (dtype) {
    case DType::F32: storeAs<float>(e, static_cast<float>(v)); break;
    case DType::F64: storeAs<double>(e, v); break;
    case DType::F16: storeAs<uint16_t>(e, floatToF16(static_cast<float>(v))); break;
    case DType::BF16: storeAs<uint16_t>(e, floatToBf16(static_cast<float>(v))); break;
    case DType::Bool: *e = static_cast<uint8_t>(rng() & 1); break;
    default: {
      const uint64_t bits = rng();
      std::memcpy(e, &bits, dtypeSize(dtype));
    }
    }
  }
}

/// Consecutive groups (0..n-1) and groups of every stride-th rank, as the
/// compiler lays them out (ShardParameters.cpp).
inline std::vector<int64_t> consecutiveRanks(int n) {
  std::vector<int64_t> r(n);
  for (int i = 0; i < n; ++i)
    r[i] = i;
  return r;
}
inline std::vector<int64_t> stridedRanks(int n, int stride) {
  std::vector<int64_t> r;
  for (int first = 0; first < stride; ++first)
    for (int i = first; i < n; i += stride)
      r.push_back(i);
  return r;
}

} // namespace fsdp::rt::nccltest

#endif // FSDP_TESTS_UNIT_RUNTIME_COMM_NCCLMODEL_H
