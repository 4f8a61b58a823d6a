//===- ShardParameters.cpp - FSDP: flat-parameter units and collectives ---===//
//
// The rewrite works on one flat buffer (a "flat group") at a time:
//   1. Windows. Every use of a member parameter is a forward use (at or
//      before the op computing the loss) or a backward use. Under
//      --shard=full (and inside hybrid's shard groups) a non-root unit gets
//      one all-gather before its first forward use and another before its
//      first backward use; grad-op and the root unit get one gather before
//      the first use of all, in place when the copy is f32 (`persistent`:
//      the shard is this rank's chunk of a persistent gathered buffer, so
//      the unit is held once); --shard=none reads the replicated flat
//      buffer directly. Values the forward derives from parameters by pure views
//      (transposes, reshapes, slices) are re-derived from the backward
//      copy, so no backward op keeps the forward copy alive.
//      Under mixed precision (compiler/Transforms/MixedPrecision.cpp) the
//      forward reads each parameter through one nn.cast to the compute
//      dtype: such a unit is gathered in that dtype, its views have it, and
//      the casts, now of a value to its own type, disappear; a cast is
//      re-derived in the backward like a view.
//   2. Gradients. Right after the last of the group's gradients is
//      computed, they are packed into the flat layout and reduced, so each
//      unit's full-size gradients die as early as possible.
//   3. Optimizer. One update per flat group on the local shard replaces the
//      per-parameter updates, with the same operation and attributes;
//      optimizer state becomes per-group shard arguments.
// Correctness never depends on the windows (every copy holds the same
// values); they only decide memory. Release is implicit: a gathered buffer
// dies at its last reader, which the plan emitter's lifetimes turn into
// arena reuse.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShardParameters.h"

#include "compiler/Analysis/FlatLayout.h"
#include "compiler/Analysis/TrainableParameters.h"
#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/MixedPrecision.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/gradients/GradientBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/StringMap.h"

#include <map>

using namespace mlir;

namespace fsdp {

int64_t shardGroupSize(const ShardOptions &options) {
  switch (options.strategy) {
  case ShardOptions::Strategy::None: return 1;
  case ShardOptions::Strategy::Hybrid: return options.hybridGroupSize;
  default: return options.worldSize;
  }
}

int64_t parameterAlignment(Type element) {
  return std::max<int64_t>(1, 512 / element.getIntOrFloatBitWidth());
}

SmallVector<int64_t> consecutiveGroups(int64_t n) {
  SmallVector<int64_t> ranks;
  for (int64_t r = 0; r < n; ++r)
    ranks.push_back(r);
  return ranks;
}

namespace {

using Strategy = ShardOptions::Strategy;

/// A parameter the optimizer updates: what gets sharded.
struct Trainable {
  std::string name;
  BlockArgument arg;
  Operation *update; // nn.adamw or nn.sgd
};

/// Parameters of one unit that share an optimizer setting: one flat buffer.
struct FlatGroup {
  std::string name;
  bool root = false;
  SmallVector<size_t> members; // indices into the trainables, model order
  /// Values the forward derives from members by views alone (transposes,
  /// reshapes, slices), in program order, and the member or view each
  /// reads. Sources are recorded before any rewiring: rewiring the forward
  /// window replaces a view's member operand with a view of the gather.
  std::vector<Value> views;
  llvm::DenseMap<Value, Value> viewSource;
  FlatLayout layout;
  RankedTensorType shardType, flatType;
  BlockArgument shard;
  SmallVector<std::pair<std::string, BlockArgument>> state; // suffix, shard argument
  /// How the gathered copy is typed: `gather` is the collective's element
  /// type (the master's, or --param-dtype's); `view` the type the members
  /// are read in, which is `gather` when the forward computes in it
  /// (every use of every member a cast to it), else the master's (a step
  /// built without fsdp-mixed-precision: rounded through the dtype and
  /// widened back).
  Type gather, view;
};

/// Ranks 0..n-1 as groups of every `stride`-th rank ({0,2},{1,3}): the
/// replica groups across hybrid's shard groups.
SmallVector<int64_t> stridedGroups(int64_t n, int64_t stride) {
  SmallVector<int64_t> ranks;
  for (int64_t first = 0; first < stride; ++first)
    for (int64_t r = first; r < n; r += stride)
      ranks.push_back(r);
  return ranks;
}

/// The suffix of a state argument named "<param>.<suffix>".
StringRef stateSuffix(StringRef stateName, StringRef param) {
  return stateName.drop_front(param.size() + 1);
}

/// Whether the group is gathered once per step into a persistent buffer
/// holding its shard in place (fsdp.all_gather `persistent`): grad-op
/// units and the root unit, which are gathered once and whose copy lives
/// through the forward/backward turn where memory peaks anyway, so the
/// shard need not be held a second time. Not under bf16 or f16 parameters,
/// where the gathered copy has another type than the f32 master shard.
bool gathersInPlace(const FlatGroup &g, const ShardOptions &options) {
  return options.strategy != Strategy::None && options.paramDtype == DType::F32 &&
         (g.root || options.strategy == Strategy::GradOp);
}

class Sharder {
public:
  Sharder(func::FuncOp step, const ShardOptions &options)
      : step(step), options(options), body(step.getBody().front()), b(step.getContext()) {}
  LogicalResult run();

private:
  LogicalResult collectTrainables();
  void formGroups();
  void addArguments();
  void findForwardViews();
  void rewireUses(FlatGroup &g);
  Value gatherAt(FlatGroup &g, Operation *before, StringRef tag);
  Value reduceGradients(FlatGroup &g);
  Value collective(Location loc, StringRef kind, Value input, Type type,
                   ArrayRef<int64_t> groups, int64_t groupSize);
  Value castTo(Location loc, Value v, Type element);
  void chooseGatherTypes(FlatGroup &g, Type master);
  void foldIdentityCasts();
  /// bf16 or f16 for --param-dtype/--reduce-dtype's `dtype`; null for f32.
  Type lowPrecision(DType dtype) { return lowPrecisionType(b.getContext(), dtype); }
  Location loc(const FlatGroup &g, StringRef what) {
    return NameLoc::get(b.getStringAttr("fsdp:" + g.name + "." + what.str()));
  }
  unsigned position(Operation *op) const { return order.lookup(op); }

  func::FuncOp step;
  const ShardOptions &options;
  Block &body;
  OpBuilder b;
  SmallVector<Trainable> trainables;
  std::vector<FlatGroup> groups;
  llvm::StringMap<BlockArgument> stateArgs;
  llvm::DenseMap<Operation *, unsigned> order; // original program order
  unsigned boundary = 0;                       // position of the loss op
};

LogicalResult Sharder::collectTrainables() {
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    if (step.getArgAttr(i, dist::kUnitAttr))
      return step.emitError("@train_step is already sharded");
    if (auto name = step.getArgAttrOfType<StringAttr>(i, nn::kStateAttr))
      stateArgs[name.getValue()] = arg;
  }
  for (const TrainableParameter &p : trainableParameters(step)) {
    Operation *update = p.newValue.getDefiningOp();
    if (!update || !isa<nn::AdamWOp, nn::SgdOp>(update) || update->getOperand(0) != p.arg)
      return step.emitError("the update of parameter '")
             << p.name << "' is not an optimizer op on it (run fsdp-apply-optimizer)";
    if (!isa<FloatType>(cast<RankedTensorType>(p.arg.getType()).getElementType()))
      return step.emitError("parameter '") << p.name << "' is not a float tensor";
    trainables.push_back({p.name, p.arg, update});
  }
  if (trainables.empty())
    return step.emitError("no parameter has an optimizer update: nothing to shard");
  return success();
}

void Sharder::formGroups() {
  const int64_t shardRanks = shardGroupSize(options);
  // The same list collectTrainables validated, in the same order.
  std::vector<WrapUnit> units = formUnits(wrapInfos(trainableParameters(step)), options.wrap);
  for (auto [u, unit] : llvm::enumerate(units)) {
    // One flat buffer per (optimizer op, attributes, element type): a
    // FlatParameter has one optimizer setting (e.g. --no-decay splits).
    // Parameters --keep-f32 keeps are gathered in f32, apart from the rest.
    std::vector<std::tuple<OperationName, DictionaryAttr, Type, bool>> keys;
    std::map<size_t, SmallVector<size_t>> byKey;
    for (size_t p : unit.params) {
      Operation *update = trainables[p].update;
      bool kept = static_cast<bool>(
          step.getArgAttr(trainables[p].arg.getArgNumber(), nn::kKeepF32Attr));
      auto key = std::make_tuple(update->getName(), update->getAttrDictionary(),
                                 cast<RankedTensorType>(trainables[p].arg.getType()).getElementType(),
                                 kept);
      size_t k = std::find(keys.begin(), keys.end(), key) - keys.begin();
      if (k == keys.size())
        keys.push_back(key);
      byKey[k].push_back(p);
    }
    for (auto &[k, members] : byKey) {
      FlatGroup g;
      g.name = k == 0 ? unit.name : unit.name + ".group" + std::to_string(k);
      g.root = u == 0; // formUnits puts the root unit first
      g.members = members;
      Type element = std::get<2>(keys[k]);
      std::vector<int64_t> numels;
      for (size_t p : members)
        numels.push_back(cast<RankedTensorType>(trainables[p].arg.getType()).getNumElements());
      chooseGatherTypes(g, element);
      // Parameters viewed in the compute dtype start at that dtype's
      // alignment too (the plan's buffers are 64-byte aligned).
      int64_t align = std::max(parameterAlignment(element), parameterAlignment(g.view));
      bool alignShard = gathersInPlace(g, options) ||
                        (options.alignShards && options.strategy != Strategy::None);
      g.layout = computeFlatLayout(numels, shardRanks, align, alignShard);
      g.shardType = RankedTensorType::get({g.layout.shardNumel}, element);
      g.flatType = RankedTensorType::get({g.layout.paddedNumel}, element);
      groups.push_back(std::move(g));
    }
  }
}

void Sharder::addArguments() {
  // Every group's arguments in one insertion: each insertion rebuilds the
  // function type and argument attributes, so one per argument would be
  // quadratic in the number of units.
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  auto add = [&](const FlatGroup &g, StringRef attr, Attribute value) {
    indices.push_back(step.getNumArguments());
    types.push_back(g.shardType);
    attrs.push_back(b.getDictionaryAttr(b.getNamedAttr(attr, value)));
    locs.push_back(step.getLoc());
  };
  for (FlatGroup &g : groups) {
    SmallVector<Attribute> params;
    for (auto [i, p] : llvm::enumerate(g.members)) {
      const Trainable &t = trainables[p];
      params.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("name", b.getStringAttr(t.name)),
           b.getNamedAttr("offset", b.getI64IntegerAttr(g.layout.offsets[i])),
           b.getNamedAttr("type", TypeAttr::get(t.arg.getType()))}));
    }
    DictionaryAttr unit = b.getDictionaryAttr(
        {b.getNamedAttr("name", b.getStringAttr(g.name)),
         b.getNamedAttr("params", b.getArrayAttr(params)),
         b.getNamedAttr("flat_numel", b.getI64IntegerAttr(g.layout.flatNumel)),
         b.getNamedAttr("padded_numel", b.getI64IntegerAttr(g.layout.paddedNumel)),
         b.getNamedAttr("group_size", b.getI64IntegerAttr(shardGroupSize(options)))});
    add(g, dist::kUnitAttr, unit);
    // State shards mirror the state operands of the members' updates.
    const Trainable &first = trainables[g.members.front()];
    for (Value operand : first.update->getOperands()) {
      auto arg = dyn_cast<BlockArgument>(operand);
      if (!arg || arg.getOwner() != &body)
        continue;
      auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kStateAttr);
      if (!name)
        continue;
      std::string suffix = stateSuffix(name.getValue(), first.name).str();
      g.state.push_back({suffix, BlockArgument()});
      add(g, nn::kStateAttr, b.getStringAttr(g.name + "." + suffix));
    }
  }
  unsigned next = step.getNumArguments();
  step.insertArguments(indices, types, attrs, locs);
  for (FlatGroup &g : groups) {
    g.shard = body.getArgument(next++);
    for (auto &[suffix, arg] : g.state)
      arg = body.getArgument(next++);
  }
}

void Sharder::findForwardViews() {
  // One scan for all groups (a scan per group would be quadratic in the
  // number of units); each view belongs to its input's group.
  llvm::DenseMap<Value, FlatGroup *> groupOf;
  for (FlatGroup &g : groups)
    for (size_t p : g.members)
      groupOf[trainables[p].arg] = &g;
  for (Operation &op : body.without_terminator()) {
    if (position(&op) > boundary ||
        !isa<nn::TransposeOp, nn::ReshapeOp, nn::SliceOp, nn::CastOp>(op))
      continue;
    if (FlatGroup *g = groupOf.lookup(op.getOperand(0))) {
      groupOf[op.getResult(0)] = g;
      g->views.push_back(op.getResult(0));
      g->viewSource[op.getResult(0)] = op.getOperand(0);
    }
  }
}

void Sharder::chooseGatherTypes(FlatGroup &g, Type master) {
  g.gather = g.view = master;
  Type low = lowPrecision(options.paramDtype);
  if (!low || step.getArgAttr(trainables[g.members.front()].arg.getArgNumber(), nn::kKeepF32Attr))
    return;
  g.gather = low;
  bool computesLow = llvm::all_of(g.members, [&](size_t p) {
    return llvm::all_of(trainables[p].arg.getUsers(), [&](Operation *user) {
      auto castOp = dyn_cast<nn::CastOp>(user);
      return user == trainables[p].update ||
             (castOp && nn::elementTypeOfValue(castOp.getResult()) == low);
    });
  });
  g.view = computesLow ? low : master;
}

void Sharder::foldIdentityCasts() {
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    if (auto castOp = dyn_cast<nn::CastOp>(op); castOp && castOp.getInput().getType() == castOp.getType()) {
      castOp.getResult().replaceAllUsesWith(castOp.getInput());
      castOp.erase();
    }
}

Value Sharder::castTo(Location l, Value v, Type element) {
  auto type = cast<RankedTensorType>(v.getType());
  return b.create<nn::CastOp>(l, type.clone(element), v);
}

Value Sharder::collective(Location l, StringRef kind, Value input, Type type,
                          ArrayRef<int64_t> ranks, int64_t groupSize) {
  auto groupsAttr = b.getDenseI64ArrayAttr(ranks);
  auto sizeAttr = b.getI64IntegerAttr(groupSize);
  auto avg = b.getStringAttr("avg");
  if (kind == "all_gather")
    return b.create<dist::AllGatherOp>(l, type, input, groupsAttr, sizeAttr, UnitAttr());
  if (kind == "reduce_scatter")
    return b.create<dist::ReduceScatterOp>(l, type, input, groupsAttr, sizeAttr, avg);
  return b.create<dist::AllReduceOp>(l, type, input, groupsAttr, sizeAttr, avg);
}

/// The unit's full flat buffer, rebuilt before `before`: all-gathered from
/// the shards (through bf16 or f16 under mixed precision), or the
/// replicated buffer itself under --shard=none (rounded through the low
/// precision type at the step's start, so none computes with the values
/// full and grad-op gather).
Value Sharder::gatherAt(FlatGroup &g, Operation *before, StringRef tag) {
  Type master = g.shardType.getElementType();
  Type low = g.gather == master ? Type() : g.gather;
  const std::string toLow = tag.str() + ".to_" + dtypeText(options.paramDtype);
  if (options.strategy == Strategy::None) {
    if (!low)
      return g.shard;
    b.setInsertionPointToStart(&body);
    Value rounded = castTo(loc(g, toLow), g.shard, low);
    return g.view == low ? rounded : castTo(loc(g, tag.str() + ".to_compute"), rounded, master);
  }
  b.setInsertionPoint(before);
  Value shard = g.shard;
  if (low)
    shard = castTo(loc(g, toLow), shard, low);
  int64_t size = shardGroupSize(options);
  auto fullType = g.flatType.clone(cast<RankedTensorType>(shard.getType()).getElementType());
  Value full = collective(loc(g, tag.str() + ".all_gather"), "all_gather", shard, fullType,
                          consecutiveGroups(options.worldSize), size);
  if (low && g.view != low)
    full = castTo(loc(g, tag.str() + ".to_compute"), full, master);
  else if (!low && gathersInPlace(g, options))
    full.getDefiningOp()->setAttr("persistent", b.getUnitAttr());
  return full;
}

void Sharder::rewireUses(FlatGroup &g) {
  const bool split = !g.root && (options.strategy == Strategy::Full ||
                                 options.strategy == Strategy::Hybrid);
  auto isBackward = [&](Operation *op) { return position(op) > boundary; };

  // The members, then the values the forward derives from them by views.
  SmallVector<Value> derived;
  llvm::DenseMap<Value, size_t> memberIndex;
  for (auto [i, p] : llvm::enumerate(g.members)) {
    derived.push_back(trainables[p].arg);
    memberIndex[trainables[p].arg] = i;
  }
  derived.append(g.views.begin(), g.views.end());

  // The uses each window serves: 0 forward (or all), 1 backward.
  struct Window {
    SmallVector<OpOperand *> uses;
    Operation *first = nullptr;
  } windows[2];
  for (Value v : derived) {
    bool direct = memberIndex.count(v);
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (!order.count(user) || llvm::any_of(g.members, [&](size_t p) {
            return trainables[p].update == user;
          }))
        continue;
      int w = split && isBackward(user) ? 1 : 0;
      // Derived values serve the forward as they are; only backward uses
      // of them are re-derived (when the windows split).
      if (!direct && w == 0)
        continue;
      windows[w].uses.push_back(&use);
      if (!windows[w].first || position(user) < position(windows[w].first))
        windows[w].first = user;
    }
  }

  for (int w = 0; w < 2; ++w) {
    Window &window = windows[w];
    if (window.uses.empty())
      continue;
    Value full = gatherAt(g, window.first, w == 0 ? (split ? "forward" : "gather") : "backward");
    if (isa<BlockArgument>(full))
      b.setInsertionPointToStart(&body);
    else if (options.strategy == Strategy::None)
      b.setInsertionPointAfter(full.getDefiningOp()); // the rounded copy, at the start
    else
      b.setInsertionPoint(window.first);
    llvm::DenseMap<Value, Value> copy; // member or derived value -> this window's value
    std::function<Value(Value)> materialize = [&](Value v) -> Value {
      if (Value done = copy.lookup(v))
        return done;
      Value result;
      if (auto it = memberIndex.find(v); it != memberIndex.end()) {
        result = b.create<dist::FlatViewOp>(
            loc(g, "view." + trainables[g.members[it->second]].name),
            cast<RankedTensorType>(v.getType()).clone(g.view), full,
            b.getI64IntegerAttr(g.layout.offsets[it->second]));
      } else {
        Operation *def = v.getDefiningOp();
        Value source = materialize(g.viewSource.lookup(v));
        if (isa<nn::CastOp>(def) && source.getType() == v.getType()) {
          result = source; // the compute-dtype cast of a copy gathered in that dtype
        } else {
          IRMapping mapping;
          mapping.map(def->getOperand(0), source);
          Operation *clone = b.clone(*def, mapping);
          // A view of a copy gathered in the compute dtype has that dtype.
          for (OpResult r : clone->getResults())
            if (isa<nn::TransposeOp, nn::ReshapeOp, nn::SliceOp>(clone))
              r.setType(cast<RankedTensorType>(r.getType())
                            .clone(cast<RankedTensorType>(source.getType()).getElementType()));
          result = clone->getResult(cast<OpResult>(v).getResultNumber());
        }
      }
      copy[v] = result;
      return result;
    };
    for (OpOperand *use : window.uses)
      use->set(materialize(use->get()));
  }
}

/// Packs the group's gradients into its flat layout and reduces them to
/// this rank's gradient shard, right after the last of them is computed.
Value Sharder::reduceGradients(FlatGroup &g) {
  SmallVector<Value> grads;
  Operation *last = nullptr;
  for (size_t p : g.members) {
    Value grad = trainables[p].update->getOperand(1);
    grads.push_back(grad);
    Operation *def = grad.getDefiningOp();
    if (def && (!last || position(def) > position(last)))
      last = def;
  }
  if (last)
    b.setInsertionPointAfter(last);
  else
    b.setInsertionPointToStart(&body);
  Type master = g.shardType.getElementType();
  Value flat = b.create<dist::FlattenOp>(loc(g, "flatten_grads"), g.flatType, grads,
                                         b.getDenseI64ArrayAttr(g.layout.offsets));
  if (Type low = lowPrecision(options.reduceDtype))
    flat = castTo(loc(g, "grads_to_" + dtypeText(options.reduceDtype)), flat, low);
  Type reduceElement = cast<RankedTensorType>(flat.getType()).getElementType();
  const int64_t n = options.worldSize, shardRanks = shardGroupSize(options);
  Value reduced;
  if (options.strategy == Strategy::None) {
    reduced = collective(loc(g, "all_reduce_grads"), "all_reduce", flat, flat.getType(),
                         consecutiveGroups(n), n);
  } else {
    reduced = collective(loc(g, "reduce_scatter_grads"), "reduce_scatter", flat,
                         g.shardType.clone(reduceElement), consecutiveGroups(n), shardRanks);
    if (options.strategy == Strategy::Hybrid && n / shardRanks > 1)
      reduced = collective(loc(g, "all_reduce_replicas"), "all_reduce", reduced,
                           reduced.getType(), stridedGroups(n, shardRanks), n / shardRanks);
  }
  if (lowPrecision(options.reduceDtype))
    reduced = castTo(loc(g, "grads_to_master"), reduced, master);
  return reduced;
}

LogicalResult Sharder::run() {
  const int64_t n = options.worldSize, shardRanks = shardGroupSize(options);
  if (n < 1 || shardRanks < 1 || n % shardRanks != 0)
    return step.emitError("shard group size ")
           << shardRanks << " does not divide the world size " << n;
  if (failed(collectTrainables()))
    return failure();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (Operation &op : body)
    order[&op] = order.size();
  Operation *lossOp = ret.getOperand(0).getDefiningOp();
  boundary = lossOp ? position(lossOp) : 0;

  formGroups();
  addArguments();
  findForwardViews();
  SmallVector<Value> gradShards;
  for (FlatGroup &g : groups) {
    rewireUses(g);
    gradShards.push_back(reduceGradients(g));
  }
  if (llvm::any_of(groups, [](const FlatGroup &g) { return g.view != g.shardType.getElementType(); }))
    foldIdentityCasts();

  // One optimizer update per flat group, where the per-parameter ones were.
  b.setInsertionPoint(ret);
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> attrs;
  Value loss = ret.getOperand(0);
  if (n > 1)
    loss = collective(NameLoc::get(b.getStringAttr("fsdp:loss.all_reduce")), "all_reduce", loss,
                      loss.getType(), consecutiveGroups(n), n);
  results.push_back(loss);
  attrs.push_back(step.getResultAttrDict(0) ? step.getResultAttrDict(0) : b.getDictionaryAttr({}));
  // Results the sharding does not own (none today) are kept.
  llvm::DenseSet<Operation *> oldUpdates;
  for (const Trainable &t : trainables)
    oldUpdates.insert(t.update);
  for (unsigned i = 1; i < ret.getNumOperands(); ++i) {
    Operation *def = ret.getOperand(i).getDefiningOp();
    if (def && oldUpdates.count(def))
      continue;
    results.push_back(ret.getOperand(i));
    attrs.push_back(step.getResultAttrDict(i) ? step.getResultAttrDict(i) : b.getDictionaryAttr({}));
  }
  auto updateAttr = [&](const std::string &name) {
    return b.getDictionaryAttr(b.getNamedAttr(nn::kUpdateAttr, b.getStringAttr(name)));
  };
  SmallVector<std::pair<Value, std::string>> newState;
  for (auto [g, gradShard] : llvm::zip(groups, gradShards)) {
    const Trainable &first = trainables[g.members.front()];
    IRMapping mapping;
    mapping.map(first.update->getOperand(0), g.shard);
    mapping.map(first.update->getOperand(1), gradShard);
    for (auto &[suffix, arg] : g.state)
      mapping.map(stateArgs[first.name + "." + suffix], arg);
    Operation *update = b.clone(*first.update, mapping);
    update->setLoc(NameLoc::get(b.getStringAttr("optimizer:" + g.name)));
    for (OpResult r : update->getResults())
      r.setType(g.shardType);
    results.push_back(update->getResult(0));
    attrs.push_back(updateAttr(g.name));
    for (auto [k, s] : llvm::enumerate(g.state))
      newState.push_back({update->getResult(k + 1), g.name + "." + s.first});
  }
  for (auto &[value, name] : newState) {
    results.push_back(value);
    attrs.push_back(updateAttr(name));
  }
  b.create<func::ReturnOp>(ret.getLoc(), results);
  ret.erase();

  // The per-parameter updates, forward views left unread by the rewiring,
  // then the parameter and state arguments they were the last readers of.
  for (const Trainable &t : trainables)
    t.update->erase();
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.without_terminator())))
    if (isOpTriviallyDead(&op))
      op.erase();
  llvm::BitVector erase(step.getNumArguments());
  for (const Trainable &t : trainables)
    erase.set(t.arg.getArgNumber());
  for (auto &[name, arg] : stateArgs)
    if (arg.use_empty())
      erase.set(arg.getArgNumber()); // its only reader was a per-parameter update
  for (unsigned i : erase.set_bits())
    if (!body.getArgument(i).use_empty())
      return step.emitError("argument ") << i << " is still read after sharding";
  step.eraseArguments(erase);
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  step.setType(FunctionType::get(step.getContext(), step.getArgumentTypes(), types));
  step.setAllResultAttrs(attrs);
  // The plan must be emitted for the world the collectives were built for.
  step->getParentOfType<ModuleOp>()->setAttr(dist::kWorldSizeAttr, b.getI64IntegerAttr(n));
  return success();
}

} // namespace

LogicalResult shardParameters(ModuleOp module, const ShardOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to shard (run the train stage first)");
  if (!step.getBody().hasOneBlock())
    return step.emitError("sharding needs a single-block @train_step");
  module.getContext()->getOrLoadDialect<dist::FSDPDialect>();
  return Sharder(step, options).run();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_SHARDPARAMETERSPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

/// The wrap policy `wrap=` (and --wrap) spells.
WrapPolicy wrapPolicyFor(WrapKind kind, int64_t minParams, const std::string &regex) {
  WrapPolicy policy;
  switch (kind) {
  case WrapKind::Blocks: policy.kind = WrapPolicyKind::Blocks; break;
  case WrapKind::Size: policy.kind = WrapPolicyKind::Size; break;
  case WrapKind::Regex: policy.kind = WrapPolicyKind::Regex; break;
  }
  policy.minParams = minParams;
  policy.regex = regex;
  return policy;
}

struct ShardParametersPass : impl::ShardParametersPassBase<ShardParametersPass> {
  using Base::Base;
  void runOnOperation() final {
    // The rules fsdp-opt's flag checks apply to these values, with the
    // same messages (compiler/Pipelines/CompileOptions.h).
    std::string why = worldSize < 1 ? "world-size must be >= 1, not " + std::to_string(worldSize)
                      : shard.kind == ShardKind::Hybrid
                          ? checkHybridGroup(shard.hybridGroupSize, worldSize)
                          : "";
    if (!why.empty()) {
      getOperation().emitError(why);
      return signalPassFailure();
    }
    ShardOptions o;
    o.worldSize = worldSize;
    o.strategy = shard.kind;
    o.hybridGroupSize = shard.kind == ShardKind::Hybrid ? shard.hybridGroupSize : 0;
    o.wrap = wrapPolicyFor(wrap.kind, wrap.minParams, wrap.regex);
    o.paramDtype = paramDtype;
    o.reduceDtype = reduceDtype;
    o.alignShards = alignShards;
    if (failed(shardParameters(getOperation(), o)))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
