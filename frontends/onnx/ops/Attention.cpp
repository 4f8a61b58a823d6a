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
// Refused as not implemented yet: softcap (a tanh on the scores nn.attention
// does not apply), the qk_matmul_output output (nn.attention never forms
// the scores) and nonpad_kv_seqlen (a per-batch key count read at run time).
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

#include "llvm/ADT/APFloat.h"

#include <cmath>
#include <cstdio>

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

/// The operands' scale: sqrt(scale) rounded to their type, squared.
FailureOr<float> scaleFactor(ImportContext &ctx, Type element, int64_t headDim) {
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
  double r = root.convertToDouble();
  return static_cast<float>(r * r);
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
  if (softcap != 0.0f)
    return ctx.error("softcap is not implemented yet (nn.attention applies no tanh to the "
                     "scores)");
  if (ctx.hasOutput(kQkMatmulOutput))
    return ctx.error("the qk_matmul_output output is not implemented yet (nn.attention never "
                     "forms the scores)");
  if (ctx.hasInput(kNonpadKvSeqlen))
    return ctx.error("nonpad_kv_seqlen is not implemented yet (a per-batch key count read at "
                     "run time)");
  if (ctx.hasInput(kPastKey) != ctx.hasInput(kPastValue))
    return ctx.error("past_key and past_value must be given together");

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
  // With a past the frontier is shifted off nn.attention's top-left one.
  bool topLeftCausal = causal && past == 0;
  if (causal && past > 0) {
    FailureOr<Value> m = addShiftedCausal(ctx, mask, element, qs[2], tk, past);
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
  FailureOr<float> scale = scaleFactor(ctx, element, qs[3]);
  if (failed(shape) || failed(scale))
    return failure();

  Type lseElement = element.isF64() ? Type(b.getF64Type()) : b.getF32Type();
  auto op = b.create<nn::AttentionOp>(ctx.loc(), ctx.tensorType(*shape, element),
                                      ctx.tensorType(qs.take_front(3), lseElement), query, key,
                                      value, mask, b.getBoolAttr(topLeftCausal),
                                      b.getF32FloatAttr(*scale));
  Value output = op.getResult();
  if (packed) {
    // [B, H, Tq, Dv] back to [B, Tq, H * Dv].
    const nn::Shape &o = *shape;
    Value heads = b.create<nn::TransposeOp>(ctx.loc(), ctx.tensorType({o[0], o[2], o[1], o[3]},
                                                                      element),
                                            output, b.getDenseI64ArrayAttr({0, 2, 1, 3}));
    output = b.create<nn::ReshapeOp>(ctx.loc(), ctx.tensorType({o[0], o[2], o[1] * o[3]}, element),
                                     heads);
  }
  if (failed(ctx.setOutput(kOutput, output)) || failed(ctx.setOutput(kPresentKey, key)))
    return failure();
  return ctx.setOutput(kPresentValue, value);
}

} // namespace fsdp::onnx
