//===- ExecutorShardedFixture.h - a hand-built sharded step and its ranks --===//
//
// The step the sharded executor suites run (ExecutorShardedTest.cpp in
// process, FsdpRunRanksTest.cpp through fsdp-run): a hand-built FSDP
// training step over one unit holding two parameters (a: f32[3] at flat
// offset 0, b: f32[2, 2] at offset 3; 7 real elements padded to equal
// shards) plus one replicated parameter c outside every unit. It has the
// shape the compiler emits: all-gather the unit's shards, slice the
// parameters out of the flat buffer, compute gradients (g_a = a * x_r,
// g_b = b * y_r with per-rank inputs), Flatten them into the flat
// gradient, reduce-scatter it (avg) back to shards, and update each shard
// with Sgd; the loss (sum of the local gradient) is all-reduced (avg) over
// the world. Hybrid sharding adds an all-reduce of the gradient shard
// across the groups, which needs sub-communicators. The fixture writes the
// plan (collectives on the communication stream or not, the update offloaded
// or not, or a stream order a test gives), runs it on N in-process ranks
// (threads, each with its own CPU device and executor) and checks every
// rank against the same step computed here in double.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_EXEC_EXECUTORSHARDEDFIXTURE_H
#define FSDP_TESTS_UNIT_RUNTIME_EXEC_EXECUTORSHARDEDFIXTURE_H

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/comm/InProcessCommunicator.h"
#include "runtime/exec/Executor.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <numeric>
#include <string>
#include <vector>

namespace fsdp::rt::shardedtest {


inline constexpr int64_t kFlat = 7; // a: 3 elements, b: 4
inline constexpr double kLr = 0.5;
inline const std::vector<float> kA{1, -2, 3}, kB{0.5f, 1.5f, -1, 2}, kC{7, 8};

/// Rank r's inputs (one sample, micro-batch 1): x (for a) and y (for b),
/// distinct per rank.
inline std::vector<float> inputX(int r) { return {1.0f + r, 0.5f * r, -1.0f}; }
inline std::vector<float> inputY(int r) { return {2.0f - r, 1, 0.25f * r, 3}; }

inline HostTensor floatTensor(const std::vector<float> &v, std::vector<int64_t> shape) {
  HostTensor t{DType::F32, std::move(shape), std::vector<char>(v.size() * 4)};
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

inline std::vector<float> floats(const HostTensor &t) {
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

} // namespace fsdp::rt::shardedtest

#endif // FSDP_TESTS_UNIT_RUNTIME_EXEC_EXECUTORSHARDEDFIXTURE_H
