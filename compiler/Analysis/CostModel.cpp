//===- CostModel.cpp - predicted time of a plan's step on a named device --===//
//
// Every number below is a rough datasheet rate, chosen so that the model
// ranks configurations the way the hardware would; none was measured on
// this machine. The cpu profile describes the small shared VMs the tests
// run on (a few cores, in-process ranks exchanging through memory) only to
// the order of magnitude.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/CostModel.h"

#include "runtime/support/DType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plan/PlanCheck.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>

namespace fsdp {
namespace {

using plan::Kernel;

constexpr double kGiga = 1e9, kTera = 1e12;

const DeviceProfile kH100{"h100",
                          "NVIDIA H100 SXM (989 TFLOP/s bf16, 67 TFLOP/s f32, 3.35 TB/s HBM, "
                          "~350 GB/s NVLink bus bandwidth, 50 GB/s per GPU across nodes, "
                          "50 GB/s PCIe 5 to a host of 100 GB/s)",
                          989 * kTera,
                          67 * kTera,
                          3.35 * kTera,
                          350 * kGiga,
                          50 * kGiga,
                          8,
                          10e-6,
                          3e-6,
                          50 * kGiga,
                          100 * kGiga};
const DeviceProfile kA100{"a100",
                          "NVIDIA A100 SXM (312 TFLOP/s bf16, 19.5 TFLOP/s f32, 2.0 TB/s HBM, "
                          "~230 GB/s NVLink bus bandwidth, 25 GB/s per GPU across nodes, "
                          "25 GB/s PCIe 4 to a host of 100 GB/s)",
                          312 * kTera,
                          19.5 * kTera,
                          2.0 * kTera,
                          230 * kGiga,
                          25 * kGiga,
                          8,
                          10e-6,
                          3e-6,
                          25 * kGiga,
                          100 * kGiga};
// One core of a small VM per rank: no bf16 units (bf16 is converted, half
// the f32 rate), in-process ranks exchange through shared memory.
const DeviceProfile kCpu{"cpu",
                         "small CPU VM, rough defaults (50 GFLOP/s f32, 25 GFLOP/s bf16, "
                         "10 GB/s memory, 5 GB/s between in-process ranks)",
                         25 * kGiga,
                         50 * kGiga,
                         10 * kGiga,
                         5 * kGiga,
                         5 * kGiga,
                         std::numeric_limits<uint32_t>::max(),
                         20e-6,
                         1e-6,
                         10 * kGiga, // host and device are the same memory
                         10 * kGiga};

template <typename T> size_t count(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

const plan::Buffer *bufferAt(const plan::Plan &p, uint32_t index) {
  return index < count(p.buffers()) ? p.buffers()->Get(index) : nullptr;
}

uint64_t bytesOf(const plan::Plan &p, const flatbuffers::Vector<uint32_t> *list) {
  uint64_t bytes = 0;
  if (list)
    for (uint32_t index : *list)
      if (const plan::Buffer *b = bufferAt(p, index))
        bytes += b->size();
  return bytes;
}

uint64_t numel(const plan::Buffer *b) {
  uint64_t n = 1;
  if (b && b->shape())
    for (int64_t d : *b->shape())
      n *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
  return n;
}

/// A data-movement kernel that leaves its result in its operand's bytes
/// (a view the emitter kept as an instruction) moves nothing.
bool isView(const plan::Plan &p, const plan::Instruction &inst) {
  switch (inst.kernel()) {
  case Kernel::Copy:
  case Kernel::Transpose:
  case Kernel::Expand:
  case Kernel::Slice:
  case Kernel::Split:
  case Kernel::Concat:
    break;
  default:
    return false;
  }
  if (!count(inst.outputs()) || !count(inst.inputs()))
    return false;
  for (uint32_t out : *inst.outputs()) {
    const plan::Buffer *o = bufferAt(p, out);
    bool aliased = false;
    for (uint32_t in : *inst.inputs())
      if (const plan::Buffer *i = bufferAt(p, in))
        aliased |= o && i->region() == o->region() && i->offset() == o->offset();
    if (!aliased)
      return false;
  }
  return true;
}

/// A MatMul's or Gemm's flops (matmulFlops) from its buffers.
double matmulFlopsOf(const plan::Plan &p, const plan::Instruction &inst) {
  if (!count(inst.inputs()) || !count(inst.outputs()))
    return 0;
  const plan::Buffer *a = bufferAt(p, inst.inputs()->Get(0));
  const plan::Buffer *out = bufferAt(p, inst.outputs()->Get(0));
  if (!a || !out || !a->shape() || a->shape()->size() == 0)
    return 0;
  size_t rank = a->shape()->size();
  bool transA = count(inst.ints()) >= 2 && inst.ints()->Get(0) != 0;
  int64_t k = rank == 1 ? a->shape()->Get(0) : a->shape()->Get(transA ? rank - 2 : rank - 1);
  return matmulFlops(numel(out), k);
}

} // namespace

const DeviceProfile &deviceProfile(DeviceKind kind) {
  switch (kind) {
  case DeviceKind::H100: return kH100;
  case DeviceKind::A100: return kA100;
  case DeviceKind::Cpu: return kCpu;
  }
  return kH100;
}

InstructionCost predictInstruction(const plan::Plan &p, uint32_t index,
                                   const DeviceProfile &device) {
  InstructionCost cost;
  if (index >= count(p.instructions()))
    return cost;
  const plan::Instruction &inst = *p.instructions()->Get(index);
  Kernel k = inst.kernel();
  uint64_t read = bytesOf(p, inst.inputs()), written = bytesOf(p, inst.outputs());
  if (isView(p, inst))
    return cost;

  if (rt::isCollective(static_cast<uint16_t>(k))) {
    // S is the full (unsharded) tensor: the all-gather's result, the
    // reduce-scatter's and all-reduce's operand.
    rt::CollectiveGroups groups;
    bool known = count(inst.ints()) &&
                 rt::readCollectiveGroups(static_cast<uint16_t>(k), inst.ints()->data(),
                                          count(inst.ints()), groups);
    cost.groupSize = static_cast<uint32_t>(std::max<int64_t>(known ? groups.groupSize : 1, 1));
    cost.bytes = k == Kernel::AllGather ? written : read;
    cost.bound = CostBound::Communication;
    if (cost.groupSize == 1) {
      // A group of one copies locally.
      cost.seconds = std::max(static_cast<double>(read + written) / device.memoryBandwidth,
                              device.kernelFloor);
      return cost;
    }
    cost.seconds = collectiveSeconds(cost.bytes, cost.groupSize, k == Kernel::AllReduce, device);
    return cost;
  }

  // --offload=cpu: a copy to or from host memory crosses the host link;
  // anything else touching host memory (the optimizer) runs on the host.
  auto inHost = [&](const flatbuffers::Vector<uint32_t> *list) {
    if (list)
      for (uint32_t index : *list)
        if (const plan::Buffer *b = bufferAt(p, index); b && b->region() == plan::Region::Host)
          return true;
    return false;
  };
  const bool readsHost = inHost(inst.inputs()), writesHost = inHost(inst.outputs());
  if (k == Kernel::Copy && readsHost != writesHost) {
    cost.bytes = written;
    cost.bound = CostBound::Communication;
    cost.seconds = std::max(static_cast<double>(written) / device.hostLinkBandwidth,
                            device.kernelFloor);
    return cost;
  }
  if (readsHost || writesHost) {
    cost.bytes = read + written;
    cost.bound = CostBound::Memory;
    cost.seconds = static_cast<double>(read + written) / device.hostMemoryBandwidth;
    return cost;
  }

  double flops = 0;
  bool half = false;
  if (k == Kernel::MatMul || k == Kernel::Gemm) {
    flops = matmulFlopsOf(p, inst);
    // The tensor cores' rate is set by the operands' dtype (cuBLAS computes
    // bf16/f16 products in f32 whatever dtype it writes).
    const plan::Buffer *a = count(inst.inputs()) ? bufferAt(p, inst.inputs()->Get(0)) : nullptr;
    half = a && (a->dtype() == plan::DType::BF16 || a->dtype() == plan::DType::F16);
  }
  if ((k == Kernel::Attention || k == Kernel::AttentionGrad) && count(inst.inputs()) >= 3) {
    const plan::Buffer *q = bufferAt(p, inst.inputs()->Get(0));
    const plan::Buffer *v = bufferAt(p, inst.inputs()->Get(2));
    if (q && v && q->shape() && v->shape()) {
      llvm::SmallVector<int64_t, 4> qs(q->shape()->begin(), q->shape()->end());
      llvm::SmallVector<int64_t, 4> vs(v->shape()->begin(), v->shape()->end());
      const bool causal = count(inst.ints()) >= 1 && inst.ints()->Get(0) != 0;
      flops = attentionFlops(qs, vs, causal, k == Kernel::AttentionGrad);
      half = q->dtype() == plan::DType::BF16 || q->dtype() == plan::DType::F16;
    }
  }
  return computeKernelCost(flops, read + written, half, device);
}

double collectiveSeconds(uint64_t bytes, uint32_t groupSize, bool allReduce,
                         const DeviceProfile &device) {
  if (groupSize <= 1)
    return std::max(2.0 * static_cast<double>(bytes) / device.memoryBandwidth, device.kernelFloor);
  double bandwidth =
      groupSize <= device.ranksPerNode ? device.intraNodeBandwidth : device.interNodeBandwidth;
  double steps = (groupSize - 1.0) / groupSize * (allReduce ? 2 : 1);
  return steps * static_cast<double>(bytes) / bandwidth + device.collectiveLatency;
}

double matmulFlops(uint64_t resultElements, int64_t reduction) {
  // Every result element is a `reduction`-long dot product (batch
  // dimensions are in the result's element count).
  return 2.0 * static_cast<double>(resultElements) *
         static_cast<double>(std::max<int64_t>(reduction, 0));
}

double attentionFlops(llvm::ArrayRef<int64_t> query, llvm::ArrayRef<int64_t> value, bool causal,
                      bool backward) {
  if (query.size() != 4 || value.size() != 4)
    return 0;
  const double scores = static_cast<double>(query[0]) * query[1] * query[2] * value[2] *
                        (causal ? 0.5 : 1.0);
  const double qk = 2.0 * scores * query[3], pv = 2.0 * scores * value[3];
  // Backward: q kᵀ and dp (D and Dv long), dv, dk and dq.
  return backward ? 2.0 * qk + 2.0 * pv + qk : qk + pv;
}

InstructionCost computeKernelCost(double flops, uint64_t bytes, bool half,
                                  const DeviceProfile &device) {
  InstructionCost cost;
  cost.flops = flops;
  cost.bytes = bytes;
  cost.seconds = static_cast<double>(bytes) / device.memoryBandwidth;
  cost.bound = CostBound::Memory;
  double computeSeconds = flops / (half ? device.bf16Flops : device.f32Flops);
  if (flops > 0 && computeSeconds > cost.seconds) {
    cost.seconds = computeSeconds;
    cost.bound = CostBound::Compute;
  }
  if (cost.seconds < device.kernelFloor) {
    cost.seconds = device.kernelFloor;
    cost.bound = CostBound::Floor;
  }
  return cost;
}

StepPrediction predictStep(const plan::Plan &p, const DeviceProfile &device) {
  StepPrediction step;
  step.device = device.name;
  const size_t n = count(p.instructions());
  step.costs.resize(n);
  step.start.assign(n, 0);
  step.stream.assign(n, 0);
  // Each stream's instructions in plan order.
  std::map<uint8_t, std::vector<uint32_t>> queues;
  for (uint32_t i = 0; i < n; ++i) {
    step.costs[i] = predictInstruction(p, i, device);
    step.stream[i] = p.instructions()->Get(i)->stream();
    queues[step.stream[i]].push_back(i);
  }
  step.numStreams = static_cast<uint32_t>(std::max<size_t>(queues.size(), 1));
  step.overlapped = queues.size() > 1;

  // Event-driven replay: advance any stream whose next instruction's
  // events are all signalled. Events are signalled by instructions
  // earlier in plan order, so this always progresses for a plan the
  // emitter wrote; should it not (a foreign plan waiting on an event
  // nothing signals), the earliest stuck instruction runs unordered.
  size_t numEvents = p.num_events();
  for (uint32_t i = 0; i < n; ++i) {
    const plan::Instruction *inst = p.instructions()->Get(i);
    if (inst->signal_event() >= 0)
      numEvents = std::max<size_t>(numEvents, inst->signal_event() + 1);
    if (inst->wait_events())
      for (uint32_t e : *inst->wait_events())
        numEvents = std::max<size_t>(numEvents, e + 1);
  }
  constexpr double kUnsignalled = -1;
  std::vector<double> signalled(numEvents, kUnsignalled);
  std::map<uint8_t, size_t> next;
  std::map<uint8_t, double> clock;
  size_t done = 0;
  auto run = [&](uint8_t s, bool force) {
    uint32_t i = queues[s][next[s]];
    const plan::Instruction *inst = p.instructions()->Get(i);
    double ready = clock[s];
    if (inst->wait_events())
      for (uint32_t e : *inst->wait_events()) {
        if (signalled[e] == kUnsignalled && !force)
          return false;
        ready = std::max(ready, signalled[e]);
      }
    step.start[i] = ready;
    clock[s] = ready + step.costs[i].seconds;
    if (inst->signal_event() >= 0)
      signalled[inst->signal_event()] = clock[s];
    ++next[s];
    ++done;
    return true;
  };
  while (done < n) {
    bool progressed = false;
    for (auto &[s, queue] : queues)
      while (next[s] < queue.size() && run(s, false))
        progressed = true;
    if (progressed)
      continue;
    uint8_t stuck = 0;
    uint32_t earliest = std::numeric_limits<uint32_t>::max();
    for (auto &[s, queue] : queues)
      if (next[s] < queue.size() && queue[next[s]] < earliest) {
        earliest = queue[next[s]];
        stuck = s;
      }
    run(stuck, true);
  }

  // The host stream (an offloaded optimizer) runs on the host, beside the
  // device: its time is neither device compute nor communication, and what
  // it adds at the end of the step is not exposed communication.
  double deviceEnd = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const double end = step.start[i] + step.costs[i].seconds;
    step.stepSeconds = std::max(step.stepSeconds, end);
    if (step.stream[i] == rt::kHostStream) {
      step.hostSeconds += step.costs[i].seconds;
      continue;
    }
    deviceEnd = std::max(deviceEnd, end);
    (step.costs[i].bound == CostBound::Communication ? step.communicationSeconds
                                                     : step.computeSeconds) +=
        step.costs[i].seconds;
  }
  step.exposedCommunicationSeconds = std::max(0.0, deviceEnd - step.computeSeconds);
  return step;
}

std::string formatSeconds(double seconds) {
  char text[32];
  if (seconds >= 1)
    std::snprintf(text, sizeof text, "%.3g s", seconds);
  else if (seconds >= 1e-3)
    std::snprintf(text, sizeof text, "%.3g ms", seconds * 1e3);
  else
    std::snprintf(text, sizeof text, "%.3g us", seconds * 1e6);
  return text;
}

} // namespace fsdp
