//===- TrainableParameters.h - the parameters a training step updates -----===//
//
// The checkpoint and shard stages both work unit by unit, and a unit is a
// group of the parameters the optimizer updates: the @train_step arguments
// marked nn.param whose name a result marked nn.update carries. Both read
// them here, in model (argument) order, which the wrap policy and the flat
// layout follow, so a checkpointed block and a shard unit are the same
// parameters.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_TRAINABLEPARAMETERS_H
#define FSDP_COMPILER_ANALYSIS_TRAINABLEPARAMETERS_H

#include "compiler/Analysis/WrapPolicy.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace fsdp {

struct TrainableParameter {
  std::string name;      // as in the source model
  mlir::BlockArgument arg;
  mlir::Value newValue;  // the returned update (an optimizer op's result)
};

/// The updated parameters of `step`, in argument order.
std::vector<TrainableParameter> trainableParameters(mlir::func::FuncOp step);

/// Their names and element counts, for formUnits.
std::vector<ParamInfo> wrapInfos(const std::vector<TrainableParameter> &params);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_TRAINABLEPARAMETERS_H
