//===- UpcastComposites.cpp - torch's f32 composites under 16-bit compute -===//
//
// Some of what a model calls as one torch function reaches the compiler as
// several ops, because the export writes its formula, and torch computes
// that function in f32 and rounds once even on bf16 or f16 tensors. After
// mixed precision retypes @forward, each op of the formula would round to
// the compute dtype instead. This pass finds two such formulas on a 16-bit
// input and recomputes them in f32 from the widened input, rounding once
// at the end (every link must be read only by the next):
// - RMSNorm, x · reciprocal(sqrt(reduce_mean(x², trailing axes) + eps)),
//   x² as a Pow by 2 or x · x. torch's F.rms_norm (nn.RMSNorm) widens x,
//   computes x · rsqrt(mean(x²) + eps) · weight and rounds once;
//   transformers' Llama, Qwen2 and Mistral norms compute x.float() ·
//   rsqrt(...) in f32, round to x's dtype and then multiply by the weight;
//   Gemma multiplies by (1 + weight.float()), the sum in f32 too, before
//   rounding. The
//   f32 export lost those casts (they were no-ops). The weight's product
//   joins the f32 computation when the normalized value is its left
//   operand (`normed * weight`, as torch's decomposition and Gemma write
//   it); when the weight is the left one (`weight * normed.to(dtype)`,
//   transformers' LlamaRMSNorm) the normalized value is rounded first and
//   the product stays in the compute dtype, as there. torch's nn.RMSNorm in
//   bf16 equals the f32 chain rounded once on 100% of elements, the per-op
//   chain on 63%.
// - SiLU, x · sigmoid(x) (F.silu's export): torch's silu and its backward
//   are single f32 kernels; per-op bf16 matches them on 76% of elements.
// The pipeline runs it after mixed precision under a 16-bit --param-dtype,
// before autodiff, so the backward differentiates the f32 chain (its
// gradient rounds once, as torch's does); f32 plans never see it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/UpcastComposites.h"

#include "compiler/Analysis/ConstantValues.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

using namespace mlir;

namespace fsdp {
namespace {

bool isSixteenBit(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && (type.getElementType().isBF16() || type.getElementType().isF16());
}

/// The single user of `v`, or null.
Operation *onlyUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The operand of binary `op` other than `v` (null when both are `v`).
Value otherOperand(Operation *op, Value v) {
  if (op->getNumOperands() != 2)
    return nullptr;
  if (op->getOperand(0) == v)
    return op->getOperand(1) == v ? nullptr : op->getOperand(1);
  return op->getOperand(1) == v ? op->getOperand(0) : nullptr;
}

/// A composite's ops in order, the last one's result what the rest of the
/// graph reads (x · rsqrt, the weight's product when it joins, x ·
/// sigmoid(x)).
using Chain = llvm::SmallVector<Operation *, 8>;

class Matcher {
public:
  explicit Matcher(ConstantValues &values) : values(values) {}

  bool isScalar(Value v, std::optional<double> expected = std::nullopt) {
    if (cast<RankedTensorType>(v.getType()).getNumElements() != 1 || !values.isConstant(v))
      return false;
    std::optional<double> got = values.scalar(v);
    return got && (!expected || *got == *expected);
  }

  /// The RMSNorm whose mean is `mean`, or nullopt.
  std::optional<Chain> matchRmsNorm(nn::ReduceMeanOp mean) {
    Value x, squared = mean.getInput();
    Operation *square = squared.getDefiningOp();
    if (!square || !squared.hasOneUse())
      return std::nullopt;
    if (auto pow = dyn_cast<nn::PowOp>(square); pow && isScalar(pow.getExponent(), 2.0))
      x = pow.getBase();
    else if (auto mul = dyn_cast<nn::MulOp>(square); mul && mul.getLhs() == mul.getRhs())
      x = mul.getLhs();
    ArrayRef<int64_t> axes = mean.getAxes();
    if (!x || !isSixteenBit(x.getType()) || !mean.getKeepdims() || axes.empty())
      return std::nullopt;
    // The mean over trailing axes, so it broadcasts back onto x.
    auto type = cast<RankedTensorType>(x.getType());
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[axes.size() - 1 - i] != type.getRank() - 1 - static_cast<int64_t>(i))
        return std::nullopt;
    Chain c = {square, mean};
    // + eps, sqrt, reciprocal: each the only reader of the one before.
    Operation *add = onlyUser(mean.getResult());
    Value eps = isa_and_nonnull<nn::AddOp>(add) ? otherOperand(add, mean.getResult()) : Value();
    if (!eps || !isScalar(eps))
      return std::nullopt;
    Operation *sqrt = onlyUser(add->getResult(0));
    if (!isa_and_nonnull<nn::SqrtOp>(sqrt))
      return std::nullopt;
    Operation *reciprocal = onlyUser(sqrt->getResult(0));
    if (!isa_and_nonnull<nn::ReciprocalOp>(reciprocal))
      return std::nullopt;
    Operation *product = onlyUser(reciprocal->getResult(0));
    if (!isa_and_nonnull<nn::MulOp>(product) ||
        otherOperand(product, reciprocal->getResult(0)) != x ||
        product->getResult(0).getType() != x.getType())
      return std::nullopt;
    c.append({add, sqrt, reciprocal, product});
    // `normed * weight`: the weight's product joins (see the file comment).
    Value normed = product->getResult(0);
    if (auto scaled = dyn_cast_or_null<nn::MulOp>(onlyUser(normed));
        scaled && scaled.getLhs() == normed && scaled.getRhs() != normed &&
        scaled.getResult().getType() == x.getType()) {
      // Gemma's weight is (1 + w), formed in f32 too (weight.float()).
      Value weight = scaled.getRhs();
      if (auto shifted = weight.getDefiningOp<nn::AddOp>();
          shifted && weight.hasOneUse() &&
          (isScalar(shifted.getLhs()) || isScalar(shifted.getRhs())))
        c.push_back(shifted);
      c.push_back(scaled);
    }
    return c;
  }

  /// x · sigmoid(x) in either order, or nullopt.
  std::optional<Chain> matchSilu(nn::SigmoidOp sigmoid) {
    Value x = sigmoid.getInput();
    Operation *product = onlyUser(sigmoid.getResult());
    if (!isSixteenBit(x.getType()) || !isa_and_nonnull<nn::MulOp>(product) ||
        otherOperand(product, sigmoid.getResult()) != x ||
        product->getResult(0).getType() != x.getType())
      return std::nullopt;
    return Chain{sigmoid, product};
  }

private:
  ConstantValues &values;
};

/// f32 of a 16-bit tensor type, or the type unchanged.
Type widened(Type t, Builder &b) {
  auto type = cast<RankedTensorType>(t);
  return isSixteenBit(type) ? Type(type.clone(b.getF32Type())) : t;
}

/// Rebuilds `c` in f32 before its last op and replaces its result.
void upcast(const Chain &c) {
  Operation *last = c.back();
  OpBuilder b(last);
  IRMapping map;
  auto widen = [&](Value v) {
    if (map.contains(v) || !isSixteenBit(v.getType()))
      return;
    map.map(v, b.create<nn::CastOp>(last->getLoc(), widened(v.getType(), b), v).getResult());
  };
  for (Operation *op : c) {
    for (Value operand : op->getOperands())
      widen(operand);
    Operation *wide = b.clone(*op, map);
    for (Value r : wide->getResults())
      r.setType(widened(r.getType(), b));
  }
  Value result = map.lookup(last->getResult(0));
  Value narrow = b.create<nn::CastOp>(last->getLoc(), last->getResult(0).getType(), result);
  last->getResult(0).replaceAllUsesWith(narrow);
  for (auto it = c.rbegin(); it != c.rend(); ++it)
    (*it)->erase();
}

} // namespace

int upcastComposites(func::FuncOp func) {
  ConstantValues values;
  Matcher matcher(values);
  llvm::SmallVector<Chain> chains;
  func.walk([&](Operation *op) {
    std::optional<Chain> chain;
    if (auto mean = dyn_cast<nn::ReduceMeanOp>(op))
      chain = matcher.matchRmsNorm(mean);
    else if (auto sigmoid = dyn_cast<nn::SigmoidOp>(op))
      chain = matcher.matchSilu(sigmoid);
    if (chain)
      chains.push_back(*chain);
  });
  // The chains are disjoint (each link has one reader), so rewriting one
  // leaves the others' ops in place.
  for (const Chain &chain : chains)
    upcast(chain);
  return static_cast<int>(chains.size());
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_UPCASTCOMPOSITESPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct UpcastCompositesPass : impl::UpcastCompositesPassBase<UpcastCompositesPass> {
  using Base::Base;
  void runOnOperation() final {
    if (auto forward = getOperation().lookupSymbol<func::FuncOp>("forward"))
      upcastComposites(forward);
  }
};

} // namespace

} // namespace fsdp
