//===- OffloadState.cpp - --offload=cpu: shards and state in host memory --===//
//
// Host arguments are found from the step's signature (units, optimizer
// state, lr and step); each is then rewired on its own: optimizer updates
// keep reading it where it is, everything else reads a device copy.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/OffloadState.h"

#include "compiler/Autodiff/BuildTrainStep.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShardParameters.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace fsdp {
namespace {

bool isUpdate(Operation *op) { return isa<nn::AdamWOp, nn::SgdOp>(op); }

/// Points every use of host argument `arg` that is not an optimizer update
/// at a device copy: one shared by views of a replicated flat buffer
/// (placed before the first), one per other reader (placed right before it,
/// so a shard is on the device only while its gather or cast reads it).
void readOnDevice(BlockArgument arg, OpBuilder &b) {
  SmallVector<OpOperand *> views, others;
  for (OpOperand &use : arg.getUses()) {
    if (isUpdate(use.getOwner()))
      continue;
    (isa<dist::FlatViewOp>(use.getOwner()) ? views : others).push_back(&use);
  }
  auto copyBefore = [&](Operation *user) {
    b.setInsertionPoint(user);
    return b.create<dist::ToDeviceOp>(arg.getLoc(), arg.getType(), arg).getResult();
  };
  if (!views.empty()) {
    Operation *first = views.front()->getOwner();
    for (OpOperand *use : views)
      if (use->getOwner()->isBeforeInBlock(first))
        first = use->getOwner();
    Value copy = copyBefore(first);
    for (OpOperand *use : views)
      use->set(copy);
  }
  for (OpOperand *use : others)
    use->set(copyBefore(use->getOwner()));
}

/// The gradient an update reads, copied to the host right after it is
/// produced (its reduction), so the update can still move up behind it.
void gradientToHost(Operation *update, OpBuilder &b) {
  OpOperand &grad = isa<nn::AdamWOp>(update) ? cast<nn::AdamWOp>(update).getGradMutable()
                                             : cast<nn::SgdOp>(update).getGradMutable();
  Value value = grad.get();
  if (Operation *def = value.getDefiningOp())
    b.setInsertionPointAfter(def);
  else
    b.setInsertionPointToStart(update->getBlock());
  grad.set(b.create<dist::ToHostOp>(update->getLoc(), value.getType(), value));
}

} // namespace

LogicalResult offloadState(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>(kTrainStepName);
  if (!step)
    return module.emitError("--offload=cpu needs a training step (@") << kTrainStepName << ")";
  Block &body = step.getBody().front();
  SmallVector<BlockArgument> host;
  bool sharded = false;
  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    bool unit = static_cast<bool>(step.getArgAttr(i, dist::kUnitAttr));
    sharded |= unit;
    bool scalar = step.getArgAttr(i, nn::kLrAttr) || step.getArgAttr(i, nn::kStepAttr);
    if (unit || step.getArgAttr(i, nn::kStateAttr) ||
        (scalar && llvm::all_of(arg.getUsers(), isUpdate)))
      host.push_back(arg);
  }
  if (!sharded)
    return step.emitError("--offload=cpu keeps shard units in host memory, but the step is not "
                          "sharded (give --world-size or --shard)");
  OpBuilder b(step.getContext());
  // A gathered buffer holding its shard in place is device memory, and the
  // shard now lives on the host: those units are gathered into a copy.
  step.walk([](dist::AllGatherOp gather) { gather.setPersistent(false); });
  for (BlockArgument arg : host) {
    readOnDevice(arg, b);
    step.setArgAttr(arg.getArgNumber(), dist::kHostAttr, b.getUnitAttr());
  }
  for (Operation &op : llvm::make_early_inc_range(body))
    if (isUpdate(&op))
      gradientToHost(&op, b);
  return success();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_OFFLOADSTATEPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct OffloadStatePass : impl::OffloadStatePassBase<OffloadStatePass> {
  using Base::Base;
  void runOnOperation() final {
    if (failed(offloadState(getOperation())))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
