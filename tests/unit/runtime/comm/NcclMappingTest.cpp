//===- NcclMappingTest.cpp - the NCCL mapping against the CPU communicator ===//
//
// What NCCL would compute for the mapped calls, on the CPU: a small
// interpreter of NCCL's semantics (ncclAllGather, ncclReduceScatter,
// ncclAllReduce, ncclBroadcast, ncclGroupStart/End and ncclCommSplit, with
// its own arithmetic per ncclDataType_t and ncclRedOp_t, reductions in rank
// order as the CPU's, and NCCL's undefined cases - buffers overlapping
// outside the in-place layouts, dependent calls inside one group, ranks
// disagreeing on a call - reported as failures) runs the calls
// nccl::mapBatch gives each rank and must leave every rank's memory exactly
// as the in-process communicator leaves it for the same channel calls. For
// every collective and every dtype (reductions for the reducible ones, sum
// and avg), in place and out of place, broadcast from every root, empty
// calls, a padded unit (numel not a multiple of the group: in-place
// reduce-scatter of the padded gradient, then in-place all-gather of the
// shard), a batch of independent calls (one NCCL group), on the groups the
// executor forms - the whole world and hybrid:G's shard and replica groups
// at N = 4 and 8, G = 2 and 4 - formed on one side by ncclCommSplit of
// nccl::splitForGroups's (color, key) and on the other by the in-process
// split. Refusals must be checkCall's, word for word. A negative control
// shows the comparison catches a wrong type, op or count.
//
// The interpreter models NCCL's specified results: real NCCL reduces in
// its ring or tree order and computes ncclAvg of floats as a sum of
// pre-scaled inputs, so a GPU's sums differ from these in rounding; GPU
// runs are held to the numerics contract (tests/gpu), not to bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/comm/NcclMapping.h"
#include "runtime/support/Half.h"
#include "tests/unit/runtime/comm/CommTestData.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <thread>

using namespace fsdp::rt;
using namespace fsdp::rt::nccl;
using fsdp::rt::comm::CallDesc;
using fsdp::rt::comm::CallKind;

namespace {

using Bytes = std::vector<uint8_t>;

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

std::string reduceNccl(DataType t, RedOp op, const std::vector<const uint8_t *> &in, uint8_t *out,
                       size_t count) {
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

bool rangesOverlap(const void *a, size_t an, const void *b, size_t bn) {
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

Touch touchOf(const Call &c, int n) {
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

std::string readPhase(Pending &p) {
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

std::string writePhase(const Pending &p) {
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
std::string interpret(const std::vector<std::vector<Call>> &perMember) {
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
void modelSplit(const ModelComm &parent, const std::vector<Split> &byMember,
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

// --- Channel calls, and the in-process communicator running them --------------

Status runOn(Communicator &c, const ChannelCall &call) {
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

void runThreads(int n, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r);
  for (auto &t : threads)
    t.join();
}

/// Deterministic, uneven values of every type (finite floats of mixed
/// magnitude and sign, so sums round differently in different orders).
void fillValues(DType dtype, uint8_t *p, size_t count, uint64_t seed) {
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


/// One test case: the channel calls every rank of a group issues at one
/// plan point, laid out in the rank's arena.
struct Scenario {
  std::string name;
  DType dtype = DType::F32;
  size_t arenaElements = 0; // for a group of `size`: set by make()
  /// Elements of the arena zeroed after filling (a padded unit's tail).
  size_t zeroFrom = SIZE_MAX;
  std::function<std::vector<ChannelCall>(uint8_t *base, int rank, int size)> calls;
};

/// The scenarios for a group of `size` ranks.
std::vector<Scenario> scenarios(int size) {
  std::vector<Scenario> out;
  const auto n = static_cast<size_t>(size);
  for (DType t : commtest::kAllDTypes) {
    const size_t es = dtypeSize(t);
    for (int64_t count : {int64_t{5}, int64_t{0}}) {
      if (count == 0 && t != DType::F32 && t != DType::Bool)
        continue; // empty calls: one float and one byte-moved type
      const auto c = static_cast<size_t>(count);
      for (bool inPlace : {false, true}) {
        const std::string where = inPlace ? "in place" : "out of place";
        out.push_back({cat("allGather ", dtypeName(t), " x", count, " ", where), t,
                       inPlace ? c * n : c + c * n, SIZE_MAX,
                       [=](uint8_t *base, int rank, int) {
                         uint8_t *recv = inPlace ? base : base + c * es;
                         const uint8_t *send = inPlace ? base + rank * c * es : base;
                         return std::vector<ChannelCall>{
                             {CallDesc{CallKind::AllGather, count, t}, send, recv}};
                       }});
        if (!commtest::reducible(t))
          continue;
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max}) {
          if (op == ReduceOp::Avg && !isFloat(t))
            continue;
          out.push_back({cat("reduceScatter ", dtypeName(t), " ", reduceOpName(op), " x", count,
                             " ", where),
                         t, inPlace ? c * n : c * n + c, SIZE_MAX,
                         [=](uint8_t *base, int rank, int) {
                           uint8_t *recv = inPlace ? base + rank * c * es : base + c * n * es;
                           return std::vector<ChannelCall>{
                               {CallDesc{CallKind::ReduceScatter, count, t, op}, base, recv}};
                         }});
          out.push_back({cat("allReduce ", dtypeName(t), " ", reduceOpName(op), " x", count, " ",
                             where),
                         t, inPlace ? c : 2 * c, SIZE_MAX, [=](uint8_t *base, int, int) {
                           uint8_t *recv = inPlace ? base : base + c * es;
                           return std::vector<ChannelCall>{
                               {CallDesc{CallKind::AllReduce, count, t, op}, base, recv}};
                         }});
        }
      }
      for (int root = 0; root < size; ++root)
        out.push_back({cat("broadcast ", dtypeName(t), " x", count, " from ", root), t, c,
                       SIZE_MAX, [=](uint8_t *base, int, int) {
                         return std::vector<ChannelCall>{
                             {CallDesc{CallKind::Broadcast, count, t, ReduceOp::Sum, root}, base,
                              base}};
                       }});
    }
  }
  // A unit of 10 elements (not a multiple of 4 or 8): padded to whole
  // shards, its gradient reduce-scattered in place, then its shard
  // gathered in place - the second reads the first's output, so they are
  // two NCCL calls, not one group.
  for (DType t : {DType::F32, DType::BF16, DType::F64})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      const size_t numel = 10, shard = (numel + n - 1) / n, es = dtypeSize(t);
      out.push_back({cat("padded unit of 10 ", dtypeName(t), " ", reduceOpName(op)), t,
                     shard * n, numel, [=](uint8_t *base, int rank, int) {
                       uint8_t *mine = base + rank * shard * es;
                       const auto count = static_cast<int64_t>(shard);
                       return std::vector<ChannelCall>{
                           {CallDesc{CallKind::ReduceScatter, count, t, op}, base, mine},
                           {CallDesc{CallKind::AllGather, count, t}, mine, base}};
                     }});
    }
  // Two units' gradients and a third's parameters at one point: three
  // independent calls, one NCCL group.
  {
    const size_t c = 3, es = sizeof(float);
    out.push_back({"batch of three independent calls", DType::F32, 3 * c * n + 2 * c + c,
                   SIZE_MAX, [=](uint8_t *base, int rank, int) {
                     uint8_t *g1 = base, *g2 = base + c * n * es, *p = base + 2 * c * n * es;
                     uint8_t *s1 = base + 3 * c * n * es, *s2 = s1 + c * es, *s3 = s2 + c * es;
                     (void)rank;
                     return std::vector<ChannelCall>{
                         {CallDesc{CallKind::ReduceScatter, 3, DType::F32, ReduceOp::Avg}, g1,
                          s1},
                         {CallDesc{CallKind::ReduceScatter, 3, DType::F32, ReduceOp::Sum}, g2,
                          s2},
                         {CallDesc{CallKind::AllGather, 3, DType::F32}, s3, p}};
                   }});
  }
  return out;
}

/// A rank's arena for `s`: filled with values that depend on the rank and
/// the case, a padded tail zeroed.
Bytes arenaFor(const Scenario &s, int worldRank, size_t caseIndex) {
  Bytes a(s.arenaElements * dtypeSize(s.dtype) + 1); // never empty
  fillValues(s.dtype, a.data(), s.arenaElements, caseIndex * 131 + worldRank);
  if (s.zeroFrom < s.arenaElements)
    std::memset(a.data() + s.zeroFrom * dtypeSize(s.dtype), 0,
                (s.arenaElements - s.zeroFrom) * dtypeSize(s.dtype));
  return a;
}

/// Consecutive groups (0..n-1) and groups of every stride-th rank, as the
/// compiler lays them out (ShardParameters.cpp).
std::vector<int64_t> consecutiveRanks(int n) {
  std::vector<int64_t> r(n);
  for (int i = 0; i < n; ++i)
    r[i] = i;
  return r;
}
std::vector<int64_t> stridedRanks(int n, int stride) {
  std::vector<int64_t> r;
  for (int first = 0; first < stride; ++first)
    for (int i = first; i < n; i += stride)
      r.push_back(i);
  return r;
}

struct GroupLayout {
  std::string name;
  int world;
  std::vector<int64_t> ranks;
  int groupSize;
};

std::vector<GroupLayout> layouts() {
  std::vector<GroupLayout> out;
  for (int n : {4, 8}) {
    out.push_back({cat("full_world", n), n, consecutiveRanks(n), n});
    for (int g : {2, 4}) {
      if (g >= n)
        continue;
      out.push_back({cat("hybrid", g, "_shard_world", n), n, consecutiveRanks(n), g});
      out.push_back({cat("hybrid", g, "_replica_world", n), n, stridedRanks(n, g), n / g});
    }
  }
  return out;
}

void PrintTo(const GroupLayout &layout, std::ostream *os) { *os << layout.name; }

class NcclMappingGroups : public ::testing::TestWithParam<GroupLayout> {};

// Every scenario on every group of the layout: the interpreter's memory
// after the mapped NCCL calls equals the in-process communicator's, byte
// for byte, on every rank.
TEST_P(NcclMappingGroups, MappedCallsReproduceTheInProcessCommunicator) {
  const GroupLayout &layout = GetParam();
  const int world = layout.world;

  // The groups: the executor's (color, key), split on both sides.
  std::vector<Split> splits(world);
  for (int r = 0; r < world; ++r) {
    Split fromPlan, mapped;
    Status s = splitForGroups(layout.ranks.data(), layout.ranks.size(), layout.groupSize, r,
                              fromPlan);
    ASSERT_TRUE(s.isOk()) << s.message();
    s = mapSplit(fromPlan.color, fromPlan.key, mapped);
    ASSERT_TRUE(s.isOk()) << s.message();
    splits[r] = mapped;
  }
  ModelComm modelWorld{};
  for (int r = 0; r < world; ++r)
    modelWorld.members.push_back(r);
  std::map<int, std::shared_ptr<ModelComm>> modelOf;
  std::map<int, int> modelRank;
  modelSplit(modelWorld, splits, modelOf, modelRank);

  std::vector<std::unique_ptr<Communicator>> comms, subs(world);
  ASSERT_TRUE(comm::createInProcessGroup(world, comms).isOk());
  std::vector<Status> splitStatus(world);
  std::vector<std::vector<int32_t>> membersSeen(world);
  runThreads(world, [&](int r) {
    splitStatus[r] = comms[r]->split(splits[r].color, splits[r].key, subs[r]);
    if (!splitStatus[r])
      return;
    membersSeen[r].resize(subs[r]->size());
    const int32_t me = r;
    splitStatus[r] = subs[r]->allGather(&me, membersSeen[r].data(), 1, DType::I32);
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_TRUE(splitStatus[r].isOk()) << "rank " << r << ": " << splitStatus[r].message();
    ASSERT_EQ(subs[r]->size(), layout.groupSize) << "rank " << r;
    EXPECT_EQ(subs[r]->rank(), modelRank[r]) << "rank " << r;
    std::vector<int> seen(membersSeen[r].begin(), membersSeen[r].end());
    EXPECT_EQ(seen, modelOf[r]->members) << "rank " << r;
  }

  const int size = layout.groupSize;
  const std::vector<Scenario> cases = scenarios(size);
  // arenas[case][world rank]: the communicator's and the interpreter's.
  std::vector<std::vector<Bytes>> cpu(cases.size()), model(cases.size());
  for (size_t k = 0; k < cases.size(); ++k)
    for (int r = 0; r < world; ++r) {
      cpu[k].push_back(arenaFor(cases[k], r, k));
      model[k].push_back(cpu[k].back());
    }

  // The communicator: every group at once, one thread per rank.
  std::vector<std::vector<Status>> statuses(world);
  runThreads(world, [&](int r) {
    for (size_t k = 0; k < cases.size(); ++k)
      for (const ChannelCall &call : cases[k].calls(cpu[k][r].data(), subs[r]->rank(), size))
        statuses[r].push_back(runOn(*subs[r], call));
  });
  for (int r = 0; r < world; ++r)
    for (const Status &s : statuses[r])
      ASSERT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();

  // The interpreter: each group's mapped calls.
  std::vector<std::shared_ptr<ModelComm>> groups;
  for (auto &[r, g] : modelOf)
    if (std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(g);
  for (size_t k = 0; k < cases.size(); ++k) {
    for (const auto &group : groups) {
      std::vector<std::vector<Call>> perMember;
      for (size_t i = 0; i < group->members.size(); ++i) {
        const int r = group->members[i];
        std::vector<ChannelCall> calls = cases[k].calls(model[k][r].data(), static_cast<int>(i), size);
        std::vector<Call> mapped;
        Status s = mapBatch(calls.data(), calls.size(), static_cast<int>(i), size, mapped);
        ASSERT_TRUE(s.isOk()) << cases[k].name << ": " << s.message();
        perMember.push_back(std::move(mapped));
      }
      std::string undefined = interpret(perMember);
      ASSERT_TRUE(undefined.empty()) << cases[k].name << ": " << undefined;
    }
    for (int r = 0; r < world; ++r)
      EXPECT_TRUE(cpu[k][r] == model[k][r])
          << layout.name << ", " << cases[k].name << ": rank " << r
          << "'s memory differs between NCCL's calls and the in-process communicator";
  }
}

INSTANTIATE_TEST_SUITE_P(, NcclMappingGroups, ::testing::ValuesIn(layouts()),
                         [](const auto &info) { return info.param.name; });

// --- Group structure ---------------------------------------------------------

ChannelCall gather(const float *send, float *recv, int64_t count) {
  return {CallDesc{CallKind::AllGather, count, DType::F32}, send, recv};
}
ChannelCall scatter(const float *send, float *recv, int64_t count) {
  return {CallDesc{CallKind::ReduceScatter, count, DType::F32, ReduceOp::Sum}, send, recv};
}

std::vector<Function> functions(const std::vector<Call> &calls) {
  std::vector<Function> f;
  for (const Call &c : calls)
    f.push_back(c.function);
  return f;
}

// Independent calls at one point are one group; a call that reads an
// earlier call's output (or overwrites its input) starts the next; lone
// calls and empty calls need no group.
TEST(NcclMappingBatch, GroupsRunsOfIndependentCalls) {
  float a[8] = {}, b[8] = {}, c[8] = {}, d[8] = {};
  std::vector<Call> out;
  const ChannelCall independent[] = {gather(a, b, 2), scatter(c, d, 2)};
  ASSERT_TRUE(mapBatch(independent, 2, 1, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::GroupStart, Function::AllGather,
                                                   Function::ReduceScatter, Function::GroupEnd}));

  // reduce-scatter into d[0..2), then gather from d: dependent.
  const ChannelCall chain[] = {scatter(a, d, 2), gather(d, b, 2), gather(c + 4, c, 1)};
  ASSERT_TRUE(mapBatch(chain, 3, 0, 4, out).isOk());
  EXPECT_EQ(functions(out),
            (std::vector<Function>{Function::ReduceScatter, Function::GroupStart,
                                   Function::AllGather, Function::AllGather, Function::GroupEnd}));

  // Overwriting an earlier call's input is a dependence too.
  const ChannelCall overwrite[] = {gather(a, b, 2), scatter(c, a, 2)};
  ASSERT_TRUE(mapBatch(overwrite, 2, 0, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::AllGather, Function::ReduceScatter}));

  const ChannelCall withEmpty[] = {gather(a, b, 0), gather(c, d, 2)};
  ASSERT_TRUE(mapBatch(withEmpty, 2, 0, 4, out).isOk());
  EXPECT_EQ(functions(out), (std::vector<Function>{Function::AllGather}));
  EXPECT_TRUE(dependsOn(chain[1], chain[0], 4));
  EXPECT_FALSE(dependsOn(independent[1], independent[0], 4));
}

// The arguments NCCL gets, field by field.
TEST(NcclMappingCall, ArgumentsTypesAndOps) {
  double buf[16] = {};
  Call c;
  ChannelCall rs{CallDesc{CallKind::ReduceScatter, 4, DType::F64, ReduceOp::Avg}, buf, buf + 8};
  ASSERT_TRUE(mapCall(rs, 2, 4, c).isOk());
  EXPECT_EQ(c.function, Function::ReduceScatter);
  EXPECT_EQ(c.sendbuff, buf);
  EXPECT_EQ(c.recvbuff, buf + 8);
  EXPECT_EQ(c.count, 4u);
  EXPECT_EQ(c.datatype, DataType::Float64);
  EXPECT_EQ(c.op, RedOp::Avg);

  // Types NCCL lacks travel as bytes.
  uint16_t h[16] = {};
  ChannelCall ag{CallDesc{CallKind::AllGather, 3, DType::I16}, h, h + 4};
  ASSERT_TRUE(mapCall(ag, 0, 4, c).isOk());
  EXPECT_EQ(c.datatype, DataType::Uint8);
  EXPECT_EQ(c.count, 6u);

  ChannelCall bc{CallDesc{CallKind::Broadcast, 2, DType::BF16, ReduceOp::Sum, 3}, h, h};
  ASSERT_TRUE(mapCall(bc, 1, 4, c).isOk());
  EXPECT_EQ(c.function, Function::Broadcast);
  EXPECT_EQ(c.datatype, DataType::Bfloat16);
  EXPECT_EQ(c.root, 3);
  EXPECT_EQ(c.sendbuff, c.recvbuff);

  const std::pair<DType, DataType> natives[] = {
      {DType::F32, DataType::Float32}, {DType::F64, DataType::Float64},
      {DType::F16, DataType::Float16}, {DType::BF16, DataType::Bfloat16},
      {DType::I8, DataType::Int8},     {DType::I32, DataType::Int32},
      {DType::I64, DataType::Int64},   {DType::U8, DataType::Uint8},
      {DType::U32, DataType::Uint32},  {DType::U64, DataType::Uint64}};
  for (auto [ours, theirs] : natives) {
    DataType t;
    ASSERT_TRUE(nativeType(ours, t)) << dtypeName(ours);
    EXPECT_EQ(t, theirs) << dtypeName(ours);
    EXPECT_EQ(dataTypeSize(t), dtypeSize(ours)) << dtypeName(ours);
  }
  for (DType lacking : {DType::Bool, DType::I16, DType::U16}) {
    DataType t;
    EXPECT_FALSE(nativeType(lacking, t)) << dtypeName(lacking);
  }
}

// --- Refusals ------------------------------------------------------------------

/// The in-process communicator's error for `call` on a fresh group of
/// `size` (every rank makes it with its own buffers of the same layout).
std::string inProcessError(const std::function<ChannelCall(uint8_t *, int)> &make, int size) {
  std::vector<std::unique_ptr<Communicator>> comms;
  EXPECT_TRUE(comm::createInProcessGroup(size, comms).isOk());
  std::vector<Bytes> arenas(size, Bytes(1024));
  std::vector<Status> st(size);
  runThreads(size, [&](int r) { st[r] = runOn(*comms[r], make(arenas[r].data(), r)); });
  return st[0].isOk() ? "" : st[0].message();
}

// Whatever the CPU communicators refuse, the mapping refuses in the same
// words: reductions of types outside f32/f64/bf16/f16/i64 (NCCL lacks i1,
// i16 and ui16 altogether, and moves them as bytes only for copies), avg of
// integers, a root outside the group, a negative split color.
TEST(NcclMappingRefusals, SameWordsAsTheCommunicators) {
  const int size = 4;
  int refusals = 0;
  for (DType t : commtest::kAllDTypes)
    for (CallKind kind : {CallKind::ReduceScatter, CallKind::AllReduce})
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
        auto make = [=](uint8_t *base, int) {
          return ChannelCall{CallDesc{kind, 4, t, op}, base, base + 512};
        };
        Bytes arena(1024);
        ChannelCall call = make(arena.data(), 1);
        Call c;
        Status mapped = mapCall(call, 1, size, c);
        Status checked = comm::checkCall(call.desc, size, call.send, call.recv);
        ASSERT_EQ(mapped.isOk(), checked.isOk()) << call.desc.describe();
        if (checked.isOk())
          continue;
        ++refusals;
        EXPECT_EQ(mapped.message(), checked.message());
        EXPECT_NE(inProcessError(make, size).find(checked.message()), std::string::npos)
            << checked.message();
        if (!commtest::reducible(t)) {
          EXPECT_NE(mapped.message().find(cat("cannot reduce element type ", dtypeName(t))),
                    std::string::npos)
              << mapped.message();
        }
      }
  // 8 types x 2 kinds x 2 ops unreducible, and avg of i64 twice.
  EXPECT_EQ(refusals, 8 * 2 * 2 + 2);

  auto badRoot = [](uint8_t *base, int) {
    return ChannelCall{CallDesc{CallKind::Broadcast, 2, DType::F32, ReduceOp::Sum, 4}, base, base};
  };
  Bytes arena(64);
  Call c;
  Status mapped = mapCall(badRoot(arena.data(), 0), 0, size, c);
  ASSERT_FALSE(mapped.isOk());
  EXPECT_EQ(mapped.message(), "broadcast: root 4 is outside the group of 4");
  EXPECT_NE(inProcessError(badRoot, size).find(mapped.message()), std::string::npos);

  Split split;
  Status negative = mapSplit(-1, 0, split);
  ASSERT_FALSE(negative.isOk());
  EXPECT_EQ(negative.message(), "split: color -1 is negative");

  // A refusal anywhere in a batch refuses the batch, naming the call.
  float a[8] = {}, b[8] = {};
  const ChannelCall batch[] = {gather(a, b, 1),
                               {CallDesc{CallKind::AllReduce, 1, DType::I32}, a + 4, b + 4}};
  std::vector<Call> out;
  Status refused = mapBatch(batch, 2, 0, 2, out);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("cannot reduce element type i32"), std::string::npos);
  EXPECT_NE(refused.message().find("(call 2 of 2 issued together)"), std::string::npos);
  EXPECT_TRUE(out.empty());
}

// Buffers that overlap outside NCCL's in-place layouts (undefined on NCCL;
// the CPU copes through scratch memory) are refused; the in-place layouts
// themselves pass.
TEST(NcclMappingRefusals, OverlapOutsideTheInPlaceLayouts) {
  float buf[64] = {};
  Call c;
  // allGather: send at the wrong chunk of recv (rank 1's chunk is buf + 2).
  Status s = mapCall(gather(buf, buf, 2), 1, 4, c);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("send and recv overlap outside NCCL's in-place layout "
                             "(send == recv + rank * sendCount)"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(mapCall(gather(buf + 2, buf, 2), 1, 4, c).isOk());
  // reduceScatter: recv must be rank's chunk exactly.
  EXPECT_FALSE(mapCall(scatter(buf, buf + 1, 2), 0, 4, c).isOk());
  EXPECT_TRUE(mapCall(scatter(buf, buf + 6, 2), 3, 4, c).isOk());
  // allReduce: equal or disjoint.
  ChannelCall shifted{CallDesc{CallKind::AllReduce, 4, DType::F32}, buf, buf + 2};
  EXPECT_FALSE(mapCall(shifted, 0, 2, c).isOk());
  ChannelCall same{CallDesc{CallKind::AllReduce, 4, DType::F32}, buf, buf};
  EXPECT_TRUE(mapCall(same, 0, 2, c).isOk());
}

// The executor's groups as ncclCommSplit arguments: hybrid:2 at 8 ranks.
TEST(NcclMappingSplit, HybridGroupsColorsAndKeys) {
  const std::vector<int64_t> shard = consecutiveRanks(8), replica = stridedRanks(8, 2);
  for (int r = 0; r < 8; ++r) {
    Split s;
    ASSERT_TRUE(splitForGroups(shard.data(), shard.size(), 2, r, s).isOk());
    EXPECT_EQ(s.color, r / 2);
    EXPECT_EQ(s.key, r % 2);
    ASSERT_TRUE(splitForGroups(replica.data(), replica.size(), 4, r, s).isOk());
    EXPECT_EQ(s.color, r % 2);
    EXPECT_EQ(s.key, r / 2);
  }
  Split s;
  EXPECT_FALSE(splitForGroups(shard.data(), shard.size(), 3, 0, s).isOk());
  EXPECT_FALSE(splitForGroups(shard.data(), 4, 2, 6, s).isOk());
}

// --- Negative control ------------------------------------------------------------

// The comparison can fail: the same reduce-scatter with NCCL's arguments
// bent (bf16 read as fp16, avg as sum, a short count, a shifted recv
// buffer) leaves memory that differs from the communicator's.
TEST(NcclMappingNegativeControl, WrongArgumentsAreCaught) {
  const int n = 4;
  const size_t count = 6, es = 2;
  std::vector<Bytes> cpu(n);
  for (int r = 0; r < n; ++r) {
    cpu[r] = Bytes(count * n * es + count * es + 8); // slack for a shifted recv
    fillValues(DType::BF16, cpu[r].data(), count * n + count, 900 + r);
  }
  const std::vector<Bytes> initial = cpu;
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(comm::createInProcessGroup(n, comms).isOk());
  runThreads(n, [&](int r) {
    ASSERT_TRUE(comms[r]
                    ->reduceScatter(cpu[r].data(), cpu[r].data() + count * n * es, count,
                                    DType::BF16, ReduceOp::Avg)
                    .isOk());
  });
  auto runBent = [&](const std::function<void(Call &)> &bend) {
    std::vector<Bytes> model = initial;
    std::vector<std::vector<Call>> perMember(n);
    for (int r = 0; r < n; ++r) {
      ChannelCall call{CallDesc{CallKind::ReduceScatter, static_cast<int64_t>(count), DType::BF16,
                                ReduceOp::Avg},
                       model[r].data(), model[r].data() + count * n * es};
      Call c;
      EXPECT_TRUE(mapCall(call, r, n, c).isOk());
      bend(c);
      perMember[r].push_back(c);
    }
    EXPECT_EQ(interpret(perMember), "");
    return model == cpu;
  };
  EXPECT_TRUE(runBent([](Call &) {}));
  EXPECT_FALSE(runBent([](Call &c) { c.datatype = DataType::Float16; }));
  EXPECT_FALSE(runBent([](Call &c) { c.op = RedOp::Sum; }));
  EXPECT_FALSE(runBent([](Call &c) { c.count -= 1; }));
  EXPECT_FALSE(runBent([](Call &c) { c.recvbuff = static_cast<uint8_t *>(c.recvbuff) + 2; }));
}

} // namespace
