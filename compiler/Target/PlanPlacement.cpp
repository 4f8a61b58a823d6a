//===- PlanPlacement.cpp - where a step's values live and when its ops run ===//
//
// The walk: arguments first (parameters, inputs, state, the lr and step
// scalars, unit shards, possibly as chunks of their persistent gathered
// buffer), then the views and in-place updates the whole body decides
// (BufferViews, optimizer updates into their argument's buffer), then each
// op in order: a view or constant is placed and needs no instruction;
// anything else gets its results placed, becomes the next instruction on
// its stream with its waits, and releases what it read last. Copies of
// returned values close the step.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/PlanPlacement.h"

#include "compiler/Target/ArenaAllocator.h"
#include "compiler/Target/StreamOrder.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/support/TensorRef.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <cstring>
#include <optional>

using namespace mlir;

namespace fsdp {

// The dialect's stream numbers are the plan's.
static_assert(dist::kCommStream == rt::kCommStream && dist::kCopyStream == rt::kCopyStream &&
              dist::kHostStream == rt::kHostStream);

namespace {

class Placer {
public:
  Placer(func::FuncOp func, PlanPlacement &out) : func(func), out(out) {}
  LogicalResult run();

private:
  FailureOr<uint32_t> addBuffer(Value value, const std::string &name, plan::Region region);
  /// A buffer description over the bytes of `source`'s buffer from
  /// `elementOffset` on, with `v`'s shape.
  void addView(Value v, Value source, int64_t elementOffset, const std::string &name);
  LogicalResult placeConstant(nn::ConstantOp op);
  LogicalResult placeArguments(Block &body);
  plan::Region regionOf(BlockArgument arg);
  FailureOr<uint32_t> placeShard(BlockArgument arg, DictionaryAttr unit, const std::string &name);
  LogicalResult findInPlaceUpdates(Block &body);
  /// Names the results written straight into their output buffer.
  void findOutputs(func::ReturnOp ret);
  /// Places `op` if it is a view or a constant (no instruction); returns
  /// whether it was one.
  FailureOr<bool> placeWithoutInstruction(Operation &op);
  LogicalResult placeResults(Operation &op);
  /// Appends `op`'s instruction on its stream, with its waits; fails when
  /// a device stream would wait for the host stream.
  LogicalResult schedule(Operation &op);
  /// Refuses a wait of `op` on the device for `producer` on the host stream.
  LogicalResult checkNotOnHost(Operation &op, Operation *producer);
  /// Releases the arena buffers whose last use `op` was.
  void releaseAfter(Operation &op);
  void copyReturnedValues(func::ReturnOp ret);
  /// The event `inst` signals, made on first need.
  uint32_t eventOf(ScheduledInstruction &inst);
  uint32_t bufferOf(Value v) const { return out.bufferOf(v); }

  func::FuncOp func;
  PlanPlacement &out;
  ArenaAllocator arena;
  uint64_t persistentTop = 0;
  uint64_t hostTop = 0; // the Host region (--offload=cpu), placed like persistentTop
  /// Returned op results with their own output buffer, by output name.
  llvm::DenseMap<Value, std::string> outputName;
  /// Unit shard argument -> the result of its persistent all-gather, whose
  /// buffer holds the shard as this rank's chunk.
  llvm::DenseMap<Value, Value> persistentGather;
  /// Results written into a buffer placed before them: a training step's
  /// updates overwrite their argument's buffer, and a persistent
  /// all-gather writes the gathered buffer its shard argument lies in.
  llvm::DenseMap<Value, uint32_t> inPlace;
  /// Async ops (collectives, offload copies, host updates), their waiters
  /// and the buffers they hold (StreamOrder.h); each op's instruction index.
  StreamOrder streams;
  llvm::DenseMap<Operation *, uint32_t> instructionOf;
  /// Both by the op they happen at (asking every collective and every held
  /// owner at every op would be quadratic in the length of the step): the
  /// collectives each compute op waits for, and the owners released after
  /// each op.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> waitsAt;
  llvm::DenseMap<Operation *, SmallVector<Value>> releasedAt;
  /// Stream order: the last compute instruction so far, and the event the
  /// communication stream last waited for (a later collective needs no
  /// second wait on it, the stream runs in order).
  std::optional<size_t> lastCompute;
  /// The compute instruction's event each async stream last waited for (a
  /// later async op of that stream needs no second wait on it).
  llvm::DenseMap<int64_t, int64_t> streamWaited;
};

uint32_t Placer::eventOf(ScheduledInstruction &inst) {
  if (inst.signal < 0)
    inst.signal = static_cast<int32_t>(out.numEvents++);
  return static_cast<uint32_t>(inst.signal);
}

FailureOr<uint32_t> Placer::addBuffer(Value value, const std::string &name, plan::Region region) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  std::optional<rt::DType> dtype = type ? planDType(type.getElementType()) : std::nullopt;
  if (!dtype || !type.hasStaticShape() || type.getRank() > rt::kMaxRank) {
    emitError(value.getLoc()) << "value of type " << value.getType()
                              << " has no plan buffer type (static shape, rank <= " << rt::kMaxRank
                              << ", nn element type)";
    return failure();
  }
  BufferDesc desc{name, *dtype, {type.getShape().begin(), type.getShape().end()}, region};
  desc.size = static_cast<uint64_t>(type.getNumElements()) * rt::dtypeSize(*dtype);
  if (region == plan::Region::Persistent || region == plan::Region::Host) {
    uint64_t &top = region == plan::Region::Host ? hostTop : persistentTop;
    desc.offset = top;
    top += ArenaAllocator::align(std::max<uint64_t>(desc.size, 1));
  } else if (region == plan::Region::Arena) {
    desc.offset = arena.allocate(desc.size);
  }
  uint32_t index = out.buffers.size();
  out.buffers.push_back(std::move(desc));
  out.valueBuffers[value] = index;
  return index;
}

void Placer::addView(Value v, Value source, int64_t elementOffset, const std::string &name) {
  BufferDesc desc = out.buffers[bufferOf(source)];
  auto type = cast<RankedTensorType>(v.getType());
  desc.name = name;
  desc.shape.assign(type.getShape().begin(), type.getShape().end());
  desc.offset += elementOffset * rt::dtypeSize(desc.dtype);
  desc.size = type.getNumElements() * rt::dtypeSize(desc.dtype);
  out.valueBuffers[v] = out.buffers.size();
  out.buffers.push_back(std::move(desc));
}

LogicalResult Placer::placeConstant(nn::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitOpError("only dense constants can be emitted into a plan");
  FailureOr<uint32_t> index = addBuffer(op.getResult(), "constant", plan::Region::Constant);
  if (failed(index))
    return failure();
  BufferDesc &desc = out.buffers[*index];
  std::vector<uint8_t> &constantData = out.constantData;
  constantData.resize(ArenaAllocator::align(constantData.size()), 0);
  desc.offset = constantData.size();
  constantData.resize(desc.offset + desc.size, 0);
  uint8_t *dst = constantData.data() + desc.offset;
  int64_t count = attr.getNumElements();
  size_t elementBytes = rt::dtypeSize(desc.dtype);
  if (desc.dtype == rt::DType::Bool) {
    int64_t i = 0;
    for (bool b : attr.getValues<bool>())
      dst[i++] = b;
  } else {
    // Splats store one element; other dense data is already packed
    // little-endian at the element size.
    ArrayRef<char> raw = attr.getRawData();
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(dst + i * elementBytes, raw.data() + (attr.isSplat() ? 0 : i * elementBytes),
                  elementBytes);
  }
  return success();
}

/// Arguments live for the whole run: parameters, graph inputs, optimizer
/// state, and the learning-rate and step scalars the runtime writes.
/// A unit's shard gets a persistent buffer of its own, or, when the unit
/// is gathered once by a persistent all-gather, the gathered buffer is
/// placed and the shard is this rank's chunk of it (a rank-strided view):
/// the unit's parameters are held once rather than twice.
FailureOr<uint32_t> Placer::placeShard(BlockArgument arg, DictionaryAttr unit,
                                       const std::string &name) {
  SmallVector<dist::AllGatherOp> gathers;
  for (Operation *user : arg.getUsers())
    if (auto gather = dyn_cast<dist::AllGatherOp>(user))
      gathers.push_back(gather);
  auto persistent = llvm::find_if(gathers, [](dist::AllGatherOp g) { return g.getPersistent(); });
  if (persistent == gathers.end())
    return addBuffer(arg, name, regionOf(arg));
  if (gathers.size() != 1)
    return persistent->emitOpError("persistent, but unit '")
           << name << "' is gathered " << gathers.size() << " times";
  Value full = persistent->getResult();
  FailureOr<uint32_t> gathered = addBuffer(full, name + ".gathered", plan::Region::Persistent);
  if (failed(gathered))
    return failure();
  inPlace[full] = *gathered;
  persistentGather[arg] = full;
  BufferDesc chunk = out.buffers[*gathered];
  auto type = cast<RankedTensorType>(arg.getType());
  chunk.name = name;
  chunk.shape.assign(type.getShape().begin(), type.getShape().end());
  chunk.size = type.getNumElements() * rt::dtypeSize(chunk.dtype);
  chunk.rankGroup = static_cast<uint32_t>(persistent->getGroupSize());
  chunk.rankStride = chunk.rankGroup > 1 ? chunk.size : 0;
  if (chunk.rankStride % rt::kBufferAlignment != 0)
    return persistent->emitOpError("persistent, but the shards of unit '")
           << name << "' (" << chunk.size << " bytes) are not " << rt::kBufferAlignment
           << "-byte aligned";
  const uint32_t index = out.buffers.size();
  out.valueBuffers[arg] = index;
  out.buffers.push_back(std::move(chunk));
  out.gatheredBufferOf[index] = *gathered;
  return index;
}

/// Arguments persist across steps: in device memory, or in host memory
/// when the offload stage marked them (fsdp.host).
plan::Region Placer::regionOf(BlockArgument arg) {
  return func.getArgAttr(arg.getArgNumber(), dist::kHostAttr) ? plan::Region::Host
                                                              : plan::Region::Persistent;
}

LogicalResult Placer::placeArguments(Block &body) {
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto param = func.getArgAttrOfType<StringAttr>(i, nn::kParamAttr);
    auto input = func.getArgAttrOfType<StringAttr>(i, nn::kInputAttr);
    auto stateName = func.getArgAttrOfType<StringAttr>(i, nn::kStateAttr);
    auto unit = func.getArgAttrOfType<DictionaryAttr>(i, dist::kUnitAttr);
    bool lr = static_cast<bool>(func.getArgAttr(i, nn::kLrAttr));
    bool step = static_cast<bool>(func.getArgAttr(i, nn::kStepAttr));
    bool scale = static_cast<bool>(func.getArgAttr(i, nn::kLossScaleAttr));
    bool invScale = static_cast<bool>(func.getArgAttr(i, nn::kInvLossScaleAttr));
    std::string name = param       ? param.str()
                       : unit      ? unit.getAs<StringAttr>("name").str()
                       : input     ? input.str()
                       : stateName ? stateName.str()
                       : lr        ? "lr"
                       : step      ? "step"
                       : scale     ? "loss_scale"
                       : invScale  ? "inv_loss_scale"
                                   : "arg" + std::to_string(i);
    FailureOr<uint32_t> index =
        unit ? placeShard(arg, unit, name) : addBuffer(arg, name, regionOf(arg));
    if (failed(index))
      return failure();
    if (param)
      out.params.emplace_back(name, *index);
    else if (unit)
      out.units.push_back({unit, *index});
    else if (stateName)
      out.state.emplace_back(name, *index);
    else if (lr)
      out.lrBuffer = *index;
    else if (step)
      out.stepBuffer = *index;
    else if (scale)
      out.lossScaleBuffer = *index;
    else if (invScale)
      out.invLossScaleBuffer = *index;
    else
      out.inputs.emplace_back(name, *index);
  }
  return success();
}

/// A result marked `nn.update = NAME` takes over the buffer of the
/// argument NAME (a parameter or optimizer state). That is safe only when
/// the op producing it is an optimizer update (which reads each element
/// before writing it) and no op after it reads the old value.
LogicalResult Placer::findInPlaceUpdates(Block &body) {
  const BufferViews &views = out.views;
  llvm::StringMap<BlockArgument> byName;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (auto name = func.getArgAttrOfType<StringAttr>(i, nn::kParamAttr))
      byName[name.getValue()] = arg;
    if (auto name = func.getArgAttrOfType<StringAttr>(i, nn::kStateAttr))
      byName[name.getValue()] = arg;
    if (auto unit = func.getArgAttrOfType<DictionaryAttr>(i, dist::kUnitAttr))
      byName[unit.getAs<StringAttr>("name").getValue()] = arg;
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kUpdateAttr);
    if (!name)
      continue;
    auto arg = byName.find(name.getValue());
    if (arg == byName.end())
      return func.emitError("result ") << i << " updates '" << name.getValue()
                                       << "', which is no parameter or state argument";
    Operation *def = value.getDefiningOp();
    if (!def || !isa<nn::AdamWOp, nn::SgdOp>(def) || views.lastUse.lookup(arg->second) != def ||
        !llvm::is_contained(def->getOperands(), Value(arg->second)))
      return func.emitError("result ") << i << " updates '" << name.getValue()
                                       << "' but is not an optimizer update that reads it last; it "
                                          "cannot be written in place";
    if (value.getType() != arg->second.getType())
      return func.emitError("result ") << i << " changes the type of '" << name.getValue() << "'";
    // A shard held inside its gathered buffer is overwritten under every
    // reader of that buffer's other views too.
    if (Value full = persistentGather.lookup(arg->second))
      if (Operation *last = views.lastUse.lookup(full); last && !last->isBeforeInBlock(def))
        return func.emitError("result ")
               << i << " updates '" << name.getValue()
               << "' in place before the last read of its gathered buffer";
    inPlace[value] = out.valueBuffers.lookup(arg->second);
  }
  return success();
}

/// Returned op results are written straight into persistent output
/// buffers; anything else returned (an argument, a constant, a value
/// returned twice) is copied there by an extra instruction at the end.
void Placer::findOutputs(func::ReturnOp ret) {
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
    std::string n = name ? name.str() : "result" + std::to_string(i);
    if (func.getResultAttr(i, nn::kUpdateAttr))
      continue;
    if (value.getDefiningOp() && !isa<nn::ConstantOp>(value.getDefiningOp()) &&
        !outputName.count(value))
      outputName[value] = n;
  }
}

FailureOr<bool> Placer::placeWithoutInstruction(Operation &op) {
  const BufferViews &views = out.views;
  if (views.foldedTransposes.count(&op))
    return true; // read in place by its matmuls
  if (views.aliasedReshapes.count(&op)) {
    addView(op.getResult(0), op.getOperand(0), 0, locationName(op.getLoc()));
    return true;
  }
  if (auto slice = views.contiguousSlices.find(&op); slice != views.contiguousSlices.end()) {
    addView(op.getResult(0), op.getOperand(0), slice->second, locationName(op.getLoc()));
    return true;
  }
  if (auto view = dyn_cast<dist::FlatViewOp>(op); view && views.flatViews.count(&op)) {
    addView(view.getResult(), view.getFlat(), view.getOffset(), locationName(op.getLoc()));
    return true;
  }
  if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
    if (failed(placeConstant(constant)))
      return failure();
    return true;
  }
  return false;
}

LogicalResult Placer::placeResults(Operation &op) {
  for (Value r : op.getResults()) {
    if (auto target = inPlace.find(r); target != inPlace.end()) {
      out.valueBuffers[r] = target->second;
      continue;
    }
    auto output = outputName.find(r);
    FailureOr<uint32_t> index =
        output != outputName.end()
            ? addBuffer(r, output->second, plan::Region::Persistent)
            : addBuffer(r, locationName(op.getLoc()),
                        // A gradient shard copied to the host stays there
                        // (host memory holds its shard, grads and state).
                        isa<dist::ToHostOp>(op) ? plan::Region::Host : plan::Region::Arena);
    if (failed(index))
      return failure();
    if (output != outputName.end())
      out.outputs.emplace_back(output->second, *index);
  }
  return success();
}

LogicalResult Placer::checkNotOnHost(Operation &op, Operation *producer) {
  auto async = streams.asyncOps.find(producer);
  if (async == streams.asyncOps.end() || async->second.stream != dist::kHostStream)
    return success();
  return op.emitOpError("uses what ")
         << producer->getName() << " at " << producer->getLoc()
         << " writes on the host stream; the device cannot wait for the host stream within a "
            "step (only updates written in place and read by nothing else may run there)";
}

LogicalResult Placer::schedule(Operation &op) {
  auto &instructions = out.instructions;
  instructions.push_back({&op});
  ScheduledInstruction &inst = instructions.back();
  instructionOf[&op] = instructions.size() - 1;
  auto async = streams.asyncOps.find(&op);
  if (async != streams.asyncOps.end() && async->second.stream == dist::kHostStream) {
    // A host thread runs it: it may touch host memory only.
    auto inHost = [&](Value v) {
      return out.buffers[bufferOf(v)].region == plan::Region::Host;
    };
    for (OpOperand &operand : op.getOpOperands())
      if (!inHost(operand.get()))
        return op.emitOpError("runs on the host stream, but operand ")
               << operand.getOperandNumber() << " is not in host memory";
    for (OpResult result : op.getResults())
      if (!inHost(result))
        return op.emitOpError("runs on the host stream, but result ")
               << result.getResultNumber()
               << " is not in host memory (only updates written in place into host "
                  "arguments may run there)";
    // It waits for what touched its operands before it, nothing more, so
    // it starts as soon as they are ready (StreamOrder.h).
    inst.stream = static_cast<uint8_t>(dist::kHostStream);
    if (Operation *after = async->second.after)
      inst.waits.push_back(eventOf(instructions[instructionOf.lookup(after)]));
    for (Operation *producer : async->second.waitsFor)
      inst.waits.push_back(eventOf(instructions[instructionOf.lookup(producer)]));
  } else if (async != streams.asyncOps.end()) {
    const int64_t stream = async->second.stream;
    inst.stream = static_cast<uint8_t>(stream);
    if (lastCompute) {
      uint32_t event = eventOf(instructions[*lastCompute]);
      auto waited = streamWaited.find(stream);
      if (waited == streamWaited.end() || waited->second != static_cast<int64_t>(event))
        inst.waits.push_back(event);
      streamWaited[stream] = event;
    }
    // Results of another async stream it reads (scheduled earlier).
    for (Operation *producer : async->second.waitsFor) {
      if (failed(checkNotOnHost(op, producer)))
        return failure();
      inst.waits.push_back(eventOf(instructions[instructionOf.lookup(producer)]));
    }
  } else {
    lastCompute = instructions.size() - 1;
    for (Operation *c : waitsAt.lookup(&op)) {
      if (failed(checkNotOnHost(op, c)))
        return failure();
      inst.waits.push_back(eventOf(instructions[instructionOf.lookup(c)]));
    }
  }
  return success();
}

/// Releases arena buffers whose last use this op was, and results nobody
/// reads (LayerNorm's statistics in a forward plan); what an async
/// collective still uses goes when it is waited for.
void Placer::releaseAfter(Operation &op) {
  const BufferViews &views = out.views;
  auto releaseOwner = [&](Value owner) {
    auto it = out.valueBuffers.find(owner);
    if (it != out.valueBuffers.end() && out.buffers[it->second].region == plan::Region::Arena)
      arena.release(out.buffers[it->second].offset);
  };
  auto releaseIfDead = [&](Value v, bool unused) {
    Value owner = views.rootOf(v);
    if (streams.heldUntil.count(owner))
      return;
    if (unused || views.lastUse.lookup(owner) == &op)
      releaseOwner(owner);
  };
  for (Value operand : op.getOperands())
    releaseIfDead(operand, false);
  for (Value r : op.getResults())
    releaseIfDead(r, !views.lastUse.count(r) && !outputName.count(r));
  for (Value owner : releasedAt.lookup(&op))
    releaseOwner(owner);
}

/// Copies of returned values read collective results only once done: the
/// first waits for every async op nothing else waited for, except those of
/// the host stream, which the runtime's end-of-step synchronize completes
/// (their results are in-place updates, never copied).
void Placer::copyReturnedValues(func::ReturnOp ret) {
  bool waitedForAll = false;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (inPlace.count(value))
      continue; // a parameter or state update, already in its argument's buffer
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
    std::string n = name ? name.str() : "result" + std::to_string(i);
    auto it = outputName.find(value);
    if (it != outputName.end() && it->second == n)
      continue; // written in place by the op that computes it
    uint32_t source = bufferOf(value);
    BufferDesc copy = out.buffers[source];
    copy.name = n;
    copy.region = plan::Region::Persistent;
    copy.offset = persistentTop;
    persistentTop += ArenaAllocator::align(std::max<uint64_t>(copy.size, 1));
    out.buffers.push_back(copy);
    uint32_t target = out.buffers.size() - 1;
    std::vector<uint32_t> waits;
    for (auto &[c, async] : streams.asyncOps)
      if (!async.waiter && !waitedForAll && async.stream != dist::kHostStream)
        waits.push_back(eventOf(out.instructions[instructionOf.lookup(c)]));
    waitedForAll = true;
    ScheduledInstruction inst;
    inst.copySource = source;
    inst.copyTarget = target;
    inst.copyName = n;
    inst.waits = std::move(waits);
    out.instructions.push_back(std::move(inst));
    out.outputs.emplace_back(n, target);
  }
}

LogicalResult Placer::run() {
  Block &body = func.getBody().front();
  if (failed(placeArguments(body)))
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  findOutputs(ret);
  // Views (reshapes, transposes folded into matmuls) and the last use of
  // every buffer's owner over all its views.
  llvm::DenseSet<Value> ownBuffer;
  for (auto &[value, name] : outputName)
    ownBuffer.insert(value);
  out.views = findBufferViews(body, ownBuffer);
  if (failed(findInPlaceUpdates(body)))
    return failure();
  streams = findStreamOrder(body, out.views);
  for (auto &[c, async] : streams.asyncOps)
    if (async.waiter)
      waitsAt[async.waiter].push_back(c);
  for (auto &[owner, until] : streams.heldUntil)
    if (until)
      releasedAt[until].push_back(owner);

  for (Operation &op : body.without_terminator()) {
    FailureOr<bool> placed = placeWithoutInstruction(op);
    if (failed(placed) || (!*placed && failed(placeResults(op))))
      return failure();
    if (*placed)
      continue;
    if (failed(schedule(op)))
      return failure();
    releaseAfter(op);
  }
  copyReturnedValues(ret);

  // Every lifetime is known: place the arena and resolve the virtual
  // offsets of arena buffers and of the views inside them.
  arena.finalize();
  for (BufferDesc &d : out.buffers)
    if (d.region == plan::Region::Arena)
      d.offset = arena.resolve(d.offset);
  out.persistentBytes = persistentTop;
  out.hostBytes = hostTop;
  out.arenaBytes = ArenaAllocator::align(arena.peak());
  out.arenaLowerBound = arena.peakLive();
  out.numStreams = streams.numStreams;
  return success();
}

} // namespace

std::optional<rt::DType> planDType(Type element) {
  if (element.isF32())
    return rt::DType::F32;
  if (element.isF64())
    return rt::DType::F64;
  if (element.isF16())
    return rt::DType::F16;
  if (element.isBF16())
    return rt::DType::BF16;
  if (auto integer = dyn_cast<IntegerType>(element)) {
    bool u = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1:
      return rt::DType::Bool;
    case 8:
      return u ? rt::DType::U8 : rt::DType::I8;
    case 16:
      return u ? rt::DType::U16 : rt::DType::I16;
    case 32:
      return u ? rt::DType::U32 : rt::DType::I32;
    case 64:
      return u ? rt::DType::U64 : rt::DType::I64;
    }
  }
  return std::nullopt;
}

std::string locationName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()));
  return "";
}

FailureOr<PlanPlacement> placeStep(func::FuncOp func) {
  PlanPlacement placement;
  if (failed(Placer(func, placement).run()))
    return failure();
  return placement;
}

} // namespace fsdp
