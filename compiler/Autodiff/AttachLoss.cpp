//===- AttachLoss.cpp - choose or attach the training loss ----------------===//
//
// A model without a usable loss is an error that lists the outputs it does
// have, so the user can write the --loss flag that fixes it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Autodiff/AttachLoss.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace fsdp {
namespace {

std::string outputName(func::FuncOp f, unsigned i) {
  auto name = f.getResultAttrOfType<StringAttr>(i, nn::kOutputAttr);
  return name ? name.str() : "result" + std::to_string(i);
}

/// "loss [] f32, logits [2, 16, 64] f32" for error messages.
std::string describeOutputs(func::FuncOp f) {
  std::string text;
  llvm::raw_string_ostream os(text);
  for (unsigned i = 0; i < f.getNumResults(); ++i) {
    auto type = cast<RankedTensorType>(f.getResultTypes()[i]);
    os << (i ? ", " : "") << outputName(f, i) << " " << nn::formatShape(type.getShape()) << " "
       << type.getElementType();
  }
  return text;
}

bool isScalarFloat(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.getNumElements() == 1 && isa<FloatType>(type.getElementType());
}

/// Makes `f` return only `loss`, as the output `name`.
void returnOnly(func::FuncOp f, Value loss, const std::string &name) {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  OpBuilder b(ret);
  b.create<func::ReturnOp>(ret.getLoc(), loss);
  ret.erase();
  f.setType(FunctionType::get(f.getContext(), f.getArgumentTypes(), {loss.getType()}));
  f.setResultAttrs(0, b.getDictionaryAttr(b.getNamedAttr(nn::kOutputAttr, b.getStringAttr(name))));
}

LogicalResult useModelLoss(func::FuncOp f) {
  SmallVector<unsigned> scalars;
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (isScalarFloat(f.getResultTypes()[i]))
      scalars.push_back(i);
  if (scalars.size() > 1)
    for (unsigned i : scalars)
      if (outputName(f, i) == "loss")
        scalars = {i};
  if (scalars.size() != 1)
    return f.emitError() << (scalars.empty() ? "the model has no scalar float output to train on"
                                             : "the model has several scalar outputs and none "
                                               "is named 'loss'")
                         << " (outputs: " << describeOutputs(f)
                         << "); choose or attach one with --loss=xent:OUTPUT[,LABELS]";
  Value loss = f.getBody().front().getTerminator()->getOperand(scalars[0]);
  returnOnly(f, loss, outputName(f, scalars[0]));
  return success();
}

LogicalResult attachCrossEntropy(func::FuncOp f, const LossSpec &spec) {
  std::optional<unsigned> index;
  for (unsigned i = 0; i < f.getNumResults(); ++i)
    if (outputName(f, i) == spec.output)
      index = i;
  if (!index)
    return f.emitError() << "--loss=xent: the model has no output '" << spec.output
                         << "' (outputs: " << describeOutputs(f) << ")";
  auto logitsType = cast<RankedTensorType>(f.getResultTypes()[*index]);
  if (logitsType.getRank() < 2 || !isa<FloatType>(logitsType.getElementType()))
    return f.emitError() << "--loss=xent: output '" << spec.output
                         << "' must be float logits [..., classes], not "
                         << nn::formatShape(logitsType.getShape()) << " "
                         << logitsType.getElementType();
  ArrayRef<int64_t> logitsShape = logitsType.getShape();
  SmallVector<int64_t> labelShape(logitsShape.drop_back());
  std::string labelsName = spec.labels.empty() ? "labels" : spec.labels;

  Block &body = f.getBody().front();
  Value labels;
  for (BlockArgument arg : body.getArguments())
    if (auto name = f.getArgAttrOfType<StringAttr>(arg.getArgNumber(), nn::kInputAttr))
      if (name.str() == labelsName)
        labels = arg;
  OpBuilder b(f.getContext());
  if (labels) {
    auto type = cast<RankedTensorType>(labels.getType());
    if (type.getShape() != ArrayRef<int64_t>(labelShape) ||
        !type.getElementType().isSignlessInteger() ||
        (type.getElementType().getIntOrFloatBitWidth() != 32 &&
         type.getElementType().getIntOrFloatBitWidth() != 64))
      return f.emitError() << "--loss=xent: labels input '" << labelsName << "' must be i32 or i64 "
                           << nn::formatShape(labelShape) << " to match logits "
                           << nn::formatShape(logitsShape) << ", not "
                           << nn::formatShape(type.getShape()) << " " << type.getElementType();
  } else {
    auto type = RankedTensorType::get(labelShape, b.getI64Type());
    unsigned position = f.getNumArguments();
    f.insertArgument(position, type,
                     b.getDictionaryAttr(b.getNamedAttr(nn::kInputAttr, b.getStringAttr(labelsName))),
                     f.getLoc());
    labels = body.getArgument(position);
  }

  auto ret = cast<func::ReturnOp>(body.getTerminator());
  b.setInsertionPoint(ret);
  Location loc = NameLoc::get(b.getStringAttr("loss=xent:" + spec.output));
  int64_t rows = 1;
  for (int64_t d : labelShape)
    rows *= d;
  int64_t classes = logitsShape.back();
  Type element = logitsType.getElementType();
  Value scores = ret.getOperand(*index);
  if (logitsType.getRank() != 2)
    scores = b.create<nn::ReshapeOp>(loc, RankedTensorType::get({rows, classes}, element), scores);
  Value flatLabels = labels;
  auto labelsType = cast<RankedTensorType>(labels.getType());
  if (labelsType.getRank() != 1)
    flatLabels = b.create<nn::ReshapeOp>(
        loc, RankedTensorType::get({rows}, labelsType.getElementType()), labels);
  auto loss = b.create<nn::SoftmaxCrossEntropyOp>(
      loc, RankedTensorType::get({}, element), scores.getType(), scores, flatLabels, Value(),
      b.getStringAttr("mean"), IntegerAttr());
  returnOnly(f, loss.getLoss(), "loss");
  return success();
}

} // namespace

LogicalResult attachLoss(func::FuncOp forward, const LossSpec &spec) {
  return spec.crossEntropy ? attachCrossEntropy(forward, spec) : useModelLoss(forward);
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_ATTACHLOSSPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct AttachLossPass : impl::AttachLossPassBase<AttachLossPass> {
  using Base::Base;
  void runOnOperation() final {
    auto forward = getOperation().lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      getOperation().emitError("no @forward function");
      return signalPassFailure();
    }
    if (failed(attachLoss(forward, {!xent.empty(), xent, labels})))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
