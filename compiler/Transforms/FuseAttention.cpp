//===- FuseAttention.cpp - the exporters' attention as one nn.attention ---===//
//
// Attention reaches the compiler decomposed: a product of queries and
// transposed keys, a scale (on the product, or √scale on each operand as
// torch's dynamo decomposition of scaled_dot_product_attention writes it),
// a mask (an additive float tensor, or a masked_fill's where with -inf),
// a softmax over the keys and a product with the values. This pass finds
// that chain ending at a matmul of softmax probabilities and, when every
// link is one it can prove means the same function, rewrites it into one
// nn.attention, whose kernel never stores the scores. Recognition is exact
// or nothing: a chain that differs (a softmax over another axis, a scale
// that is not one scalar, a mask the keys do not index last, probabilities
// read elsewhere, dropout, a mask computed from a parameter) stays unfused,
// and the pass records why on the module (kAttentionFusionAttr) for
// --emit=summary and the report. A constant mask equal to the causal
// (top-left) triangle becomes is_causal, which lets the kernel skip the
// masked tiles instead of reading a mask.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/FuseAttention.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;

namespace fsdp {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// The value of a constant with one distinct float element (a splat or a
/// one-element tensor), or nullopt.
std::optional<double> scalarConstant(Value v) {
  auto constant = v.getDefiningOp<nn::ConstantOp>();
  auto dense = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
  if (!dense || !dense.isSplat())
    return std::nullopt;
  return dense.getSplatValue<APFloat>().convertToDouble();
}

bool isNegativeInfinity(Value v) {
  std::optional<double> c = scalarConstant(v);
  return c && std::isinf(*c) && *c < 0;
}

/// Whether a float block argument (a parameter, or a float model input)
/// reaches `v`: such a mask would need a gradient, which nn.attention does
/// not give.
bool dependsOnFloatArgument(Value v) {
  llvm::SetVector<Value> work;
  work.insert(v);
  for (size_t i = 0; i < work.size(); ++i) {
    Value cur = work[i];
    if (isa<BlockArgument>(cur)) {
      if (isa<FloatType>(cast<ShapedType>(cur.getType()).getElementType()))
        return true;
      continue;
    }
    for (Value operand : cur.getDefiningOp()->getOperands())
      work.insert(operand);
  }
  return false;
}

/// Multiplies `scale` by every scalar-constant factor (x * c, c * x, x / c)
/// in front of `v` and returns what they scale.
Value peelScale(Value v, double &scale) {
  while (Operation *op = v.getDefiningOp()) {
    if (auto mul = dyn_cast<nn::MulOp>(op)) {
      if (std::optional<double> c = scalarConstant(mul.getRhs()); c && shapeOf(mul.getLhs()) == shapeOf(v)) {
        scale *= *c;
        v = mul.getLhs();
        continue;
      }
      if (std::optional<double> c = scalarConstant(mul.getLhs()); c && shapeOf(mul.getRhs()) == shapeOf(v)) {
        scale *= *c;
        v = mul.getRhs();
        continue;
      }
    }
    if (auto div = dyn_cast<nn::DivOp>(op))
      if (std::optional<double> c = scalarConstant(div.getRhs());
          c && *c != 0 && shapeOf(div.getLhs()) == shapeOf(v)) {
        scale /= *c;
        v = div.getLhs();
        continue;
      }
    break;
  }
  return v;
}

bool swapsLastTwo(ArrayRef<int64_t> perm) {
  size_t rank = perm.size();
  if (rank < 2)
    return false;
  for (size_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return perm[rank - 2] == static_cast<int64_t>(rank - 1) &&
         perm[rank - 1] == static_cast<int64_t>(rank - 2);
}

/// The keys K ([B, H, Tk, D]) of which `kt` ([B, H, D, Tk]) is the
/// transpose: nn.transpose swapping the last two dims, or (dynamo's
/// decomposition) a reshape merging the leading dims, that swap and a
/// reshape back; scalar factors on either side are multiplied into
/// `scale`. Null when `kt` is not such a transpose.
Value peelKeyTranspose(Value kt, double &scale) {
  kt = peelScale(kt, scale);
  ArrayRef<int64_t> wanted = shapeOf(kt);
  if (auto t = kt.getDefiningOp<nn::TransposeOp>(); t && swapsLastTwo(t.getPerm()))
    return peelScale(t.getInput(), scale);
  auto outer = kt.getDefiningOp<nn::ReshapeOp>();
  auto t = outer ? outer.getInput().getDefiningOp<nn::TransposeOp>() : nullptr;
  auto inner = t ? t.getInput().getDefiningOp<nn::ReshapeOp>() : nullptr;
  if (!inner || !swapsLastTwo(t.getPerm()))
    return Value();
  Value k = inner.getInput();
  ArrayRef<int64_t> keys = shapeOf(k), merged = shapeOf(inner.getResult());
  if (keys.size() != 4 || merged.size() < 2 ||
      keys.take_back(2) != merged.take_back(2) || wanted.size() != 4 ||
      wanted.take_front(2) != keys.take_front(2) || wanted[2] != keys[3] || wanted[3] != keys[2])
    return Value();
  return peelScale(k, scale);
}

/// Whether the constant `mask` (float: 0 where attended, -inf where not;
/// bool: true where attended, or the reverse when `negated`) is exactly
/// the causal triangle over its last two dims (key j attended iff j <= i)
/// and the same for every leading index.
bool isCausalConstant(Value mask, bool negated) {
  auto constant = mask.getDefiningOp<nn::ConstantOp>();
  auto dense = constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
  ArrayRef<int64_t> shape = shapeOf(mask);
  if (!dense || shape.size() < 2)
    return false;
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (rows <= 1 && cols <= 1)
    return false;
  auto attended = [&](auto values) {
    int64_t index = 0;
    for (auto it = values.begin(); it != values.end(); ++it, ++index) {
      const int64_t i = index / cols % rows, j = index % cols;
      if ((*it) != (j <= i))
        return false;
    }
    return true;
  };
  if (dense.getElementType().isInteger(1)) {
    auto values = dense.getValues<bool>();
    if (!negated)
      return attended(values);
    llvm::SmallVector<bool> flipped;
    for (bool b : values)
      flipped.push_back(!b);
    return attended(flipped);
  }
  if (auto fp = dyn_cast<DenseFPElementsAttr>(dense)) {
    llvm::SmallVector<bool> open;
    for (const APFloat &x : fp.getValues<APFloat>()) {
      if (x.isZero())
        open.push_back(true);
      else if (x.isInfinity() && x.isNegative())
        open.push_back(false);
      else
        return false;
    }
    return attended(open);
  }
  return false;
}

/// One recognized attention, ready to build.
struct Recognized {
  Value query, key, value, mask;
  bool maskNegated = false; // a bool mask whose true marks what is masked
  bool causal = false;
  double scale = 1.0;
};

class Recognizer {
public:
  explicit Recognizer(nn::MatMulOp pv) : pv(pv) {}

  /// Recognizes the chain ending at `pv`; false with `why` set when it is a
  /// near miss, false with `why` empty when `pv` is no attention at all.
  bool run(Recognized &out, std::string &why);

private:
  bool fail(std::string &why, const llvm::Twine &reason) {
    why = reason.str();
    return false;
  }
  nn::MatMulOp pv;
};

bool Recognizer::run(Recognized &out, std::string &why) {
  why.clear();
  Value probs = pv.getLhs();
  if (probs.getDefiningOp<nn::DropoutOp>())
    return fail(why, "dropout on the probabilities (nn.attention has no dropout yet)");
  auto softmax = probs.getDefiningOp<nn::SoftmaxOp>();
  if (!softmax)
    return false;
  ArrayRef<int64_t> scores = shapeOf(softmax.getResult());
  if (scores.size() != 4)
    return fail(why, "scores of rank " + llvm::Twine(scores.size()) + ", not 4");
  if (softmax.getAxis() != 3)
    return fail(why, "softmax over axis " + llvm::Twine(softmax.getAxis()) + ", not the keys");
  if (!softmax.getResult().hasOneUse())
    return fail(why, "the probabilities are read elsewhere too");

  // The mask: an additive float tensor, or where(mask, s, -inf).
  Value s = softmax.getInput();
  if (auto add = s.getDefiningOp<nn::AddOp>()) {
    // The scores are the operand of the scores' shape that a product makes.
    auto isScores = [&](Value v) {
      double ignored = 1.0;
      return shapeOf(v) == scores && peelScale(v, ignored).getDefiningOp<nn::MatMulOp>();
    };
    if (isScores(add.getLhs())) {
      out.mask = add.getRhs();
      s = add.getLhs();
    } else if (isScores(add.getRhs())) {
      out.mask = add.getLhs();
      s = add.getRhs();
    } else {
      return fail(why, "neither operand of the mask's add is a scaled product of queries and keys");
    }
  } else if (auto where = s.getDefiningOp<nn::WhereOp>()) {
    if (isNegativeInfinity(where.getY())) {
      out.mask = where.getCondition();
      s = where.getX();
    } else if (isNegativeInfinity(where.getX())) {
      out.mask = where.getCondition();
      out.maskNegated = true;
      s = where.getY();
    } else {
      return fail(why, "a where whose fill is not -inf");
    }
    if (shapeOf(s) != scores)
      return fail(why, "the masked scores are broadcast by the where");
  }
  if (out.mask) {
    ArrayRef<int64_t> mask = shapeOf(out.mask);
    if (mask.size() > 4 || !nn::broadcastsTo(mask, scores))
      return fail(why, "a mask of shape " + nn::formatShape(mask) +
                           " that does not broadcast to the scores " + nn::formatShape(scores));
    if (dependsOnFloatArgument(out.mask))
      return fail(why, "the mask is computed from a parameter or float input (it would need a "
                       "gradient)");
  }

  // The scale and the product of queries and transposed keys.
  s = peelScale(s, out.scale);
  auto qk = s.getDefiningOp<nn::MatMulOp>();
  if (!qk)
    return fail(why, "the scores are not a product of queries and keys");
  out.query = peelScale(qk.getLhs(), out.scale);
  out.key = peelKeyTranspose(qk.getRhs(), out.scale);
  out.value = pv.getRhs();
  if (!out.key)
    return fail(why, "the product's right operand is not the keys transposed");
  Type element = cast<ShapedType>(out.query.getType()).getElementType();
  if (cast<ShapedType>(out.key.getType()).getElementType() != element ||
      cast<ShapedType>(out.value.getType()).getElementType() != element)
    return fail(why, "queries, keys and values of different dtypes");
  std::optional<ArrayRef<int64_t>> maskShape;
  if (out.mask)
    maskShape = shapeOf(out.mask);
  std::string shapeError;
  auto error = [&](const llvm::Twine &message) { shapeError = message.str(); };
  FailureOr<nn::Shape> result = nn::attentionShape(shapeOf(out.query), shapeOf(out.key),
                                                   shapeOf(out.value), maskShape, error);
  if (failed(result))
    return fail(why, shapeError);
  if (ArrayRef<int64_t>(*result) != shapeOf(pv.getResult()))
    return fail(why, "the product with the values broadcasts");
  if (out.mask && isCausalConstant(out.mask, out.maskNegated) &&
      shapeOf(out.mask).take_back(2) == scores.take_back(2)) {
    out.causal = true;
    out.mask = Value();
  }
  return true;
}

/// Erases `op` and then every producer left without a use.
void eraseDeadChain(Operation *op) {
  llvm::SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *cur = work.pop_back_val();
    if (!cur->use_empty())
      continue;
    llvm::SmallVector<Operation *> producers;
    for (Value v : cur->getOperands())
      if (Operation *def = v.getDefiningOp())
        producers.push_back(def);
    cur->erase();
    for (Operation *def : producers)
      if (llvm::find(work, def) == work.end())
        work.push_back(def);
  }
}

Value buildAttention(nn::MatMulOp pv, const Recognized &r) {
  OpBuilder b(pv);
  Location loc = pv.getLoc();
  Value mask = r.mask;
  if (mask && r.maskNegated)
    mask = b.create<nn::NotOp>(loc, mask.getType(), mask);
  auto queryType = cast<RankedTensorType>(r.query.getType());
  Type lseElement = queryType.getElementType().isF64() ? Type(b.getF64Type()) : b.getF32Type();
  auto lseType = RankedTensorType::get(queryType.getShape().take_front(3), lseElement);
  auto op = b.create<nn::AttentionOp>(loc, pv.getResult().getType(), lseType, r.query, r.key,
                                      r.value, mask, b.getBoolAttr(r.causal),
                                      b.getF32FloatAttr(static_cast<float>(r.scale)));
  return op.getResult();
}

} // namespace

AttentionFusion fuseAttention(func::FuncOp func) {
  AttentionFusion result;
  llvm::SmallVector<nn::MatMulOp> products;
  func.walk([&](nn::MatMulOp op) { products.push_back(op); });
  for (nn::MatMulOp pv : products) {
    Recognized r;
    std::string why;
    if (!Recognizer(pv).run(r, why)) {
      if (!why.empty())
        result.unfused.push_back({pv.getLoc(), why});
      continue;
    }
    Value fused = buildAttention(pv, r);
    pv.getResult().replaceAllUsesWith(fused);
    eraseDeadChain(pv);
    ++result.fused;
  }
  return result;
}

//===----------------------------------------------------------------------===//
// The pass (compiler/Transforms/Passes.td)
//===----------------------------------------------------------------------===//

#define GEN_PASS_DEF_FUSEATTENTIONPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

std::string locationText(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto file = dyn_cast<FileLineColLoc>(loc))
    return (file.getFilename().getValue() + ":" + llvm::Twine(file.getLine())).str();
  if (auto fused = dyn_cast<FusedLoc>(loc); fused && !fused.getLocations().empty())
    return locationText(fused.getLocations().front());
  return "?";
}

struct FuseAttentionPass : impl::FuseAttentionPassBase<FuseAttentionPass> {
  using Base::Base;
  // Recognition has no failure: a chain it cannot prove stays as it is.
  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward)
      return;
    AttentionFusion fusion = fuseAttention(forward);
    Builder b(module.getContext());
    llvm::SmallVector<Attribute> unfused;
    for (const auto &[loc, why] : fusion.unfused)
      unfused.push_back(b.getStringAttr(locationText(loc) + ": " + why));
    module->setAttr(kAttentionFusionAttr,
                    b.getDictionaryAttr({b.getNamedAttr("fused", b.getI64IntegerAttr(fusion.fused)),
                                         b.getNamedAttr("unfused", b.getArrayAttr(unfused))}));
  }
};

} // namespace

} // namespace fsdp
