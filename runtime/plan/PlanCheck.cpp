//===- PlanCheck.cpp - semantic verification of a plan --------------------===//
//
// The kernel table (Kernels.def, read through KernelTable.h) gives each
// kernel's operand, output and attribute counts; the checks below apply
// it, then check the training fields (optimizer state in the persistent region, the lr and
// step scalars, the loss output's binding) and the distributed ones: each
// collective's groups partition the world and its element counts fit the
// group size, Flatten's inputs fit inside its result, every unit's shards
// add up to its padded flat buffer, and every sharded parameter lies inside
// its unit. Shapes are not re-derived here: the compiler verified them, and
// the content hash in the file header guards against corruption in between.
// What is checked is what the executor relies on to stay inside its memory
// and to issue the same collectives on every rank.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanCheck.h"

#include "runtime/plan/EvalPrefixCheck.h"
#include "runtime/plan/PlanDType.h"

#include "runtime/support/DType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/TensorRef.h"
#include "runtime/plan/plan_generated.h"

#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace fsdp::rt {
namespace {

using plan::Kernel;

template <typename T> size_t count(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

uint64_t numElements(const plan::Buffer &buffer) {
  uint64_t n = 1;
  for (size_t d = 0; d < count(buffer.shape()); ++d)
    n *= static_cast<uint64_t>(buffer.shape()->Get(d));
  return n;
}

/// Flatten: one offset per input, each input inside the result, one dtype.
Status checkFlatten(const plan::Instruction &inst, const plan::Plan &plan,
                    const std::string &what) {
  size_t inputs = count(inst.inputs());
  if (count(inst.ints()) != inputs)
    return Status::error(cat(what, ": has ", count(inst.ints()), " offsets for ", inputs,
                             " operands"));
  const plan::Buffer *out = plan.buffers()->Get(inst.outputs()->Get(0));
  uint64_t outElements = numElements(*out);
  for (size_t i = 0; i < inputs; ++i) {
    const plan::Buffer *in = plan.buffers()->Get(inst.inputs()->Get(i));
    if (in->dtype() != out->dtype())
      return Status::error(cat(what, ": operand ", i, " is ",
                               dtypeName(toDType(in->dtype())), ", the result ",
                               dtypeName(toDType(out->dtype()))));
    int64_t offset = inst.ints()->Get(i);
    uint64_t n = numElements(*in);
    if (offset < 0 || n > outElements || static_cast<uint64_t>(offset) > outElements - n)
      return Status::error(cat(what, ": operand ", i, " (", n, " elements at offset ", offset,
                               ") does not fit in the result's ", outElements, " elements"));
  }
  return Status::ok();
}

/// A collective: its groups partition the world's ranks into groups of
/// group_size, the reduction is known, and the element counts fit.
Status checkCollective(const plan::Instruction &inst, const plan::Plan &plan,
                       const std::string &what) {
  CollectiveGroups groups;
  uint16_t kernel = static_cast<uint16_t>(inst.kernel());
  size_t numInts = count(inst.ints());
  if (!readCollectiveGroups(kernel, numInts ? inst.ints()->data() : nullptr, numInts, groups))
    return Status::error(cat(what, ": has ", numInts, " integer attributes, too few for ",
                             kernel == static_cast<uint16_t>(Kernel::AllGather)
                                 ? "[group_size, ranks...]"
                                 : "[reduction, group_size, ranks...]"));
  if (groups.reduction < 0 || groups.reduction > 2)
    return Status::error(cat(what, ": reduction ", groups.reduction,
                             " is none of 0 (sum), 1 (avg) and 2 (max)"));
  uint32_t world = plan.world_size();
  if (groups.groupSize < 1 || world % groups.groupSize != 0)
    return Status::error(cat(what, ": group size ", groups.groupSize,
                             " does not divide the world size ", world));
  if (groups.numRanks != world)
    return Status::error(cat(what, ": lists ", groups.numRanks, " ranks for a world of ", world));
  std::vector<bool> seen(world, false);
  for (size_t i = 0; i < groups.numRanks; ++i) {
    int64_t r = groups.ranks[i];
    if (r < 0 || r >= static_cast<int64_t>(world) || seen[r])
      return Status::error(cat(what, ": ranks are not a permutation of 0..", world - 1,
                               " (rank ", r, " at position ", i, ")"));
    seen[r] = true;
  }
  const plan::Buffer *in = plan.buffers()->Get(inst.inputs()->Get(0));
  const plan::Buffer *out = plan.buffers()->Get(inst.outputs()->Get(0));
  if (in->dtype() != out->dtype())
    return Status::error(what + ": operand and result dtypes differ");
  uint64_t inElements = numElements(*in), outElements = numElements(*out);
  uint64_t g = static_cast<uint64_t>(groups.groupSize);
  bool fits = inst.kernel() == Kernel::AllGather       ? outElements == inElements * g
              : inst.kernel() == Kernel::ReduceScatter ? inElements == outElements * g
                                                       : inElements == outElements;
  if (!fits)
    return Status::error(cat(what, ": ", inElements, " elements in, ", outElements,
                             " out do not fit a group of ", g));
  if (groups.reduction == 1 && !isFloat(toDType(in->dtype())))
    return Status::error(cat(what, ": avg needs a float type, not ",
                             dtypeName(toDType(in->dtype()))));
  return Status::ok();
}

/// State kept from step to step: in device memory, or in host memory
/// under --offload=cpu.
bool keptAcrossSteps(plan::Region region) {
  return region == plan::Region::Persistent || region == plan::Region::Host;
}

/// Whether `v`'s elements lie at a multiple of `alignment` (an absent or
/// empty vector has none to misread, and the builder does not align those).
template <typename T> bool aligned(const flatbuffers::Vector<T> *v, size_t alignment) {
  return !v || v->size() == 0 || reinterpret_cast<uintptr_t>(v->data()) % alignment == 0;
}

/// The FlatBuffers verifier checks where a vector's length lies but not its
/// elements' alignment, which the builder always gives: a hostile plan's
/// int64 vector at an odd address would otherwise be read misaligned, and
/// constant data (force_align: 64) is read in place by the kernels. The
/// plan storage itself is 64-byte aligned (loadPlan), so addresses are
/// checked directly.
Status checkVectorAlignment(const plan::Plan &plan, const std::string &path) {
  for (size_t i = 0; i < count(plan.buffers()); ++i)
    if (!aligned(plan.buffers()->Get(i)->shape(), sizeof(int64_t)))
      return Status::error(cat(path, ": buffer ", i, ": shape is not 8-byte aligned"));
  for (size_t i = 0; i < count(plan.instructions()); ++i)
    if (!aligned(plan.instructions()->Get(i)->ints(), sizeof(int64_t)))
      return Status::error(cat(path, ": instruction ", i, ": ints are not 8-byte aligned"));
  for (size_t i = 0; i < count(plan.parameters()); ++i)
    if (!aligned(plan.parameters()->Get(i)->shape(), sizeof(int64_t)))
      return Status::error(cat(path, ": parameter ", i, ": shape is not 8-byte aligned"));
  if (!aligned(plan.constant_data(), kBufferAlignment))
    return Status::error(path + ": constant data is not 64-byte aligned");
  return Status::ok();
}

Status checkBuffer(const plan::Buffer &buffer, size_t index, const plan::Plan &plan,
                   const std::string &where) {
  std::string what = cat(where, ": buffer ", index,
                         buffer.name() ? " ('" + buffer.name()->str() + "')" : std::string());
  if (static_cast<int>(buffer.dtype()) >= kNumDTypes)
    return Status::error(what + ": invalid dtype");
  size_t rank = count(buffer.shape());
  if (rank > static_cast<size_t>(kMaxRank))
    return Status::error(cat(what, ": rank ", rank, " exceeds ", kMaxRank));
  uint64_t elements = 1;
  for (size_t d = 0; d < rank; ++d) {
    int64_t dim = buffer.shape()->Get(d);
    if (dim < 0 || (dim > 0 && elements > (uint64_t(1) << 48) / static_cast<uint64_t>(dim)))
      return Status::error(what + ": invalid shape");
    elements *= static_cast<uint64_t>(dim);
  }
  if (buffer.size() != elements * dtypeSize(toDType(buffer.dtype())))
    return Status::error(what + ": size does not match dtype and shape");
  uint64_t regionSize = 0;
  switch (buffer.region()) {
  case plan::Region::Persistent: regionSize = plan.persistent_bytes(); break;
  case plan::Region::Arena: regionSize = plan.arena_bytes(); break;
  case plan::Region::Constant: regionSize = count(plan.constant_data()); break;
  case plan::Region::Host: regionSize = plan.host_bytes(); break;
  default: return Status::error(what + ": invalid region");
  }
  // Every rank's placement must fit: the last chunk is the farthest.
  if (buffer.rank_group() < 1 || buffer.rank_stride() % kBufferAlignment != 0 ||
      (buffer.rank_group() > 1 && buffer.rank_stride() > (uint64_t(1) << 48)))
    return Status::error(what + ": invalid rank stride");
  const uint64_t lastChunk = (buffer.rank_group() - 1) * buffer.rank_stride();
  if (buffer.offset() % kBufferAlignment != 0 || buffer.offset() > regionSize ||
      lastChunk > regionSize - buffer.offset() ||
      buffer.size() > regionSize - buffer.offset() - lastChunk)
    return Status::error(what + ": lies outside its memory region");
  return Status::ok();
}

Status checkInstruction(const plan::Instruction &inst, size_t index, const plan::Plan &plan,
                        const std::string &where) {
  const KernelInfo *info = kernelInfo(inst.kernel());
  std::string what = cat(where, ": instruction ", index,
                         inst.name() ? " ('" + inst.name()->str() + "')" : std::string());
  if (!info)
    return Status::error(what + ": unknown kernel");
  const KernelInfo &shape = *info;
  what += std::string(" (") + shape.name + ")";
  size_t numBuffers = count(plan.buffers());
  int inputs = static_cast<int>(count(inst.inputs())), outputs = static_cast<int>(count(inst.outputs()));
  if (inputs < shape.minInputs || (shape.maxInputs != kAny && inputs > shape.maxInputs))
    return Status::error(cat(what, ": has ", inputs, " operands"));
  int expectedOutputs = shape.outputs;
  if (shape.outputs == kOnePlusOptional)
    expectedOutputs = 1 + (inputs > shape.optionalInput &&
                           inst.inputs()->Get(shape.optionalInput) != kNoBuffer);
  if ((expectedOutputs != kAny && outputs != expectedOutputs) || outputs < 1)
    return Status::error(cat(what, ": has ", outputs, " results"));
  for (int i = 0; i < inputs; ++i) {
    uint32_t b = inst.inputs()->Get(i);
    if (b == kNoBuffer && i == shape.optionalInput)
      continue;
    if (b >= numBuffers)
      return Status::error(cat(what, ": operand ", i, " names buffer ", b, " of ", numBuffers));
  }
  for (int i = 0; i < outputs; ++i)
    if (inst.outputs()->Get(i) >= numBuffers)
      return Status::error(cat(what, ": result ", i, " names a missing buffer"));
  if (inst.stream() >= plan.num_streams())
    return Status::error(cat(what, ": stream ", int(inst.stream()), " does not exist"));
  for (size_t i = 0; i < count(inst.wait_events()); ++i)
    if (inst.wait_events()->Get(i) >= plan.num_events())
      return Status::error(cat(what, ": waits on event ", inst.wait_events()->Get(i),
                               " of ", plan.num_events()));
  if (inst.signal_event() >= static_cast<int64_t>(plan.num_events()) || inst.signal_event() < -1)
    return Status::error(cat(what, ": signals event ", inst.signal_event(), " of ",
                             plan.num_events()));
  int rank = static_cast<int>(count(plan.buffers()->Get(inst.inputs()->Get(0))->shape()));
  int ints = static_cast<int>(count(inst.ints()));
  int expectedInts = shape.ints == kRank ? rank : shape.ints == kTwiceRank ? 2 * rank : shape.ints;
  // kAny integer attributes are axes (at most the rank); a kProgram list is
  // checked by its kernel.
  bool intsOk = shape.ints == kProgram || shape.ints == kOwnLayout ||
                (shape.ints == kNoneOrTwo ? (ints == 0 || ints == 2)
                 : shape.ints == kAny     ? ints <= rank
                                          : ints == expectedInts);
  if (!intsOk)
    return Status::error(cat(what, ": has ", ints, " integer attributes"));
  if (static_cast<int>(count(inst.floats())) != shape.floats)
    return Status::error(cat(what, ": has ", count(inst.floats()), " float attributes"));
  if (inst.kernel() == Kernel::Flatten)
    return checkFlatten(inst, plan, what);
  if (isCollective(static_cast<uint16_t>(inst.kernel())))
    return checkCollective(inst, plan, what);
  return Status::ok();
}

Status checkBindings(const flatbuffers::Vector<flatbuffers::Offset<plan::Binding>> *bindings,
                     size_t numBuffers, const std::string &what) {
  for (size_t i = 0; i < count(bindings); ++i)
    if (!bindings->Get(i)->name() || bindings->Get(i)->buffer() >= numBuffers)
      return Status::error(cat(what, " ", i, " is invalid"));
  return Status::ok();
}

/// A training plan's scalar (lr, step): unset, or a persistent rank-0
/// buffer of `dtype` that the runtime writes before each step.
Status checkScalarBuffer(uint32_t index, DType dtype, const plan::Plan &plan,
                         const std::string &what) {
  if (index == kNoBuffer)
    return Status::ok();
  if (index >= count(plan.buffers()))
    return Status::error(cat(what, " names buffer ", index, " of ", count(plan.buffers())));
  const plan::Buffer *buffer = plan.buffers()->Get(index);
  if (!keptAcrossSteps(buffer->region()) ||
      toDType(buffer->dtype()) != dtype || count(buffer->shape()) != 0)
    return Status::error(cat(what, " must be a persistent ", dtypeName(dtype), " scalar"));
  return Status::ok();
}

/// fp16 dynamic loss scaling: all of its fields or none; the scale and its
/// reciprocal f32 scalars, the found_inf output a binding.
template <typename IsOutput>
Status checkLossScaling(const plan::Plan &plan, const std::string &path, IsOutput isOutput) {
  FSDP_RETURN_IF_ERROR(checkScalarBuffer(plan.loss_scale_buffer(), DType::F32, plan,
                                         path + ": loss_scale_buffer"));
  FSDP_RETURN_IF_ERROR(checkScalarBuffer(plan.inv_loss_scale_buffer(), DType::F32, plan,
                                         path + ": inv_loss_scale_buffer"));
  const bool named = plan.found_inf_output() && plan.found_inf_output()->size() > 0;
  const int present = (plan.loss_scale_buffer() != kNoBuffer) +
                      (plan.inv_loss_scale_buffer() != kNoBuffer) + named +
                      (plan.loss_scale_growth_interval() > 0);
  if (present != 0 && present != 4)
    return Status::error(path + ": loss scaling needs loss_scale_buffer, inv_loss_scale_buffer, "
                                "found_inf_output and loss_scale_growth_interval together");
  if (named && !isOutput(plan.found_inf_output()))
    return Status::error(cat(path, ": found_inf_output '", plan.found_inf_output()->str(),
                             "' is not an output binding"));
  return Status::ok();
}

/// Optimizer state, the learning-rate and step scalars and the loss output.
Status checkTraining(const plan::Plan &plan, const std::string &path) {
  size_t numBuffers = count(plan.buffers());
  FSDP_RETURN_IF_ERROR(checkBindings(plan.state(), numBuffers, path + ": state binding"));
  for (size_t i = 0; i < count(plan.state()); ++i) {
    const plan::Binding *state = plan.state()->Get(i);
    if (!keptAcrossSteps(plan.buffers()->Get(state->buffer())->region()))
      return Status::error(cat(path, ": state '", state->name()->str(),
                               "' is not in the persistent region"));
  }
  FSDP_RETURN_IF_ERROR(checkScalarBuffer(plan.lr_buffer(), DType::F64, plan, path + ": lr_buffer"));
  FSDP_RETURN_IF_ERROR(
      checkScalarBuffer(plan.step_buffer(), DType::I64, plan, path + ": step_buffer"));
  auto isOutput = [&](const flatbuffers::String *name) {
    for (size_t i = 0; i < count(plan.outputs()); ++i)
      if (plan.outputs()->Get(i)->name()->str() == name->str())
        return true;
    return false;
  };
  if (plan.loss_output() && plan.loss_output()->size() > 0 && !isOutput(plan.loss_output()))
    return Status::error(cat(path, ": loss_output '", plan.loss_output()->str(),
                             "' is not an output binding"));
  return checkLossScaling(plan, path, isOutput);
}

/// A shard unit: group_size ranks of shard_numel elements cover the padded
/// flat buffer, which holds the real elements; the shard buffer (sharded
/// plans) is a persistent [shard_numel] buffer of the unit's dtype.
Status checkUnit(const plan::Unit &unit, size_t index, const plan::Plan &plan,
                 const std::string &path) {
  std::string what = cat(path, ": unit ", index,
                         unit.name() ? " ('" + unit.name()->str() + "')" : std::string());
  uint32_t world = plan.world_size();
  if (unit.group_size() < 1 || world % unit.group_size() != 0)
    return Status::error(cat(what, ": group size ", unit.group_size(),
                             " does not divide the world size ", world));
  if (static_cast<int>(unit.dtype()) >= kNumDTypes)
    return Status::error(what + ": invalid dtype");
  uint64_t shard = unit.shard_numel(), padded = unit.padded_numel();
  if (padded % unit.group_size() != 0 || padded / unit.group_size() != shard ||
      padded < unit.flat_numel())
    return Status::error(cat(what, ": ", unit.group_size(), " shards of ", shard,
                             " elements do not make a padded buffer of ", padded,
                             " holding its ", unit.flat_numel(), " elements"));
  if (unit.shard_buffer() == kNoBuffer)
    return Status::ok();
  if (unit.shard_buffer() >= count(plan.buffers()))
    return Status::error(cat(what, ": shard buffer ", unit.shard_buffer(), " of ",
                             count(plan.buffers()), " does not exist"));
  const plan::Buffer *buffer = plan.buffers()->Get(unit.shard_buffer());
  if (!keptAcrossSteps(buffer->region()) || buffer->dtype() != unit.dtype() ||
      numElements(*buffer) != shard)
    return Status::error(cat(what, ": shard buffer ", unit.shard_buffer(),
                             " must be a persistent buffer of ", shard, " x ",
                             dtypeName(toDType(unit.dtype()))));
  if (unit.gathered_buffer() == kNoBuffer)
    return buffer->rank_stride() == 0 ? Status::ok()
                                      : Status::error(what + ": a shard buffer with a rank "
                                                             "stride needs a gathered buffer");
  // Held in place: each rank's shard is its chunk of the gathered buffer.
  if (unit.gathered_buffer() >= count(plan.buffers()))
    return Status::error(cat(what, ": gathered buffer ", unit.gathered_buffer(), " of ",
                             count(plan.buffers()), " does not exist"));
  const plan::Buffer *gathered = plan.buffers()->Get(unit.gathered_buffer());
  const uint64_t shardBytes = buffer->size();
  if (!keptAcrossSteps(gathered->region()) || gathered->dtype() != unit.dtype() ||
      numElements(*gathered) != padded || gathered->rank_stride() != 0 ||
      buffer->offset() != gathered->offset() || buffer->rank_group() != unit.group_size() ||
      (unit.group_size() > 1 && buffer->rank_stride() != shardBytes))
    return Status::error(cat(what, ": shard buffer ", unit.shard_buffer(),
                             " is not this rank's chunk of gathered buffer ",
                             unit.gathered_buffer()));
  return Status::ok();
}

/// A parameter lives in its own persistent buffer, or (sharded plans, no
/// buffer) as elements [flat_offset, flat_offset + numel) of its unit's
/// flat buffer, which must then have shards.
Status checkParameter(const plan::Parameter &param, size_t index, const plan::Plan &plan,
                      const std::string &path) {
  if (!param.name())
    return Status::error(cat(path, ": parameter ", index, " has no name"));
  std::string what = cat(path, ": parameter '", param.name()->str(), "'");
  constexpr uint32_t kNoUnit = 0xFFFFFFFFu;
  if (param.unit() != kNoUnit && param.unit() >= count(plan.units()))
    return Status::error(cat(what, ": unit ", param.unit(), " of ", count(plan.units()),
                             " does not exist"));
  if (param.buffer() != kNoBuffer) {
    if (param.buffer() >= count(plan.buffers()))
      return Status::error(cat(what, ": buffer ", param.buffer(), " of ", count(plan.buffers()),
                               " does not exist"));
    const plan::Buffer *buffer = plan.buffers()->Get(param.buffer());
    if (!keptAcrossSteps(buffer->region()) || buffer->dtype() != param.dtype())
      return Status::error(what + " does not match its buffer");
    return Status::ok();
  }
  if (param.unit() == kNoUnit)
    return Status::error(what + ": has neither a buffer nor a unit");
  const plan::Unit *unit = plan.units()->Get(param.unit());
  if (unit->shard_buffer() == kNoBuffer)
    return Status::error(cat(what, ": has no buffer and its unit ", param.unit(),
                             " has no shard buffer"));
  if (param.dtype() != unit->dtype())
    return Status::error(cat(what, " is ", dtypeName(toDType(param.dtype())),
                             ", its unit ", param.unit(), " ",
                             dtypeName(toDType(unit->dtype()))));
  // The executor builds a TensorRef (at most kMaxRank dims) from it.
  if (!param.shape() || param.shape()->size() > static_cast<size_t>(kMaxRank))
    return Status::error(cat(what, ": shape missing or of rank above ", kMaxRank));
  uint64_t numel = 1;
  for (size_t d = 0; d < count(param.shape()); ++d) {
    int64_t dim = param.shape()->Get(d);
    if (dim < 0 || (dim > 0 && numel > (uint64_t(1) << 48) / static_cast<uint64_t>(dim)))
      return Status::error(what + ": invalid shape");
    numel *= static_cast<uint64_t>(dim);
  }
  if (param.flat_offset() > unit->flat_numel() || numel > unit->flat_numel() - param.flat_offset())
    return Status::error(cat(what, ": elements [", param.flat_offset(), ", ",
                             param.flat_offset() + numel, ") lie outside unit ", param.unit(),
                             "'s ", unit->flat_numel(), " elements"));
  return Status::ok();
}

} // namespace

/// Streams and events: the runtime has a compute stream (0), a
/// communication stream (1) that runs only collectives, and then runs every
/// collective (one thread per rank uses the communicators), a copy stream
/// (2) that runs only copies (--offload=cpu's host transfers), and a host
/// stream (3) that runs only optimizer updates whose every buffer lies in
/// the Host region (a host thread runs them, so they touch nothing else).
/// Each waited event is signalled by exactly one instruction of another
/// stream, no instruction of a device stream waits for the host stream
/// (the device cannot wait for a host thread inside a step; the end of the
/// step orders the next one after it), and running the streams in plan
/// order, each instruction once its events are signalled, reaches the end
/// (no wait that can never be satisfied).
static Status checkStreams(const plan::Plan &plan, const std::string &path) {
  size_t numInstructions = count(plan.instructions());
  constexpr int kStreams = kMaxStreams;
  if (plan.num_streams() > kStreams)
    return Status::error(cat(path, ": plan has ", int(plan.num_streams()),
                             " streams; the runtime runs at most 4 (compute, communication, "
                             "copy, host)"));
  auto describe = [&](size_t i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    std::string text = cat("instruction ", i, " (", kernelName(static_cast<uint16_t>(inst.kernel())));
    if (inst.name() && inst.name()->size())
      text += cat(" '", inst.name()->str(), "'");
    return text + ")";
  };
  auto inHost = [&](const flatbuffers::Vector<uint32_t> *list) {
    for (size_t b = 0; b < count(list); ++b)
      if (uint32_t index = list->Get(b);
          index != kNoBuffer && plan.buffers()->Get(index)->region() != plan::Region::Host)
        return false;
    return true;
  };
  std::vector<int64_t> signaller(plan.num_events(), -1);
  bool hasComm = false;
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    hasComm |= inst.stream() == 1;
    if (inst.stream() == 1 && !isCollective(static_cast<uint16_t>(inst.kernel())))
      return Status::error(cat(path, ": instruction ", i, " (", kernelName(static_cast<uint16_t>(inst.kernel())),
                               ") is on the communication stream but is no collective"));
    if (inst.stream() == 2 && inst.kernel() != plan::Kernel::Copy)
      return Status::error(cat(path, ": instruction ", i, " (", kernelName(static_cast<uint16_t>(inst.kernel())),
                               ") is on the copy stream but is no copy"));
    if (inst.stream() == kHostStream && inst.kernel() != plan::Kernel::AdamW &&
        inst.kernel() != plan::Kernel::Sgd)
      return Status::error(cat(path, ": ", describe(i),
                               " is on the host stream but is no optimizer update"));
    if (inst.stream() == kHostStream && (!inHost(inst.inputs()) || !inHost(inst.outputs())))
      return Status::error(cat(path, ": ", describe(i),
                               " is on the host stream but reads or writes a buffer outside the "
                               "Host region"));
    if (inst.signal_event() < 0)
      continue;
    int64_t &first = signaller[inst.signal_event()];
    if (first >= 0)
      return Status::error(cat(path, ": event ", inst.signal_event(), " is signalled by instructions ",
                               first, " and ", i));
    first = static_cast<int64_t>(i);
  }
  for (size_t i = 0; i < numInstructions; ++i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    if (hasComm && inst.stream() == 0 && isCollective(static_cast<uint16_t>(inst.kernel())))
      return Status::error(cat(path, ": instruction ", i,
                               " is a collective on the compute stream of a plan with a "
                               "communication stream"));
    for (size_t w = 0; w < count(inst.wait_events()); ++w) {
      uint32_t e = inst.wait_events()->Get(w);
      if (signaller[e] < 0)
        return Status::error(cat(path, ": instruction ", i, " waits on event ", e,
                                 ", which no instruction signals"));
      const uint8_t from = plan.instructions()->Get(signaller[e])->stream();
      if (from == inst.stream())
        return Status::error(cat(path, ": instruction ", i, " waits on event ", e,
                                 " of its own stream"));
      if (from == kHostStream)
        return Status::error(cat(path, ": ", describe(i), " on stream ", int(inst.stream()),
                                 " waits on event ", e, " of the host stream (",
                                 describe(signaller[e]),
                                 "); device streams cannot wait for the host within a step"));
    }
  }
  // The queues, run in plan order.
  std::vector<uint8_t> signaled(plan.num_events(), 0);
  std::vector<size_t> queue[kStreams];
  for (size_t i = 0; i < numInstructions; ++i)
    queue[plan.instructions()->Get(i)->stream()].push_back(i);
  size_t head[kStreams] = {};
  auto ready = [&](size_t i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    for (size_t w = 0; w < count(inst.wait_events()); ++w)
      if (!signaled[inst.wait_events()->Get(w)])
        return false;
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int q = 0; q < kStreams; ++q)
      while (head[q] < queue[q].size() && ready(queue[q][head[q]])) {
        int32_t e = plan.instructions()->Get(queue[q][head[q]])->signal_event();
        if (e >= 0)
          signaled[e] = 1;
        ++head[q];
        progress = true;
      }
  }
  for (int q = 0; q < kStreams; ++q)
    if (head[q] < queue[q].size())
      return Status::error(cat(path, ": the streams deadlock: instruction ", queue[q][head[q]],
                               " (stream ", q, ") waits for an event that is never signalled "
                               "before it can run"));
  return Status::ok();
}

/// The cost prediction a plan may carry: what fsdp-run --profile prints
/// beside its measurements, so it must be a profile's finite seconds.
static Status checkPrediction(const plan::Plan &plan, const std::string &path) {
  const plan::CostPrediction *c = plan.prediction();
  if (!c)
    return Status::ok();
  if (!c->device() || c->device()->size() == 0)
    return Status::error(path + ": the cost prediction names no device profile");
  const std::pair<const char *, double> fields[] = {
      {"step_s", c->step_s()},
      {"compute_s", c->compute_s()},
      {"communication_s", c->communication_s()},
      {"exposed_communication_s", c->exposed_communication_s()}};
  for (const auto &[name, seconds] : fields)
    if (!std::isfinite(seconds) || seconds < 0)
      return Status::error(cat(path, ": the cost prediction's ", name, " is ", seconds,
                               ", not a finite number of seconds >= 0"));
  return Status::ok();
}

Status checkPlan(const plan::Plan &plan, const std::string &path) {
  if (plan.format_version() != kPlanFormatVersion)
    return Status::error(path + ": plan format version mismatch");
  if (plan.world_size() < 1)
    return Status::error(path + ": world size must be >= 1");
  if (plan.num_streams() < 1)
    return Status::error(path + ": plan has no streams");
  if (plan.grad_accum() < 1)
    return Status::error(path + ": grad_accum (micro-batches per step) must be >= 1");
  if (plan.persistent_bytes() % kBufferAlignment || plan.arena_bytes() % kBufferAlignment ||
      plan.host_bytes() % kBufferAlignment)
    return Status::error(path + ": region sizes must be multiples of 64 bytes");
  FSDP_RETURN_IF_ERROR(checkVectorAlignment(plan, path));
  // Each event is signalled by one instruction (checkStreams), so a plan
  // has at most as many events as instructions; the bound comes before the
  // per-event tables below and in the executor are sized from the count (a
  // hostile num_events of 2^32 asked for 32 GiB; found by fuzz-plan).
  if (plan.num_events() > count(plan.instructions()))
    return Status::error(cat(path, ": ", plan.num_events(), " events for ",
                             count(plan.instructions()),
                             " instructions (each event is signalled by one instruction)"));
  size_t numBuffers = count(plan.buffers());
  for (size_t i = 0; i < numBuffers; ++i)
    FSDP_RETURN_IF_ERROR(checkBuffer(*plan.buffers()->Get(i), i, plan, path));
  for (size_t i = 0; i < count(plan.instructions()); ++i)
    FSDP_RETURN_IF_ERROR(checkInstruction(*plan.instructions()->Get(i), i, plan, path));
  FSDP_RETURN_IF_ERROR(checkStreams(plan, path));
  FSDP_RETURN_IF_ERROR(checkBindings(plan.inputs(), numBuffers, path + ": input binding"));
  FSDP_RETURN_IF_ERROR(checkBindings(plan.outputs(), numBuffers, path + ": output binding"));
  FSDP_RETURN_IF_ERROR(checkTraining(plan, path));
  for (size_t i = 0; i < count(plan.units()); ++i)
    FSDP_RETURN_IF_ERROR(checkUnit(*plan.units()->Get(i), i, plan, path));
  for (size_t i = 0; i < count(plan.parameters()); ++i)
    FSDP_RETURN_IF_ERROR(checkParameter(*plan.parameters()->Get(i), i, plan, path));
  FSDP_RETURN_IF_ERROR(checkPrediction(plan, path));
  FSDP_RETURN_IF_ERROR(checkEvalPrefix(plan, path));
  return Status::ok();
}

} // namespace fsdp::rt
