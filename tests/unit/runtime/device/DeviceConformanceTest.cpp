//===- DeviceConformanceTest.cpp - every backend keeps Device.h's contract ===//
//
// The device conformance suite, written once against Device.h and
// Channel.h and instantiated for every name the registry knows (today
// "cpu"; a CUDA backend joins by registering): a stream runs its work in
// enqueue order; an event recorded on one stream and waited on by another
// orders them, and a wait on a never-recorded event does not block;
// timing events measure the work between them; asynchronous copies in all
// three directions; a kernel's failure is sticky on its stream, reported
// (once) by synchronize, and crosses to a stream that waits on an event
// recorded after it; a channel's collectives
// run on a stream in order with its events, a split channel works, and a
// rank whose stream failed aborts the group at its next collective instead
// of leaving the others waiting; progress marks are set in stream order
// (not past a collective a peer has not joined), cleared by the host, and
// set again by every replay of a captured step; a host stream runs host
// kernels on host memory, ordered after a device stream by an event. Data
// goes in and out through the device's own copies, so nothing assumes
// device memory is host memory. The
// registry's own errors are checked once, outside the suite.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/device/Channel.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/plan/plan_generated.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

namespace fsdp::rt {
namespace {

/// A device buffer of f32 or i64 elements with its view, freed with the test.
struct Buffer {
  Device *device = nullptr;
  DeviceMemory memory;
  TensorRef ref;
  ~Buffer() {
    if (device)
      device->release(memory);
  }
};

/// Makes `b` a 1-D buffer of `n` elements of `dtype` on `device` (zeroed).
void allocate(Device &device, Buffer &b, DType dtype, int64_t n) {
  b.device = &device;
  b.ref.dtype = dtype;
  b.ref.rank = 1;
  b.ref.dims[0] = n;
  ASSERT_TRUE(device.allocate(b.ref.byteSize(), b.memory).isOk());
  b.ref.data = b.memory.base;
}

/// out = a + b (inputs[0..1]).
Launch addLaunch(const TensorRef *inputs, const TensorRef *out, const char *name = "add") {
  Launch l;
  l.kernel = static_cast<uint16_t>(plan::Kernel::Add);
  l.inputs = inputs;
  l.numInputs = 2;
  l.outputs = out;
  l.numOutputs = 1;
  l.name = name;
  return l;
}

/// out = inputs[0] (a table) gathered at inputs[1] (i64 ids) along axis 0.
Launch gatherLaunch(const TensorRef *inputs, const TensorRef *out, const char *name) {
  static const int64_t kAxis = 0;
  Launch l = addLaunch(inputs, out, name);
  l.kernel = static_cast<uint16_t>(plan::Kernel::Gather);
  l.ints = &kAxis;
  l.numInts = 1;
  return l;
}

class DeviceConformance : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    Status s = createDevice(GetParam(), DeviceOptions{}, device);
    // A GPU backend built in on a machine without its GPU: nothing to run.
    if (!s && GetParam() == "cuda")
      GTEST_SKIP() << "no GPU: " << s.message();
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  std::unique_ptr<Stream> stream() {
    std::unique_ptr<Stream> out;
    EXPECT_TRUE(device->createStream(out).isOk());
    return out;
  }
  std::unique_ptr<Event> event() {
    std::unique_ptr<Event> out;
    EXPECT_TRUE(device->createEvent(EventFlags::None, out).isOk());
    return out;
  }

  /// A 1-D device buffer of `values` (f32), or of `ints` when given (i64).
  void make(Buffer &b, const std::vector<float> &values,
            const std::vector<int64_t> *ints = nullptr) {
    allocate(*device, b, ints ? DType::I64 : DType::F32,
             static_cast<int64_t>(ints ? ints->size() : values.size()));
    const void *src = ints ? static_cast<const void *>(ints->data()) : values.data();
    ASSERT_TRUE(device->copyToDevice(b.ref.data, src, b.ref.byteSize()).isOk());
  }
  std::vector<float> read(const Buffer &b) {
    std::vector<float> out(static_cast<size_t>(b.ref.numElements()));
    EXPECT_TRUE(device->copyToHost(out.data(), b.ref.data, b.ref.byteSize()).isOk());
    return out;
  }

  std::unique_ptr<Device> device;
};

// 200 launches of x = x + one on one stream give 200 only in order.
TEST_P(DeviceConformance, AStreamRunsInEnqueueOrder) {
  Buffer x, one;
  make(x, {0, 0, 0, 0});
  make(one, {1, 1, 1, 1});
  TensorRef in[2] = {x.ref, one.ref};
  Launch l = addLaunch(in, &x.ref);
  auto s = stream();
  for (int i = 0; i < 200; ++i)
    ASSERT_TRUE(device->launch(*s, l, 0).isOk());
  ASSERT_TRUE(device->synchronize(*s).isOk());
  EXPECT_EQ(read(x), (std::vector<float>{200, 200, 200, 200}));
  ASSERT_TRUE(device->launch(*s, l, 0).isOk());
  ASSERT_TRUE(device->synchronize().isOk()); // the device-wide form
  EXPECT_EQ(read(x), (std::vector<float>{201, 201, 201, 201}));
}

// Stream B copies x after waiting for the event A recorded after 300 adds:
// it sees all of them, step after step (the event is recorded again).
TEST_P(DeviceConformance, AnEventOrdersOneStreamAfterAnother) {
  Buffer x, one, y;
  make(x, std::vector<float>(1024, 0));
  make(one, std::vector<float>(1024, 1));
  make(y, std::vector<float>(1024, -1));
  TensorRef in[2] = {x.ref, one.ref};
  Launch l = addLaunch(in, &x.ref);
  auto a = stream(), b = stream();
  auto done = event();
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 300; ++i)
      ASSERT_TRUE(device->launch(*a, l, 0).isOk());
    ASSERT_TRUE(device->recordEvent(*a, *done).isOk());
    ASSERT_TRUE(device->waitEvent(*b, *done).isOk());
    ASSERT_TRUE(device->copyAsync(*b, y.ref.data, x.ref.data, x.ref.byteSize(),
                                  CopyKind::DeviceToDevice)
                    .isOk());
    ASSERT_TRUE(device->synchronize(*b).isOk());
    EXPECT_EQ(read(y), std::vector<float>(1024, 300.0f * round)) << "round " << round;
    ASSERT_TRUE(device->synchronize(*a).isOk());
  }
}

// Timing events around work measure it (what fsdp-run --profile reads);
// ordering events refuse to.
TEST_P(DeviceConformance, TimingEventsMeasureTheWorkBetweenThem) {
  Buffer x, one;
  make(x, std::vector<float>(4096, 0));
  make(one, std::vector<float>(4096, 1));
  TensorRef in[2] = {x.ref, one.ref};
  Launch l = addLaunch(in, &x.ref);
  auto s = stream();
  std::unique_ptr<Event> start, end, plain;
  ASSERT_TRUE(device->createEvent(EventFlags::Timing, start).isOk());
  ASSERT_TRUE(device->createEvent(EventFlags::Timing, end).isOk());
  ASSERT_TRUE(device->createEvent(EventFlags::None, plain).isOk());
  ASSERT_TRUE(device->recordEvent(*s, *start).isOk());
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(device->launch(*s, l, 0).isOk());
  ASSERT_TRUE(device->recordEvent(*s, *end).isOk());
  ASSERT_TRUE(device->recordEvent(*s, *plain).isOk());
  ASSERT_TRUE(device->synchronize(*s).isOk());
  double seconds = -1;
  Status timed = device->elapsedSeconds(*start, *end, seconds);
  ASSERT_TRUE(timed.isOk()) << timed.message();
  EXPECT_GT(seconds, 0.0);
  EXPECT_LT(seconds, 10.0);
  // Reversed, the same time negated: the executor's step profile times
  // every stream from stream 0's start, and another may start first.
  double reversed = 0;
  ASSERT_TRUE(device->elapsedSeconds(*end, *start, reversed).isOk());
  EXPECT_NEAR(reversed, -seconds, 1e-5);
  EXPECT_FALSE(device->elapsedSeconds(*start, *plain, seconds).isOk());
}

// Waiting on an event nobody recorded does not block (cudaStreamWaitEvent).
TEST_P(DeviceConformance, AWaitOnANeverRecordedEventIsComplete) {
  auto s = stream();
  auto never = event();
  ASSERT_TRUE(device->waitEvent(*s, *never).isOk());
  EXPECT_TRUE(device->synchronize(*s).isOk());
}

TEST_P(DeviceConformance, AsyncCopiesInEveryDirection) {
  Buffer a, b;
  make(a, std::vector<float>(64, 0));
  make(b, std::vector<float>(64, 0));
  std::vector<float> host(64), back(64, -1);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = 0.5f * static_cast<float>(i);
  auto s = stream();
  const size_t bytes = host.size() * sizeof(float);
  ASSERT_TRUE(device->copyAsync(*s, a.ref.data, host.data(), bytes, CopyKind::HostToDevice).isOk());
  ASSERT_TRUE(
      device->copyAsync(*s, b.ref.data, a.ref.data, bytes, CopyKind::DeviceToDevice).isOk());
  ASSERT_TRUE(device->copyAsync(*s, back.data(), b.ref.data, bytes, CopyKind::DeviceToHost).isOk());
  ASSERT_TRUE(device->synchronize(*s).isOk());
  EXPECT_EQ(back, host);
  EXPECT_EQ(read(a), host);
}

// A gather with an index out of range fails on the stream: later work on
// it is skipped, synchronize reports the failure once (named by the
// launch), and a stream waiting on an event recorded after it fails too.
TEST_P(DeviceConformance, SynchronizeReportsAKernelFailure) {
  Buffer table, ids, out, x, one;
  make(table, {1, 2, 3, 4});
  std::vector<int64_t> badIds{0, 7};
  make(ids, {}, &badIds);
  make(out, {0, 0});
  make(x, {5});
  make(one, {1});
  TensorRef gatherIn[2] = {table.ref, ids.ref};
  Launch gather = gatherLaunch(gatherIn, &out.ref, "/emb/Gather");
  TensorRef addIn[2] = {x.ref, one.ref};
  Launch inc = addLaunch(addIn, &x.ref);

  auto a = stream(), b = stream();
  auto after = event();
  ASSERT_TRUE(device->launch(*a, gather, 0).isOk()); // enqueueing succeeds
  ASSERT_TRUE(device->launch(*a, inc, 0).isOk());    // skipped
  ASSERT_TRUE(device->recordEvent(*a, *after).isOk());
  ASSERT_TRUE(device->waitEvent(*b, *after).isOk());
  ASSERT_TRUE(device->launch(*b, inc, 0).isOk()); // skipped: b failed at the wait
  Status s = device->synchronize(*a);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().rfind("/emb/Gather: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("out of range"), std::string::npos) << s.message();
  Status sb = device->synchronize(*b);
  EXPECT_EQ(sb.message(), s.message());
  // A real GPU runs what was enqueued behind the fault before the host
  // reads the fault record (KernelFault.h): the step fails either way, but
  // only the emulated and CPU devices, which check after each launch, can
  // skip the later work. (Seen on an H100: x was 7.)
  const float before = read(x)[0];
  if (GetParam() != "cuda") {
    EXPECT_EQ(before, 5.0f);
  }
  // Reported once: the streams run again.
  EXPECT_TRUE(device->synchronize(*a).isOk());
  ASSERT_TRUE(device->launch(*a, inc, 0).isOk());
  EXPECT_TRUE(device->synchronize().isOk());
  EXPECT_EQ(read(x), (std::vector<float>{before + 1}));
}

// A host stream (Device::createHostStream, the plan's stream 3) runs the
// host's kernels on host memory (allocateHost) once a device stream's event
// says the data it reads has landed there: a device stream adds 300 times
// and copies the sum to the host, the host stream adds one to it, round
// after round (the event recorded again). Its timing events measure, its
// failure is sticky and reported once, and the device-wide synchronize
// waits for it.
TEST_P(DeviceConformance, AHostStreamRunsAfterADeviceStreamsEvent) {
  constexpr int64_t n = 1024;
  Buffer x, one;
  make(x, std::vector<float>(n, 0));
  make(one, std::vector<float>(n, 1));
  TensorRef in[2] = {x.ref, one.ref};
  Launch add = addLaunch(in, &x.ref);
  // Host memory the host stream computes in: the copied sum, ones, result.
  DeviceMemory hostMemory;
  ASSERT_TRUE(device->allocateHost(3 * n * sizeof(float), hostMemory).isOk());
  auto *host = static_cast<float *>(hostMemory.base);
  std::fill(host + n, host + 2 * n, 1.0f);
  TensorRef hostSum = x.ref, hostOne = x.ref, hostOut = x.ref;
  hostSum.data = host;
  hostOne.data = host + n;
  hostOut.data = host + 2 * n;
  TensorRef hostIn[2] = {hostSum, hostOne};
  Launch hostAdd = addLaunch(hostIn, &hostOut, "host/add");
  auto a = stream();
  std::unique_ptr<Stream> h;
  ASSERT_TRUE(device->createHostStream(h).isOk());
  auto landed = event();
  std::unique_ptr<Event> start, end;
  ASSERT_TRUE(device->createEvent(EventFlags::Timing, start).isOk());
  ASSERT_TRUE(device->createEvent(EventFlags::Timing, end).isOk());
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 300; ++i)
      ASSERT_TRUE(device->launch(*a, add, 0).isOk());
    ASSERT_TRUE(device->copyAsync(*a, hostSum.data, x.ref.data, x.ref.byteSize(),
                                  CopyKind::DeviceToHost)
                    .isOk());
    ASSERT_TRUE(device->recordEvent(*a, *landed).isOk());
    ASSERT_TRUE(device->waitEvent(*h, *landed).isOk());
    ASSERT_TRUE(device->recordEvent(*h, *start).isOk());
    ASSERT_TRUE(device->launch(*h, hostAdd, 0).isOk());
    ASSERT_TRUE(device->recordEvent(*h, *end).isOk());
    ASSERT_TRUE(device->synchronize(*h).isOk());
    EXPECT_EQ(std::vector<float>(host + 2 * n, host + 3 * n),
              std::vector<float>(n, 300.0f * round + 1))
        << "round " << round;
    double seconds = -1;
    Status timed = device->elapsedSeconds(*start, *end, seconds);
    ASSERT_TRUE(timed.isOk()) << timed.message();
    EXPECT_GE(seconds, 0.0);
    EXPECT_LT(seconds, 10.0);
    ASSERT_TRUE(device->synchronize(*a).isOk());
  }
  // A failure on the host stream: sticky, reported once, by the device-wide
  // synchronize too.
  std::vector<int64_t> badIds{0, 7 * n};
  std::memcpy(host + 2 * n, badIds.data(), badIds.size() * sizeof(int64_t));
  TensorRef ids = hostOne, out = hostSum;
  ids.dtype = DType::I64;
  ids.dims[0] = 2;
  ids.data = host + 2 * n;
  out.dims[0] = 2;
  TensorRef gatherIn[2] = {hostSum, ids};
  gatherIn[0].rank = 2;
  gatherIn[0].dims[0] = n;
  gatherIn[0].dims[1] = 1;
  out.rank = 2;
  out.dims[1] = 1;
  Launch gather = gatherLaunch(gatherIn, &out, "host/Gather");
  ASSERT_TRUE(device->launch(*h, gather, 0).isOk());
  ASSERT_TRUE(device->launch(*h, hostAdd, 0).isOk()); // skipped
  Status failed = device->synchronize();
  ASSERT_FALSE(failed.isOk());
  EXPECT_EQ(failed.message().rfind("host/Gather: ", 0), 0u) << failed.message();
  EXPECT_TRUE(device->synchronize(*h).isOk());
  device->releaseHost(hostMemory);
}

// The other way round, a device stream waiting for a host stream's event:
// devices whose streams are all host threads (cpu, cuda-simt) order them;
// the CUDA device refuses the wait when it is enqueued, naming the host
// stream (a GPU does not wait for a host thread; plans never ask for it).
TEST_P(DeviceConformance, ADeviceStreamWaitOnAHostStreamIsOrderedOrRefused) {
  constexpr int64_t n = 256;
  DeviceMemory hostMemory;
  ASSERT_TRUE(device->allocateHost(2 * n * sizeof(float), hostMemory).isOk());
  auto *host = static_cast<float *>(hostMemory.base);
  std::fill(host, host + n, 0.0f);
  std::fill(host + n, host + 2 * n, 1.0f);
  Buffer y;
  make(y, std::vector<float>(n, -1));
  TensorRef sum = y.ref, one = y.ref;
  sum.data = host;
  one.data = host + n;
  TensorRef in[2] = {sum, one};
  Launch add = addLaunch(in, &sum, "host/add");
  std::unique_ptr<Stream> h;
  ASSERT_TRUE(device->createHostStream(h).isOk());
  auto a = stream();
  auto done = event();
  for (int i = 0; i < 100; ++i)
    ASSERT_TRUE(device->launch(*h, add, 0).isOk());
  ASSERT_TRUE(device->recordEvent(*h, *done).isOk());
  Status waited = device->waitEvent(*a, *done);
  if (waited) {
    EXPECT_NE(GetParam(), "cuda") << "a GPU stream cannot wait for a host thread";
    ASSERT_TRUE(
        device->copyAsync(*a, y.ref.data, sum.data, y.ref.byteSize(), CopyKind::HostToDevice)
            .isOk());
    ASSERT_TRUE(device->synchronize(*a).isOk());
    EXPECT_EQ(read(y), std::vector<float>(n, 100.0f));
  } else {
    EXPECT_EQ(GetParam(), "cuda") << waited.message();
    EXPECT_NE(waited.message().find("host stream"), std::string::npos) << waited.message();
  }
  EXPECT_TRUE(device->synchronize().isOk());
  device->releaseHost(hostMemory);
}

/// Whether the suite's kind can give two ranks a device each: NCCL refuses
/// two ranks on one GPU ("Duplicate GPU detected"), so the CUDA rows of the
/// two-rank tests need two GPUs.
bool hasTwoDevices(const std::string &name) { return name != "cuda" || cudaDeviceCount() >= 2; }

/// Runs body(rank) for a two-rank in-process group, each rank with its own
/// device of the suite's kind (rank r on device r) and a channel over its
/// communicator.
void runTwoRanks(const std::string &name,
                 const std::function<void(int, Device &, Channel &)> &body) {
  std::vector<std::unique_ptr<Communicator>> comms;
  ASSERT_TRUE(comm::createInProcessGroup(2, comms).isOk());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::unique_ptr<Device> device;
      std::unique_ptr<Channel> channel;
      DeviceOptions options;
      options.ordinal = r;
      Status s = createDevice(name, options, device);
      if (s)
        s = device->createChannel(*comms[r], channel);
      if (!s) {
        comms[r]->abort(s.message());
        ADD_FAILURE() << "rank " << r << ": " << s.message();
        return;
      }
      EXPECT_EQ(channel->rank(), r);
      EXPECT_EQ(channel->size(), 2);
      body(r, *device, *channel);
    });
  for (std::thread &t : threads)
    t.join();
}

// Each rank computes its input on a compute stream, and the collectives
// run on a communication stream after an event: allReduce sums in rank
// order, allGather concatenates, broadcast copies rank 1's; and a split
// channel (one rank each) reduces over itself alone.
TEST_P(DeviceConformance, ChannelCollectivesRunOnAStream) {
  if (!hasTwoDevices(GetParam()))
    GTEST_SKIP() << "needs 2 GPUs, this machine has " << cudaDeviceCount();
  runTwoRanks(GetParam(), [](int r, Device &device, Channel &channel) {
    std::unique_ptr<Stream> compute, comms;
    std::unique_ptr<Event> ready;
    ASSERT_TRUE(device.createStream(compute).isOk());
    ASSERT_TRUE(device.createStream(comms).isOk());
    ASSERT_TRUE(device.createEvent(EventFlags::None, ready).isOk());
    Buffer xBuffer, sumBuffer, allBuffer, rootBuffer;
    Buffer *x = &xBuffer, *sum = &sumBuffer, *all = &allBuffer, *root = &rootBuffer;
    for (Buffer *b : {x, sum, root})
      allocate(device, *b, DType::F32, 4);
    allocate(device, *all, DType::F32, 8);
    const float base = r == 0 ? 1.0f : 10.0f;
    std::vector<float> mine{base, base + 1, base + 2, base + 3};
    ASSERT_TRUE(device.copyAsync(*compute, x->ref.data, mine.data(), x->ref.byteSize(),
                                 CopyKind::HostToDevice)
                    .isOk());
    ASSERT_TRUE(device.copyAsync(*compute, root->ref.data, mine.data(), root->ref.byteSize(),
                                 CopyKind::HostToDevice)
                    .isOk());
    ASSERT_TRUE(device.recordEvent(*compute, *ready).isOk());
    ASSERT_TRUE(device.waitEvent(*comms, *ready).isOk());
    ASSERT_TRUE(channel.allReduce(*comms, x->ref, sum->ref, ReduceOp::Sum).isOk());
    ASSERT_TRUE(channel.allGather(*comms, x->ref, all->ref).isOk());
    ASSERT_TRUE(channel.broadcast(*comms, root->ref, 1).isOk());
    Status s = device.synchronize(*comms);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_TRUE(device.synchronize(*compute).isOk());
    std::vector<float> host(8);
    ASSERT_TRUE(device.copyToHost(host.data(), sum->ref.data, 16).isOk());
    EXPECT_EQ(std::vector<float>(host.begin(), host.begin() + 4),
              (std::vector<float>{11, 13, 15, 17}));
    ASSERT_TRUE(device.copyToHost(host.data(), all->ref.data, 32).isOk());
    EXPECT_EQ(host, (std::vector<float>{1, 2, 3, 4, 10, 11, 12, 13}));
    ASSERT_TRUE(device.copyToHost(host.data(), root->ref.data, 16).isOk());
    EXPECT_EQ(std::vector<float>(host.begin(), host.begin() + 4),
              (std::vector<float>{10, 11, 12, 13}));

    std::unique_ptr<Channel> alone;
    ASSERT_TRUE(channel.split(r, 0, alone).isOk());
    EXPECT_EQ(alone->size(), 1);
    ASSERT_TRUE(alone->allReduce(*comms, x->ref, sum->ref, ReduceOp::Sum).isOk());
    ASSERT_TRUE(device.synchronize(*comms).isOk());
    ASSERT_TRUE(device.copyToHost(host.data(), sum->ref.data, 16).isOk());
    EXPECT_EQ(std::vector<float>(host.begin(), host.begin() + 4), mine);
  });
}

// Rank 1's compute stream fails before the collective its communication
// stream waits for; that collective aborts the group, so rank 0, already
// in it, returns with rank 1's failure instead of waiting forever.
TEST_P(DeviceConformance, AFailedStreamAbortsItsChannelsGroup) {
  if (!hasTwoDevices(GetParam()))
    GTEST_SKIP() << "needs 2 GPUs, this machine has " << cudaDeviceCount();
  std::vector<Status> results(2);
  runTwoRanks(GetParam(), [&](int r, Device &device, Channel &channel) {
    std::unique_ptr<Stream> compute, comms;
    std::unique_ptr<Event> ready;
    ASSERT_TRUE(device.createStream(compute).isOk());
    ASSERT_TRUE(device.createStream(comms).isOk());
    ASSERT_TRUE(device.createEvent(EventFlags::None, ready).isOk());
    Buffer table, ids, out, x, sum;
    std::vector<int64_t> badIds{9};
    for (Buffer *b : {&table, &x, &sum})
      allocate(device, *b, DType::F32, 4);
    allocate(device, ids, DType::I64, 1);
    allocate(device, out, DType::F32, 1);
    ASSERT_TRUE(device.copyToDevice(ids.ref.data, badIds.data(), 8).isOk());
    TensorRef in[2] = {table.ref, ids.ref};
    Launch gather = gatherLaunch(in, &out.ref, "rank1/Gather");
    if (r == 1) {
      ASSERT_TRUE(device.launch(*compute, gather, 0).isOk());
    }
    ASSERT_TRUE(device.recordEvent(*compute, *ready).isOk());
    ASSERT_TRUE(device.waitEvent(*comms, *ready).isOk());
    ASSERT_TRUE(channel.allReduce(*comms, x.ref, sum.ref, ReduceOp::Sum).isOk());
    results[r] = device.synchronize(*comms);
    (void)device.synchronize(*compute);
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_FALSE(results[r].isOk()) << "rank " << r;
    EXPECT_NE(results[r].message().find("rank1/Gather"), std::string::npos)
        << "rank " << r << ": " << results[r].message();
  }
}

// Rank 0 brackets an all-reduce with marks 0 and 1: mark 0 is set while
// the stream waits in the collective for rank 1, mark 1 only once rank 1
// has joined it; clear() unsets both. (What the collective watchdog reads.)
TEST_P(DeviceConformance, ProgressMarksFollowTheStream) {
  if (!hasTwoDevices(GetParam()))
    GTEST_SKIP() << "needs 2 GPUs, this machine has " << cudaDeviceCount();
  std::atomic<MarkSet *> rankZeroMarks{nullptr};
  std::atomic<bool> checked{false};
  runTwoRanks(GetParam(), [&](int r, Device &device, Channel &channel) {
    std::unique_ptr<Stream> comms;
    ASSERT_TRUE(device.createStream(comms).isOk());
    Buffer x, sum;
    allocate(device, x, DType::F32, 4);
    allocate(device, sum, DType::F32, 4);
    std::unique_ptr<MarkSet> marks;
    ASSERT_TRUE(device.createMarks(2, marks).isOk());
    EXPECT_EQ(marks->size(), 2u);
    EXPECT_FALSE(marks->isSet(0) || marks->isSet(1));
    if (r == 0) {
      ASSERT_TRUE(device.setMark(*comms, *marks, 0).isOk());
      ASSERT_TRUE(channel.allReduce(*comms, x.ref, sum.ref, ReduceOp::Sum).isOk());
      ASSERT_TRUE(device.setMark(*comms, *marks, 1).isOk());
      EXPECT_FALSE(device.setMark(*comms, *marks, 2).isOk()); // out of range
      rankZeroMarks = marks.get();
    } else {
      for (int i = 0; i < 5000 && !rankZeroMarks.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ASSERT_NE(rankZeroMarks.load(), nullptr);
      MarkSet &zero = *rankZeroMarks.load();
      for (int i = 0; i < 5000 && !zero.isSet(0); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_TRUE(zero.isSet(0));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_FALSE(zero.isSet(1)) << "set past a collective rank 1 has not joined";
      checked = true;
      ASSERT_TRUE(channel.allReduce(*comms, x.ref, sum.ref, ReduceOp::Sum).isOk());
    }
    ASSERT_TRUE(device.synchronize(*comms).isOk());
    if (r == 0) {
      for (int i = 0; i < 5000 && !checked.load(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_TRUE(marks->isSet(0) && marks->isSet(1));
      marks->clear();
      EXPECT_FALSE(marks->isSet(0) || marks->isSet(1));
    }
  });
}

// A mark enqueued while capturing is set by every replay, not by the
// capture; the host clears it between replays (devices that capture).
TEST_P(DeviceConformance, ProgressMarksInACapturedStep) {
  if (!device->canCapture())
    GTEST_SKIP() << GetParam() << " does not capture steps";
  auto s = stream();
  std::unique_ptr<MarkSet> marks;
  ASSERT_TRUE(device->createMarks(1, marks).isOk());
  Stream *streams[] = {s.get()};
  ASSERT_TRUE(device->beginCapture(streams, 1).isOk());
  ASSERT_TRUE(device->setMark(*s, *marks, 0).isOk());
  std::unique_ptr<Graph> graph;
  ASSERT_TRUE(device->endCapture(graph).isOk());
  ASSERT_TRUE(device->synchronize(*s).isOk());
  EXPECT_FALSE(marks->isSet(0)) << "set by the capture";
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_TRUE(device->replay(*s, *graph).isOk());
    ASSERT_TRUE(device->synchronize(*s).isOk());
    EXPECT_TRUE(marks->isSet(0)) << "replay " << replay;
    marks->clear();
    EXPECT_FALSE(marks->isSet(0));
  }
}

INSTANTIATE_TEST_SUITE_P(Registered, DeviceConformance, ::testing::ValuesIn(deviceNames()),
                         [](const ::testing::TestParamInfo<std::string> &info) {
                           std::string name = info.param; // "cuda-simt" -> "cuda_simt"
                           for (char &c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c)))
                               c = '_';
                           return name;
                         });

// --- The registry itself (not per backend).

TEST(DeviceRegistry, KnowsTheCpuAndRefusesOtherNamesClearly) {
  std::vector<std::string> names = deviceNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  std::unique_ptr<Device> device;
  ASSERT_TRUE(createDevice("cpu", DeviceOptions{}, device).isOk());
  EXPECT_STREQ(device->name(), "cpu");
  Status cuda = createDevice("cuda", DeviceOptions{}, device);
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) {
    EXPECT_NE(cuda.message().find("device 'cuda' is not available in this build"),
              std::string::npos)
        << cuda.message();
  }
  Status unknown = createDevice("tpu", DeviceOptions{}, device);
  EXPECT_NE(unknown.message().find("unknown device 'tpu' (available: cpu"), std::string::npos)
      << unknown.message();
  EXPECT_EQ(checkDeviceName("tpu").message(), unknown.message());
  EXPECT_TRUE(checkDeviceName("cpu").isOk());
}

// The default device is a GPU exactly when the build has the cuda device
// and the machine a GPU; without one, asking for cuda gives CUDA's reason
// as one plain line, and a GPU index past the last is refused by number.
TEST(DeviceRegistry, TheDefaultIsTheGpuWhenThereIsOne) {
  std::vector<std::string> names = deviceNames();
  const bool built = std::find(names.begin(), names.end(), "cuda") != names.end();
  const int gpus = cudaDeviceCount();
  if (!built) {
    EXPECT_EQ(gpus, 0);
  }
  EXPECT_EQ(defaultDeviceName(), gpus > 0 ? "cuda" : "cpu");
  if (!built)
    return;
  std::unique_ptr<Device> device;
  DeviceOptions past;
  past.ordinal = gpus;
  Status s = createDevice("cuda", past, device);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.message().rfind("cuda: ", 0), 0u) << s.message();
  EXPECT_EQ(s.message().find("(at "), std::string::npos) << s.message();
  if (gpus > 0) {
    EXPECT_NE(s.message().find(cat("there is no GPU ", gpus, ": this machine has ", gpus)),
              std::string::npos)
        << s.message();
  }
}

TEST(DeviceRegistry, RegistersAndRefusesADuplicateName) {
  auto factory = [](const DeviceOptions &options, std::unique_ptr<Device> &out) {
    if (options.ordinal != 0)
      return Status::error("test-device: no such ordinal");
    out = createCpuDevice();
    return Status::ok();
  };
  std::vector<std::string> names = deviceNames();
  if (std::find(names.begin(), names.end(), "test-device") == names.end()) { // --gtest_repeat
    ASSERT_TRUE(registerDevice("test-device", factory).isOk());
  }
  EXPECT_NE(registerDevice("test-device", factory).message().find("already registered"),
            std::string::npos);
  EXPECT_NE(registerDevice("cpu", factory).message().find("already registered"),
            std::string::npos);
  std::unique_ptr<Device> device;
  EXPECT_TRUE(createDevice("test-device", DeviceOptions{}, device).isOk());
  DeviceOptions second;
  second.ordinal = 1;
  EXPECT_EQ(createDevice("test-device", second, device).message(), "test-device: no such ordinal");
}

} // namespace
} // namespace fsdp::rt
