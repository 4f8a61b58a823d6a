//===- TrainableParameters.cpp - the parameters a training step updates ---===//
//
// One pass over the arguments (names of nn.param) and one over the results
// (nn.update names); argument numbers give the model order.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/TrainableParameters.h"

#include "dialects/nn/NNDialect.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace fsdp {

std::vector<TrainableParameter> trainableParameters(func::FuncOp step) {
  Block &body = step.getBody().front();
  llvm::StringMap<BlockArgument> params;
  for (BlockArgument arg : body.getArguments())
    if (auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kParamAttr))
      params[name.getValue()] = arg;
  std::vector<TrainableParameter> trainable;
  Operation *ret = body.getTerminator();
  for (unsigned i = 0; i < step.getNumResults(); ++i)
    if (auto name = step.getResultAttrOfType<StringAttr>(i, nn::kUpdateAttr))
      if (BlockArgument arg = params.lookup(name.getValue()))
        trainable.push_back({name.str(), arg, ret->getOperand(i)});
  llvm::sort(trainable, [](const TrainableParameter &a, const TrainableParameter &b) {
    return a.arg.getArgNumber() < b.arg.getArgNumber();
  });
  return trainable;
}

std::vector<ParamInfo> wrapInfos(const std::vector<TrainableParameter> &params) {
  std::vector<ParamInfo> infos;
  for (const TrainableParameter &p : params)
    infos.push_back({p.name, cast<ShapedType>(p.arg.getType()).getNumElements()});
  return infos;
}

} // namespace fsdp
