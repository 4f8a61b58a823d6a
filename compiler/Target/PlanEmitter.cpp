//===- PlanEmitter.cpp - nn module to plan file ---------------------------===//
//
// Three steps. Placement: walk the function once, giving arguments and
// returned values persistent buffers, constants bytes in the constant blob,
// and op results arena lifetimes announced to ArenaAllocator (allocated
// before the op runs, released after their last use, so an op never writes
// over its own operands); once the walk knows every lifetime, the arena is
// placed offline and the virtual offsets are resolved. Lowering: one TypeSwitch maps each nn op to its kernel and the
// attribute layout plan.fbs documents; the one fusion at this level is a
// weight transpose read in place by its matmuls. Serialization: the
// FlatBuffer is written with the runtime's writePlanFile, the weights with
// its safetensors writer, so both sides share one implementation of each
// format.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/PlanEmitter.h"

#include "compiler/Target/ArenaAllocator.h"
#include "compiler/Target/BufferViews.h"
#include "compiler/Target/StreamOrder.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"


using namespace mlir;

namespace fsdp {
namespace {

using plan::Kernel;

struct BufferDesc {
  std::string name;
  rt::DType dtype;
  std::vector<int64_t> shape;
  plan::Region region;
  uint64_t offset = 0, size = 0;
  uint64_t rankStride = 0; // plan.fbs Buffer.rank_stride / rank_group
  uint32_t rankGroup = 1;
};

/// A row of the plan's parameter table (plan.fbs Parameter).
struct ParamEntry {
  std::string name;
  rt::DType dtype;
  std::vector<int64_t> shape;
  uint32_t buffer = rt::kNoBuffer; // kNoBuffer: lives in its unit's shards
  uint32_t unit = rt::kNoBuffer;   // 0xFFFFFFFF: replicated, in no unit
  uint64_t flatOffset = 0;
};

/// A row of the plan's unit table (plan.fbs Unit).
struct UnitEntry {
  std::string name;
  uint64_t flatNumel = 0, paddedNumel = 0, shardNumel = 0;
  uint32_t shardBuffer = rt::kNoBuffer, groupSize = 1;
  rt::DType dtype = rt::DType::F32;
  uint32_t gatheredBuffer = rt::kNoBuffer;
};

struct InstructionDesc {
  Kernel kernel;
  std::vector<uint32_t> inputs, outputs;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string name;
  uint8_t stream = 0;
  std::vector<uint32_t> waits;
  int32_t signal = -1;
};



std::optional<rt::DType> dtypeOf(Type element) {
  if (element.isF32()) return rt::DType::F32;
  if (element.isF64()) return rt::DType::F64;
  if (element.isF16()) return rt::DType::F16;
  if (element.isBF16()) return rt::DType::BF16;
  if (auto integer = dyn_cast<IntegerType>(element)) {
    bool u = integer.isUnsigned();
    switch (integer.getWidth()) {
    case 1: return rt::DType::Bool;
    case 8: return u ? rt::DType::U8 : rt::DType::I8;
    case 16: return u ? rt::DType::U16 : rt::DType::I16;
    case 32: return u ? rt::DType::U32 : rt::DType::I32;
    case 64: return u ? rt::DType::U64 : rt::DType::I64;
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

class Emitter {
public:
  Emitter(func::FuncOp func, const PlanEmitOptions &options) : func(func), options(options) {}
  LogicalResult run(const WeightLookup &weights, EmittedPlan &result);

private:
  FailureOr<uint32_t> addBuffer(Value value, const std::string &name, plan::Region region);
  LogicalResult placeConstant(nn::ConstantOp op);
  LogicalResult lower(Operation *op);
  LogicalResult writeWeights(const WeightLookup &weights, uint64_t &hash);
  LogicalResult buildParameterTable();
  uint32_t bufferOf(Value v) { return v ? buffers.lookup(v) : rt::kNoBuffer; }
  /// The buffer a kernel reads for `v`: a folded transpose reads its input.
  uint32_t operandBuffer(Value v);
  /// A buffer description over the bytes of `source`'s buffer from
  /// `elementOffset` on, with `v`'s shape.
  void addView(Value v, Value source, int64_t elementOffset, const std::string &name);

  BufferViews views;
  func::FuncOp func;
  const PlanEmitOptions &options;
  llvm::DenseMap<Value, uint32_t> buffers;
  std::vector<BufferDesc> descs;
  std::vector<InstructionDesc> instructions;
  std::vector<uint8_t> constantData;
  uint64_t persistentTop = 0;
  uint64_t hostTop = 0; // the Host region (--offload=cpu), placed like persistentTop
  ArenaAllocator arena;
  std::vector<std::pair<std::string, uint32_t>> inputs, outputs, params, state;
  /// Flat-parameter shards of a sharded step: the fsdp.unit description
  /// and the shard's buffer.
  std::vector<std::pair<DictionaryAttr, uint32_t>> units;
  /// Unit shard argument -> the result of its persistent all-gather, whose
  /// buffer holds the shard as this rank's chunk.
  llvm::DenseMap<Value, Value> persistentGather;
  /// The same by buffer: shard buffer -> gathered buffer (the unit table's).
  llvm::DenseMap<uint32_t, uint32_t> gatheredBufferOf;
  std::vector<ParamEntry> paramTable;
  std::vector<UnitEntry> unitTable;
  uint32_t lrBuffer = rt::kNoBuffer, stepBuffer = rt::kNoBuffer;
  /// Results written into a buffer placed before them: a training step's
  /// updates overwrite their argument's buffer, and a persistent
  /// all-gather writes the gathered buffer its shard argument lies in.
  llvm::DenseMap<Value, uint32_t> inPlace;
  LogicalResult placeArguments(Block &body);
  plan::Region regionOf(BlockArgument arg);
  FailureOr<uint32_t> placeShard(BlockArgument arg, DictionaryAttr unit, const std::string &name);
  LogicalResult findInPlaceUpdates(Block &body, const BufferViews &views);

  /// Async collectives, their waiters and the buffers they hold
  /// (compiler/Target/StreamOrder.h); each one's instruction index.
  StreamOrder streams;
  llvm::DenseMap<Operation *, uint32_t> asyncInstruction;
  /// The event `inst` signals, made on first need.
  uint32_t eventOf(InstructionDesc &inst);
  uint32_t numEvents = 0;
};

uint32_t Emitter::eventOf(InstructionDesc &inst) {
  if (inst.signal < 0)
    inst.signal = static_cast<int32_t>(numEvents++);
  return static_cast<uint32_t>(inst.signal);
}


FailureOr<uint32_t> Emitter::addBuffer(Value value, const std::string &name,
                                       plan::Region region) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  std::optional<rt::DType> dtype = type ? dtypeOf(type.getElementType()) : std::nullopt;
  if (!dtype || !type.hasStaticShape() || type.getRank() > rt::kMaxRank) {
    emitError(value.getLoc()) << "value of type " << value.getType()
                              << " has no plan buffer type (static shape, rank <= "
                              << rt::kMaxRank << ", nn element type)";
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
  uint32_t index = descs.size();
  descs.push_back(std::move(desc));
  buffers[value] = index;
  return index;
}

uint32_t Emitter::operandBuffer(Value v) {
  Operation *def = v.getDefiningOp();
  if (def && views.foldedTransposes.count(def))
    return bufferOf(cast<nn::TransposeOp>(def).getInput());
  return bufferOf(v);
}

void Emitter::addView(Value v, Value source, int64_t elementOffset, const std::string &name) {
  BufferDesc desc = descs[bufferOf(source)];
  auto type = cast<RankedTensorType>(v.getType());
  desc.name = name;
  desc.shape.assign(type.getShape().begin(), type.getShape().end());
  desc.offset += elementOffset * rt::dtypeSize(desc.dtype);
  desc.size = type.getNumElements() * rt::dtypeSize(desc.dtype);
  buffers[v] = descs.size();
  descs.push_back(std::move(desc));
}

LogicalResult Emitter::placeConstant(nn::ConstantOp op) {
  auto attr = dyn_cast<DenseElementsAttr>(op.getValue());
  if (!attr)
    return op.emitOpError("only dense constants can be emitted into a plan");
  FailureOr<uint32_t> index = addBuffer(op.getResult(), "constant", plan::Region::Constant);
  if (failed(index))
    return failure();
  BufferDesc &desc = descs[*index];
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

/// A collective's ints as plan.fbs lays them out: [reduction (0 sum, 1
/// avg; reductions only), group_size, ranks...].
std::vector<int64_t> collectiveInts(std::optional<StringRef> reduction, int64_t groupSize,
                                    ArrayRef<int64_t> groups) {
  std::vector<int64_t> ints;
  if (reduction)
    ints.push_back(*reduction == "avg" ? 1 : 0);
  ints.push_back(groupSize);
  ints.insert(ints.end(), groups.begin(), groups.end());
  return ints;
}

/// The kernel code of ReduceKind/SCE reductions as plan.fbs lays them out.
int64_t reductionCode(StringRef reduction) {
  return reduction == "none" ? 0 : reduction == "sum" ? 1 : 2;
}

LogicalResult Emitter::lower(Operation *op) {
  InstructionDesc inst;
  inst.name = locationName(op->getLoc());
  for (Value operand : op->getOperands())
    inst.inputs.push_back(operandBuffer(operand));
  for (Value result : op->getResults())
    inst.outputs.push_back(bufferOf(result));
  auto lossAttrs = [&](StringRef reduction, std::optional<int64_t> ignore) {
    inst.ints = {reductionCode(reduction), ignore.has_value(), ignore.value_or(0)};
  };
  bool known =
      llvm::TypeSwitch<Operation *, bool>(op)
          .Case([&](nn::AddOp) { return inst.kernel = Kernel::Add, true; })
          .Case([&](nn::SubOp) { return inst.kernel = Kernel::Sub, true; })
          .Case([&](nn::MulOp) { return inst.kernel = Kernel::Mul, true; })
          .Case([&](nn::DivOp) { return inst.kernel = Kernel::Div, true; })
          .Case([&](nn::PowOp) { return inst.kernel = Kernel::Pow, true; })
          .Case([&](nn::WhereOp) { return inst.kernel = Kernel::Where, true; })
          .Case([&](nn::NegOp) { return inst.kernel = Kernel::Neg, true; })
          .Case([&](nn::ReluOp) { return inst.kernel = Kernel::Relu, true; })
          .Case([&](nn::ExpOp) { return inst.kernel = Kernel::Exp, true; })
          .Case([&](nn::LogOp) { return inst.kernel = Kernel::Log, true; })
          .Case([&](nn::SqrtOp) { return inst.kernel = Kernel::Sqrt, true; })
          .Case([&](nn::ErfOp) { return inst.kernel = Kernel::Erf, true; })
          .Case([&](nn::TanhOp) { return inst.kernel = Kernel::Tanh, true; })
          .Case([&](nn::SigmoidOp) { return inst.kernel = Kernel::Sigmoid, true; })
          .Case([&](nn::NotOp) { return inst.kernel = Kernel::Not, true; })
          .Case([&](nn::CastOp) { return inst.kernel = Kernel::Cast, true; })
          .Case([&](nn::MatMulOp m) {
            inst.kernel = Kernel::MatMul;
            auto folded = [&](Value v) -> int64_t {
              Operation *def = v.getDefiningOp();
              return def && views.foldedTransposes.count(def);
            };
            if (folded(m.getLhs()) || folded(m.getRhs()))
              inst.ints = {folded(m.getLhs()), folded(m.getRhs())}; // trans_a, trans_b
            return true;
          })
          .Case([&](nn::GemmOp g) {
            inst.kernel = Kernel::Gemm;
            if (!g.getC())
              inst.inputs.push_back(rt::kNoBuffer);
            inst.ints = {g.getTransA(), g.getTransB()};
            inst.floats = {g.getAlpha().convertToFloat(), g.getBeta().convertToFloat()};
            return true;
          })
          .Case([&](nn::SoftmaxOp s) {
            inst.kernel = Kernel::Softmax;
            inst.ints = {static_cast<int64_t>(s.getAxis())};
            return true;
          })
          .Case([&](nn::LogSoftmaxOp s) {
            inst.kernel = Kernel::LogSoftmax;
            inst.ints = {static_cast<int64_t>(s.getAxis())};
            return true;
          })
          .Case([&](nn::LayerNormOp l) {
            inst.kernel = Kernel::LayerNorm;
            if (!l.getBias())
              inst.inputs.push_back(rt::kNoBuffer);
            inst.ints = {static_cast<int64_t>(l.getAxis())};
            inst.floats = {l.getEpsilon().convertToFloat()};
            return true;
          })
          .Case([&](nn::ReduceSumOp r) {
            inst.kernel = Kernel::ReduceSum;
            inst.ints.assign(r.getAxes().begin(), r.getAxes().end());
            return true;
          })
          .Case([&](nn::ReduceMaxOp r) {
            inst.kernel = Kernel::ReduceMax;
            inst.ints.assign(r.getAxes().begin(), r.getAxes().end());
            return true;
          })
          .Case([&](nn::ReduceMeanOp r) {
            inst.kernel = Kernel::ReduceMean;
            inst.ints.assign(r.getAxes().begin(), r.getAxes().end());
            return true;
          })
          .Case([&](nn::SoftmaxCrossEntropyOp s) {
            inst.kernel = Kernel::SoftmaxCrossEntropy;
            if (!s.getWeights())
              inst.inputs.push_back(rt::kNoBuffer);
            lossAttrs(s.getReduction(), s.getIgnoreIndex());
            return true;
          })
          .Case([&](nn::NllLossOp s) {
            inst.kernel = Kernel::NllLoss;
            if (!s.getWeight())
              inst.inputs.push_back(rt::kNoBuffer);
            lossAttrs(s.getReduction(), s.getIgnoreIndex());
            return true;
          })
          .Case([&](nn::ReshapeOp) { return inst.kernel = Kernel::Copy, true; })
          .Case([&](dist::ToDeviceOp) { return inst.kernel = Kernel::Copy, true; })
          .Case([&](dist::ToHostOp) { return inst.kernel = Kernel::Copy, true; })
          .Case([&](nn::TransposeOp t) {
            inst.kernel = Kernel::Transpose;
            inst.ints.assign(t.getPerm().begin(), t.getPerm().end());
            return true;
          })
          .Case([&](nn::ConcatOp c) {
            inst.kernel = Kernel::Concat;
            inst.ints = {static_cast<int64_t>(c.getAxis())};
            return true;
          })
          .Case([&](nn::SplitOp s) {
            inst.kernel = Kernel::Split;
            inst.ints = {static_cast<int64_t>(s.getAxis())};
            return true;
          })
          .Case([&](nn::SliceOp s) {
            inst.kernel = Kernel::Slice;
            inst.ints.assign(s.getStarts().begin(), s.getStarts().end());
            inst.ints.insert(inst.ints.end(), s.getSteps().begin(), s.getSteps().end());
            return true;
          })
          .Case([&](nn::ExpandOp) { return inst.kernel = Kernel::Expand, true; })
          .Case([&](nn::GatherOp g) {
            inst.kernel = Kernel::Gather;
            inst.ints = {static_cast<int64_t>(g.getAxis())};
            return true;
          })
          .Case([&](nn::TriluOp t) {
            inst.kernel = Kernel::Trilu;
            inst.ints = {t.getUpper(), static_cast<int64_t>(t.getK())};
            return true;
          })
          .Case([&](nn::DropoutOp d) {
            inst.kernel = Kernel::Dropout;
            inst.ints = {d.getTraining(), static_cast<int64_t>(d.getSeed().value_or(0))};
            inst.floats = {d.getRatio().convertToFloat()};
            return true;
          })
          .Case([&](nn::ReluGradOp) { return inst.kernel = Kernel::ReluGrad, true; })
          .Case([&](nn::ErfGradOp) { return inst.kernel = Kernel::ErfGrad, true; })
          .Case([&](nn::TanhGradOp) { return inst.kernel = Kernel::TanhGrad, true; })
          .Case([&](nn::SigmoidGradOp) { return inst.kernel = Kernel::SigmoidGrad, true; })
          .Case([&](nn::SoftmaxGradOp s) {
            inst.kernel = Kernel::SoftmaxGrad;
            inst.ints = {static_cast<int64_t>(s.getAxis())};
            return true;
          })
          .Case([&](nn::LogSoftmaxGradOp s) {
            inst.kernel = Kernel::LogSoftmaxGrad;
            inst.ints = {static_cast<int64_t>(s.getAxis())};
            return true;
          })
          .Case([&](nn::LayerNormGradOp l) {
            inst.kernel = Kernel::LayerNormGrad;
            inst.ints = {static_cast<int64_t>(l.getAxis())};
            return true;
          })
          .Case([&](nn::GatherGradOp g) {
            inst.kernel = Kernel::GatherGrad;
            inst.ints = {static_cast<int64_t>(g.getAxis())};
            return true;
          })
          .Case([&](nn::SliceGradOp s) {
            inst.kernel = Kernel::SliceGrad;
            inst.ints.assign(s.getStarts().begin(), s.getStarts().end());
            inst.ints.insert(inst.ints.end(), s.getSteps().begin(), s.getSteps().end());
            return true;
          })
          .Case([&](nn::SoftmaxCrossEntropyGradOp s) {
            // Operands in kernel order: log_prob, labels, weights, dloss.
            inst.kernel = Kernel::SoftmaxCrossEntropyGrad;
            inst.inputs = {bufferOf(s.getLogProb()), bufferOf(s.getLabels()),
                           bufferOf(s.getWeights()), bufferOf(s.getLossGrad())};
            lossAttrs(s.getReduction(), s.getIgnoreIndex());
            return true;
          })
          .Case([&](nn::NllLossGradOp s) {
            inst.kernel = Kernel::NllLossGrad;
            inst.inputs = {bufferOf(s.getTarget()), bufferOf(s.getWeight()),
                           bufferOf(s.getLossGrad())};
            lossAttrs(s.getReduction(), s.getIgnoreIndex());
            return true;
          })
          .Case([&](nn::ReduceMaxGradOp r) {
            inst.kernel = Kernel::ReduceMaxGrad;
            inst.ints.assign(r.getAxes().begin(), r.getAxes().end());
            return true;
          })
          .Case([&](nn::DropoutGradOp d) {
            inst.kernel = Kernel::DropoutGrad;
            inst.floats = {d.getRatio().convertToFloat()};
            return true;
          })
          .Case([&](nn::AdamWOp a) {
            inst.kernel = Kernel::AdamW;
            inst.floats = {static_cast<float>(a.getBeta1().convertToDouble()),
                           static_cast<float>(a.getBeta2().convertToDouble()),
                           static_cast<float>(a.getEps().convertToDouble()),
                           static_cast<float>(a.getWeightDecay().convertToDouble())};
            return true;
          })
          .Case([&](nn::SgdOp s) {
            // Operands in kernel order: param, grad, momentum_buffer, lr.
            inst.kernel = Kernel::Sgd;
            inst.inputs = {bufferOf(s.getParam()), bufferOf(s.getGrad()),
                           bufferOf(s.getMomentumBuffer()), bufferOf(s.getLr())};
            inst.ints = {s.getNesterov()};
            inst.floats = {static_cast<float>(s.getMomentum().convertToDouble()),
                           static_cast<float>(s.getWeightDecay().convertToDouble())};
            return true;
          })
          .Case([&](dist::AllGatherOp c) {
            inst.kernel = Kernel::AllGather;
            inst.ints = collectiveInts(std::nullopt, c.getGroupSize(), c.getGroups());
            return true;
          })
          .Case([&](dist::ReduceScatterOp c) {
            inst.kernel = Kernel::ReduceScatter;
            inst.ints = collectiveInts(c.getReduction(), c.getGroupSize(), c.getGroups());
            return true;
          })
          .Case([&](dist::AllReduceOp c) {
            inst.kernel = Kernel::AllReduce;
            inst.ints = collectiveInts(c.getReduction(), c.getGroupSize(), c.getGroups());
            return true;
          })
          .Case([&](dist::FlattenOp f) {
            inst.kernel = Kernel::Flatten;
            inst.ints.assign(f.getOffsets().begin(), f.getOffsets().end());
            return true;
          })
          .Case([&](nn::FusedOp f) {
            inst.kernel = Kernel::Fused;
            inst.ints = {static_cast<int64_t>(f.getProgram().size() / 3)};
            inst.ints.insert(inst.ints.end(), f.getProgram().begin(), f.getProgram().end());
            inst.ints.insert(inst.ints.end(), f.getResultsOf().begin(), f.getResultsOf().end());
            return true;
          })
          .Default([](Operation *) { return false; });
  if (!known)
    return op->emitOpError("has no runtime kernel");
  instructions.push_back(std::move(inst));
  return success();
}

/// The parameter and unit tables. An unsharded step has one root unit
/// holding every parameter in its own buffer; a sharded one has a unit per
/// flat-parameter shard argument (its fsdp.unit description) and keeps the
/// parameters without an update replicated, outside every unit.
LogicalResult Emitter::buildParameterTable() {
  const bool sharded = !units.empty();
  uint64_t flatOffset = 0;
  for (const auto &[name, index] : params) {
    const BufferDesc &d = descs[index];
    paramTable.push_back({name, d.dtype, d.shape, index, sharded ? rt::kNoBuffer : 0,
                          sharded ? 0 : flatOffset});
    flatOffset += d.size / rt::dtypeSize(d.dtype);
  }
  if (!sharded) {
    if (!params.empty())
      unitTable.push_back({"root", flatOffset, flatOffset, flatOffset});
    return success();
  }
  for (const auto &[unit, index] : units) {
    UnitEntry u;
    u.name = unit.getAs<StringAttr>("name").str();
    u.flatNumel = unit.getAs<IntegerAttr>("flat_numel").getInt();
    u.paddedNumel = unit.getAs<IntegerAttr>("padded_numel").getInt();
    u.groupSize = unit.getAs<IntegerAttr>("group_size").getInt();
    u.shardNumel = u.paddedNumel / std::max<uint64_t>(u.groupSize, 1);
    u.shardBuffer = index;
    u.dtype = descs[index].dtype;
    if (auto gathered = gatheredBufferOf.find(index); gathered != gatheredBufferOf.end())
      u.gatheredBuffer = gathered->second;
    for (Attribute a : unit.getAs<ArrayAttr>("params")) {
      auto p = cast<DictionaryAttr>(a);
      auto type = cast<RankedTensorType>(p.getAs<TypeAttr>("type").getValue());
      std::optional<rt::DType> dtype = dtypeOf(type.getElementType());
      if (!dtype)
        return func.emitError("unit '") << u.name << "' holds a parameter of type " << type;
      paramTable.push_back({p.getAs<StringAttr>("name").str(), *dtype,
                            {type.getShape().begin(), type.getShape().end()}, rt::kNoBuffer,
                            static_cast<uint32_t>(unitTable.size()),
                            static_cast<uint64_t>(p.getAs<IntegerAttr>("offset").getInt())});
    }
    unitTable.push_back(std::move(u));
  }
  return success();
}

LogicalResult Emitter::writeWeights(const WeightLookup &weights, uint64_t &hash) {
  // The full values under the model's names, sharded or not: each rank
  // takes its own slice at load time.
  std::vector<rt::NamedTensor> named;
  for (const ParamEntry &param : paramTable) {
    const std::string &name = param.name;
    std::optional<rt::TensorRef> value = weights(name);
    if (!value)
      return func.emitError("parameter '") << name << "' has no initial value in the source model";
    if (value->dtype != param.dtype ||
        ArrayRef<int64_t>(value->dims, value->rank) != ArrayRef<int64_t>(param.shape))
      return func.emitError("initial value of parameter '") << name << "' does not match its type";
    named.push_back({name, *value});
  }
  rt::Status status = rt::writeSafetensors(weightsPathFor(options.planPath), named,
                                           {{"producer", "fsdp-opt"}}, &hash);
  if (!status.isOk())
    return func.emitError(status.message());
  return success();
}

/// Arguments live for the whole run: parameters, graph inputs, optimizer
/// state, and the learning-rate and step scalars the runtime writes.
/// A unit's shard gets a persistent buffer of its own, or, when the unit
/// is gathered once by a persistent all-gather, the gathered buffer is
/// placed and the shard is this rank's chunk of it (a rank-strided view):
/// the unit's parameters are held once rather than twice.
FailureOr<uint32_t> Emitter::placeShard(BlockArgument arg, DictionaryAttr unit,
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
  BufferDesc chunk = descs[*gathered];
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
  const uint32_t index = descs.size();
  buffers[arg] = index;
  descs.push_back(std::move(chunk));
  gatheredBufferOf[index] = *gathered;
  return index;
}

/// Arguments persist across steps: in device memory, or in host memory
/// when the offload stage marked them (fsdp.host).
plan::Region Emitter::regionOf(BlockArgument arg) {
  return func.getArgAttr(arg.getArgNumber(), dist::kHostAttr) ? plan::Region::Host
                                                       : plan::Region::Persistent;
}

LogicalResult Emitter::placeArguments(Block &body) {
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto param = func.getArgAttrOfType<StringAttr>(i, nn::kParamAttr);
    auto input = func.getArgAttrOfType<StringAttr>(i, nn::kInputAttr);
    auto stateName = func.getArgAttrOfType<StringAttr>(i, nn::kStateAttr);
    auto unit = func.getArgAttrOfType<DictionaryAttr>(i, dist::kUnitAttr);
    bool lr = static_cast<bool>(func.getArgAttr(i, nn::kLrAttr));
    bool step = static_cast<bool>(func.getArgAttr(i, nn::kStepAttr));
    std::string name = param       ? param.str()
                       : unit      ? unit.getAs<StringAttr>("name").str()
                       : input     ? input.str()
                       : stateName ? stateName.str()
                       : lr        ? "lr"
                       : step      ? "step"
                                   : "arg" + std::to_string(i);
    FailureOr<uint32_t> index = unit ? placeShard(arg, unit, name)
                                     : addBuffer(arg, name, regionOf(arg));
    if (failed(index))
      return failure();
    if (param)
      params.emplace_back(name, *index);
    else if (unit)
      units.push_back({unit, *index});
    else if (stateName)
      state.emplace_back(name, *index);
    else if (lr)
      lrBuffer = *index;
    else if (step)
      stepBuffer = *index;
    else
      inputs.emplace_back(name, *index);
  }
  return success();
}

/// A result marked `nn.update = NAME` takes over the buffer of the
/// argument NAME (a parameter or optimizer state). That is safe only when
/// the op producing it is an optimizer update (which reads each element
/// before writing it) and no op after it reads the old value.
LogicalResult Emitter::findInPlaceUpdates(Block &body,
                                          const BufferViews &views) {
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
      return func.emitError("result ")
             << i << " updates '" << name.getValue()
             << "' but is not an optimizer update that reads it last; it cannot be written in place";
    if (value.getType() != arg->second.getType())
      return func.emitError("result ") << i << " changes the type of '" << name.getValue() << "'";
    // A shard held inside its gathered buffer is overwritten under every
    // reader of that buffer's other views too.
    if (Value full = persistentGather.lookup(arg->second))
      if (Operation *last = views.lastUse.lookup(full); last && !last->isBeforeInBlock(def))
        return func.emitError("result ")
               << i << " updates '" << name.getValue()
               << "' in place before the last read of its gathered buffer";
    inPlace[value] = buffers.lookup(arg->second);
  }
  return success();
}

LogicalResult Emitter::run(const WeightLookup &weights, EmittedPlan &result) {
  Block &body = func.getBody().front();
  if (failed(placeArguments(body)))
    return failure();
  // Returned op results are written straight into persistent output
  // buffers; anything else returned (an argument, a constant, a value
  // returned twice) is copied there by an extra instruction.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::DenseMap<Value, std::string> outputName;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
    std::string n = name ? name.str() : "result" + std::to_string(i);
    if (func.getResultAttr(i, nn::kUpdateAttr))
      continue;
    if (value.getDefiningOp() && !isa<nn::ConstantOp>(value.getDefiningOp()) &&
        !outputName.count(value))
      outputName[value] = n;
  }
  // Views (reshapes, transposes folded into matmuls) and the last use of
  // every buffer's owner over all its views.
  llvm::DenseSet<Value> ownBuffer;
  for (auto &[value, name] : outputName)
    ownBuffer.insert(value);
  views = findBufferViews(body, ownBuffer);
  if (failed(findInPlaceUpdates(body, views)))
    return failure();
  streams = findStreamOrder(body, views);
  auto &asyncOps = streams.collectives;
  auto &heldUntil = streams.heldUntil;
  // Both by the op they happen at, in the orders walked before (asking
  // every collective and every held owner at every op would be quadratic
  // in the length of the step): the collectives each compute op waits
  // for, and the owners released after each op.
  llvm::DenseMap<Operation *, SmallVector<Operation *>> waitsAt;
  for (auto &[c, async] : asyncOps)
    if (async.waiter)
      waitsAt[async.waiter].push_back(c);
  llvm::DenseMap<Operation *, SmallVector<Value>> releasedAt;
  for (auto &[owner, until] : heldUntil)
    if (until)
      releasedAt[until].push_back(owner);
  // Stream order: the last compute instruction so far, and the event the
  // communication stream last waited for (a later collective needs no
  // second wait on it, the stream runs in order).
  std::optional<size_t> lastCompute;
  int64_t commWaited = -1;
  for (Operation &op : body.without_terminator()) {
    if (views.foldedTransposes.count(&op))
      continue; // read in place by its matmuls
    if (views.aliasedReshapes.count(&op)) {
      addView(op.getResult(0), op.getOperand(0), 0, locationName(op.getLoc()));
      continue;
    }
    if (auto slice = views.contiguousSlices.find(&op); slice != views.contiguousSlices.end()) {
      addView(op.getResult(0), op.getOperand(0), slice->second, locationName(op.getLoc()));
      continue;
    }
    if (auto view = dyn_cast<dist::FlatViewOp>(op); view && views.flatViews.count(&op)) {
      addView(view.getResult(), view.getFlat(), view.getOffset(), locationName(op.getLoc()));
      continue;
    }
    if (auto constant = dyn_cast<nn::ConstantOp>(op)) {
      if (failed(placeConstant(constant)))
        return failure();
      continue;
    }
    for (Value r : op.getResults()) {
      if (auto target = inPlace.find(r); target != inPlace.end()) {
        buffers[r] = target->second;
        continue;
      }
      auto out = outputName.find(r);
      FailureOr<uint32_t> index =
          out != outputName.end()
              ? addBuffer(r, out->second, plan::Region::Persistent)
              : addBuffer(r, locationName(op.getLoc()),
                          // A gradient shard copied to the host stays there
                          // (host memory holds its shard, grads and state).
                          isa<dist::ToHostOp>(op) ? plan::Region::Host : plan::Region::Arena);
      if (failed(index))
        return failure();
      if (out != outputName.end())
        outputs.emplace_back(out->second, *index);
    }
    if (failed(lower(&op)))
      return failure();
    InstructionDesc &inst = instructions.back();
    if (auto async = asyncOps.find(&op); async != asyncOps.end()) {
      inst.stream = dist::kCommStream;
      asyncInstruction[&op] = instructions.size() - 1;
      if (lastCompute) {
        uint32_t event = eventOf(instructions[*lastCompute]);
        if (static_cast<int64_t>(event) != commWaited)
          inst.waits.push_back(event);
        commWaited = event;
      }
    } else {
      lastCompute = instructions.size() - 1;
      for (Operation *c : waitsAt.lookup(&op))
        inst.waits.push_back(eventOf(instructions[asyncInstruction.lookup(c)]));
    }
    // Release arena buffers whose last use this op was, and results nobody
    // reads (LayerNorm's statistics in a forward plan); what an async
    // collective still uses goes when it is waited for.
    auto releaseOwner = [&](Value owner) {
      auto it = buffers.find(owner);
      if (it != buffers.end() && descs[it->second].region == plan::Region::Arena)
        arena.release(descs[it->second].offset);
    };
    auto releaseIfDead = [&](Value v, bool unused) {
      Value owner = views.rootOf(v);
      if (heldUntil.count(owner))
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
  // Copies of returned values read collective results only once done: the
  // first waits for every collective nothing else waited for.
  bool waitedForAll = false;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    if (inPlace.count(value))
      continue; // a parameter or state update, already in its argument's buffer
    auto name = func.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
    std::string n = name ? name.str() : "result" + std::to_string(i);
    auto it = outputName.find(value);
    if (it != outputName.end() && it->second == n)
      continue; // written in place above
    uint32_t source = bufferOf(value);
    BufferDesc copy = descs[source];
    copy.name = n;
    copy.region = plan::Region::Persistent;
    copy.offset = persistentTop;
    persistentTop += ArenaAllocator::align(std::max<uint64_t>(copy.size, 1));
    descs.push_back(copy);
    uint32_t target = descs.size() - 1;
    std::vector<uint32_t> waits;
    for (auto &[c, async] : asyncOps)
      if (!async.waiter && !waitedForAll)
        waits.push_back(eventOf(instructions[asyncInstruction.lookup(c)]));
    waitedForAll = true;
    instructions.push_back({Kernel::Copy, {source}, {target}, {}, {}, n});
    instructions.back().waits = std::move(waits);
    outputs.emplace_back(n, target);
  }

  // In memory (a report) the plan needs no weights: a model planned
  // without its weight files on disk still gets its numbers.
  if (failed(buildParameterTable()))
    return failure();
  const bool hasWeights = !paramTable.empty();
  uint64_t weightsHash = 0;
  if (!options.planBytes && hasWeights && failed(writeWeights(weights, weightsHash)))
    return failure();

  flatbuffers::FlatBufferBuilder fbb(1 << 16);
  // Every lifetime is known: place the arena and resolve the virtual
  // offsets of arena buffers and of the views inside them.
  arena.finalize();
  for (BufferDesc &d : descs)
    if (d.region == plan::Region::Arena)
      d.offset = arena.resolve(d.offset);
  std::vector<flatbuffers::Offset<plan::Buffer>> fbBuffers;
  for (const BufferDesc &d : descs)
    fbBuffers.push_back(plan::CreateBuffer(fbb, fbb.CreateString(d.name),
                                           static_cast<plan::DType>(d.dtype),
                                           fbb.CreateVector(d.shape), d.region, d.offset, d.size,
                                           d.rankStride, d.rankGroup));
  std::vector<flatbuffers::Offset<plan::Instruction>> fbInstructions;
  for (const InstructionDesc &i : instructions)
    fbInstructions.push_back(plan::CreateInstruction(
        fbb, i.kernel, fbb.CreateVector(i.inputs), fbb.CreateVector(i.outputs),
        fbb.CreateVector(i.ints), fbb.CreateVector(i.floats), i.stream, fbb.CreateString(i.name),
        fbb.CreateVector(i.waits), i.signal));
  std::vector<flatbuffers::Offset<plan::Parameter>> fbParams;
  for (const ParamEntry &p : paramTable)
    fbParams.push_back(plan::CreateParameter(fbb, fbb.CreateString(p.name),
                                             static_cast<plan::DType>(p.dtype),
                                             fbb.CreateVector(p.shape), p.buffer, p.unit,
                                             p.flatOffset));
  std::vector<flatbuffers::Offset<plan::Unit>> fbUnits;
  for (const UnitEntry &u : unitTable)
    fbUnits.push_back(plan::CreateUnit(fbb, fbb.CreateString(u.name), u.flatNumel,
                                       u.paddedNumel, u.shardNumel, u.shardBuffer, u.groupSize,
                                       static_cast<plan::DType>(u.dtype), u.gatheredBuffer));
  auto bindings = [&](const std::vector<std::pair<std::string, uint32_t>> &list) {
    std::vector<flatbuffers::Offset<plan::Binding>> out;
    for (const auto &[name, index] : list)
      out.push_back(plan::CreateBinding(fbb, fbb.CreateString(name), index));
    return fbb.CreateVector(out);
  };
  auto fbInputs = bindings(inputs), fbOutputs = bindings(outputs), fbState = bindings(state);
  fbb.ForceVectorAlignment(constantData.size(), 1, rt::kBufferAlignment);
  auto fbConstants = fbb.CreateVector(constantData);
  auto source = func->getParentOfType<ModuleOp>()->getAttrOfType<StringAttr>(nn::kSourceAttr);
  std::string weightsName = weightsPathFor(options.planPath);
  weightsName = weightsName.substr(weightsName.find_last_of('/') + 1);
  uint64_t arenaBytes = ArenaAllocator::align(arena.peak());
  auto root = plan::CreatePlan(
      fbb, rt::kPlanFormatVersion, fbb.CreateString("fsdp-opt"),
      fbb.CreateString(source ? source.str() : ""), fbb.CreateString(options.mode),
      options.worldSize, fbb.CreateVector(fbBuffers), fbb.CreateVector(fbInstructions),
      fbb.CreateVector(fbParams), fbb.CreateVector(fbUnits), fbInputs, fbOutputs, persistentTop,
      arenaBytes, asyncOps.empty() ? 1 : 2, fbConstants,
      fbb.CreateString(hasWeights ? weightsName : ""), weightsHash, numEvents, fbState, lrBuffer, stepBuffer,
      fbb.CreateString(options.mode == "train" && !outputs.empty() ? outputs.front().first : ""),
      fbb.CreateString(options.optimizer), options.baseLr, fbb.CreateString(options.strategy),
      fbb.CreateString(options.strategy.empty() ? "" : options.paramDtype),
      fbb.CreateString(options.strategy.empty() ? "" : options.reduceDtype), hostTop);
  plan::FinishPlanBuffer(fbb, root);
  if (options.planBytes) {
    options.planBytes->assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  } else {
    rt::Status status =
        rt::writePlanFile(options.planPath, fbb.GetBufferPointer(), fbb.GetSize());
    if (!status.isOk())
      return func.emitError(status.message());
  }

  result.weightsPath = !hasWeights || options.planBytes ? "" : weightsPathFor(options.planPath);
  result.persistentBytes = persistentTop;
  result.arenaBytes = arenaBytes;
  result.arenaLowerBound = arena.peakLive();
  result.constantBytes = constantData.size();
  result.instructions = instructions.size();
  result.buffers = descs.size();
  return success();
}

} // namespace

std::string weightsPathFor(const std::string &planPath) {
  const std::string suffix = ".plan";
  if (planPath.size() > suffix.size() &&
      planPath.compare(planPath.size() - suffix.size(), suffix.size(), suffix) == 0)
    return planPath.substr(0, planPath.size() - suffix.size()) + ".safetensors";
  return planPath + ".safetensors";
}

FailureOr<EmittedPlan> emitPlan(ModuleOp module, const PlanEmitOptions &options,
                                const WeightLookup &weights) {
  StringRef name = options.mode == "train" ? "train_step" : "forward";
  func::FuncOp func = module.lookupSymbol<func::FuncOp>(name);
  if (!func || func.getBody().empty())
    return module.emitError("no @") << name << " function to emit";
  if (!func.getBody().hasOneBlock())
    return func.emitError("plans need a single-block function");
  if (auto sharded = module->getAttrOfType<IntegerAttr>(dist::kWorldSizeAttr))
    if (sharded.getInt() != static_cast<int64_t>(options.worldSize))
      return emitError(module.getLoc(), "the step was sharded for world size ")
             << sharded.getInt() << ", not " << options.worldSize
             << " (compile with --world-size=" << sharded.getInt() << ")";
  if (options.worldSize > 1 && !module->hasAttr(dist::kWorldSizeAttr))
    return emitError(module.getLoc(), "a plan for world size ")
           << options.worldSize << " needs a sharded step (run the shard stage)";
  EmittedPlan result;
  Emitter emitter(func, options);
  if (failed(emitter.run(weights, result)))
    return failure();
  return result;
}

} // namespace fsdp
