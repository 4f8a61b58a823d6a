//===- ConstantValues.cpp - reading values computed from constants --------===//
//
// Point evaluation (ConstantValues.h): the element of an op's result at an
// index is computed from the elements of its operands at the indices that
// the op reads, recursively down to nn.constant. Each op rounds to its
// result's element type as its kernel does (floats to nearest even, casts
// to integers toward zero, anything to bool as x != 0), so a comparison
// or a where downstream sees the values the runtime would.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/ConstantValues.h"

#include "dialects/nn/NNDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>

using namespace mlir;

namespace fsdp {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<ShapedType>(v.getType()).getShape(); }
Type elementOf(Value v) { return cast<ShapedType>(v.getType()).getElementType(); }

int64_t linearIndex(ArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  int64_t linear = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    linear = linear * shape[d] + index[d];
  return linear;
}

llvm::SmallVector<int64_t> delinearize(int64_t linear, ArrayRef<int64_t> shape) {
  llvm::SmallVector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = shape[d] ? linear % shape[d] : 0;
    linear = shape[d] ? linear / shape[d] : 0;
  }
  return index;
}

/// The index into `operand` that numpy broadcasting reads for `index` of
/// the result.
llvm::SmallVector<int64_t> broadcastIndex(Value operand, ArrayRef<int64_t> index) {
  ArrayRef<int64_t> shape = shapeOf(operand);
  llvm::SmallVector<int64_t> in(shape.size());
  const size_t offset = index.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    in[d] = shape[d] == 1 ? 0 : index[offset + d];
  return in;
}

/// `x` as an element of type `t` holds it.
double roundTo(Type t, double x) {
  if (t.isF64())
    return x;
  if (t.isF32())
    return static_cast<float>(x);
  if (auto fp = dyn_cast<FloatType>(t)) {
    llvm::APFloat value(x);
    bool lost = false;
    value.convert(fp.getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven, &lost);
    return value.convertToDouble();
  }
  if (t.isInteger(1))
    return x != 0 ? 1 : 0;
  return std::trunc(x);
}

double readConstant(DenseElementsAttr dense, int64_t linear) {
  if (dense.isSplat())
    linear = 0;
  Type element = dense.getElementType();
  if (isa<FloatType>(element))
    return dense.getValues<APFloat>()[linear].convertToDouble();
  if (element.isInteger(1))
    return dense.getValues<bool>()[linear] ? 1 : 0;
  const APInt value = dense.getValues<APInt>()[linear];
  return element.isUnsignedInteger() ? static_cast<double>(value.getZExtValue())
                                     : static_cast<double>(value.getSExtValue());
}

bool isKnownOp(Operation *op) {
  return isa<nn::ConstantOp, nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp, nn::MaxOp, nn::MinOp,
             nn::SqrtOp, nn::NegOp, nn::NotOp, nn::CastOp, nn::CompareOp, nn::LogicalOp,
             nn::WhereOp, nn::ExpandOp, nn::ReshapeOp, nn::TransposeOp, nn::TriluOp,
             nn::SliceOp>(op);
}

double compare(StringRef predicate, double a, double b) {
  if (predicate == "eq")
    return a == b;
  if (predicate == "lt")
    return a < b;
  if (predicate == "le")
    return a <= b;
  if (predicate == "gt")
    return a > b;
  return a >= b; // "ge", the verifier's last
}

} // namespace

bool ConstantValues::isConstant(Value v) {
  // Size of the expression tree (shared operands counted each time they are
  // read): the work at() does per element.
  llvm::DenseMap<Value, int64_t> size;
  std::function<int64_t(Value)> treeSize = [&](Value cur) -> int64_t {
    if (auto it = size.find(cur); it != size.end())
      return it->second;
    Operation *op = cur.getDefiningOp();
    int64_t n = kMaxOps + 1;
    auto type = dyn_cast<RankedTensorType>(cur.getType());
    if (op && isKnownOp(op) && type && type.hasStaticShape()) {
      n = 1;
      if (auto constant = dyn_cast<nn::ConstantOp>(op))
        n = isa<DenseElementsAttr>(constant.getValue()) ? 1 : kMaxOps + 1;
      for (Value operand : op->getOperands())
        n = std::min<int64_t>(kMaxOps + 1, n + treeSize(operand));
    }
    size[cur] = n;
    return n;
  };
  if (auto it = known.find(v); it != known.end())
    return it->second;
  return known[v] = treeSize(v) <= kMaxOps;
}

std::optional<double> ConstantValues::scalar(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() != 1 || !isConstant(v))
    return std::nullopt;
  return at(v, llvm::SmallVector<int64_t>(type.getRank(), 0));
}

double ConstantValues::at(Value v, ArrayRef<int64_t> index) {
  Operation *op = v.getDefiningOp();
  const Type element = elementOf(v);
  auto operand = [&](Value x) { return at(x, broadcastIndex(x, index)); };
  auto arithmetic = [&](Operation *binary, auto apply) {
    // add and sub round a wider scalar to the result's type first; mul and
    // div (x / s) take it as it is (NN_ArithmeticOp's scalar rule).
    Value lhs = binary->getOperand(0), rhs = binary->getOperand(1);
    double a = operand(lhs), b = operand(rhs);
    const bool roundsScalar = isa<nn::AddOp, nn::SubOp>(binary);
    if (roundsScalar || (isa<nn::DivOp>(binary) && elementOf(lhs) != element))
      a = roundTo(element, a);
    if (roundsScalar)
      b = roundTo(element, b);
    return roundTo(element, apply(a, b));
  };
  return llvm::TypeSwitch<Operation *, double>(op)
      .Case([&](nn::ConstantOp c) {
        return readConstant(cast<DenseElementsAttr>(c.getValue()), linearIndex(index, shapeOf(v)));
      })
      .Case([&](nn::AddOp o) { return arithmetic(o, [](double a, double b) { return a + b; }); })
      .Case([&](nn::SubOp o) { return arithmetic(o, [](double a, double b) { return a - b; }); })
      .Case([&](nn::MulOp o) { return arithmetic(o, [](double a, double b) { return a * b; }); })
      .Case([&](nn::DivOp o) { return arithmetic(o, [](double a, double b) { return a / b; }); })
      .Case([&](nn::MaxOp o) { return std::fmax(operand(o.getLhs()), operand(o.getRhs())); })
      .Case([&](nn::MinOp o) { return std::fmin(operand(o.getLhs()), operand(o.getRhs())); })
      .Case([&](nn::SqrtOp o) { return roundTo(element, std::sqrt(operand(o.getInput()))); })
      .Case([&](nn::NegOp o) { return -operand(o.getInput()); })
      .Case([&](nn::NotOp o) { return operand(o.getInput()) != 0 ? 0.0 : 1.0; })
      .Case([&](nn::CastOp o) { return roundTo(element, operand(o.getInput())); })
      .Case([&](nn::CompareOp o) {
        return compare(o.getPredicate(), operand(o.getLhs()), operand(o.getRhs()));
      })
      .Case([&](nn::LogicalOp o) {
        const bool a = operand(o.getLhs()) != 0, b = operand(o.getRhs()) != 0;
        StringRef kind = o.getOp();
        return static_cast<double>(kind == "and" ? a && b : kind == "or" ? a || b : a != b);
      })
      .Case([&](nn::WhereOp o) {
        return operand(o.getCondition()) != 0 ? operand(o.getX()) : operand(o.getY());
      })
      .Case([&](nn::ExpandOp o) { return operand(o.getInput()); })
      .Case([&](nn::ReshapeOp o) {
        return at(o.getInput(),
                  delinearize(linearIndex(index, shapeOf(v)), shapeOf(o.getInput())));
      })
      .Case([&](nn::TransposeOp o) {
        llvm::SmallVector<int64_t> in(index.size());
        ArrayRef<int64_t> perm = o.getPerm();
        for (size_t d = 0; d < index.size(); ++d)
          in[perm[d]] = index[d];
        return at(o.getInput(), in);
      })
      .Case([&](nn::TriluOp o) {
        const int64_t i = index[index.size() - 2], j = index.back(), k = o.getK();
        const bool kept = o.getUpper() ? j - i >= k : j - i <= k;
        return kept ? at(o.getInput(), index) : 0.0;
      })
      .Case([&](nn::SliceOp o) {
        llvm::SmallVector<int64_t> in(index.size());
        for (size_t d = 0; d < index.size(); ++d)
          in[d] = o.getStarts()[d] + index[d] * o.getSteps()[d];
        return at(o.getInput(), in);
      })
      // isConstant admitted only the cases above.
      .Default([](Operation *) { return std::nan(""); });
}

} // namespace fsdp
