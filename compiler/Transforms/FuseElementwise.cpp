//===- FuseElementwise.cpp - chains of elementwise ops into nn.fused ------===//
//
// One walk in op order. Each fusible op joins the group of a producer of
// one of its operands when the result shapes agree and the merged group can
// still be computed at this op's position: every value of the group that
// something outside it reads must be read only after this op (the fused op
// takes the place of the group's last op). Otherwise it starts a group.
// Groups are bounded so the runtime's per-block scratch stays small. A
// group has one element type (its members' results have one type), so a
// bf16 or f16 chain fuses as an f32 one does and a cast ends a chain.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/FuseElementwise.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace fsdp {
namespace {

constexpr size_t kMaxOps = 16, kMaxInputs = 16;

/// The runtime's op code (plan.fbs, Kernel Fused), or -1.
int64_t fusedCode(Operation *op) {
  return llvm::TypeSwitch<Operation *, int64_t>(op)
      .Case([](nn::AddOp) { return 0; })
      .Case([](nn::SubOp) { return 1; })
      .Case([](nn::MulOp) { return 2; })
      .Case([](nn::DivOp) { return 3; })
      .Case([](nn::NegOp) { return 4; })
      .Case([](nn::ReluOp) { return 5; })
      .Case([](nn::ExpOp) { return 6; })
      .Case([](nn::LogOp) { return 7; })
      .Case([](nn::SqrtOp) { return 8; })
      .Case([](nn::ErfOp) { return 9; })
      .Case([](nn::TanhOp) { return 10; })
      .Case([](nn::SigmoidOp) { return 11; })
      .Case([](nn::ReluGradOp) { return 12; })
      .Case([](nn::ErfGradOp) { return 13; })
      .Case([](nn::TanhGradOp) { return 14; })
      .Case([](nn::SigmoidGradOp) { return 15; })
      .Default([](Operation *) { return -1; });
}

/// One storage dtype throughout (f32, bf16 or f16: the runtime's Fused
/// kernel rounds a bf16/f16 op's result as the op's own kernel does),
/// operands of the result's shape or single elements. An op whose operand
/// has another element type than its result (torch's rule lets a rank-0
/// f32 meet a bf16 tensor) computes at a precision the program cannot
/// express, so it stays unfused.
bool isFusible(Operation *op) {
  if (fusedCode(op) < 0 || op->getNumResults() != 1)
    return false;
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Type element = type.getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return false;
  return llvm::all_of(op->getOperands(), [&](Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return t.getElementType() == element &&
           (t.getShape() == type.getShape() || nn::checkedNumElements(t.getShape()) == 1);
  });
}

struct Group {
  SmallVector<Operation *> ops;
};

class Fuser {
public:
  explicit Fuser(Block &body) : body(body) {
    for (auto [i, op] : llvm::enumerate(body.getOperations()))
      position[&op] = i;
  }
  int run();

private:
  bool canJoin(const Group &group, Operation *op) const;
  bool emit(const Group &group);

  Block &body;
  llvm::DenseMap<Operation *, size_t> position;
  llvm::DenseMap<Operation *, size_t> groupOf;
  std::vector<Group> groups;
};

bool Fuser::canJoin(const Group &group, Operation *op) const {
  if (group.ops.size() >= kMaxOps ||
      group.ops.front()->getResult(0).getType() != op->getResult(0).getType())
    return false;
  llvm::DenseSet<Operation *> members(group.ops.begin(), group.ops.end());
  members.insert(op);
  size_t at = position.lookup(op);
  for (Operation *member : group.ops)
    for (Operation *user : member->getUsers())
      if (!members.count(user) && position.lookup(user) < at)
        return false;
  return true;
}

/// Replaces the group with one nn.fused; false if it has too many inputs.
bool Fuser::emit(const Group &group) {
  llvm::DenseMap<Value, int64_t> valueId;
  llvm::MapVector<Value, int64_t> inputs;
  for (Operation *op : group.ops)
    for (Value v : op->getOperands())
      if (!valueId.count(v) && !inputs.count(v) &&
          !llvm::is_contained(group.ops, v.getDefiningOp()))
        inputs.insert({v, static_cast<int64_t>(inputs.size())});
  if (inputs.size() > kMaxInputs)
    return false;
  for (auto &[v, id] : inputs)
    valueId[v] = id;
  SmallVector<int64_t> program;
  for (auto [k, op] : llvm::enumerate(group.ops)) {
    program.push_back(fusedCode(op));
    program.push_back(valueId.lookup(op->getOperand(0)));
    program.push_back(op->getNumOperands() > 1 ? valueId.lookup(op->getOperand(1)) : -1);
    valueId[op->getResult(0)] = static_cast<int64_t>(inputs.size() + k);
  }
  llvm::DenseSet<Operation *> members(group.ops.begin(), group.ops.end());
  SmallVector<Value> results;
  SmallVector<int64_t> resultsOf;
  for (Operation *op : group.ops) {
    Value r = op->getResult(0);
    if (llvm::any_of(r.getUsers(), [&](Operation *user) { return !members.count(user); })) {
      results.push_back(r);
      resultsOf.push_back(valueId.lookup(r));
    }
  }
  OpBuilder builder(group.ops.back());
  SmallVector<Value> operands;
  for (auto &[v, id] : inputs)
    operands.push_back(v);
  SmallVector<Type> types(results.size(), results.front().getType());
  auto fused = builder.create<nn::FusedOp>(group.ops.back()->getLoc(), types, operands,
                                           builder.getDenseI64ArrayAttr(program),
                                           builder.getDenseI64ArrayAttr(resultsOf));
  for (auto [old, now] : llvm::zip(results, fused.getResults()))
    old.replaceAllUsesWith(now);
  for (Operation *op : llvm::reverse(group.ops))
    op->erase();
  return true;
}

int Fuser::run() {
  for (Operation &op : body.without_terminator()) {
    if (!isFusible(&op))
      continue;
    std::optional<size_t> joined;
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? groupOf.find(producer) : groupOf.end();
      if (it != groupOf.end() && canJoin(groups[it->second], &op)) {
        joined = it->second;
        break;
      }
    }
    if (!joined) {
      joined = groups.size();
      groups.emplace_back();
    }
    groups[*joined].ops.push_back(&op);
    groupOf[&op] = *joined;
  }
  int created = 0;
  for (const Group &group : groups)
    if (group.ops.size() >= 2 && emit(group))
      ++created;
  return created;
}

} // namespace

int fuseElementwise(func::FuncOp func) {
  if (func.getBody().empty() || !func.getBody().hasOneBlock())
    return 0;
  return Fuser(func.getBody().front()).run();
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct FuseElementwisePass : impl::FuseElementwisePassBase<FuseElementwisePass> {
  using Base::Base;
  // Fusion has no failure: a group it cannot form stays unfused.
  void runOnOperation() final { fuseElementwise(getOperation()); }
};

} // namespace

} // namespace fsdp
