//===- MixedPrecision.cpp - compute @forward in bf16/f16 as FSDP2 does ----===//
//
// FSDP2's MixedPrecisionPolicy(param_dtype=bf16) runs the module with bf16
// parameters: every op then computes in whatever dtype torch's type
// promotion gives its operands, and autograd's gradients follow. This pass
// makes that true of @forward before the backward is built, so the
// backward inherits it: each trainable parameter is cast once to the
// compute dtype at the top of the body (ShardParameters gathers it in that
// dtype and the cast disappears), float inputs likewise under
// cast-forward-inputs, and one walk in op order retypes every op whose
// operands changed. The rule is torch's: the result takes the promotion of
// its dimensioned float operands (a rank-0 operand only counts when every
// operand is rank 0), and any operand of another dtype is cast to it; torch
// refuses a matmul with operands of two dtypes, and so does this pass.
// Values computed from constants alone (no argument reaches them) are what
// an export makes of Python scalars, of `1/sqrt(d)` in an SDPA
// decomposition and of its causal mask, and of buffers the model casts to
// its activations' dtype (`cos.to(x.dtype)`, which the export drops as a
// no-op in f32): they are weakly typed, taking the dtype of the operands
// they meet, as torch's wrapped numbers do and as those ops compute in
// torch. Named buffers (--freeze'd initializers) stay f32 and promote,
// since FSDP2 casts parameters only. --keep-f32 keeps some parameters in
// f32 and gives every op reading one f32 operands: FSDP2's f32 policy on
// that module, which casts the module's inputs (exact when the module's
// ops all read its parameters, as a norm or a head does; the note in
// docs/training.md says where it is not). Which kernel computes what, in
// which precision, is the kernels' business (docs/ops.md): each op on bf16
// operands computes in f32 and rounds its result once. One rewrite keeps
// torch's rounding where an export splits an op: F.linear's bias add
// (MatMul then Add in ONNX) is addmm in torch, the bias added to the f32
// accumulator and rounded once, so in low precision that pair becomes an
// nn.gemm with the bias over the rows flattened as torch flattens them
// (in f32 the pair stays as exported: its plans stay byte-identical).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/MixedPrecision.h"

#include "compiler/Transforms/Passes.h"
#include "dialects/nn/NNDialect.h"
#include "dialects/nn/gradients/GradientBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Regex.h"

#include <optional>

using namespace mlir;

namespace fsdp {

Type lowPrecisionType(MLIRContext *context, DType dtype) {
  Builder b(context);
  return dtype == DType::BF16 ? Type(b.getBF16Type())
         : dtype == DType::F16 ? Type(b.getF16Type())
                               : Type();
}

#define GEN_PASS_DEF_MIXEDPRECISIONPASS
#include "compiler/Transforms/Passes.h.inc"

namespace {

std::string describe(Type element) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << element;
  return text;
}

/// torch's promotion of two float dtypes: equal stays, f16 with bf16 is
/// f32, otherwise the wider one.
Type promoteFloat(Type a, Type b) {
  if (!a || a == b)
    return b;
  if (!b)
    return a;
  unsigned wa = a.getIntOrFloatBitWidth(), wb = b.getIntOrFloatBitWidth();
  if (wa == wb) // f16 and bf16
    return Float32Type::get(a.getContext());
  return wa > wb ? a : b;
}

/// The dtype --output-dtype's value spells (the flag's own spelling).
std::optional<DType> parseDType(StringRef text) {
  for (DType d : {DType::F32, DType::BF16, DType::F16})
    if (text == dtypeText(d))
      return d;
  return std::nullopt;
}

std::optional<Type> floatElement(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return std::nullopt;
  return type.getElementType();
}

bool isRankZero(Value v) { return cast<RankedTensorType>(v.getType()).getRank() == 0; }

class Retyper {
public:
  /// `output`: the element type the float outputs are cast to, or null.
  Retyper(func::FuncOp f, Type compute, Type output, const MixedPrecisionPassOptions &options)
      : f(f), compute(compute), output(output), options(options), b(f.getContext()) {}
  LogicalResult run();

private:
  LogicalResult castArguments();
  LogicalResult retype(Operation *op);
  LogicalResult retypeAttention(nn::AttentionOp op, Type common);
  void fuseLinearBias(nn::AddOp add);
  void castOutputs();
  Value castValue(Value v, Type element, Location loc);
  Value exactConstant(Value v, Type element);

  func::FuncOp f;
  Type compute, output;
  const MixedPrecisionPassOptions &options;
  OpBuilder b;
  llvm::DenseSet<Value> keptParams; // --keep-f32
  llvm::DenseSet<Value> strong;     // values some argument reaches
};

Value Retyper::castValue(Value v, Type element, Location loc) {
  auto type = cast<RankedTensorType>(v.getType());
  return b.create<nn::CastOp>(loc, type.clone(element), v);
}

/// `v` as a constant of dtype `element` when it is a splat f32 constant
/// whose value `element` holds exactly (GELU's 0.5 and 1, a 2 or an 8), or
/// null. torch's wrapped-number rule computes x * c as f32(x) * c and x + c
/// as f32(x) + round(c); with c exact in x's dtype both equal the uniform
/// op's arithmetic, so such a scalar is retyped at no bit's cost, and the
/// op joins an nn.fused chain, which a mixed-dtype op cannot.
Value Retyper::exactConstant(Value v, Type element) {
  auto constant = v.getDefiningOp<nn::ConstantOp>();
  auto dense = constant ? dyn_cast<DenseFPElementsAttr>(constant.getValue()) : nullptr;
  auto target = dyn_cast<FloatType>(element);
  if (!dense || !dense.isSplat() || !target)
    return {};
  APFloat value = dense.getSplatValue<APFloat>();
  bool losesInfo = true;
  value.convert(target.getFloatSemantics(), APFloat::rmNearestTiesToEven, &losesInfo);
  if (losesInfo || value.isNaN())
    return {};
  auto type = cast<RankedTensorType>(v.getType()).clone(element);
  return b.create<nn::ConstantOp>(constant.getLoc(), type, DenseElementsAttr::get(type, value));
}

LogicalResult Retyper::castArguments() {
  std::optional<llvm::Regex> freeze, keep;
  if (!options.freeze.empty())
    freeze.emplace(options.freeze, llvm::Regex::NoFlags);
  if (!options.keepF32.empty())
    keep.emplace(options.keepF32, llvm::Regex::NoFlags);
  Block &body = f.getBody().front();
  for (BlockArgument arg : body.getArguments()) {
    std::optional<Type> element = floatElement(arg);
    if (!element || *element == compute)
      continue;
    unsigned i = arg.getArgNumber();
    auto param = f.getArgAttrOfType<StringAttr>(i, nn::kParamAttr);
    bool input = static_cast<bool>(f.getArgAttr(i, nn::kInputAttr));
    if (param && freeze && freeze->match(param.getValue()))
      continue; // a buffer: FSDP2 leaves buffers in their dtype
    if (param && keep && keep->match(param.getValue())) {
      keptParams.insert(arg);
      f.setArgAttr(i, nn::kKeepF32Attr, b.getUnitAttr());
      continue;
    }
    if (!param && !(input && options.castForwardInputs))
      continue;
    // Right before the first reader, not at the top: the sharder places a
    // unit's all-gather before the first reader of its parameters.
    Operation *first = nullptr;
    for (Operation *user : arg.getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    if (!first)
      continue;
    b.setInsertionPoint(first);
    Location loc = NameLoc::get(
        b.getStringAttr((param ? param.getValue() : StringRef("input")).str() + ".to_" +
                        describe(compute)));
    Value low = castValue(arg, compute, loc);
    arg.replaceAllUsesExcept(low, low.getDefiningOp());
  }
  if (keep && keptParams.empty())
    return f.emitError("--keep-f32=") << options.keepF32 << " matches no trainable parameter";
  return success();
}

LogicalResult Retyper::retype(Operation *op) {
  if (auto castOp = dyn_cast<nn::CastOp>(op)) {
    // An explicit conversion keeps its target (torch code wrote .float());
    // one its input now already has is gone.
    if (castOp.getInput().getType() == castOp.getType()) {
      castOp.getResult().replaceAllUsesWith(castOp.getInput());
      strong.erase(castOp.getResult());
      castOp.erase();
    }
    return success();
  }
  // The promoted dtype: of the dimensioned float operands, or of all of
  // them when every one is rank 0, weakly typed ones aside; a kept-f32
  // parameter makes it f32.
  Type dimensioned, all, original;
  bool readsKept = false;
  for (Value v : op->getOperands()) {
    std::optional<Type> element = floatElement(v);
    if (!element || !strong.contains(v))
      continue;
    all = promoteFloat(all, *element);
    if (!isRankZero(v))
      dimensioned = promoteFloat(dimensioned, *element);
    readsKept |= keptParams.contains(v);
  }
  for (Value r : op->getResults())
    if (std::optional<Type> element = floatElement(r))
      original = *element;
  Type common = dimensioned ? dimensioned : all;
  if (!common || !original)
    return success(); // no float operand, or no float result (a comparison's is i1)
  if (readsKept)
    common = Float32Type::get(op->getContext());
  bool uniform = llvm::all_of(op->getOperands(), [&](Value v) {
    std::optional<Type> element = floatElement(v);
    return !element || *element == common;
  });
  if (uniform && common == original)
    return success();
  if (isa<nn::MatMulOp, nn::GemmOp>(op) && !readsKept &&
      llvm::any_of(op->getOperands(), [&](Value v) {
        std::optional<Type> element = floatElement(v);
        return element && strong.contains(v) && *element != common;
      })) {
    std::string dtypes;
    for (Value v : op->getOperands())
      if (std::optional<Type> element = floatElement(v); element && strong.contains(v))
        dtypes += (dtypes.empty() ? "" : " and ") + describe(*element);
    return op->emitOpError("has operands of dtypes ")
           << dtypes << " under --param-dtype=" << describe(compute)
           << "; torch refuses a matrix product of mixed dtypes (an f32 buffer meets a "
              "low-precision activation: cast it in the model, or train it as a parameter)";
  }
  if (auto attention = dyn_cast<nn::AttentionOp>(op))
    return retypeAttention(attention, common);
  // nn.pow's exponent has its own dtype (ONNX Pow); a scalar exponent
  // stays as it is, as torch's pow(tensor, scalar) computes with it.
  b.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<Type> element = floatElement(operand.get());
    if (!element || *element == common)
      continue;
    if (isa<nn::PowOp>(op) && operand.getOperandNumber() == 1 && isRankZero(operand.get()))
      continue;
    // torch's wrapped number: a Python scalar (an export's weakly typed
    // rank-0 f32 constant) meeting a bf16/f16 tensor in add, sub, mul or
    // div is not cast first; the kernel applies torch's rule for it
    // (dialects/nn/NNElementwiseOps.td).
    if (isa<nn::AddOp, nn::SubOp, nn::MulOp, nn::DivOp>(op) && isRankZero(operand.get()) &&
        !strong.contains(operand.get()) && element->isF32() && common.getIntOrFloatBitWidth() == 16) {
      if (Value exact = exactConstant(operand.get(), common)) {
        Operation *wide = operand.get().getDefiningOp();
        operand.set(exact);
        if (wide->use_empty())
          wide->erase();
      }
      continue;
    }
    operand.set(castValue(operand.get(), common, op->getLoc()));
  }
  for (Value r : op->getResults())
    if (std::optional<Type> element = floatElement(r); element && *element == original)
      r.setType(cast<RankedTensorType>(r.getType()).clone(common));
  return success();
}

/// torch's scaled_dot_product_attention: query, key and value in one dtype
/// (torch refuses a mix, as it refuses a mixed matmul), the result in it;
/// the log-sum-exp stays f32, and a float mask stays f32 or takes the
/// compute dtype (the kernel adds it to f32 scores either way; torch takes
/// an f32 mask beside bf16 operands).
LogicalResult Retyper::retypeAttention(nn::AttentionOp op, Type common) {
  Value operands[] = {op.getQuery(), op.getKey(), op.getValue()};
  for (Value v : operands)
    if (strong.contains(v) && cast<RankedTensorType>(v.getType()).getElementType() != common)
      return op.emitOpError("has query, key and value of dtypes ")
             << describe(*floatElement(op.getQuery())) << ", "
             << describe(*floatElement(op.getKey())) << " and "
             << describe(*floatElement(op.getValue())) << " under --param-dtype="
             << describe(compute) << "; torch's scaled_dot_product_attention refuses a mix";
  b.setInsertionPoint(op);
  for (OpOperand &operand : op->getOpOperands()) {
    std::optional<Type> element = floatElement(operand.get());
    if (!element || *element == common)
      continue;
    if (operand.get() == op.getMask() && element->isF32())
      continue;
    operand.set(castValue(operand.get(), common, op.getLoc()));
  }
  op.getResult().setType(cast<RankedTensorType>(op.getResult().getType()).clone(common));
  Type lse = common.isF64() ? common : Float32Type::get(op.getContext());
  op.getLse().setType(cast<RankedTensorType>(op.getLse().getType()).clone(lse));
  return success();
}

void Retyper::fuseLinearBias(nn::AddOp add) {
  // add(matmul(x [..., K], w [K, N]), bias [N]) with the product read only
  // here: reshape(gemm(reshape(x, [M, K]), w, bias), [..., N]).
  auto product = add.getLhs().getDefiningOp<nn::MatMulOp>();
  Value bias = add.getRhs();
  if (!product) {
    product = add.getRhs().getDefiningOp<nn::MatMulOp>();
    bias = add.getLhs();
  }
  if (!product || !product->hasOneUse())
    return;
  auto x = cast<RankedTensorType>(product.getLhs().getType());
  auto w = cast<RankedTensorType>(product.getRhs().getType());
  auto bt = cast<RankedTensorType>(bias.getType());
  auto out = cast<RankedTensorType>(add.getType());
  Type element = out.getElementType();
  if (x.getRank() < 2 || w.getRank() != 2 || bt.getRank() != 1 ||
      bt.getDimSize(0) != w.getDimSize(1) || x.getElementType() != element ||
      w.getElementType() != element || bt.getElementType() != element ||
      out.getShape().drop_back() != x.getShape().drop_back())
    return;
  int64_t rows = 1;
  for (int64_t d : x.getShape().drop_back())
    rows *= d;
  b.setInsertionPoint(add);
  Location loc = add.getLoc();
  Value flat = product.getLhs();
  if (x.getRank() != 2)
    flat = b.create<nn::ReshapeOp>(loc, RankedTensorType::get({rows, x.getShape().back()}, element),
                                   flat);
  // F.linear exports w as transpose(weight): the gemm reads the weight
  // with trans_b instead, so its gradient comes out in the weight's own
  // layout (no transpose of the gradient in the backward either).
  Value factor = product.getRhs();
  auto transpose = factor.getDefiningOp<nn::TransposeOp>();
  const bool transB = transpose && llvm::equal(transpose.getPerm(), ArrayRef<int64_t>{1, 0});
  if (transB)
    factor = transpose.getInput();
  Value gemm = b.create<nn::GemmOp>(loc, RankedTensorType::get({rows, w.getDimSize(1)}, element),
                                    flat, factor, bias, b.getF32FloatAttr(1),
                                    b.getF32FloatAttr(1), b.getBoolAttr(false),
                                    b.getBoolAttr(transB));
  if (out.getRank() != 2)
    gemm = b.create<nn::ReshapeOp>(loc, out, gemm);
  add.getResult().replaceAllUsesWith(gemm);
  add.erase();
  product.erase();
  if (transB && transpose->use_empty())
    transpose.erase();
}

void Retyper::castOutputs() {
  auto ret = cast<func::ReturnOp>(f.getBody().front().getTerminator());
  b.setInsertionPoint(ret);
  if (output)
    for (OpOperand &operand : ret->getOpOperands()) {
      std::optional<Type> element = floatElement(operand.get());
      if (element && *element != output)
        operand.set(castValue(operand.get(), output, ret.getLoc()));
    }
  f.setType(FunctionType::get(f.getContext(), f.getArgumentTypes(), ret.getOperandTypes()));
}

LogicalResult Retyper::run() {
  if (failed(castArguments()))
    return failure();
  Block &body = f.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body.without_terminator())
    ops.push_back(&op);
  // A result is strongly typed when a float operand is, or, with no float
  // operand, when any operand is (a cast of an input's integers): a gather
  // of a constant table by token positions stays weak.
  for (BlockArgument arg : body.getArguments())
    strong.insert(arg);
  for (Operation *op : ops) {
    bool anyFloat = false, floatStrong = false, anyStrong = false;
    for (Value v : op->getOperands()) {
      bool isStrong = strong.contains(v);
      anyStrong |= isStrong;
      if (floatElement(v)) {
        anyFloat = true;
        floatStrong |= isStrong;
      }
    }
    if (anyFloat ? floatStrong : anyStrong)
      for (Value r : op->getResults())
        strong.insert(r);
    if (failed(retype(op)))
      return failure();
  }
  for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
    if (auto add = dyn_cast<nn::AddOp>(op);
        add && nn::elementTypeOfValue(add.getResult()).getIntOrFloatBitWidth() == 16)
      fuseLinearBias(add);
  castOutputs();
  return success();
}

struct MixedPrecisionPass : impl::MixedPrecisionPassBase<MixedPrecisionPass> {
  using MixedPrecisionPassBase::MixedPrecisionPassBase;
  void runOnOperation() final {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("fsdp-mixed-precision needs a @forward function");
      return signalPassFailure();
    }
    Type compute = lowPrecisionType(module.getContext(), paramDtype);
    if (!compute) {
      forward.emitError("fsdp-mixed-precision: param-dtype must be bf16 or f16");
      return signalPassFailure();
    }
    Type output;
    if (!outputDtype.empty()) {
      std::optional<DType> dtype = parseDType(outputDtype);
      if (!dtype) {
        forward.emitError("fsdp-mixed-precision: output-dtype must be f32, bf16 or f16, not '")
            << outputDtype << "'";
        return signalPassFailure();
      }
      output = *dtype == DType::F32 ? Type(Float32Type::get(module.getContext()))
                                    : lowPrecisionType(module.getContext(), *dtype);
    }
    for (const std::string *re : {&keepF32.getValue(), &freeze.getValue()}) {
      std::string error;
      if (!re->empty() && !llvm::Regex(*re).isValid(error)) {
        forward.emitError("fsdp-mixed-precision: invalid regex '") << *re << "': " << error;
        return signalPassFailure();
      }
    }
    MixedPrecisionPassOptions options{paramDtype, outputDtype, castForwardInputs, keepF32,
                                      freeze};
    if (failed(Retyper(forward, compute, output, options).run()))
      signalPassFailure();
  }
};

} // namespace

} // namespace fsdp
