//===- ApplyOptimizer.cpp - append the optimizer update to the train step -===//
//
// The updates go after the whole backward pass, so every read of a
// parameter (forward and backward) happens before it is overwritten; the
// plan emitter relies on that to update parameters and state in place.
// The learning rate is not baked in: it is an argument the runtime writes
// each step, so schedules need no recompile (the compiled --lr is recorded
// in the plan as the schedule's base).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ApplyOptimizer.h"

#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Regex.h"

using namespace mlir;

namespace fsdp {
namespace {

struct Update {
  std::string name;
  Value param, grad;
};

} // namespace

LogicalResult applyOptimizer(ModuleOp module, const OptimizerOptions &options) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("no @train_step to add the optimizer to (run autodiff first)");
  std::string why;
  if (!options.noDecayRegex.empty() && !llvm::Regex(options.noDecayRegex).isValid(why))
    return module.emitError("invalid --no-decay regex: ") << why;
  std::optional<llvm::Regex> noDecay;
  if (!options.noDecayRegex.empty())
    noDecay.emplace(options.noDecayRegex);

  Block &body = step.getBody().front();
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument arg : body.getArguments()) {
    if (step.getArgAttr(arg.getArgNumber(), nn::kStateAttr))
      return step.emitError("@train_step already has optimizer state");
    if (auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParamAttr))
      params[name.getValue()] = arg;
  }
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Update> updates;
  for (unsigned i = 1; i < step.getNumResults(); ++i) {
    auto name = step.getResultAttrOfType<StringAttr>(i, nn::kGradAttr);
    if (!name || !params.count(name.getValue()))
      return step.emitError("result ") << i << " is not the gradient of a parameter";
    updates.push_back({name.str(), params[name.getValue()], ret.getOperand(i)});
  }

  OpBuilder b(step.getContext());
  // New arguments are announced first and appended in one call: inserting
  // them one at a time rebuilds the function type each time, quadratic in
  // the number of parameters.
  SmallVector<Type> newTypes;
  SmallVector<DictionaryAttr> newAttrs;
  auto addArgument = [&](Type type, StringRef attr, Attribute value) {
    newTypes.push_back(type);
    newAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(attr, value)));
    return static_cast<unsigned>(newTypes.size() - 1);
  };
  auto namedState = [&](const Update &u, StringRef suffix) {
    std::string name = u.name + "." + suffix.str();
    return std::make_pair(addArgument(u.param.getType(), nn::kStateAttr, b.getStringAttr(name)),
                          name);
  };
  bool adam = options.kind == OptimizerKind::AdamW;
  bool momentum = !adam && options.momentum > 0.0;
  // State arguments, grouped per parameter in parameter order.
  SmallVector<SmallVector<std::pair<unsigned, std::string>, 2>> state(updates.size());
  for (auto [u, s] : llvm::zip(updates, state)) {
    if (adam) {
      s.push_back(namedState(u, "exp_avg"));
      s.push_back(namedState(u, "exp_avg_sq"));
    } else if (momentum) {
      s.push_back(namedState(u, "momentum_buffer"));
    }
  }
  unsigned lrIndex = addArgument(RankedTensorType::get({}, b.getF64Type()), nn::kLrAttr,
                                 b.getUnitAttr());
  std::optional<unsigned> stepIndex;
  if (adam)
    stepIndex = addArgument(RankedTensorType::get({}, b.getI64Type()), nn::kStepAttr,
                            b.getUnitAttr());
  const unsigned first = step.getNumArguments();
  step.insertArguments(SmallVector<unsigned>(newTypes.size(), first), newTypes, newAttrs,
                       SmallVector<Location>(newTypes.size(), step.getLoc()));
  auto argument = [&](unsigned k) -> Value { return body.getArgument(first + k); };
  Value lr = argument(lrIndex);
  Value stepNumber = stepIndex ? argument(*stepIndex) : Value();

  b.setInsertionPoint(ret);
  SmallVector<Value> results{ret.getOperand(0)};
  SmallVector<DictionaryAttr> attrs{step.getResultAttrDict(0) ? step.getResultAttrDict(0)
                                                              : b.getDictionaryAttr({})};
  SmallVector<std::pair<Value, std::string>> newState;
  auto updateAttr = [&](const std::string &name) {
    return b.getDictionaryAttr(b.getNamedAttr(nn::kUpdateAttr, b.getStringAttr(name)));
  };
  for (auto [u, s] : llvm::zip(updates, state)) {
    double decay = noDecay && noDecay->match(u.name) ? 0.0 : options.weightDecay;
    Location loc = NameLoc::get(b.getStringAttr("optimizer:" + u.name));
    if (adam) {
      auto op = b.create<nn::AdamWOp>(loc, u.param, u.grad, argument(s[0].first),
                                      argument(s[1].first), lr, stepNumber, /*found_inf=*/Value(),
                                      b.getF64FloatAttr(options.beta1),
                                      b.getF64FloatAttr(options.beta2),
                                      b.getF64FloatAttr(options.eps), b.getF64FloatAttr(decay));
      results.push_back(op.getNewParam());
      newState.push_back({op.getNewExpAvg(), s[0].second});
      newState.push_back({op.getNewExpAvgSq(), s[1].second});
    } else {
      Value buffer = momentum ? argument(s[0].first) : Value();
      SmallVector<Type> types{u.param.getType()};
      if (momentum)
        types.push_back(u.param.getType());
      auto op = b.create<nn::SgdOp>(loc, types, u.param, u.grad, lr, buffer, /*found_inf=*/Value(),
                                    b.getF64FloatAttr(options.momentum), b.getF64FloatAttr(decay),
                                    b.getBoolAttr(options.nesterov));
      results.push_back(op.getNewParam());
      if (momentum)
        newState.push_back({op.getNewMomentumBuffer(), s[0].second});
    }
    attrs.push_back(updateAttr(u.name));
  }
  for (auto &[value, name] : newState) {
    results.push_back(value);
    attrs.push_back(updateAttr(name));
  }
  setStepResults(step, results, attrs);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_APPLYOPTIMIZERPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct ApplyOptimizerPass : impl::ApplyOptimizerPassBase<ApplyOptimizerPass> {
  using Base::Base;
  void runOnOperation() final {
    OptimizerOptions o;
    o.kind = optimizer;
    o.beta1 = beta1;
    o.beta2 = beta2;
    o.eps = eps;
    o.weightDecay = weightDecay;
    o.momentum = momentum;
    o.nesterov = nesterov;
    o.noDecayRegex = noDecay;
    if (failed(applyOptimizer(getOperation(), o)))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
