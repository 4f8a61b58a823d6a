//===- FuseGelu.cpp - torch's exported GELU as one nn.gelu ----------------===//
//
// Below opset 20 torch's exporters write F.gelu as its formula: the
// TorchScript exporter as ((x · (erf(x / √2) + 1)) · 0.5), dynamo as
// x · (0.5 · (erf(x / √2) + 1)), and the tanh approximation as
// 0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³))) with x³ a Pow or two
// Muls. In f32 that chain is within an ulp of torch's op. In bf16 and f16
// it is not what torch computes: torch's gelu widens x to f32, evaluates the
// formula and rounds once, where the chain rounds to the compute dtype
// after every one of its five to nine ops, and its gradient is as many
// kernels again. This pass rewrites each chain it can prove is that formula
// into one nn.gelu of the same approximation, whose kernel and gradient
// (nn.gelu_grad) follow torch's. Recognition is exact or nothing: every
// constant must equal torch's in f32, every intermediate must have no other
// reader, and x must be the same value at each place it appears. The
// pipeline runs it only under a 16-bit --param-dtype, before mixed
// precision retypes @forward, so f32 plans keep the exported chain and
// their bits.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/FuseGelu.h"

#include "compiler/Analysis/ConstantValues.h"
#include "compiler/Transforms/EraseDeadChain.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"

#include "mlir/IR/Builders.h"

#include <array>
#include <type_traits>
#include <utility>

using namespace mlir;

namespace fsdp {
namespace {

/// torch's constants, as the exporters write them (rounded to f32).
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrtHalf = 0.7071067811865476;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kKappa = 0.044715;

class Matcher {
public:
  explicit Matcher(ConstantValues &values) : values(values) {}

  /// Whether `v` is a one-element constant equal to `expected` in f32.
  bool isScalar(Value v, double expected) {
    if (!values.isConstant(v))
      return false;
    std::optional<double> got = values.scalar(v);
    return got && static_cast<float>(*got) == static_cast<float>(expected);
  }

  /// The operands of a single-use `Op` producing `v` whose other operand
  /// is the scalar `c`: the non-scalar one, or null.
  template <typename Op> Value withScalar(Value v, double c) {
    auto op = v.getDefiningOp<Op>();
    if (!op || !v.hasOneUse())
      return nullptr;
    if (isScalar(op.getRhs(), c))
      return op.getLhs();
    if constexpr (std::is_same_v<Op, nn::DivOp>)
      return nullptr; // c / x is not x / c
    return isScalar(op.getLhs(), c) ? op.getRhs() : nullptr;
  }

  /// x of erf(x / √2) or erf(x · (1/√2)), or null.
  Value erfArgument(Value v) {
    auto erf = v.getDefiningOp<nn::ErfOp>();
    if (!erf || !v.hasOneUse())
      return nullptr;
    if (Value x = withScalar<nn::DivOp>(erf.getInput(), kSqrt2))
      return x;
    return withScalar<nn::MulOp>(erf.getInput(), kSqrtHalf);
  }

  /// Whether `v` is x³ as Pow(x, 3), x · (x · x) or (x · x) · x.
  bool isCube(Value v, Value x) {
    if (!v.hasOneUse())
      return false;
    if (auto pow = v.getDefiningOp<nn::PowOp>())
      return pow.getBase() == x && isScalar(pow.getExponent(), 3.0);
    auto mul = v.getDefiningOp<nn::MulOp>();
    if (!mul)
      return false;
    auto isSquare = [&](Value s) {
      auto sq = s.getDefiningOp<nn::MulOp>();
      return sq && s.hasOneUse() && sq.getLhs() == x && sq.getRhs() == x;
    };
    return (mul.getLhs() == x && isSquare(mul.getRhs())) ||
           (mul.getRhs() == x && isSquare(mul.getLhs()));
  }

  /// x of tanh(√(2/π) · (x + 0.044715 · x³)), or null.
  Value tanhArgument(Value v) {
    auto tanh = v.getDefiningOp<nn::TanhOp>();
    if (!tanh || !v.hasOneUse())
      return nullptr;
    Value inner = withScalar<nn::MulOp>(tanh.getInput(), kSqrt2OverPi);
    auto add = inner ? inner.getDefiningOp<nn::AddOp>() : nullptr;
    if (!add || !inner.hasOneUse())
      return nullptr;
    for (auto [x, scaledCube] : {std::pair(add.getLhs(), add.getRhs()),
                                 std::pair(add.getRhs(), add.getLhs())}) {
      Value cube = withScalar<nn::MulOp>(scaledCube, kKappa);
      if (cube && isCube(cube, x))
        return x;
    }
    return nullptr;
  }

  /// The x and approximation of `1 + erf(..)` or `1 + tanh(..)` (either
  /// operand order), or null.
  std::pair<Value, StringRef> onePlus(Value v) {
    Value core = withScalar<nn::AddOp>(v, 1.0);
    if (!core)
      return {nullptr, ""};
    if (Value x = erfArgument(core))
      return {x, "none"};
    if (Value x = tanhArgument(core))
      return {x, "tanh"};
    return {nullptr, ""};
  }

  /// Whether the three factors are x, 0.5 and 1 + f(x) for the same x;
  /// sets `approximate`.
  bool isGelu(Value x, std::array<Value, 3> factors, StringRef &approximate) {
    int half = -1, sum = -1, input = -1;
    for (int i = 0; i < 3; ++i) {
      if (factors[i] == x && input < 0)
        input = i;
      else if (isScalar(factors[i], 0.5) && half < 0)
        half = i;
      else if (sum < 0)
        sum = i;
    }
    if (half < 0 || sum < 0 || input < 0)
      return false;
    auto [y, kind] = onePlus(factors[sum]);
    approximate = kind;
    return y == x;
  }

  /// The x and approximation of a GELU ending at the product `root`.
  std::pair<Value, StringRef> match(nn::MulOp root) {
    // root = a · b with one of them a single-use product of the other two
    // factors.
    for (auto [inner, other] : {std::pair(root.getLhs(), root.getRhs()),
                                std::pair(root.getRhs(), root.getLhs())}) {
      auto product = inner.getDefiningOp<nn::MulOp>();
      if (!product || !inner.hasOneUse())
        continue;
      std::array<Value, 3> factors = {product.getLhs(), product.getRhs(), other};
      for (Value x : factors) {
        StringRef approximate;
        if (isGelu(x, factors, approximate))
          return {x, approximate};
      }
    }
    return {nullptr, ""};
  }

private:
  ConstantValues &values;
};

} // namespace

int fuseGelu(func::FuncOp func) {
  ConstantValues values;
  Matcher matcher(values);
  llvm::SmallVector<nn::MulOp> products;
  func.walk([&](nn::MulOp op) { products.push_back(op); });
  // Program order: a chain's links precede its root (they define its
  // operands), so erasing a chain never erases a product still to visit.
  int fused = 0;
  for (nn::MulOp root : products) {
    auto [x, approximate] = matcher.match(root);
    auto type = x ? dyn_cast<RankedTensorType>(x.getType()) : nullptr;
    if (!type || type != root.getResult().getType() || !isa<FloatType>(type.getElementType()))
      continue;
    OpBuilder b(root);
    Value gelu = b.create<nn::GeluOp>(root.getLoc(), type, x, b.getStringAttr(approximate));
    root.getResult().replaceAllUsesWith(gelu);
    eraseDeadChain(root);
    ++fused;
  }
  return fused;
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_FUSEGELUPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

struct FuseGeluPass : impl::FuseGeluPassBase<FuseGeluPass> {
  using Base::Base;
  // Recognition has no failure: a chain it cannot prove stays as it is.
  void runOnOperation() final {
    if (auto forward = getOperation().lookupSymbol<func::FuncOp>("forward"))
      fuseGelu(forward);
  }
};

} // namespace

} // namespace fsdp
