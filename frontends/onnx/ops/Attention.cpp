//===- Attention.cpp - import of ONNX Attention (opsets 23 and 24) --------===//
//
// ONNX's Attention is the function nn.attention computes, so it imports as
// one nn.attention (what torch's exporter writes for
// F.scaled_dot_product_attention at opset >= 23), never as the matmul and
// softmax chain of its function body. The mapping, read from the opset 23
// and 24 schemas and onnx 1.23's reference (onnx/reference/ops/op_attention.py):
//  - 3-D inputs [B, T, heads * D] with q_num_heads/kv_num_heads are viewed
//    as [B, heads, T, D] (reshape, then transpose), the output back.
//  - Grouped-query attention repeats each kv head H / Hkv times in place
//    ([h0, h0, h1, h1, ...]): query head h reads kv head h / (H / Hkv),
//    nn.attention's rule.
//  - The scale: ONNX multiplies Q and K each by sqrt(scale) rounded to the
//    operands' type, so the product's factor is that rounded root squared,
//    which is what the nn.attention scale holds (fsdp-fuse-attention reads
//    the same product off the exporter's decomposition). A negative scale
//    has no root (ONNX's result is NaN) and is refused.
//  - is_causal is bottom-right aligned with the offset past_sequence_length:
//    query i attends key j iff j <= i + P. With no past_key, P = 0 for any
//    Tq and Tk, which is exactly nn.attention's (torch's) top-left is_causal.
//    With a past, the shifted frontier becomes an explicit constant mask.
//  - attn_mask: bool (true attends) or a float bias of the operands' type,
//    broadcast to [B, H, Tq, Tk]; the causal frontier is composed with it as
//    ONNX does (a bool mask intersected, a float mask added to the causal
//    bias). A mask shorter than the keys is padded with false / -inf, as the
//    reference does (opset 24's text); a last dimension of 1 against more
//    keys is refused, since opset 23's text broadcasts it and the
//    reference pads it.
//  - past_key/past_value are concatenated before the keys (the present
//    outputs are that concatenation, or K and V themselves without a past).
//  - A fully masked row is zeros in ONNX since 1.23's errata and in
//    nn.attention (torch's "safe" softmax): the same.
//  - The softmax runs in f32 (f64 for f64), what nn.attention computes;
//    softmax_precision may say so or name the operands' own type.
//  - nonpad_kv_seqlen (opset 24, a per-batch key count read at run time)
//    becomes a bool mask computed in the graph: key j of batch b attends iff
//    j < n[b], and under is_causal iff j <= i + n[b] - Tq (ONNX's per-batch
//    bottom-right frontier); the reference refuses it with a past, so do we.
// What nn.attention cannot express, softcap (a tanh on the scores) and the
// qk_matmul_output output (the scores themselves, in any of the four
// modes), imports as ONNX's function body instead: the scaled matmul,
// softcap, bias, softmax, fully-masked-row guard and matmul, op by op in
// the reference's order. Those scores are then materialized, as the user
// asked for them; everything else stays fused.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstdio>
#include <tuple>

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

// The node's operand and result positions.
enum : size_t { kQuery, kKey, kValue, kMask, kPastKey, kPastValue, kNonpadKvSeqlen };
enum : size_t { kOutput, kPresentKey, kPresentValue, kQkMatmulOutput };

/// `x` [B, T, heads * D] viewed as [B, heads, T, D].
FailureOr<Value> splitHeads(ImportContext &ctx, const InputInfo &x, int64_t heads,
                            StringRef what) {
  ArrayRef<int64_t> s = x.shape();
  if (heads <= 0 || s[2] % heads != 0)
    return ctx.error(what + " hidden size " + Twine(s[2]) + " is not a multiple of " +
                     Twine(heads) + " heads");
  OpBuilder &b = ctx.builder();
  int64_t d = s[2] / heads;
  Value split = b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({s[0], s[1], heads, d},
                                                                  x.element()),
                                        x.value);
  return Value(b.create<nn::TransposeOp>(ctx.loc(), ctx.tensorType({s[0], heads, s[1], d},
                                                                   x.element()),
                                         split, b.getDenseI64ArrayAttr({0, 2, 1, 3})));
}

/// sqrt(scale) rounded to the operands' type, the factor ONNX multiplies
/// q and k by; nn.attention's scale is its square.
FailureOr<double> scaleRoot(ImportContext &ctx, Type element, int64_t headDim) {
  double scale = ctx.attribute("scale") ? ctx.floatAttr("scale", 0.0f)
                                        : 1.0 / std::sqrt(static_cast<double>(headDim));
  if (ctx.failed())
    return failure();
  if (!(scale >= 0)) {
    char text[32];
    std::snprintf(text, sizeof(text), "%g", scale);
    return ctx.error("scale " + Twine(text) + " is negative: ONNX scales q and k by its square root");
  }
  llvm::APFloat root(std::sqrt(scale));
  bool lost = false;
  root.convert(cast<FloatType>(element).getFloatSemantics(), llvm::APFloat::rmNearestTiesToEven,
               &lost);
  root.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
  return root.convertToDouble();
}

/// ONNX's softmax_precision, accepted where it names what nn.attention
/// computes in (f32, f64 for f64) or the operands' own type.
LogicalResult checkSoftmaxPrecision(ImportContext &ctx, Type element) {
  if (!ctx.attribute("softmax_precision"))
    return success();
  int64_t precision = ctx.intAttr("softmax_precision", 0);
  std::optional<DType> own = dtypeOf(element);
  DType compute = element.isF64() ? DType::Double : DType::Float;
  if (ctx.failed())
    return failure();
  if (precision == static_cast<int64_t>(compute) || (own && precision == static_cast<int64_t>(*own)))
    return success();
  return ctx.error("softmax_precision " + dtypeName(static_cast<DType>(precision)) +
                   " is not implemented: the softmax of " + dtypeName(*own) +
                   " operands runs in " + dtypeName(compute));
}

/// The mask input, padded along the keys to `keys` as ONNX pads it.
FailureOr<Value> readMask(ImportContext &ctx, Type element, int64_t keys) {
  FailureOr<InputInfo> mask = getInput(ctx, kMask);
  if (failed(mask))
    return failure();
  if (!mask->element().isInteger(1) && mask->element() != element)
    return ctx.error("attn_mask must be bool or the operands' float type");
  if (mask->rank() == 0 || mask->rank() > 4)
    return ctx.error("attn_mask of rank " + Twine(mask->rank()) +
                     " does not broadcast to [batch, heads, q, keys]");
  int64_t last = mask->shape().back();
  if (last == keys)
    return mask->value;
  if (last > keys)
    return ctx.error("attn_mask has " + Twine(last) + " keys, more than the " + Twine(keys) +
                     " of the keys");
  if (last == 1)
    return ctx.error("attn_mask's last dimension is 1 against " + Twine(keys) +
                     " keys: opset 23 broadcasts it, onnx's reference pads it with -inf");
  // The reference's pad: false (bool) or -inf (float) after the given keys.
  OpBuilder &b = ctx.builder();
  auto scalar = RankedTensorType::get({}, mask->element());
  mlir::Attribute fill = mask->element().isInteger(1)
                       ? mlir::Attribute(b.getBoolAttr(false))
                       : mlir::Attribute(b.getFloatAttr(element, -INFINITY));
  Value value = b.create<nn::ConstantOp>(ctx.loc(), scalar, DenseElementsAttr::get(scalar, fill));
  SmallVector<int64_t> pads(2 * mask->rank(), 0), shape(mask->shape());
  pads.back() = keys - last;
  shape.back() = keys;
  return Value(b.create<nn::PadOp>(ctx.loc(), ctx.tensorType(shape, mask->element()), mask->value,
                                   value, b.getDenseI64ArrayAttr(pads)));
}

/// `mask` composed with the causal frontier j <= i + offset over [tq, tk]:
/// a bool mask intersected with it, a float mask added to its 0 / -inf bias.
FailureOr<Value> addShiftedCausal(ImportContext &ctx, Value mask, Type element, int64_t tq,
                                  int64_t tk, int64_t offset) {
  OpBuilder &b = ctx.builder();
  Type maskElement = mask ? cast<RankedTensorType>(mask.getType()).getElementType()
                          : Type(b.getI1Type());
  bool isBool = maskElement.isInteger(1);
  SmallVector<mlir::Attribute> values;
  values.reserve(tq * tk);
  for (int64_t i = 0; i < tq; ++i)
    for (int64_t j = 0; j < tk; ++j)
      values.push_back(isBool ? mlir::Attribute(b.getBoolAttr(j <= i + offset))
                              : mlir::Attribute(b.getFloatAttr(element, j <= i + offset ? 0.0 : -INFINITY)));
  auto type = RankedTensorType::get({tq, tk}, maskElement);
  Value causal = b.create<nn::ConstantOp>(ctx.loc(), type, DenseElementsAttr::get(type, values));
  if (!mask)
    return causal;
  ArrayRef<int64_t> maskShape = cast<RankedTensorType>(mask.getType()).getShape();
  FailureOr<nn::Shape> shape = nn::broadcastShapes({maskShape, type.getShape()}, ctx.errorFn());
  if (failed(shape))
    return failure();
  auto result = ctx.tensorType(*shape, maskElement);
  if (isBool)
    return Value(b.create<nn::LogicalOp>(ctx.loc(), result, b.getStringAttr("and"), mask, causal));
  return Value(b.create<nn::AddOp>(ctx.loc(), result, mask, causal));
}

/// A float scalar of `element`.
Value floatScalar(ImportContext &ctx, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return ctx.builder().create<nn::ConstantOp>(
      ctx.loc(), type, DenseElementsAttr::get(type, ctx.builder().getFloatAttr(element, value)));
}

/// The type of `a` broadcast against `b`, with `element`.
FailureOr<RankedTensorType> broadcastType(ImportContext &ctx, Value a, Value b, Type element) {
  FailureOr<nn::Shape> shape =
      nn::broadcastShapes({cast<RankedTensorType>(a.getType()).getShape(),
                           cast<RankedTensorType>(b.getType()).getShape()},
                          ctx.errorFn());
  if (failed(shape))
    return failure();
  return ctx.tensorType(*shape, element);
}

/// nonpad_kv_seqlen as a run-time bool mask over [B, 1, Tq or 1, Tk]: key j
/// of batch b attends iff j < n[b], and with `causal` iff j <= i + n[b] - Tq,
/// which is j - i + Tq <= n[b] (and implies j < n[b] for every i < Tq).
FailureOr<Value> nonpadKeep(ImportContext &ctx, int64_t batch, int64_t tq, int64_t tk,
                            bool causal) {
  FailureOr<InputInfo> n = getInput(ctx, kNonpadKvSeqlen);
  if (failed(n))
    return failure();
  if (!n->element().isInteger(64) || n->rank() != 1 || n->shape()[0] != batch)
    return ctx.error("nonpad_kv_seqlen must be an int64 vector of the batch size " + Twine(batch) +
                     ", got " + nn::formatShape(n->shape()));
  OpBuilder &b = ctx.builder();
  Type i64 = b.getI64Type();
  Value lengths = b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({batch, 1, 1, 1}, i64),
                                          n->value);
  int64_t rows = causal ? tq : 1;
  SmallVector<int64_t> positions;
  positions.reserve(rows * tk);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < tk; ++j)
      positions.push_back(causal ? j - i + tq : j);
  auto type = RankedTensorType::get({1, 1, rows, tk}, i64);
  Value position = b.create<nn::ConstantOp>(
      ctx.loc(), type, DenseElementsAttr::get(type, ArrayRef<int64_t>(positions)));
  return Value(b.create<nn::CompareOp>(ctx.loc(), ctx.tensorType({batch, 1, rows, tk},
                                                                 b.getI1Type()),
                                       b.getStringAttr(causal ? "le" : "lt"), position, lengths));
}

/// `mask` (bool, float bias or none) narrowed to where `keep` holds: bool
/// masks intersected, a float bias set to -inf where `keep` is false.
FailureOr<Value> restrictMask(ImportContext &ctx, Value mask, Value keep, Type element) {
  if (!mask)
    return keep;
  OpBuilder &b = ctx.builder();
  Type maskElement = cast<RankedTensorType>(mask.getType()).getElementType();
  FailureOr<RankedTensorType> type = broadcastType(ctx, mask, keep, maskElement);
  if (failed(type))
    return failure();
  if (maskElement.isInteger(1))
    return Value(b.create<nn::LogicalOp>(ctx.loc(), *type, b.getStringAttr("and"), mask, keep));
  return Value(b.create<nn::WhereOp>(ctx.loc(), *type, keep, mask,
                                     floatScalar(ctx, element, -INFINITY)));
}

/// `x` [B, Hkv, T, D] with each head repeated `reps` times in place
/// ([h0, h0, h1, h1, ...]), the reference's np.repeat along the heads.
Value repeatHeads(ImportContext &ctx, Value x, int64_t reps) {
  if (reps == 1)
    return x;
  auto type = cast<RankedTensorType>(x.getType());
  ArrayRef<int64_t> s = type.getShape();
  Type element = type.getElementType();
  OpBuilder &b = ctx.builder();
  Value split = b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({s[0], s[1], 1, s[2], s[3]},
                                                                  element), x);
  Value repeated = b.create<nn::ExpandOp>(
      ctx.loc(), ctx.tensorType({s[0], s[1], reps, s[2], s[3]}, element), split);
  return b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({s[0], s[1] * reps, s[2], s[3]},
                                                           element), repeated);
}

/// The operands of ONNX's function body, in [B, H, T, D] with the key cache
/// already in front; `bias` is the whole additive mask (causal included) or
/// null.
struct BodyOperands {
  Value query, key, value, bias;
  Type element;
  float scaleRoot;
  float softcap;
  int64_t qkMode;
};

/// ONNX Attention's function body (onnx/reference/ops/op_attention.py),
/// op by op: (q·√s)(kᵀ·√s), softcap, + bias, softmax, rows whose bias is all
/// -inf zeroed, · v. Returns the output and the requested qk_matmul_output.
std::pair<Value, Value> buildBody(ImportContext &ctx, const BodyOperands &in) {
  OpBuilder &b = ctx.builder();
  Location loc = ctx.loc();
  Type element = in.element;
  auto typeOf = [](Value v) { return cast<RankedTensorType>(v.getType()); };
  ArrayRef<int64_t> q = typeOf(in.query).getShape(), k = typeOf(in.key).getShape();
  int64_t reps = q[1] / k[1];
  Value key = repeatHeads(ctx, in.key, reps), value = repeatHeads(ctx, in.value, reps);
  Value root = floatScalar(ctx, element, in.scaleRoot);
  Value qs = b.create<nn::MulOp>(loc, typeOf(in.query), in.query, root);
  Value kt = b.create<nn::TransposeOp>(loc, ctx.tensorType({q[0], q[1], k[3], k[2]}, element), key,
                                       b.getDenseI64ArrayAttr({0, 1, 3, 2}));
  Value ks = b.create<nn::MulOp>(loc, typeOf(kt), kt, root);
  auto scoresType = ctx.tensorType({q[0], q[1], q[2], k[2]}, element);
  Value scores = b.create<nn::MatMulOp>(loc, scoresType, qs, ks);
  if (in.softcap > 0) {
    Value cap = floatScalar(ctx, element, in.softcap);
    Value ratio = b.create<nn::DivOp>(loc, scoresType, scores, cap);
    Value squashed = b.create<nn::TanhOp>(loc, scoresType, ratio);
    scores = b.create<nn::MulOp>(loc, scoresType, squashed, cap);
  }
  // Modes 0 and 1 both read the scores after the softcap, as the reference
  // computes them (its mode 0 is not the raw product when a softcap is set).
  Value qkOutput = scores;
  Value biased = scores;
  if (in.bias)
    biased = b.create<nn::AddOp>(loc, scoresType, scores, in.bias);
  if (in.qkMode == 2)
    qkOutput = biased;
  Value probs = b.create<nn::SoftmaxOp>(loc, scoresType, biased, b.getI64IntegerAttr(3));
  if (in.bias) {
    // The guard decides on the bias, not on the (possibly NaN) scores.
    ArrayRef<int64_t> m = typeOf(in.bias).getShape();
    SmallVector<int64_t> rowShape(m);
    rowShape.back() = 1;
    Value rowMax = b.create<nn::ReduceMaxOp>(loc, ctx.tensorType(rowShape, element), in.bias,
                                             b.getDenseI64ArrayAttr({int64_t(m.size()) - 1}),
                                             b.getBoolAttr(true));
    Value allMasked = b.create<nn::IsInfOp>(loc, ctx.tensorType(rowShape, b.getI1Type()), rowMax,
                                            true, false);
    probs = b.create<nn::WhereOp>(loc, scoresType, allMasked, floatScalar(ctx, element, 0.0),
                                  probs);
  }
  if (in.qkMode == 3)
    qkOutput = probs;
  ArrayRef<int64_t> vs = typeOf(value).getShape();
  Value output = b.create<nn::MatMulOp>(loc, ctx.tensorType({q[0], q[1], q[2], vs[3]}, element),
                                        probs, value);
  return {output, qkOutput};
}

/// A bool mask as the body's additive bias: 0 where it attends, -inf not.
Value biasOf(ImportContext &ctx, Value mask, Type element) {
  auto type = cast<RankedTensorType>(mask.getType());
  if (!type.getElementType().isInteger(1))
    return mask;
  return ctx.builder().create<nn::WhereOp>(ctx.loc(), ctx.tensorType(type.getShape(), element),
                                           mask, floatScalar(ctx, element, 0.0),
                                           floatScalar(ctx, element, -INFINITY));
}

} // namespace

LogicalResult importAttention(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"is_causal", "kv_num_heads", "q_num_heads",
                                  "qk_matmul_output_mode", "scale", "softcap",
                                  "softmax_precision"})))
    return failure();
  int64_t causal = ctx.intAttr("is_causal", 0);
  int64_t qkMode = ctx.intAttr("qk_matmul_output_mode", 0);
  float softcap = ctx.floatAttr("softcap", 0.0f);
  if (ctx.failed())
    return failure();
  if (causal != 0 && causal != 1)
    return ctx.error("is_causal must be 0 or 1, got " + Twine(causal));
  if (qkMode < 0 || qkMode > 3)
    return ctx.error("qk_matmul_output_mode must be 0 to 3, got " + Twine(qkMode));
  if (!(softcap >= 0.0f))
    return ctx.error("softcap must be 0 (none) or positive");
  if (ctx.hasInput(kPastKey) != ctx.hasInput(kPastValue))
    return ctx.error("past_key and past_value must be given together");
  bool nonpad = ctx.hasInput(kNonpadKvSeqlen);
  if (nonpad && ctx.hasInput(kPastKey))
    return ctx.error("nonpad_kv_seqlen cannot be combined with past_key and past_value");
  // What the fused op cannot express takes ONNX's function body.
  bool body = softcap > 0.0f || ctx.hasOutput(kQkMatmulOutput);

  FailureOr<InputInfo> q = getInput(ctx, kQuery), k = getInput(ctx, kKey),
                       v = getInput(ctx, kValue);
  if (failed(q) || failed(k) || failed(v))
    return failure();
  Type element = q->element();
  if (!isa<FloatType>(element) || k->element() != element || v->element() != element)
    return ctx.error("Q, K and V must be float tensors of one element type");
  if (failed(checkSoftmaxPrecision(ctx, element)))
    return failure();

  // [B, H, T, D] operands; 3-D inputs name their head counts.
  const Attribute *qHeadsAttr = ctx.attribute("q_num_heads");
  const Attribute *kvHeadsAttr = ctx.attribute("kv_num_heads");
  int64_t qHeads = ctx.intAttr("q_num_heads", 0), kvHeads = ctx.intAttr("kv_num_heads", 0);
  if (ctx.failed())
    return failure();
  bool packed = q->rank() == 3;
  if (q->rank() != k->rank() || q->rank() != v->rank() || (q->rank() != 3 && q->rank() != 4))
    return ctx.error("Q, K and V must all be 3-D or all 4-D, got " + nn::formatShape(q->shape()) +
                     ", " + nn::formatShape(k->shape()) + " and " + nn::formatShape(v->shape()));
  Value query = q->value, key = k->value, value = v->value;
  if (packed) {
    if (!qHeadsAttr || !kvHeadsAttr)
      return ctx.error("3-D Q, K and V need q_num_heads and kv_num_heads");
    FailureOr<Value> qs = splitHeads(ctx, *q, qHeads, "Q"), ks = splitHeads(ctx, *k, kvHeads, "K"),
                     vs = splitHeads(ctx, *v, kvHeads, "V");
    if (failed(qs) || failed(ks) || failed(vs))
      return failure();
    query = *qs, key = *ks, value = *vs;
  } else if ((qHeadsAttr && qHeads != q->shape()[1]) ||
             (kvHeadsAttr && (kvHeads != k->shape()[1] || kvHeads != v->shape()[1]))) {
    return ctx.error("q_num_heads and kv_num_heads do not match the 4-D Q, K and V heads");
  }

  // The key cache in front of the new keys.
  int64_t past = 0;
  OpBuilder &b = ctx.builder();
  if (ctx.hasInput(kPastKey)) {
    FailureOr<InputInfo> pk = getInput(ctx, kPastKey), pv = getInput(ctx, kPastValue);
    if (failed(pk) || failed(pv))
      return failure();
    auto kt = cast<RankedTensorType>(key.getType()), vt = cast<RankedTensorType>(value.getType());
    auto cacheOf = [](RankedTensorType cache, RankedTensorType fresh) {
      return cache.getElementType() == fresh.getElementType() && cache.getRank() == 4 &&
             cache.getDimSize(0) == fresh.getDimSize(0) &&
             cache.getDimSize(1) == fresh.getDimSize(1) &&
             cache.getDimSize(3) == fresh.getDimSize(3);
    };
    if (!cacheOf(pk->type, kt) || !cacheOf(pv->type, vt) ||
        pk->shape()[2] != pv->shape()[2])
      return ctx.error("past_key " + nn::formatShape(pk->shape()) + " and past_value " +
                       nn::formatShape(pv->shape()) + " are not caches of the keys " +
                       nn::formatShape(kt.getShape()) + " and values " +
                       nn::formatShape(vt.getShape()));
    past = pk->shape()[2];
    auto grown = [&](RankedTensorType t) {
      SmallVector<int64_t> shape(t.getShape());
      shape[2] += past;
      return ctx.tensorType(shape, element);
    };
    key = b.create<nn::ConcatOp>(ctx.loc(), grown(kt), ValueRange{pk->value, key},
                                 b.getI64IntegerAttr(2));
    value = b.create<nn::ConcatOp>(ctx.loc(), grown(vt), ValueRange{pv->value, value},
                                   b.getI64IntegerAttr(2));
  }

  auto queryType = cast<RankedTensorType>(query.getType());
  ArrayRef<int64_t> qs = queryType.getShape();
  int64_t tk = cast<RankedTensorType>(key.getType()).getDimSize(2);
  Value mask;
  if (ctx.hasInput(kMask)) {
    FailureOr<Value> m = readMask(ctx, element, tk);
    if (failed(m))
      return failure();
    mask = *m;
  }
  // With a past the frontier is shifted off nn.attention's top-left one;
  // nonpad_kv_seqlen shifts it per batch at run time; the function body
  // takes the frontier as part of its bias.
  bool topLeftCausal = causal && past == 0 && !nonpad && !body;
  if (causal && !nonpad && !topLeftCausal) {
    FailureOr<Value> m = addShiftedCausal(ctx, mask, element, qs[2], tk, past);
    if (failed(m))
      return failure();
    mask = *m;
  }
  if (nonpad) {
    FailureOr<Value> keep = nonpadKeep(ctx, qs[0], qs[2], tk, causal);
    FailureOr<Value> m = failed(keep) ? FailureOr<Value>(failure())
                                      : restrictMask(ctx, mask, *keep, element);
    if (failed(m))
      return failure();
    mask = *m;
  }
  std::optional<ArrayRef<int64_t>> maskShape;
  if (mask)
    maskShape = cast<RankedTensorType>(mask.getType()).getShape();
  FailureOr<nn::Shape> shape =
      nn::attentionShape(qs, cast<RankedTensorType>(key.getType()).getShape(),
                         cast<RankedTensorType>(value.getType()).getShape(), maskShape,
                         ctx.errorFn());
  FailureOr<double> root = scaleRoot(ctx, element, qs[3]);
  if (failed(shape) || failed(root))
    return failure();

  Value output, qkOutput;
  if (body) {
    BodyOperands operands{query, key, value, mask ? biasOf(ctx, mask, element) : Value(),
                          element, static_cast<float>(*root), softcap, qkMode};
    std::tie(output, qkOutput) = buildBody(ctx, operands);
  } else {
    Type lseElement = element.isF64() ? Type(b.getF64Type()) : b.getF32Type();
    output = b.create<nn::AttentionOp>(ctx.loc(), ctx.tensorType(*shape, element),
                                       ctx.tensorType(qs.take_front(3), lseElement), query, key,
                                       value, mask, b.getBoolAttr(topLeftCausal),
                                       b.getF32FloatAttr(static_cast<float>(*root * *root)),
                                       b.getF32FloatAttr(0.0f), IntegerAttr())
                 .getResult();
  }
  if (packed) {
    // [B, H, Tq, Dv] back to [B, Tq, H * Dv].
    const nn::Shape &o = *shape;
    Value heads = b.create<nn::TransposeOp>(ctx.loc(), ctx.tensorType({o[0], o[2], o[1], o[3]},
                                                                      element),
                                            output, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    output = b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({o[0], o[2], o[1] * o[3]}, element),
                                     heads);
  }
  if (failed(ctx.setOutput(kOutput, output)) || failed(ctx.setOutput(kPresentKey, key)) ||
      (ctx.hasOutput(kQkMatmulOutput) && failed(ctx.setOutput(kQkMatmulOutput, qkOutput))))
    return failure();
  return ctx.setOutput(kPresentValue, value);
}

} // namespace fsdp::onnx
