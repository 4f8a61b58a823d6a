//===- Executor.h - runs a loaded plan on a device ------------------------===//
//
// The executor turns a verified plan into memory and launches: it allocates
// exactly the plan's persistent region and arena on the device once, binds
// every buffer to its planned offset, prepares one Launch per instruction
// (operand views, attributes) and then runs the instruction stream as many
// times as asked without allocating. Inputs and outputs move through their
// bound buffers. The model's state (parameters, optimizer state, shards)
// lives in the same buffers but moves in and out through ModelState
// (runtime/checkpoint/ModelState.h: weights files, checkpoints, gathers),
// which reaches them through the few accessors at the end of the public
// interface; the executor itself only runs.
//
// Training plans (mode "train") update parameters and optimizer state in
// place: one run() is one whole step. The persistent region is zeroed at
// creation, so optimizer state starts at zero as torch's does; before each
// step the caller writes the learning rate and the 1-based step number
// (setLearningRate, setStep), and afterwards reads the loss output.
// fp16 plans (dynamic loss scaling, plan.fbs's loss_scale_* fields) carry a
// LossScaler (runtime/train/LossScaler.h): run() writes its scale and
// reciprocal before the step and updates it from the step's found_inf
// output after it; the step buffer then holds the optimizer's own count,
// which a skipped step does not advance.
//
// Distributed plans run SPMD: every rank creates its own executor (its own
// device memory) over the same plan and a Communicator for the world, and
// runs the same instruction stream. Collective instructions run through a
// device Channel (runtime/device/Channel.h) of the group they name: the
// world's, or one over a sub-communicator for a group layout other than
// the whole world (split once at creation, in plan order, identically on
// every rank); everything else runs on the device. Each unit's group gets
// its communicator the same way (unitComm), over which ModelState gathers
// the shards of a sharded parameter. When a rank fails inside run(), it
// aborts the group so no other rank waits for it.
//
// The executor only enqueues: each plan stream is a device Stream (the
// host stream, stream 3, a Device::createHostStream: --offload=cpu's
// optimizer on a host thread) and each plan event a device Event, and
// run() enqueues every instruction on its
// stream after waits for the events it lists and before a record of the
// event it signals, then synchronizes the streams. Plans with a
// communication stream (stream 1, compiler/Transforms/
// ScheduleCollectives.h) so overlap their collectives with compute; the
// device does the ordering. run() returns only once every stream is idle,
// so the collective calls outside run() (ModelState's gathers) never race
// with the step's. An error on any stream aborts the group (so no rank
// hangs) and is returned by run().
//
// On a device that can capture (CUDA), useGraphs(true) replays the step as
// one CUDA graph: the first run() enqueues eagerly (and so warms up what
// the device sets up on first use), the second records its work on every
// stream and replays it, and every later run() only replays it. The graph
// holds the launches with their operand addresses; what changes from step
// to step (inputs, learning rate, step number, parameters) changes in
// device memory at those addresses, written before run() is called.
//
// watch() hands the step's collectives to a CollectiveWatchdog
// (CollectiveWatchdog.h): each is bracketed by two progress marks on its
// stream (Device::setMark, captured into the graph like the rest), and a
// timeout aborts this executor's groups.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXEC_EXECUTOR_H
#define FSDP_RUNTIME_EXEC_EXECUTOR_H

#include "runtime/comm/Communicator.h"
#include "runtime/comm/NcclMapping.h"
#include "runtime/device/Channel.h"
#include "runtime/device/Device.h"
#include "runtime/exec/StepProfile.h"
#include "runtime/support/HostTensor.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/train/LossScaler.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::rt {

class CollectiveWatchdog;

class Executor {
public:
  /// Allocates the plan's memory on `device` and prepares its launches.
  /// `comm` is this rank's handle on the world (size() must be the plan's
  /// world size); it may be null only for world size 1, and must outlive
  /// the executor. Collective: with sub-groups, every rank splits `comm`.
  static Status create(const LoadedPlan &plan, Device &device, Communicator *comm,
                       std::unique_ptr<Executor> &out);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Copies a host tensor into the named graph input; dtype and shape must
  /// match the plan exactly.
  Status setInput(const std::string &name, const TensorRef &value);
  /// Runs every instruction once (one step). With `profile`, also adds
  /// what timing events on the device measured (StepProfile.h): each
  /// instruction's time, each stream's busy and waiting time, the step's
  /// time and its exposed communication. The events are made the first
  /// time; a profiled step allocates nothing after that.
  Status run(StepProfile *profile = nullptr);
  /// Replays the step as a captured graph from the second run() on (see
  /// above); profiled runs still enqueue eagerly, since the timing events
  /// go between the kernels. An error if the device cannot capture, or the
  /// plan has a host stream (hasHostStream). Off by default.
  Status useGraphs(bool on);
  /// Whether the plan has a host stream (runtime/plan/PlanCheck.h's
  /// kHostStream: --offload=cpu's optimizer, run by a host thread beside
  /// the device's streams); such steps always run eagerly.
  bool hasHostStream() const;
  /// Copies the named graph output to the host.
  Status getOutput(const std::string &name, HostTensor &out) const;

  /// Training plans: write this step's learning rate (the plan's f64
  /// lr buffer) and 1-based step number (its i64 step buffer). The step
  /// also seeds step-dependent kernels (dropout) as step - 1, so a run
  /// resumed at step t draws what an uninterrupted run would have. An
  /// error on forward plans; a training plan whose optimizer needs no step
  /// number (SGD) has no step buffer and only records it.
  Status setLearningRate(double lr);
  Status setStep(int64_t step);
  /// fp16 plans: the dynamic loss scaler (its state is checkpointed with
  /// the model's; runtime/checkpoint/Checkpoint.h), null for other plans.
  LossScaler *lossScaler() { return scaler_ ? &*scaler_ : nullptr; }
  const LossScaler *lossScaler() const { return scaler_ ? &*scaler_ : nullptr; }
  /// fp16 plans, after a run(): the scale that step used and whether its
  /// gradients held an inf or NaN (its updates were skipped).
  struct LossScaleOutcome {
    float scale = 0;
    bool skipped = false;
  };
  std::optional<LossScaleOutcome> lastLossScale() const { return lastLossScale_; }
  /// Training plans: the scalar loss of the last step, widened to double;
  /// `dtype` (optional) receives the loss's own float type.
  Status getLoss(double &loss, DType *dtype = nullptr) const;
  /// The named float scalar output (a training plan's "grad_norm", ...),
  /// widened to double; `what` names it in errors.
  Status getScalarOutput(const std::string &name, double &value, DType *dtype = nullptr,
                         const char *what = "scalar") const;
  /// Training plans with an evaluation prefix (plan.fbs eval_end,
  /// runtime/plan/EvalPrefixCheck.h): runs the step's instructions up to
  /// this rank's local mean loss (the forward pass, on the inputs set last)
  /// and returns that loss, widened to double. It changes nothing a step
  /// keeps, is no step (the step number and dropout seeds stay), and runs
  /// eagerly even with graphs on. Collective, like run().
  bool hasEvalPrefix() const;
  Status runEval(double &loss);
  /// The world this executor runs in (a group of one for a one-rank plan).
  Communicator &world() const { return *comm_; }
  /// The plan it runs, and its content hash.
  const LoadedPlan &plan() const { return plan_; }
  uint64_t planHash() const { return plan_.hash(); }
  /// Fails every communicator and channel this executor uses (the world
  /// and its sub-groups), so ranks waiting on this one get an error naming
  /// `reason`. run() does this itself when one of its instructions fails.
  void abort(const std::string &reason);

  /// From the next run() on, `watchdog` watches every collective of the
  /// step, and a timeout aborts this executor's groups (abort()). Before
  /// the first run() (a captured step must hold the marks); the watchdog
  /// must outlive the executor, which withdraws from it when destroyed.
  Status watch(CollectiveWatchdog &watchdog);

  /// Names in binding order.
  std::vector<std::string> inputNames() const;
  std::vector<std::string> outputNames() const;
  /// Parameter names in plan order.
  std::vector<std::string> parameterNames() const;
  /// The dtype and shape of the named graph input.
  Status inputType(const std::string &name, DType &dtype, std::vector<int64_t> &shape) const;
  /// Whether the plan is a training step (mode "train").
  bool isTraining() const;
  /// The output binding holding the loss of a training plan ("" if none).
  std::string lossOutput() const;
  /// The learning rate the plan was compiled with (--lr), which schedules
  /// scale; 0 for forward plans.
  double baseLearningRate() const;
  /// The number of ranks the plan was compiled for.
  uint32_t worldSize() const;
  /// This executor's rank in the world, 0 .. worldSize() - 1.
  int rank() const { return comm_->rank(); }
  /// Bytes allocated for plan-managed memory (persistent + arena): exactly
  /// the plan's numbers.
  size_t allocatedBytes() const { return persistent_.size + arena_.size; }
  /// Host memory the plan keeps state in (--offload=cpu), besides the device's.
  size_t hostBytes() const { return host_.size; }

  // What ModelState (runtime/checkpoint/ModelState.h) reads and writes the
  // model's state through; nothing here runs the plan. Outside run() only:
  // the step writes these buffers and uses these communicators.

  /// The view of plan buffer `buffer` on this rank: its dtype, shape and
  /// address (a unit's shard: this rank's chunk). Empty (data null) for
  /// kNoBuffer.
  TensorRef viewOf(uint32_t buffer) const;
  /// Copies a plan buffer to the host, with its dtype and shape.
  Status copyToHost(uint32_t buffer, HostTensor &out) const;
  /// The device the buffers live on.
  Device &device() const { return device_; }
  /// The communicator of unit `unit`'s group, which all-gathers its shards
  /// (split at creation, in plan order); null when the group has one rank,
  /// which then holds the unit's whole flat buffer.
  Communicator *unitComm(uint32_t unit) const { return unitComms_[unit]; }

private:
  /// How a collective instruction runs: through `channel`, or as a local
  /// copy when its groups have one rank (channel == nullptr).
  struct Collective {
    Channel *channel = nullptr;
    ReduceOp op = ReduceOp::Sum;
  };

  Executor(const LoadedPlan &plan, Device &device);
  Status prepare();
  /// The plan's streams and events on the device, and the order run()
  /// enqueues the instructions in.
  Status prepareStreams();
  /// Each collective's reduction and channel, each unit's communicator
  /// (in plan order, so every rank splits the same groups alike), and the
  /// batches (ExecutorCollectives.cpp).
  Status prepareCollectives();
  /// The communicator of the group holding this rank when the world's
  /// `ranks` (group by group) are split into groups of `groupSize`: the
  /// world itself, a sub-communicator split the first time a layout is
  /// seen, or null for groups of one.
  Status groupComm(const int64_t *ranks, size_t numRanks, int64_t groupSize,
                   Communicator *&out);
  /// The device channel over `group` (made the first time it is asked for):
  /// the world's from the device, a sub-group's split from the world's.
  Status channelOf(Communicator *group, Channel *&out);
  /// Enqueues instruction `index` with its waits and signal; when `timed`,
  /// between its two timing events, with one before its waits.
  Status enqueue(size_t index, bool timed);
  /// The collectives issued together (batchLength_; ExecutorCollectives.cpp).
  void formBatches();
  /// Enqueues the batch at issueOrder_[position]: one instruction, or
  /// collectives as one channel group (eagerly one by one when `timed`).
  Status enqueueBatch(size_t position, bool timed);
  /// Sets the watched collectives' start (which = 0) or finish (1) marks
  /// of the batch at issueOrder_[position], on its stream.
  Status setBatchMarks(size_t position, size_t length, int which);
  /// Enqueues the step: eagerly, or as a graph (captured the first time).
  Status enqueueStep(bool timed);
  /// Records the step's work as graph_ (every instruction, eagerly
  /// enqueued under capture).
  Status captureStep();
  Status enqueueCollective(Stream &stream, const Launch &launch, const Collective &collective);
  Status bindingBuffer(bool input, const std::string &name, uint32_t &buffer) const;
  Status zeroPersistent();
  Status writeScalar(uint32_t buffer, DType dtype, const void *value, const char *what);

  const LoadedPlan &plan_;
  Device &device_;
  /// The plan's constant data, copied to the device once at creation.
  DeviceMemory persistent_, arena_, host_, constants_;
  std::vector<TensorRef> operands_;           // all launches' operand views
  std::vector<std::vector<int64_t>> ints_;    // attributes, one vector per launch
  std::vector<std::vector<float>> floats_;
  std::vector<Launch> launches_;
  std::vector<Collective> collectives_;        // one per launch
  Communicator *comm_ = nullptr;               // the world
  std::unique_ptr<Communicator> ownComm_;      // world size 1 without a caller's
  /// Sub-communicators by group layout (the ranks list and group size),
  /// with the colour and key they were split from the world by (which a
  /// device channel's split repeats: channelOf).
  struct SubGroup {
    std::vector<int64_t> layout;
    std::unique_ptr<Communicator> comm;
    nccl::Split split;
  };
  std::vector<SubGroup> subComms_;
  std::vector<Communicator *> unitComms_;      // one per unit (null: group of one)
  /// Device channels by the communicator they were made over.
  std::vector<std::pair<Communicator *, std::unique_ptr<Channel>>> channels_;
  uint64_t step_ = 0;
  /// fp16 plans' dynamic loss scaling: the scaler, and the last run's use
  /// of it. writeLossScale before a step, readFoundInf after it (from
  /// foundInfBuffer_, the found_inf output's f32 scalar, checked at create).
  std::optional<LossScaler> scaler_;
  uint32_t foundInfBuffer_ = 0;
  std::optional<LossScaleOutcome> lastLossScale_;
  Status writeLossScale();
  Status readFoundInf(bool &found) const;
  /// Stream order: each launch's stream, events and signal, the streams and
  /// events, and the order run() enqueues the launches in.
  std::vector<uint8_t> streamOf_;
  std::vector<std::vector<uint32_t>> waits_;
  std::vector<int32_t> signals_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::vector<std::unique_ptr<Event>> events_;
  std::vector<uint32_t> issueOrder_;
  /// issueOrder_'s instructions of the evaluation prefix (runEval).
  std::vector<uint32_t> evalOrder_;
  /// At the position in issueOrder_ where a batch starts: how many
  /// instructions it has (collectives issued as one channel group; 1 for
  /// anything else).
  std::vector<uint32_t> batchLength_;

  // --- Profiling (run with a StepProfile; ExecutorProfile.cpp).
  /// Makes the timing events the first time, then records each stream's
  /// start, before anything else of the step.
  Status beginProfiledStep();
  /// Records each stream's end, after the step's last work on it.
  Status endProfiledStep();
  /// Adds what the events of the step just synchronized measured.
  Status addProfile(StepProfile &profile);
  /// Timing events: launch i's start and end at 2i and 2i + 1, then one
  /// before the waits of each launch that waits (waitTimer_[i], -1 for
  /// none), then each stream's start (from originTimer_), then each
  /// stream's end.
  std::vector<std::unique_ptr<Event>> timing_;
  std::vector<int32_t> waitTimer_;
  size_t originTimer_ = 0;
  /// CUDA graphs (useGraphs): whether on, whether a step has run eagerly
  /// since, and the captured step.
  bool graphs_ = false;
  bool warm_ = false;
  std::unique_ptr<Graph> graph_;
  /// The collective watchdog (watch()): each watched launch's index among
  /// the watched (-1: not watched), their issue order, and the marks.
  CollectiveWatchdog *watchdog_ = nullptr;
  std::vector<int32_t> watchIndex_;
  std::vector<uint32_t> watchOrder_;
  std::unique_ptr<MarkSet> marks_;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXEC_EXECUTOR_H
