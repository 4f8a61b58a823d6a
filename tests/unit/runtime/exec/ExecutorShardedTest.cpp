//===- ExecutorShardedTest.cpp - the executor runs sharded plans ----------===//
//
// A hand-built FSDP training step over one unit holding two parameters
// (a: f32[3] at flat offset 0, b: f32[2, 2] at offset 3; 7 real elements
// padded to equal shards) plus one replicated parameter c outside every
// unit, run by N in-process ranks (threads, each with its own CPU device
// and executor). The step has the shape the compiler emits: all-gather the
// unit's shards, slice the parameters out of the flat buffer, compute
// gradients (g_a = a * x_r, g_b = b * y_r with per-rank inputs), Flatten
// them into the flat gradient, reduce-scatter it (avg) back to shards,
// and update each shard with Sgd; the loss (sum of the local gradient) is
// all-reduced (avg) over the world. Hybrid sharding adds an all-reduce of
// the gradient shard across the groups, which needs sub-communicators.
// Checked on every rank against the same step computed here in double:
// the shards after loading and after each step (padding stays zero), the
// loss, ModelState's getParameter and saveWeights (the full values,
// written by rank 0 only). World sizes 2 and 3 (padding, a parameter split across shards),
// and 4 as two groups of 2. The same plan is also run by fsdp-run (found
// beside this test binary), which must run its ranks in-process, report
// from rank 0 only, save the gathered weights once, and report a failure
// of its ranks as one error line and exit code 1; under mpirun (when
// installed) one process per rank gives the same bits, and a job with the
// wrong number of processes fails on every rank.
//
// The same step with its collectives on the communication stream (as
// compiler/Transforms/ScheduleCollectives.cpp emits them: each collective
// waits for the compute instruction before it, the first reader waits for
// the collective) runs them on each executor's communication worker and
// gives the same values; an error on that stream fails every rank's run()
// instead of hanging; the plan check refuses events that deadlock or are
// signalled twice.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/device/Channel.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Npy.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <numeric>
#include <sstream>
#include <sys/wait.h>
#include <thread>

namespace fsdp::rt {
namespace {

constexpr int64_t kFlat = 7; // a: 3 elements, b: 4
constexpr double kLr = 0.5;
const std::vector<float> kA{1, -2, 3}, kB{0.5f, 1.5f, -1, 2}, kC{7, 8};

/// Rank r's inputs (one sample, micro-batch 1): x (for a) and y (for b),
/// distinct per rank.
std::vector<float> inputX(int r) { return {1.0f + r, 0.5f * r, -1.0f}; }
std::vector<float> inputY(int r) { return {2.0f - r, 1, 0.25f * r, 3}; }

HostTensor floatTensor(const std::vector<float> &v, std::vector<int64_t> shape) {
  HostTensor t{DType::F32, std::move(shape), std::vector<char>(v.size() * 4)};
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<float> floats(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

/// The step on the full flat parameter, in double: what every rank's shards
/// must hold afterwards, and the loss. Gradients are averaged over the whole
/// world (hybrid averages within groups and then across them: the same).
struct Reference {
  std::vector<double> flat; // padded
  double loss = 0; // of the last step, before its update

  explicit Reference(int64_t padded) : flat(padded, 0.0) {
    for (int i = 0; i < 3; ++i)
      flat[i] = kA[i];
    for (int i = 0; i < 4; ++i)
      flat[3 + i] = kB[i];
  }
  void step(int world) {
    std::vector<double> grad(flat.size(), 0.0);
    loss = 0;
    for (int r = 0; r < world; ++r) {
      std::vector<float> x = inputX(r), y = inputY(r);
      for (int i = 0; i < 3; ++i)
        grad[i] += flat[i] * x[i] / world;
      for (int i = 0; i < 4; ++i)
        grad[3 + i] += flat[3 + i] * y[i] / world;
      double local = 0;
      for (int i = 0; i < 3; ++i)
        local += static_cast<float>(static_cast<float>(flat[i]) * x[i]);
      for (int i = 0; i < 4; ++i)
        local += static_cast<float>(static_cast<float>(flat[3 + i]) * y[i]);
      loss += local / world;
    }
    for (size_t i = 0; i < flat.size(); ++i)
      flat[i] -= kLr * grad[i];
  }
};

struct BufferSpec {
  const char *name;
  plan::DType dtype;
  std::vector<int64_t> shape;
  plan::Region region;
};

/// An instruction's stream and events (plan.fbs Instruction).
struct StreamOrder {
  uint8_t stream = 0;
  std::vector<uint32_t> waits;
  int32_t signal = -1;
};

enum Buf : uint32_t {
  Shard, Lr, X, Y, Loss, C,                              // persistent
  Full, AView, BFlat, BView, GA, GB, GFlat, GShard, LossLocal, GCross, // arena
  GHost // host (offload_): the reduced gradient shard's copy
};

class ExecutorShardedTest : public formattest::FormatTest {
protected:
  ExecutorShardedTest() : FormatTest("fsdp-exec-sharded-", "step.plan") {}

  /// Writes the plan for `world` ranks whose unit is sharded over groups of
  /// `group` (hybrid when group < world) and its weights file, and loads it.
  void writePlan(int world, int group) {
    writePlanFile(world, group);
    Status s = loadPlan(path, loaded);
    ASSERT_TRUE(s.isOk()) << s.message();
  }

  /// Stream order of the step's instructions when `async_`: the
  /// collectives on stream 1 ordered as the plan emitter orders them, or
  /// `order_` when a test sets it.
  std::vector<StreamOrder> streamOrder(bool hybrid) const {
    if (!order_.empty())
      return order_;
    std::vector<StreamOrder> order((hybrid ? 12 : 11) + (offload_ ? 1 : 0));
    if (!async_)
      return order;
    order[0] = {1, {}, 0};          // AllGather; the slices wait for it
    order[1].waits = {0};
    order[7].signal = 1;            // ReduceSum: the last compute before...
    order[8] = {1, {1}, -1};        // ...the loss AllReduce (drained at the end)
    order[9] = {1, {}, 2};          // ReduceScatter, in order behind it
    if (hybrid) {
      order[9].signal = -1;
      order[10] = {1, {}, 2};       // the cross-group AllReduce
    }
    order.back().waits = {2};       // Sgd reads the reduced shard
    if (offload_) {
      // Its copy to the host on the copy stream, the update on the host
      // stream (as compiler/Target/StreamOrder.h orders them).
      order[order.size() - 2] = {2, {2}, 3};
      order.back() = {3, {3}, -1};
    }
    return order;
  }

  void writePlanFile(int world, int group) {
    world_ = world;
    group_ = group;
    shardNumel_ = (kFlat + group - 1) / group;
    padded_ = shardNumel_ * group;
    uint64_t weightsHash = 0;
    HostTensor a = floatTensor(kA, {3}), b = floatTensor(kB, {2, 2}), c = floatTensor(kC, {2});
    ASSERT_TRUE(writeSafetensors(dir + "/step.safetensors",
                                 {{"a", a.ref()}, {"b", b.ref()}, {"c", c.ref()}}, {},
                                 &weightsHash)
                    .isOk());
    using plan::DType;
    using plan::Region;
    // --offload=cpu keeps the shard, the lr the update reads and the
    // reduced gradient's copy in the Host region.
    const Region onHost = offload_ ? Region::Host : Region::Persistent;
    const std::vector<BufferSpec> specs{
        {"shard", DType::F32, {shardNumel_}, onHost},
        {"lr", DType::F64, {}, onHost},
        {"x", DType::F32, {1, 3}, Region::Persistent},
        {"y", DType::F32, {1, 2, 2}, Region::Persistent},
        {"loss", DType::F32, {}, Region::Persistent},
        {"c", DType::F32, {2}, Region::Persistent},
        {"full", DType::F32, {padded_}, Region::Arena},
        {"a_view", DType::F32, {3}, Region::Arena},
        {"b_flat", DType::F32, {4}, Region::Arena},
        {"b_view", DType::F32, {2, 2}, Region::Arena},
        {"g_a", DType::F32, {1, 3}, Region::Arena},
        {"g_b", DType::F32, {1, 2, 2}, Region::Arena},
        {"g_flat", DType::F32, {padded_}, Region::Arena},
        {"g_shard", DType::F32, {shardNumel_}, Region::Arena},
        {"loss_local", DType::F32, {}, Region::Arena},
        {"g_cross", DType::F32, {shardNumel_}, Region::Arena},
        {"g_host", DType::F32, {shardNumel_}, Region::Host},
    };
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<plan::Buffer>> buffers;
    uint64_t regionEnd[4] = {0, 0, 0, 0}; // by plan::Region
    for (const BufferSpec &b : specs) {
      uint64_t size = std::accumulate(b.shape.begin(), b.shape.end(), uint64_t{1},
                                      [](uint64_t n, int64_t d) { return n * d; }) *
                      (b.dtype == DType::F64 ? 8 : 4);
      uint64_t &end = regionEnd[static_cast<int>(b.region)];
      buffers.push_back(plan::CreateBuffer(fbb, fbb.CreateString(b.name), b.dtype,
                                           fbb.CreateVector(b.shape), b.region, end, size));
      end += (size + 63) / 64 * 64;
    }
    const std::vector<StreamOrder> order = streamOrder(group < world);
    size_t next = 0;
    auto inst = [&](plan::Kernel k, std::vector<uint32_t> in, std::vector<uint32_t> out,
                    std::vector<int64_t> ints = {}, std::vector<float> floats = {}) {
      const StreamOrder &o = order.at(next++);
      return plan::CreateInstruction(fbb, k, fbb.CreateVector(in), fbb.CreateVector(out),
                                     fbb.CreateVector(ints), fbb.CreateVector(floats), o.stream,
                                     fbb.CreateString(plan::EnumNameKernel(k)),
                                     fbb.CreateVector(o.waits), o.signal);
    };
    uint32_t numEvents = 0;
    uint8_t numStreams = 1;
    for (const StreamOrder &o : order) {
      numEvents = std::max<uint32_t>(numEvents, o.signal + 1);
      for (uint32_t e : o.waits)
        numEvents = std::max<uint32_t>(numEvents, e + 1);
      numStreams = std::max<uint8_t>(numStreams, o.stream + 1);
    }
    // Groups of the unit: contiguous blocks of `group` ranks. Across them
    // (hybrid): the ranks holding the same shard, group by group.
    std::vector<int64_t> blocks(world), across;
    std::iota(blocks.begin(), blocks.end(), 0);
    for (int s = 0; s < group; ++s)
      for (int r = s; r < world; r += group)
        across.push_back(r);
    auto layout = [](std::vector<int64_t> head, const std::vector<int64_t> &ranks) {
      head.insert(head.end(), ranks.begin(), ranks.end());
      return head;
    };
    bool hybrid = group < world;
    std::vector<flatbuffers::Offset<plan::Instruction>> instructions{
        inst(plan::Kernel::AllGather, {Shard}, {Full}, layout({group}, blocks)),
        inst(plan::Kernel::Slice, {Full}, {AView}, {0, 1}),
        inst(plan::Kernel::Slice, {Full}, {BFlat}, {3, 1}),
        inst(plan::Kernel::Copy, {BFlat}, {BView}),
        inst(plan::Kernel::Mul, {AView, X}, {GA}),
        inst(plan::Kernel::Mul, {BView, Y}, {GB}),
        inst(plan::Kernel::Flatten, {GA, GB}, {GFlat}, {0, 3}),
        inst(plan::Kernel::ReduceSum, {GFlat}, {LossLocal}, {0}),
        inst(plan::Kernel::AllReduce, {LossLocal}, {Loss}, layout({1, world}, blocks)),
        inst(plan::Kernel::ReduceScatter, {GFlat}, {GShard}, layout({1, group}, blocks)),
    };
    if (hybrid)
      instructions.push_back(
          inst(plan::Kernel::AllReduce, {GShard}, {GCross}, layout({1, world / group}, across)));
    uint32_t grad = hybrid ? GCross : GShard;
    if (offload_) {
      instructions.push_back(inst(plan::Kernel::Copy, {grad}, {GHost}));
      grad = GHost;
    }
    instructions.push_back(
        inst(plan::Kernel::Sgd, {Shard, grad, kNoBuffer, Lr}, {Shard}, {0}, {0.0f, 0.0f}));
    auto param = [&](const char *name, std::vector<int64_t> shape, uint32_t buffer, uint32_t unit,
                     uint64_t offset) {
      return plan::CreateParameter(fbb, fbb.CreateString(name), DType::F32,
                                   fbb.CreateVector(shape), buffer, unit, offset);
    };
    std::vector<flatbuffers::Offset<plan::Parameter>> params{
        param("a", {3}, kNoBuffer, 0, 0), param("b", {2, 2}, kNoBuffer, 0, 3),
        param("c", {2}, C, 0xFFFFFFFF, 0)};
    std::vector<flatbuffers::Offset<plan::Unit>> units{
        plan::CreateUnit(fbb, fbb.CreateString("unit0"), kFlat, padded_, shardNumel_, Shard,
                         group, DType::F32)};
    auto binding = [&](const char *name, uint32_t buffer) {
      return plan::CreateBinding(fbb, fbb.CreateString(name), buffer);
    };
    std::vector<flatbuffers::Offset<plan::Binding>> inputs{binding("x", X), binding("y", Y)};
    std::vector<flatbuffers::Offset<plan::Binding>> outputs{binding("loss", Loss),
                                                            binding("shard", Shard)};
    auto root = plan::CreatePlan(
        fbb, kPlanFormatVersion, fbb.CreateString("test"), fbb.CreateString("hand-built"),
        fbb.CreateString("train"), world, fbb.CreateVector(buffers),
        fbb.CreateVector(instructions), fbb.CreateVector(params), fbb.CreateVector(units),
        fbb.CreateVector(inputs), fbb.CreateVector(outputs), regionEnd[0], regionEnd[1],
        numStreams, 0, fbb.CreateString("step.safetensors"), weightsHash, numEvents,
        fbb.CreateVector(std::vector<flatbuffers::Offset<plan::Binding>>{}), Lr, kNoBuffer,
        fbb.CreateString("loss"), fbb.CreateString("sgd"), kLr,
        fbb.CreateString(hybrid ? cat("hybrid:", group) : std::string("full")),
        fbb.CreateString("f32"), fbb.CreateString("f32"), regionEnd[3]);
    plan::FinishPlanBuffer(fbb, root);
    ASSERT_TRUE(rt::writePlanFile(path, fbb.GetBufferPointer(), fbb.GetSize()).isOk());
  }

  /// Runs body(rank, executor) on one thread per rank, each with its own
  /// device and executor over `comms`. If the ranks do not finish in time
  /// (a collective hangs), the group is aborted so the threads can return.
  void runRanks(const std::function<void(int, Executor &)> &body) {
    std::vector<std::unique_ptr<Communicator>> comms;
    ASSERT_TRUE(comm::createInProcessGroup(world_, comms).isOk());
    std::vector<std::future<void>> done;
    for (int r = 0; r < world_; ++r)
      done.push_back(std::async(std::launch::async, [&, r] {
        std::unique_ptr<Device> device = createCpuDevice();
        std::unique_ptr<Executor> executor;
        Status s = Executor::create(loaded, *device, comms[r].get(), executor);
        if (!s) {
          comms[r]->abort(s.message());
          ADD_FAILURE() << "rank " << r << ": " << s.message();
          return;
        }
        EXPECT_EQ(executor->rank(), r);
        body(r, *executor);
      }));
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (auto &f : done)
      if (f.wait_until(deadline) != std::future_status::ready) {
        ADD_FAILURE() << "ranks still running after 60 s: a collective hangs";
        for (auto &c : comms)
          c->abort("test watchdog");
        break;
      }
    for (auto &f : done)
      f.wait();
  }

  /// Loads the weights, checks the shards, takes `steps` steps and checks
  /// shards, loss, every parameter and the saved weights on every rank.
  void trainAndCheck(int steps) {
    Reference ref(padded_);
    std::vector<Reference> afterStep;
    for (int s = 0; s < steps; ++s) {
      ref.step(world_);
      afterStep.push_back(ref);
    }
    const std::string saved = dir + "/trained.safetensors";
    Reference initial(padded_);
    runRanks([&](int r, Executor &ex) {
      SCOPED_TRACE(testing::Message() << "rank " << r);
      auto expectShard = [&](const Reference &want) {
        HostTensor shard;
        ASSERT_TRUE(ex.getOutput("shard", shard).isOk());
        std::vector<float> got = floats(shard);
        int64_t first = (r % group_) * shardNumel_;
        for (int64_t i = 0; i < shardNumel_; ++i)
          EXPECT_NEAR(got[i], want.flat[first + i], 1e-5) << "element " << first + i;
      };
      Status s = ModelState(ex).loadWeights();
      ASSERT_TRUE(s.isOk()) << s.message();
      expectShard(initial);
      HostTensor x = floatTensor(inputX(r), {1, 3}), y = floatTensor(inputY(r), {1, 2, 2});
      for (int step = 1; step <= steps; ++step) {
        s = ex.setInput("x", x.ref());
        if (s)
          s = ex.setInput("y", y.ref());
        if (s)
          s = ex.setLearningRate(kLr);
        if (s)
          s = ex.setStep(step);
        if (s)
          s = ex.run();
        ASSERT_TRUE(s.isOk()) << s.message();
        expectShard(afterStep[step - 1]);
        double loss = 0;
        ASSERT_TRUE(ex.getLoss(loss).isOk());
        EXPECT_NEAR(loss, afterStep[step - 1].loss, 1e-4) << "step " << step;
      }
      // Collective: every rank gathers; each gets the full value.
      HostTensor b;
      s = ModelState(ex).getParameter("b", b);
      ASSERT_TRUE(s.isOk()) << s.message();
      EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 2}));
      std::vector<float> bv = floats(b);
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(bv[i], ref.flat[3 + i], 1e-5);
      s = ModelState(ex).saveWeights(r == 0 ? saved : dir + cat("/rank", r, ".safetensors"));
      ASSERT_TRUE(s.isOk()) << s.message();
    });
    for (int r = 1; r < world_; ++r)
      EXPECT_FALSE(std::filesystem::exists(dir + cat("/rank", r, ".safetensors")))
          << "only rank 0 writes";
    SafetensorsFile file;
    ASSERT_TRUE(SafetensorsFile::open(saved, file).isOk());
    EXPECT_EQ(file.names(), (std::vector<std::string>{"a", "b", "c"}));
    std::vector<float> a = floats(*file.find("a")), bb = floats(*file.find("b"));
    for (int i = 0; i < 3; ++i)
      EXPECT_NEAR(a[i], ref.flat[i], 1e-5);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(bb[i], ref.flat[3 + i], 1e-5);
    EXPECT_EQ(file.find("b")->shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(floats(*file.find("c")), kC);
  }

  LoadedPlan loaded;
  bool async_ = false;
  bool offload_ = false; // shard, lr and the update's gradient in host memory
  std::vector<StreamOrder> order_;
  int world_ = 1, group_ = 1;
  int64_t shardNumel_ = 0, padded_ = 0;
};

TEST_F(ExecutorShardedTest, TwoRanksTrainTheirShards) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  trainAndCheck(2);
}

// 7 elements over 3 ranks: shards of 3, two padding elements on rank 2,
// and b straddles ranks 1 and 2.
TEST_F(ExecutorShardedTest, ThreeRanksWithPadding) {
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(3);
}

// Hybrid sharding: shards within {0, 1} and {2, 3}, gradients all-reduced
// across {0, 2} and {1, 3}; both layouts need sub-communicators.
TEST_F(ExecutorShardedTest, FourRanksInTwoGroupsSplitTheWorld) {
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

TEST_F(ExecutorShardedTest, WorldSizeMustMatchTheCommunicator) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::unique_ptr<Device> device = createCpuDevice();
  std::unique_ptr<Executor> executor;
  Status s = Executor::create(loaded, *device, nullptr, executor);
  EXPECT_NE(s.message().find("compiled for world size 2: it needs a communicator"),
            std::string::npos)
      << s.message();
  std::vector<std::unique_ptr<Communicator>> three;
  ASSERT_TRUE(comm::createInProcessGroup(3, three).isOk());
  s = Executor::create(loaded, *device, three[0].get(), executor);
  EXPECT_NE(s.message().find("compiled for world size 2, but the group has 3 ranks"),
            std::string::npos)
      << s.message();
}

// A rank whose step fails aborts the group: the other rank, waiting in a
// collective, gets an error instead of hanging.
TEST_F(ExecutorShardedTest, AFailingRankAbortsTheOthers) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::vector<Status> results(2);
  runRanks([&](int r, Executor &ex) {
    ASSERT_TRUE(ModelState(ex).loadWeights().isOk());
    if (r == 1) {
      ex.abort("rank 1 could not read its batch");
      results[r] = Status::error("gave up");
      return;
    }
    results[r] = ex.run();
  });
  EXPECT_NE(results[0].message().find("rank 1 could not read its batch"), std::string::npos)
      << results[0].message();
}

// The communication worker: the same values with every collective on
// stream 1, at world sizes 2 and 3 and under hybrid sharding.
TEST_F(ExecutorShardedTest, CollectivesOnTheCommunicationStream) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  trainAndCheck(3);
}

TEST_F(ExecutorShardedTest, CommunicationStreamWithPaddingAndGroups) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(2);
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

// --- Collectives at one plan point are one channel group ------------------

/// The CPU device, with every channel it makes logging what the executor
/// asks of it: "createChannel", "split", "begin", "end" and the
/// collectives' names.
class RecordingChannel final : public Channel {
public:
  RecordingChannel(std::unique_ptr<Channel> inner, std::vector<std::string> &log)
      : inner_(std::move(inner)), log_(log) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  using Channel::allGather;
  using Channel::allReduce;
  using Channel::broadcast;
  using Channel::reduceScatter;
  Status allGather(Stream &s, const void *send, void *recv, int64_t n, DType t) override {
    log_.push_back("allGather");
    return inner_->allGather(s, send, recv, n, t);
  }
  Status reduceScatter(Stream &s, const void *send, void *recv, int64_t n, DType t,
                       ReduceOp op) override {
    log_.push_back("reduceScatter");
    return inner_->reduceScatter(s, send, recv, n, t, op);
  }
  Status allReduce(Stream &s, const void *send, void *recv, int64_t n, DType t,
                   ReduceOp op) override {
    log_.push_back("allReduce");
    return inner_->allReduce(s, send, recv, n, t, op);
  }
  Status broadcast(Stream &s, void *buf, int64_t n, DType t, int root) override {
    log_.push_back("broadcast");
    return inner_->broadcast(s, buf, n, t, root);
  }
  bool groupsCalls() const override { return true; } // as NCCL's
  Status beginGroup() override {
    log_.push_back("begin");
    return inner_->beginGroup();
  }
  Status endGroup() override {
    log_.push_back("end");
    return inner_->endGroup();
  }
  Status split(int color, int key, std::unique_ptr<Channel> &out) override {
    log_.push_back("split");
    std::unique_ptr<Channel> inner;
    FSDP_RETURN_IF_ERROR(inner_->split(color, key, inner));
    out = std::make_unique<RecordingChannel>(std::move(inner), log_);
    return Status::ok();
  }
  void abort(const std::string &reason) override { inner_->abort(reason); }

private:
  std::unique_ptr<Channel> inner_;
  std::vector<std::string> &log_;
};

class RecordingDevice final : public Device {
public:
  explicit RecordingDevice(std::vector<std::string> &log) : cpu_(createCpuDevice()), log_(log) {}
  const char *name() const override { return cpu_->name(); }
  Status allocate(size_t bytes, DeviceMemory &out) override { return cpu_->allocate(bytes, out); }
  void release(DeviceMemory &m) override { cpu_->release(m); }
  Status copyToDevice(void *d, const void *s, size_t n) override { return cpu_->copyToDevice(d, s, n); }
  Status copyToHost(void *d, const void *s, size_t n) override { return cpu_->copyToHost(d, s, n); }
  Status createStream(std::unique_ptr<Stream> &out) override { return cpu_->createStream(out); }
  Status createEvent(EventFlags f, std::unique_ptr<Event> &out) override {
    return cpu_->createEvent(f, out);
  }
  Status recordEvent(Stream &s, Event &e) override { return cpu_->recordEvent(s, e); }
  Status waitEvent(Stream &s, Event &e) override { return cpu_->waitEvent(s, e); }
  Status copyAsync(Stream &s, void *d, const void *src, size_t n, CopyKind k) override {
    return cpu_->copyAsync(s, d, src, n, k);
  }
  Status launch(Stream &s, const Launch &l, uint64_t step) override {
    return cpu_->launch(s, l, step);
  }
  Status synchronize(Stream &s) override { return cpu_->synchronize(s); }
  Status synchronize() override { return cpu_->synchronize(); }
  Status elapsedSeconds(Event &a, Event &b, double &sec) override {
    return cpu_->elapsedSeconds(a, b, sec);
  }
  Status createChannel(Communicator &group, std::unique_ptr<Channel> &out) override {
    log_.push_back("createChannel");
    std::unique_ptr<Channel> inner;
    FSDP_RETURN_IF_ERROR(cpu_->createChannel(group, inner));
    out = std::make_unique<RecordingChannel>(std::move(inner), log_);
    return Status::ok();
  }

private:
  std::unique_ptr<Device> cpu_;
  std::vector<std::string> &log_;
};

// The loss all-reduce and the gradient reduce-scatter are issued back to
// back on the communication stream over the same group: one group on the
// channel (one ncclGroupStart/End on NCCL), with the same values as ever;
// the all-gather before them stands alone. Under hybrid sharding they run
// over different groups, so nothing is grouped. Profiled steps (timing
// events around each call) are never grouped.
TEST_F(ExecutorShardedTest, CollectivesAtOnePointAreOneChannelGroup) {
  async_ = true;
  auto logsOf = [&](int world, int group, bool timed) {
    writePlan(world, group);
    std::vector<std::unique_ptr<Communicator>> comms;
    EXPECT_TRUE(comm::createInProcessGroup(world, comms).isOk());
    std::vector<std::vector<std::string>> logs(world);
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        RecordingDevice device(logs[r]);
        std::unique_ptr<Executor> executor;
        Status s = Executor::create(loaded, device, comms[r].get(), executor);
        if (s)
          s = ModelState(*executor).loadWeights();
        StepProfile profile;
        if (s)
          s = executor->run(timed ? &profile : nullptr);
        if (!s)
          comms[r]->abort(s.message());
        EXPECT_TRUE(s.isOk()) << "rank " << r << ": " << s.message();
      });
    for (auto &t : threads)
      t.join();
    for (int r = 1; r < world; ++r)
      EXPECT_EQ(logs[r], logs[0]) << "rank " << r << " grouped differently";
    return logs[0];
  };
  using Log = std::vector<std::string>;
  EXPECT_EQ(logsOf(2, 2, false),
            (Log{"createChannel", "allGather", "begin", "allReduce", "reduceScatter", "end"}));
  EXPECT_EQ(logsOf(2, 2, true),
            (Log{"createChannel", "allGather", "allReduce", "reduceScatter"}));
  // Hybrid: one channel from the device (the world's), the shard and
  // replica groups' channels split from it (ncclCommSplit on NCCL).
  EXPECT_EQ(logsOf(4, 2, false), (Log{"createChannel", "split", "split", "allGather", "allReduce",
                                      "reduceScatter", "allReduce"}));
  trainAndCheck(2); // the grouped step's values (CPU: bit for bit as ungrouped)
}

// --offload=cpu: the reduced shard is copied to the host on the copy
// stream and the update runs on the host stream (a worker like the others
// on the CPU device), with the same values, also with padding and groups.
TEST_F(ExecutorShardedTest, OffloadedUpdateOnTheHostStream) {
  async_ = offload_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  EXPECT_EQ(loaded.plan().num_streams(), 4);
  trainAndCheck(3);
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  trainAndCheck(2);
  ASSERT_NO_FATAL_FAILURE(writePlan(4, 2));
  trainAndCheck(2);
}

// An error on the communication stream (the group is aborted while a
// rank's worker is in a collective or about to start one) fails every
// rank's run() with the reason, and the executors still shut down: no
// rank waits forever for an event the worker will never signal.
TEST_F(ExecutorShardedTest, ACommunicationErrorFailsEveryRankWithoutHanging) {
  async_ = true;
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  std::vector<Status> results(2);
  runRanks([&](int r, Executor &ex) {
    ASSERT_TRUE(ModelState(ex).loadWeights().isOk());
    ASSERT_TRUE(ex.run().isOk()); // one good step starts the worker
    if (r == 1)
      ex.abort("rank 1 lost its network");
    results[r] = ex.run();
  });
  for (int r = 0; r < 2; ++r)
    EXPECT_NE(results[r].message().find("rank 1 lost its network"), std::string::npos)
        << "rank " << r << ": " << results[r].message();
}

// The plan check: a wait no stream order can satisfy, an event signalled
// twice, a compute instruction on the communication stream, and the host
// stream's rules.
TEST_F(ExecutorShardedTest, StreamOrderIsChecked) {
  auto refused = [&](std::vector<StreamOrder> order, const char *why) {
    order_ = std::move(order);
    ASSERT_NO_FATAL_FAILURE(writePlanFile(2, 2));
    LoadedPlan plan;
    Status s = loadPlan(path, plan);
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  async_ = true;
  std::vector<StreamOrder> order = streamOrder(false);
  order[0].waits = {3}; // the gather waits for the slice that waits for it
  order[1].signal = 3;
  refused(order, "the streams deadlock");
  order = std::vector<StreamOrder>(11);
  order[0] = {1, {}, 0};
  order[1] = {0, {0}, 0};
  refused(order, "is signalled by instructions 0 and 1");
  order = std::vector<StreamOrder>(11);
  order[2].stream = 1;
  refused(order, "is on the communication stream but is no collective");
  order = std::vector<StreamOrder>(11);
  order[1].waits = {0};
  order[3].signal = 0;
  refused(order, "of its own stream");
  // The host stream runs optimizer updates of host memory, nothing else,
  // and no device stream waits for it.
  order = std::vector<StreamOrder>(11);
  order[2].stream = 3;
  refused(order, "instruction 2 (Slice 'Slice') is on the host stream but is no optimizer update");
  order = std::vector<StreamOrder>(11);
  order[10].stream = 3; // Sgd of the shard in device memory
  refused(order, "instruction 10 (Sgd 'Sgd') is on the host stream but reads or writes a buffer "
                 "outside the Host region");
  offload_ = true;
  order_.clear();
  order = streamOrder(false);
  order[11].signal = 4;
  order[7].waits = {4}; // the ReduceSum waits for the update
  refused(order, "instruction 7 (ReduceSum 'ReduceSum') on stream 0 waits on event 4 of the host "
                 "stream (instruction 11 (Sgd 'Sgd')); device streams cannot wait for the host "
                 "within a step");
  order[7].waits.clear();
  order[8].waits = {1, 4}; // nor does the communication stream
  refused(order, "instruction 8 (AllReduce 'AllReduce') on stream 1 waits on event 4 of the "
                 "host stream");
}

/// fsdp-run beside this test binary (both land in the build's bin/), or "".
std::string fsdpRunPath() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  std::filesystem::path tool = self.parent_path() / "fsdp-run";
  return !error && std::filesystem::exists(tool) ? tool.string() : "";
}

std::vector<std::string> lines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

class FsdpRunRanksTest : public ExecutorShardedTest {
protected:
  /// Writes sample files with S = world rows (row r is rank r's input), so
  /// every step rank r reads row r: (s*B + r) mod S with B = S.
  void writeSamples() {
    std::vector<float> x, y;
    for (int r = 0; r < world_; ++r) {
      std::vector<float> xr = inputX(r), yr = inputY(r);
      x.insert(x.end(), xr.begin(), xr.end());
      y.insert(y.end(), yr.begin(), yr.end());
    }
    ASSERT_TRUE(writeNpy(dir + "/x.npy", floatTensor(x, {world_, 3}).ref()).isOk());
    ASSERT_TRUE(writeNpy(dir + "/y.npy", floatTensor(y, {world_, 2, 2}).ref()).isOk());
  }
  /// Runs fsdp-run with `args`; returns its exit code, output in out_/err_.
  int run(const std::string &args) {
    std::string command = tool_ + " " + path + " " + args + " >" + dir + "/out.txt 2>" + dir +
                          "/err.txt";
    int rc = std::system(command.c_str());
    out_ = formattest::readBytes(dir + "/out.txt");
    err_ = formattest::readBytes(dir + "/err.txt");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  void SetUp() override {
    ExecutorShardedTest::SetUp();
    tool_ = fsdpRunPath();
    // Every build makes fsdp-run beside this binary (the test target
    // depends on it): a missing one fails instead of skipping unseen.
    if (tool_.empty())
      FAIL() << "no fsdp-run beside the test binary (build the fsdp-run target)";
  }

  std::string tool_, out_, err_;
};

TEST_F(FsdpRunRanksTest, RunsThePlansRanksInProcess) {
  ASSERT_NO_FATAL_FAILURE(writePlan(3, 3));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  Reference ref(padded_);
  std::vector<double> losses;
  for (int step = 0; step < 2; ++step) {
    ref.step(world_);
    losses.push_back(ref.loss);
  }
  std::string saved = dir + "/trained.safetensors", metrics = dir + "/m.jsonl";
  ASSERT_EQ(run("--steps=2 --world-size=3 --input=x=" + dir + "/x.npy --input=y=" + dir +
                "/y.npy --metrics=" + metrics + " --save-weights=" + saved),
            0)
      << err_;
  EXPECT_EQ(err_, "");
  // Rank 0 alone reports: one summary, one "wrote" line.
  auto count = [&](const std::string &text) {
    size_t n = 0;
    for (const std::string &line : lines(out_))
      n += line.find(text) != std::string::npos;
    return n;
  };
  EXPECT_EQ(count("done: 2 steps"), 1u) << out_;
  EXPECT_EQ(count("wrote " + saved), 1u) << out_;
  std::vector<std::string> records = lines(formattest::readBytes(metrics));
  ASSERT_EQ(records.size(), 2u);
  for (int step = 0; step < 2; ++step) {
    size_t at = records[step].find("\"loss\": ");
    ASSERT_NE(at, std::string::npos) << records[step];
    EXPECT_NEAR(std::stod(records[step].substr(at + 8)), losses[step], 1e-4) << records[step];
  }
  SafetensorsFile file;
  ASSERT_TRUE(SafetensorsFile::open(saved, file).isOk());
  std::vector<float> a = floats(*file.find("a")), b = floats(*file.find("b"));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(a[i], ref.flat[i], 1e-5);
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(b[i], ref.flat[3 + i], 1e-5);
  EXPECT_EQ(floats(*file.find("c")), kC);
}

TEST_F(FsdpRunRanksTest, AFailureIsOneErrorLineAndExitCodeOne) {
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  EXPECT_EQ(run("--input=x=" + dir + "/x.npy --input=y=" + dir + "/missing.npy"), 1);
  std::vector<std::string> errors = lines(err_);
  ASSERT_EQ(errors.size(), 1u) << err_;
  EXPECT_EQ(errors[0].rfind("fsdp-run: error: rank ", 0), 0u) << errors[0];
  EXPECT_NE(errors[0].find("missing.npy"), std::string::npos) << errors[0];
  EXPECT_EQ(run("--world-size=3 --input=x=" + dir + "/x.npy --input=y=" + dir + "/y.npy"), 1);
  EXPECT_NE(err_.find("--world-size=3: " + path + " was compiled for world size 2"),
            std::string::npos)
      << err_;
}

TEST_F(FsdpRunRanksTest, MpirunGivesTheInProcessBits) {
  // setup.sh installs Open MPI: without mpirun the set-up is broken.
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0)
    FAIL() << "no mpirun on PATH (setup.sh installs openmpi-bin)";
  ASSERT_NO_FATAL_FAILURE(writePlan(2, 2));
  ASSERT_NO_FATAL_FAILURE(writeSamples());
  std::string inputs = " --input=x=" + dir + "/x.npy --input=y=" + dir + "/y.npy";
  ASSERT_EQ(run("--steps=2 --save-weights=" + dir + "/threads.safetensors" + inputs), 0) << err_;
  std::string plainTool = tool_;
  tool_ = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 --oversubscribe "
          "--bind-to none " + plainTool;
  ASSERT_EQ(run("--steps=2 --save-weights=" + dir + "/mpi.safetensors" + inputs), 0) << err_;
  size_t summaries = 0; // rank 0 alone reports
  for (const std::string &line : lines(out_))
    summaries += line.rfind("done: 2 steps", 0) == 0;
  EXPECT_EQ(summaries, 1u) << out_;
  SafetensorsFile threads, mpi;
  ASSERT_TRUE(SafetensorsFile::open(dir + "/threads.safetensors", threads).isOk());
  ASSERT_TRUE(SafetensorsFile::open(dir + "/mpi.safetensors", mpi).isOk());
  for (const char *name : {"a", "b", "c"})
    EXPECT_EQ(mpi.find(name)->data, threads.find(name)->data) << name;
  // Three processes for a plan of two ranks: every rank says so.
  tool_ = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 3 --oversubscribe "
          "--bind-to none " + plainTool;
  EXPECT_NE(run(inputs), 0);
  for (int r = 0; r < 3; ++r)
    EXPECT_NE(err_.find(cat("rank ", r, ": ", path, ": compiled for world size 2, but 3 ranks")),
              std::string::npos)
        << err_;
}

} // namespace
} // namespace fsdp::rt
