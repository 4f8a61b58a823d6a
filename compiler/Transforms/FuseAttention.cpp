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
// read elsewhere, a mask computed from a parameter) stays unfused,
// and the pass records why on the module (dist::kAttentionFusionAttr) for
// --emit=summary and the report. A mask computed from constants alone
// (ConstantValues.h: dynamo's where(trilu(ones) == 0, finfo.min, 0), a
// sliced tril buffer) that equals the causal (top-left) triangle becomes
// is_causal, which lets the kernel skip the masked tiles instead of
// reading a mask; scales computed from constants (dynamo's
// sqrt(1 / sqrt(D)) on each operand) are evaluated the same way. Keys
// repeated by transformers' repeat_kv are read unrepeated (grouped-query
// attention); single-head attention over rank-3 [N, T, D] operands is the
// op on [N, 1, T, D] views.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/FuseAttention.h"

#include "compiler/Analysis/ConstantValues.h"
#include "compiler/Transforms/EraseDeadChain.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/fsdp/FSDPDialect.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/ShapeRules.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Regex.h"

#include <cmath>
#include <limits>
#include <optional>

using namespace mlir;

namespace fsdp {
namespace {

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

/// The value of a splat constant, or of a one-element expression of
/// constants (dynamo writes the scale as sqrt(1 / sqrt(D))), or nullopt.
std::optional<double> scalarConstant(Value v, ConstantValues &values) {
  auto constant = v.getDefiningOp<nn::ConstantOp>();
  auto dense = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
  if (dense && dense.isSplat())
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (!isa<FloatType>(cast<ShapedType>(v.getType()).getElementType()))
    return std::nullopt;
  return values.scalar(v);
}

/// How a where's fill masks a score: -inf always removes the key; the
/// dtype's lowest finite value (transformers' and dynamo's finfo.min)
/// removes it only from rows that keep another key, which the pass proves
/// by proving the mask causal.
enum class Fill { None, NegativeInfinity, Lowest };

Fill fillOf(Value v, ConstantValues &values) {
  std::optional<double> c = scalarConstant(v, values);
  if (!c)
    return Fill::None;
  if (std::isinf(*c) && *c < 0)
    return Fill::NegativeInfinity;
  auto element = cast<FloatType>(cast<ShapedType>(v.getType()).getElementType());
  if (*c == APFloat::getLargest(element.getFloatSemantics(), /*Negative=*/true).convertToDouble())
    return Fill::Lowest;
  return Fill::None;
}

/// Which float block arguments (parameters, float model inputs) a mask
/// cannot be computed from: those that may get a gradient, which
/// nn.attention does not give its mask.
class GradientArguments {
public:
  explicit GradientArguments(const AttentionFusionOptions &options) : gradients(options.gradients) {
    if (!options.freeze.empty())
      freeze.emplace(options.freeze, llvm::Regex::NoFlags);
  }

  bool mayNeedOne(BlockArgument arg) const {
    if (!gradients || !isa<FloatType>(cast<ShapedType>(arg.getType()).getElementType()))
      return false;
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    auto name = func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "nn.param")
                     : StringAttr();
    // A frozen parameter is a buffer (BuildTrainStep.cpp matches the same way).
    return !(name && freeze && freeze->match(name.getValue()));
  }

private:
  bool gradients;
  std::optional<llvm::Regex> freeze;
};

/// Whether a block argument that may get a gradient reaches `v`.
bool dependsOnGradientArgument(Value v, const GradientArguments &arguments) {
  llvm::SetVector<Value> work;
  work.insert(v);
  for (size_t i = 0; i < work.size(); ++i) {
    Value cur = work[i];
    if (auto arg = dyn_cast<BlockArgument>(cur)) {
      if (arguments.mayNeedOne(arg))
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
Value peelScale(Value v, double &scale, ConstantValues &values) {
  while (Operation *op = v.getDefiningOp()) {
    if (auto mul = dyn_cast<nn::MulOp>(op)) {
      if (std::optional<double> c = scalarConstant(mul.getRhs(), values); c && shapeOf(mul.getLhs()) == shapeOf(v)) {
        scale *= *c;
        v = mul.getLhs();
        continue;
      }
      if (std::optional<double> c = scalarConstant(mul.getLhs(), values); c && shapeOf(mul.getRhs()) == shapeOf(v)) {
        scale *= *c;
        v = mul.getRhs();
        continue;
      }
    }
    if (auto div = dyn_cast<nn::DivOp>(op))
      if (std::optional<double> c = scalarConstant(div.getRhs(), values);
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

bool isIdentity(ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

/// `x` itself when it has `heads` ([B, H, T, D]); or the keys (values) y
/// [B, Hkv, T, D] when `x` is transformers' repeat_kv of them: y reshaped
/// to [B, Hkv, 1, T, D], expanded to [B, Hkv, H / Hkv, T, D] and, but for
/// the reshape that merges the expanded dims, read as [B, H, T, D]. That
/// puts query head h on kv head h / (H / Hkv), nn.attention's grouping;
/// the unit dim inserted anywhere else (a tile, not an interleave) is not
/// this. Null otherwise.
Value unrepeatHeads(Value x, ArrayRef<int64_t> heads) {
  Value expanded = x;
  if (auto merge = x.getDefiningOp<nn::ReshapeOp>(); merge && shapeOf(merge.getInput()).size() == 5)
    expanded = merge.getInput();
  auto expand = expanded.getDefiningOp<nn::ExpandOp>();
  auto unsqueeze = expand ? expand.getInput().getDefiningOp<nn::ReshapeOp>() : nullptr;
  if (unsqueeze && heads.size() == 4) {
    ArrayRef<int64_t> y = shapeOf(unsqueeze.getInput()), u = shapeOf(unsqueeze.getResult()),
                      e = shapeOf(expanded);
    const int64_t want[5] = {heads[0], y.size() == 4 ? y[1] : -1, 1, heads[2], heads[3]};
    if (y.size() == 4 && u == ArrayRef<int64_t>(want) && e.size() == 5 && e[0] == u[0] &&
        e[1] == u[1] && e.take_back(2) == u.take_back(2) && y[1] * e[2] == heads[1])
      return unsqueeze.getInput();
  }
  return shapeOf(x) == heads ? x : Value();
}

/// Where the keys [B, Hkv, Tk, D] come from: `source`, transposed by
/// `perm` when it is not empty (a transpose the pass builds, since the
/// graph only holds the transposed keys).
struct Keys {
  Value source;
  llvm::SmallVector<int64_t, 4> perm;
};

/// The keys of which `kt` ([B, H, D, Tk], or [N, D, Tk] for single-head
/// attention) is the transpose, with scalar
/// factors on either side multiplied into `scale`: a transpose of some
/// layout of the keys (nn.transpose [0,1,3,2] of [B, H, Tk, D], or the
/// legacy exporter's [0,2,3,1] of [B, Tk, H, D]), or dynamo's reshape
/// merging the leading dims, the swap of the last two and a reshape back,
/// of keys that may be repeated for grouped-query attention. Empty when
/// `kt` is neither.
std::optional<Keys> peelKeyTranspose(Value kt, double &scale, ConstantValues &values) {
  kt = peelScale(kt, scale, values);
  ArrayRef<int64_t> wanted = shapeOf(kt);
  const size_t rank = wanted.size();
  if (rank != 3 && rank != 4)
    return std::nullopt;
  llvm::SmallVector<int64_t, 4> keys(wanted);
  std::swap(keys[rank - 2], keys[rank - 1]);
  if (auto t = kt.getDefiningOp<nn::TransposeOp>()) {
    // kt = transpose(x, perm), so the keys are transpose(x, perm with its
    // last two entries swapped).
    llvm::SmallVector<int64_t, 4> perm(t.getPerm());
    std::swap(perm[rank - 2], perm[rank - 1]);
    Value source = peelScale(t.getInput(), scale, values);
    if (!isIdentity(perm))
      return Keys{source, perm};
    if (Value k = unrepeatHeads(source, keys))
      return Keys{k, {}};
    return std::nullopt;
  }
  auto outer = kt.getDefiningOp<nn::ReshapeOp>();
  auto t = outer ? outer.getInput().getDefiningOp<nn::TransposeOp>() : nullptr;
  auto inner = t ? t.getInput().getDefiningOp<nn::ReshapeOp>() : nullptr;
  if (!inner || !swapsLastTwo(t.getPerm()))
    return std::nullopt;
  // The inner reshape keeps [Tk, D] last, so what it reads, row-major, is
  // the keys [B, H, Tk, D].
  Value x = inner.getInput();
  ArrayRef<int64_t> merged = shapeOf(inner.getResult());
  if (merged.size() < 2 || shapeOf(x).size() < 2 || shapeOf(x).take_back(2) != merged.take_back(2) ||
      merged.take_back(2) != ArrayRef<int64_t>(keys).take_back(2))
    return std::nullopt;
  if (Value k = unrepeatHeads(peelScale(x, scale, values), keys))
    return Keys{peelScale(k, scale, values), {}};
  return std::nullopt;
}

/// Masks larger than this are not proven causal (reading each element of
/// an 8192 x 8192 mask costs about a second); they stay masks.
constexpr int64_t kMaxCausalCheck = int64_t(1) << 24;

/// Whether `mask`, computed from constants (float: 0 where attended, -inf
/// or the dtype's lowest where not; bool: true where attended, or the
/// reverse when `negated`), is exactly the causal triangle over its last
/// two dims (key j attended iff j <= i), the same for every leading index.
bool isCausalConstant(Value mask, bool negated, ConstantValues &values) {
  auto type = cast<RankedTensorType>(mask.getType());
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.size() < 2 || !values.isConstant(mask) || type.getNumElements() > kMaxCausalCheck)
    return false;
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  if (rows <= 1 && cols <= 1)
    return false;
  Type element = type.getElementType();
  double lowest = -std::numeric_limits<double>::infinity();
  if (auto fp = dyn_cast<FloatType>(element))
    lowest = APFloat::getLargest(fp.getFloatSemantics(), /*Negative=*/true).convertToDouble();
  else if (!element.isInteger(1))
    return false;
  llvm::SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t n = 0, total = type.getNumElements(); n < total; ++n) {
    // Walk the indices in row-major order.
    for (size_t d = shape.size(); n > 0 && d-- > 0;) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
    const int64_t i = index[shape.size() - 2], j = index.back();
    const double x = values.at(mask, index);
    bool attended;
    if (element.isInteger(1))
      attended = (x != 0) != negated;
    else if (x == 0)
      attended = true;
    else if (x <= lowest)
      attended = false;
    else
      return false;
    if (attended != (j <= i))
      return false;
  }
  return true;
}

/// One recognized attention, ready to build.
struct Recognized {
  Value query, value, mask;
  Keys key;
  bool maskNegated = false; // a bool mask whose true marks what is masked
  bool causal = false;
  /// nn.dropout's ratio and seed where one drops the probabilities.
  float dropoutP = 0.0f;
  std::optional<int64_t> seed;
  /// Rank-3 attention ([N, T, D], one head): the operands are viewed as
  /// [N, 1, T, D] around the fused op, and its output back.
  bool lift = false;
  double scale = 1.0;
};

/// A rank-3 attention operand's shape [N, T, D] as nn.attention's
/// [N, 1, T, D]; other shapes (4-D operands, masks of rank <= 2, which
/// broadcast from the right either way) as they are.
llvm::SmallVector<int64_t, 4> lifted(ArrayRef<int64_t> shape, bool lift) {
  llvm::SmallVector<int64_t, 4> result(shape);
  if (lift && shape.size() == 3)
    result.insert(result.begin() + 1, 1);
  return result;
}

class Recognizer {
public:
  Recognizer(nn::MatMulOp pv, ConstantValues &values, const GradientArguments &arguments)
      : pv(pv), values(values), arguments(arguments) {}

  /// Recognizes the chain ending at `pv`; false with `why` set when it is a
  /// near miss, false with `why` empty when `pv` is no attention at all.
  bool run(Recognized &out, std::string &why);

private:
  bool fail(std::string &why, const llvm::Twine &reason) {
    why = reason.str();
    return false;
  }
  nn::MatMulOp pv;
  ConstantValues &values;
  const GradientArguments &arguments;
};

bool Recognizer::run(Recognized &out, std::string &why) {
  why.clear();
  Value probs = pv.getLhs();
  // Dropout on the probabilities: nn.attention draws the same keep bits
  // (seed, step, index in the probabilities) without storing a mask.
  Operation *consumer = pv.getOperation();
  if (auto dropout = probs.getDefiningOp<nn::DropoutOp>()) {
    if (!dropout.getMask().use_empty())
      return fail(why, "the dropout's mask is read elsewhere");
    if (!dropout.getResult().hasOneUse())
      return fail(why, "the dropped probabilities are read elsewhere too");
    if (dropout.getTraining() && !dropout.getRatio().isZero()) {
      out.dropoutP = dropout.getRatio().convertToFloat();
      out.seed = dropout.getSeed();
    }
    consumer = dropout.getOperation();
    probs = dropout.getInput();
  }
  // SDPA's math decomposition guards rows whose every key is masked:
  // where(isnan(p), 0, p), the zeros nn.attention gives such rows.
  nn::WhereOp guard = probs.getDefiningOp<nn::WhereOp>();
  if (guard) {
    auto isNaN = guard.getCondition().getDefiningOp<nn::IsNaNOp>();
    std::optional<double> zero = scalarConstant(guard.getX(), values);
    if (isNaN && isNaN.getInput() == guard.getY() && zero && *zero == 0 &&
        shapeOf(guard.getResult()) == shapeOf(guard.getY()))
      probs = guard.getY();
    else
      guard = nullptr;
  }
  auto softmax = probs.getDefiningOp<nn::SoftmaxOp>();
  if (!softmax)
    return false;
  ArrayRef<int64_t> scores = shapeOf(softmax.getResult());
  const int64_t rank = static_cast<int64_t>(scores.size());
  if (rank != 3 && rank != 4)
    return fail(why, "scores of rank " + llvm::Twine(rank) + ", not 3 or 4");
  out.lift = rank == 3;
  if (softmax.getAxis() != rank - 1)
    return fail(why, "softmax over axis " + llvm::Twine(softmax.getAxis()) + ", not the keys");
  for (Operation *user : softmax.getResult().getUsers())
    if (guard ? user != guard && user != guard.getCondition().getDefiningOp()
              : user != consumer)
      return fail(why, "the probabilities are read elsewhere too");
  if (guard && !guard.getCondition().hasOneUse())
    return fail(why, "the probabilities' NaN test is read elsewhere too");

  // The mask: an additive float tensor, or where(mask, s, fill).
  Value s = softmax.getInput();
  bool fillLowest = false;
  if (auto add = s.getDefiningOp<nn::AddOp>()) {
    // The scores are the operand of the scores' shape that a product makes.
    auto isScores = [&](Value v) {
      double ignored = 1.0;
      return shapeOf(v) == scores && peelScale(v, ignored, values).getDefiningOp<nn::MatMulOp>();
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
    const Fill yFill = fillOf(where.getY(), values), xFill = fillOf(where.getX(), values);
    if (yFill != Fill::None) {
      out.mask = where.getCondition();
      s = where.getX();
      fillLowest = yFill == Fill::Lowest;
    } else if (xFill != Fill::None) {
      out.mask = where.getCondition();
      out.maskNegated = true;
      s = where.getY();
      fillLowest = xFill == Fill::Lowest;
    } else {
      return fail(why, "a where whose fill is neither -inf nor the dtype's lowest value");
    }
    if (shapeOf(s) != scores)
      return fail(why, "the masked scores are broadcast by the where");
  }
  if (out.mask) {
    ArrayRef<int64_t> mask = shapeOf(out.mask);
    if (mask.size() > static_cast<size_t>(rank) || !nn::broadcastsTo(mask, scores))
      return fail(why, "a mask of shape " + nn::formatShape(mask) +
                           " that does not broadcast to the scores " + nn::formatShape(scores));
    if (dependsOnGradientArgument(out.mask, arguments))
      return fail(why, "the mask is computed from a parameter or float input (it would need a "
                       "gradient; --freeze the parameter if it is a buffer)");
  }

  // The scale and the product of queries and transposed keys.
  s = peelScale(s, out.scale, values);
  auto qk = s.getDefiningOp<nn::MatMulOp>();
  if (!qk)
    return fail(why, "the scores are not a product of queries and keys");
  out.query = peelScale(qk.getLhs(), out.scale, values);
  std::optional<Keys> keys = peelKeyTranspose(qk.getRhs(), out.scale, values);
  if (!keys)
    return fail(why, "the product's right operand is not the keys transposed");
  out.key = *keys;
  out.value = unrepeatHeads(pv.getRhs(), shapeOf(pv.getRhs()));
  Type element = cast<ShapedType>(out.query.getType()).getElementType();
  if (cast<ShapedType>(out.key.source.getType()).getElementType() != element ||
      cast<ShapedType>(out.value.getType()).getElementType() != element)
    return fail(why, "queries, keys and values of different dtypes");
  llvm::SmallVector<int64_t, 4> maskLifted;
  std::optional<ArrayRef<int64_t>> maskShape;
  if (out.mask) {
    maskLifted = lifted(shapeOf(out.mask), out.lift);
    maskShape = ArrayRef<int64_t>(maskLifted);
  }
  std::string shapeError;
  auto error = [&](const llvm::Twine &message) { shapeError = message.str(); };
  llvm::SmallVector<int64_t, 4> keyShape(shapeOf(out.key.source));
  for (size_t d = 0; d < out.key.perm.size(); ++d)
    keyShape[d] = shapeOf(out.key.source)[out.key.perm[d]];
  FailureOr<nn::Shape> result =
      nn::attentionShape(lifted(shapeOf(out.query), out.lift), lifted(keyShape, out.lift),
                         lifted(shapeOf(out.value), out.lift), maskShape, error);
  if (failed(result))
    return fail(why, shapeError);
  if (ArrayRef<int64_t>(*result) != ArrayRef<int64_t>(lifted(shapeOf(pv.getResult()), out.lift)))
    return fail(why, "the product with the values broadcasts");
  if (out.mask && shapeOf(out.mask).take_back(2) == scores.take_back(2) &&
      isCausalConstant(out.mask, out.maskNegated, values)) {
    out.causal = true;
    out.mask = Value();
  }
  if (fillLowest && !out.causal)
    return fail(why, "a where filling with the dtype's lowest value under a mask not proven "
                     "causal (a fully masked row would differ from nn.attention's)");
  return true;
}

Value buildAttention(nn::MatMulOp pv, const Recognized &r) {
  OpBuilder b(pv);
  Location loc = pv.getLoc();
  Value mask = r.mask;
  if (mask && r.maskNegated)
    mask = b.create<nn::NotOp>(loc, mask.getType(), mask);
  Value key = r.key.source;
  if (!r.key.perm.empty()) {
    auto sourceType = cast<RankedTensorType>(key.getType());
    llvm::SmallVector<int64_t, 4> shape;
    for (int64_t d : r.key.perm)
      shape.push_back(sourceType.getDimSize(d));
    key = b.create<nn::TransposeOp>(loc, RankedTensorType::get(shape, sourceType.getElementType()),
                                    key, b.getDenseI64ArrayAttr(r.key.perm));
  }
  // Single-head rank-3 operands viewed as [N, 1, T, D].
  auto lift = [&](Value v) -> Value {
    auto type = cast<RankedTensorType>(v.getType());
    if (!r.lift || type.getRank() != 3)
      return v;
    return b.create<nn::ReshapeOp>(
        loc, RankedTensorType::get(lifted(type.getShape(), true), type.getElementType()), v);
  };
  // One statement each, so the reshapes come in operand order.
  Value query = lift(r.query);
  Value liftedKey = lift(key);
  Value value = lift(r.value);
  if (mask)
    mask = lift(mask);
  auto queryType = cast<RankedTensorType>(query.getType());
  auto outType = cast<RankedTensorType>(pv.getResult().getType());
  Type lseElement = queryType.getElementType().isF64() ? Type(b.getF64Type()) : b.getF32Type();
  auto lseType = RankedTensorType::get(queryType.getShape().take_front(3), lseElement);
  auto op = b.create<nn::AttentionOp>(
      loc, RankedTensorType::get(lifted(outType.getShape(), r.lift), outType.getElementType()),
      lseType, query, liftedKey, value, mask, b.getBoolAttr(r.causal),
      b.getF32FloatAttr(static_cast<float>(r.scale)), b.getF32FloatAttr(r.dropoutP),
      r.seed ? b.getI64IntegerAttr(*r.seed) : IntegerAttr());
  if (!r.lift)
    return op.getResult();
  return b.create<nn::ReshapeOp>(loc, outType, op.getResult());
}

} // namespace

AttentionFusion fuseAttention(func::FuncOp func, const AttentionFusionOptions &options) {
  AttentionFusion result;
  ConstantValues values;
  const GradientArguments arguments(options);
  llvm::SmallVector<nn::MatMulOp> products;
  func.walk([&](nn::MatMulOp op) { products.push_back(op); });
  for (nn::MatMulOp pv : products) {
    Recognized r;
    std::string why;
    if (!Recognizer(pv, values, arguments).run(r, why)) {
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
    AttentionFusion fusion = fuseAttention(forward, {freeze, gradients});
    Builder b(module.getContext());
    llvm::SmallVector<Attribute> unfused;
    for (const auto &[loc, why] : fusion.unfused)
      unfused.push_back(b.getStringAttr(locationText(loc) + ": " + why));
    module->setAttr(dist::kAttentionFusionAttr,
                    b.getDictionaryAttr({b.getNamedAttr("fused", b.getI64IntegerAttr(fusion.fused)),
                                         b.getNamedAttr("unfused", b.getArrayAttr(unfused))}));
  }
};

} // namespace

} // namespace fsdp
