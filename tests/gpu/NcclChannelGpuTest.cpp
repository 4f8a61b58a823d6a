//===- NcclChannelGpuTest.cpp - the NCCL channel on real GPUs -------------===//
//
// The CUDA device's NCCL channel (runtime/backends/cuda/NcclChannel.cpp)
// against the in-process communicator, on the GPUs this machine has: at
// world size 1 (the executor makes no channel there, so this is what
// exercises NCCL on a single-GPU machine: bootstrap, every collective and
// dtype in and out of place, a group, a refusal, an abort) and at world
// size N = the GPU count when N >= 2 (one thread per rank, each with its
// own CudaDevice; copies bit for bit, reductions within the numerics
// contract since NCCL sums in its ring or tree order; hybrid sub-channels
// by Channel::split when N >= 4). Without a GPU it prints "no GPU: ..." and
// exits 77 (ctest: skipped; label gpu, scripts/test-gpu.sh).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDevice.h"
#include "tests/gpu/GpuTestMain.h"
#include "runtime/comm/CollectiveCall.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/device/Channel.h"
#include "runtime/support/Half.h"
#include "tests/unit/runtime/comm/CommTestData.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

using namespace fsdp::rt;

namespace {

using Bytes = std::vector<uint8_t>;
using Comms = std::vector<std::unique_ptr<Communicator>>;
using commtest::runThreads;

int gGpus = 0;


void fill(DType t, uint8_t *p, size_t count, uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 3);
  for (size_t i = 0; i < count; ++i) {
    const double v = (static_cast<double>(rng() % 2001) - 1000.0) / 997.0;
    uint8_t *e = p + i * dtypeSize(t);
    uint16_t h = 0;
    switch (t) {
    case DType::F32: { float f = static_cast<float>(v); std::memcpy(e, &f, 4); break; }
    case DType::F64: std::memcpy(e, &v, 8); break;
    case DType::F16: h = floatToF16(static_cast<float>(v)); std::memcpy(e, &h, 2); break;
    case DType::BF16: h = floatToBf16(static_cast<float>(v)); std::memcpy(e, &h, 2); break;
    case DType::Bool: *e = rng() & 1; break;
    default: { uint64_t b = rng(); std::memcpy(e, &b, dtypeSize(t)); }
    }
  }
}

double valueAt(DType t, const uint8_t *p) {
  uint16_t h = 0;
  switch (t) {
  case DType::F32: { float f; std::memcpy(&f, p, 4); return f; }
  case DType::F64: { double d; std::memcpy(&d, p, 8); return d; }
  case DType::F16: std::memcpy(&h, p, 2); return f16ToFloat(h);
  case DType::BF16: std::memcpy(&h, p, 2); return bf16ToFloat(h);
  default: return 0;
  }
}

/// Equal within the numerics contract: floats of a reduction within a
/// relative tolerance of their type (NCCL's summation order is not the
/// CPU's rank order), anything else bit for bit.
::testing::AssertionResult close(DType t, bool reduced, const Bytes &gpu, const Bytes &cpu) {
  if (gpu.size() != cpu.size())
    return ::testing::AssertionFailure() << "sizes differ";
  if (!reduced || !isFloat(t))
    return gpu == cpu ? ::testing::AssertionSuccess()
                      : ::testing::AssertionFailure() << "bytes differ";
  const double tol = t == DType::F64 ? 1e-12 : t == DType::F32 ? 1e-5 : 2e-2;
  for (size_t i = 0; i < gpu.size(); i += dtypeSize(t)) {
    const double a = valueAt(t, gpu.data() + i), b = valueAt(t, cpu.data() + i);
    if (std::fabs(a - b) > tol * std::max(1.0, std::fabs(b)))
      return ::testing::AssertionFailure() << "element " << i / dtypeSize(t) << ": gpu " << a
                                           << ", cpu " << b;
  }
  return ::testing::AssertionSuccess();
}

/// One collective as every rank issues it, laid out in a rank's arena.
struct Case {
  comm::CallDesc desc;
  bool inPlace = false;
  size_t arenaElements(int n) const {
    const auto c = static_cast<size_t>(desc.count), ranks = static_cast<size_t>(n);
    switch (desc.kind) {
    case comm::CallKind::AllGather: return inPlace ? c * ranks : c + c * ranks;
    case comm::CallKind::ReduceScatter: return inPlace ? c * ranks : c * ranks + c;
    case comm::CallKind::AllReduce: return inPlace ? c : 2 * c;
    default: return c;
    }
  }
  /// send and recv inside `base` for rank `r` of `n`.
  void buffers(uint8_t *base, int r, int n, const uint8_t *&send, uint8_t *&recv) const {
    const size_t c = static_cast<size_t>(desc.count) * dtypeSize(desc.dtype);
    const auto ranks = static_cast<size_t>(n), rank = static_cast<size_t>(r);
    send = base;
    switch (desc.kind) {
    case comm::CallKind::AllGather:
      recv = inPlace ? base : base + c;
      send = inPlace ? base + rank * c : base;
      break;
    case comm::CallKind::ReduceScatter: recv = inPlace ? base + rank * c : base + c * ranks; break;
    case comm::CallKind::AllReduce: recv = inPlace ? base : base + c; break;
    default: recv = base; break;
    }
  }
};

std::vector<Case> allCases(int n) {
  std::vector<Case> cases;
  for (DType t : commtest::kAllDTypes)
    for (bool inPlace : {false, true}) {
      cases.push_back({{comm::CallKind::AllGather, 7, t}, inPlace});
      if (commtest::reducible(t))
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
          if (op == ReduceOp::Avg && !isFloat(t))
            continue;
          cases.push_back({{comm::CallKind::ReduceScatter, 7, t, op}, inPlace});
          cases.push_back({{comm::CallKind::AllReduce, 7, t, op}, inPlace});
        }
      if (!inPlace)
        for (int root = 0; root < n; ++root)
          cases.push_back({{comm::CallKind::Broadcast, 7, t, ReduceOp::Sum, root}, false});
    }
  return cases;
}

Status issue(Communicator &c, const comm::CallDesc &d, const void *send, void *recv) {
  switch (d.kind) {
  case comm::CallKind::AllGather: return c.allGather(send, recv, d.count, d.dtype);
  case comm::CallKind::ReduceScatter: return c.reduceScatter(send, recv, d.count, d.dtype, d.op);
  case comm::CallKind::AllReduce: return c.allReduce(send, recv, d.count, d.dtype, d.op);
  default: return c.broadcast(recv, d.count, d.dtype, d.root);
  }
}

Status issue(Channel &ch, Stream &s, const comm::CallDesc &d, const void *send, void *recv) {
  switch (d.kind) {
  case comm::CallKind::AllGather: return ch.allGather(s, send, recv, d.count, d.dtype);
  case comm::CallKind::ReduceScatter:
    return ch.reduceScatter(s, send, recv, d.count, d.dtype, d.op);
  case comm::CallKind::AllReduce: return ch.allReduce(s, send, recv, d.count, d.dtype, d.op);
  default: return ch.broadcast(s, recv, d.count, d.dtype, d.root);
  }
}

/// One rank's GPU: its device, a stream and an NCCL channel over `group`.
struct Rig {
  std::unique_ptr<Device> device;
  std::unique_ptr<Stream> stream;
  std::unique_ptr<Channel> channel;
  Status status;

  Rig(int ordinal, Communicator &group) {
    DeviceOptions options;
    options.ordinal = ordinal;
    status = createCudaDevice(options, device);
    if (status)
      status = device->createStream(stream);
    // Collective: a rank that failed above still joins the agreement.
    if (Status s = group.agree(status, "setting up the GPU"); !s)
      status = s;
    else
      status = device->createChannel(group, channel);
  }
  ~Rig() {
    channel.reset();
    stream.reset();
  }
};

/// Runs every case on `n` GPUs through their NCCL channels and on the CPU
/// through the in-process communicator, and compares every rank's arena.
void compareAllCases(int n) {
  const std::vector<Case> cases = allCases(n);
  Comms comms, cpuComms;
  ASSERT_TRUE(comm::createInProcessGroup(n, comms).isOk());
  ASSERT_TRUE(comm::createInProcessGroup(n, cpuComms).isOk());
  // arenas[case][rank]: the CPU's result and the GPU's.
  std::vector<std::vector<Bytes>> cpu(cases.size(), std::vector<Bytes>(n)),
      gpu(cases.size(), std::vector<Bytes>(n));
  for (size_t k = 0; k < cases.size(); ++k)
    for (int r = 0; r < n; ++r) {
      cpu[k][r].resize(cases[k].arenaElements(n) * dtypeSize(cases[k].desc.dtype));
      fill(cases[k].desc.dtype, cpu[k][r].data(), cases[k].arenaElements(n), k * 64 + r);
      gpu[k][r] = cpu[k][r];
    }
  runThreads(n, [&](int r) {
    for (size_t k = 0; k < cases.size(); ++k) {
      const uint8_t *send;
      uint8_t *recv;
      cases[k].buffers(cpu[k][r].data(), r, n, send, recv);
      Status s = issue(*cpuComms[r], cases[k].desc, send, recv);
      EXPECT_TRUE(s.isOk()) << s.message();
    }
  });
  std::vector<Status> failures(n);
  runThreads(n, [&](int r) {
    Rig rig(r, *comms[r]);
    if (!rig.status) {
      failures[r] = rig.status;
      return;
    }
    for (size_t k = 0; k < cases.size() && failures[r]; ++k) {
      DeviceMemory memory;
      Status s = rig.device->allocate(gpu[k][r].size(), memory);
      auto *base = static_cast<uint8_t *>(memory.base);
      if (s)
        s = rig.device->copyToDevice(base, gpu[k][r].data(), gpu[k][r].size());
      const uint8_t *send;
      uint8_t *recv;
      cases[k].buffers(base, r, n, send, recv);
      if (s)
        s = issue(*rig.channel, *rig.stream, cases[k].desc, send, recv);
      if (s)
        s = rig.device->synchronize(*rig.stream);
      if (s)
        s = rig.device->copyToHost(gpu[k][r].data(), base, gpu[k][r].size());
      rig.device->release(memory);
      if (!s) {
        failures[r] = Status::error(cases[k].desc.describe() + ": " + s.message());
        rig.channel->abort(s.message());
      }
    }
  });
  for (int r = 0; r < n; ++r)
    ASSERT_TRUE(failures[r].isOk()) << "rank " << r << ": " << failures[r].message();
  for (size_t k = 0; k < cases.size(); ++k) {
    const comm::CallDesc &d = cases[k].desc;
    const bool reduced =
        d.kind == comm::CallKind::ReduceScatter || d.kind == comm::CallKind::AllReduce;
    for (int r = 0; r < n; ++r)
      EXPECT_TRUE(close(d.dtype, reduced, gpu[k][r], cpu[k][r]))
          << d.describe() << (cases[k].inPlace ? " in place" : "") << ", rank " << r << " of "
          << n;
  }
}

// World size 1: bootstrap (unique id over a one-rank group), every
// collective and dtype in and out of place; results equal the CPU's bit
// for bit (a reduction over one rank is a copy; avg divides by 1).
TEST(NcclChannelGpu, WorldSizeOneEveryCollective) { compareAllCases(1); }

// Every GPU of the machine as one group.
TEST(NcclChannelGpu, EveryGpuEveryCollective) {
  if (gGpus < 2)
    GTEST_SKIP() << "needs 2 GPUs, this machine has " << gGpus;
  compareAllCases(gGpus);
}

// Collectives between beginGroup and endGroup (one ncclGroupStart/End),
// one of which reads what another writes (the mapping splits the group);
// a refused reduction fails the stream with checkCall's words; an abort
// (as a watchdog would, from another thread) fails the next collective
// with its reason.
TEST(NcclChannelGpu, GroupRefusalAndAbort) {
  Comms comms;
  ASSERT_TRUE(comm::createInProcessGroup(1, comms).isOk());
  Rig rig(0, *comms[0]);
  ASSERT_TRUE(rig.status.isOk()) << rig.status.message();
  std::vector<float> host(16);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<float>(i) * 0.5f;
  DeviceMemory memory;
  ASSERT_TRUE(rig.device->allocate(host.size() * 4, memory).isOk());
  auto *p = static_cast<float *>(memory.base);
  ASSERT_TRUE(rig.device->copyToDevice(p, host.data(), host.size() * 4).isOk());
  Channel &ch = *rig.channel;
  ASSERT_TRUE(ch.beginGroup().isOk());
  ASSERT_TRUE(ch.allReduce(*rig.stream, p, p + 4, 4, DType::F32, ReduceOp::Sum).isOk());
  ASSERT_TRUE(ch.allGather(*rig.stream, p + 4, p + 8, 4, DType::F32).isOk()); // reads p + 4
  ASSERT_TRUE(ch.allReduce(*rig.stream, p + 12, p + 12, 4, DType::F32, ReduceOp::Avg).isOk());
  ASSERT_TRUE(ch.endGroup().isOk());
  Status s = rig.device->synchronize(*rig.stream);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<float> out(16);
  ASSERT_TRUE(rig.device->copyToHost(out.data(), p, out.size() * 4).isOk());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[4 + i], host[i]);
    EXPECT_EQ(out[8 + i], host[i]);
    EXPECT_EQ(out[12 + i], host[12 + i]);
  }

  ASSERT_TRUE(ch.allReduce(*rig.stream, p, p, 4, DType::Bool, ReduceOp::Sum).isOk());
  s = rig.device->synchronize(*rig.stream);
  EXPECT_NE(s.message().find("allReduce: cannot reduce element type i1"), std::string::npos)
      << s.message();

  Comms fresh;
  ASSERT_TRUE(comm::createInProcessGroup(1, fresh).isOk());
  Rig second(0, *fresh[0]);
  ASSERT_TRUE(second.status.isOk()) << second.status.message();
  std::thread watchdog([&] { second.channel->abort("step 3: watchdog timeout"); });
  watchdog.join();
  ASSERT_TRUE(second.channel->allReduce(*second.stream, p, p, 4, DType::F32, ReduceOp::Sum).isOk());
  s = second.device->synchronize(*second.stream);
  EXPECT_NE(s.message().find("step 3: watchdog timeout"), std::string::npos) << s.message();
  rig.device->release(memory);
}

// Hybrid sub-channels through ncclCommSplit: pairs {0,1}, {2,3}, ... and
// every other rank; each rank's place and the members it gathers.
TEST(NcclChannelGpu, SplitFormsHybridGroups) {
  if (gGpus < 4)
    GTEST_SKIP() << "needs 4 GPUs, this machine has " << gGpus;
  const int n = gGpus - gGpus % 2;
  Comms comms;
  ASSERT_TRUE(comm::createInProcessGroup(n, comms).isOk());
  std::vector<std::string> problems(n);
  runThreads(n, [&](int r) {
    Rig rig(r, *comms[r]);
    std::unique_ptr<Channel> shard, replica;
    Status s = rig.status;
    if (s)
      s = rig.channel->split(r / 2, r % 2, shard);
    if (s)
      s = rig.channel->split(r % 2, r / 2, replica);
    if (!s) {
      problems[r] = s.message();
      return;
    }
    if (shard->size() != 2 || shard->rank() != r % 2 || replica->size() != n / 2 ||
        replica->rank() != r / 2)
      problems[r] = "wrong place in a split group";
    DeviceMemory memory;
    s = rig.device->allocate(4 * (1 + n), memory);
    auto *mine = static_cast<int32_t *>(memory.base);
    const int32_t id = r;
    if (s)
      s = rig.device->copyToDevice(mine, &id, 4);
    if (s)
      s = replica->allGather(*rig.stream, mine, mine + 1, 1, DType::I32);
    if (s)
      s = rig.device->synchronize(*rig.stream);
    std::vector<int32_t> seen(n / 2);
    if (s)
      s = rig.device->copyToHost(seen.data(), mine + 1, seen.size() * 4);
    for (int k = 0; s && k < n / 2; ++k)
      if (seen[k] != r % 2 + 2 * k)
        problems[r] = "replica group gathered the wrong ranks";
    if (!s)
      problems[r] = s.message();
    rig.device->release(memory);
  });
  for (int r = 0; r < n; ++r)
    EXPECT_TRUE(problems[r].empty()) << "rank " << r << ": " << problems[r];
}

} // namespace

int main(int argc, char **argv) {
  return fsdp::rt::test::runGpuTests(argc, argv, "NCCL channel GPU tests", &gGpus);
}
