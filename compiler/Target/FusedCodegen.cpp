//===- FusedCodegen.cpp - native code for a plan's Fused chains -----------===//
//
// One element-body builder (FusedBody) emits a program's op chain on a
// value of any width (a scalar f32 or an 8/16-lane vector of them); the CPU
// functions use it for their vector loop and scalar tail, the NVPTX kernels
// for their one element per thread and iteration. Its formulas transcribe
// runtime/math/FastMath.h and Activations.h op for op (same constants, same
// association, no fast-math flags, selects where the C++ has ?:), which is
// what keeps generated code bitwise equal to the interpreter; the unit test
// (tests/unit/compiler/Target/FusedCodegenTest.cpp) checks every op against
// it. A bf16 or f16 program loads 16-bit elements and widens them, and
// rounds every op's result to the storage dtype as the interpreter's
// roundToStorage does: runtime/support/Half.h's conversions transcribed as
// integer operations on the f32 bits (the same on every target, NaN
// included, and no dependence on how a backend lowers bfloat or half), and
// stores the rounded bits.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/FusedCodegen.h"

#include "compiler/Target/LlvmObject.h"
#include "runtime/backends/FusedProgram.h"
#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <cmath>
#include <cstdio>
#include <set>

namespace fsdp {
namespace {

using namespace mlir;
using rt::FusedProgram;
using rt::FusedStep;

/// The math library's log for the body's value type: the CPU's llvm.log
/// (lowered to glibc's logf per lane), a GPU's __nv_logf call.
using LogEmitter = std::function<Value(OpBuilder &, Location, Value)>;

/// Emits one program's element math on values of type f32 or
/// vector<width x f32>, and its loads and stores of elements of the
/// program's storage dtype.
class FusedBody {
public:
  FusedBody(OpBuilder &b, Location loc, int width, LogEmitter log, rt::DType dtype)
      : b(b), loc(loc), width(width), log(std::move(log)), dtype(dtype) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
    floatType = width ? Type(VectorType::get({width}, f32)) : f32;
    intType = width ? Type(VectorType::get({width}, i32)) : i32;
    Type element = dtype == rt::DType::F32 ? f32 : Type(b.getI16Type());
    storageType = width ? Type(VectorType::get({width}, element)) : element;
  }

  /// The program's results (per output) from its input values.
  SmallVector<Value> run(const FusedProgram &p, ArrayRef<Value> inputs) {
    SmallVector<Value> value(inputs.begin(), inputs.end());
    SmallVector<Value> results(p.numOutputs);
    for (int k = 0; k < p.numSteps; ++k) {
      const FusedStep &s = p.steps[k];
      Value x = value[s.a], y = s.b >= 0 ? value[s.b] : x;
      value.push_back(roundToStorage(apply(s.op, x, y)));
      if (p.outputOf[k] >= 0)
        results[p.outputOf[k]] = value.back();
    }
    return results;
  }

  /// Element `index` of the storage array `base` (a vector of them from
  /// there), as f32.
  Value load(Value base, Value index) {
    auto ptr = cast<LLVM::LLVMPointerType>(base.getType());
    Type element = getElementTypeOrSelf(storageType);
    Value at = b.create<LLVM::GEPOp>(loc, ptr, element, base, ValueRange{index});
    Value raw = b.create<LLVM::LoadOp>(loc, storageType, at,
                                       /*alignment=*/element.getIntOrFloatBitWidth() / 8);
    return widen(raw);
  }
  /// Stores `value` (already rounded to the storage dtype) at `index`.
  void store(Value value, Value base, Value index) {
    auto ptr = cast<LLVM::LLVMPointerType>(base.getType());
    Type element = getElementTypeOrSelf(storageType);
    Value at = b.create<LLVM::GEPOp>(loc, ptr, element, base, ValueRange{index});
    b.create<LLVM::StoreOp>(loc, narrow(value), at,
                            /*alignment=*/element.getIntOrFloatBitWidth() / 8);
  }

  /// A broadcast of one f32 to the value type.
  Value splat(Value scalar) {
    if (!width)
      return scalar;
    Value undef = b.create<LLVM::UndefOp>(loc, floatType);
    Value zero = b.create<LLVM::ConstantOp>(loc, i32, b.getI32IntegerAttr(0));
    Value one = b.create<LLVM::InsertElementOp>(loc, undef, scalar, zero);
    SmallVector<int32_t> mask(width, 0);
    return b.create<LLVM::ShuffleVectorOp>(loc, one, undef, mask);
  }

private:
  Value cst(float v) {
    Attribute a = b.getF32FloatAttr(v);
    if (width)
      a = DenseElementsAttr::get(cast<ShapedType>(floatType), v);
    return b.create<LLVM::ConstantOp>(loc, floatType, a);
  }
  Value cstInt(int32_t v) {
    Attribute a = b.getI32IntegerAttr(v);
    if (width)
      a = DenseElementsAttr::get(cast<ShapedType>(intType), v);
    return b.create<LLVM::ConstantOp>(loc, intType, a);
  }
  Value add(Value x, Value y) { return b.create<LLVM::FAddOp>(loc, x, y); }
  Value sub(Value x, Value y) { return b.create<LLVM::FSubOp>(loc, x, y); }
  Value mul(Value x, Value y) { return b.create<LLVM::FMulOp>(loc, x, y); }
  Value div(Value x, Value y) { return b.create<LLVM::FDivOp>(loc, x, y); }
  Value neg(Value x) { return b.create<LLVM::FNegOp>(loc, x); }
  Value cmp(LLVM::FCmpPredicate p, Value x, Value y) {
    return b.create<LLVM::FCmpOp>(loc, p, x, y);
  }
  /// C++'s `c ? t : f` on floats.
  Value select(Value c, Value t, Value f) { return b.create<LLVM::SelectOp>(loc, c, t, f); }
  Value lt(Value x, Value y) { return cmp(LLVM::FCmpPredicate::olt, x, y); }
  Value gt(Value x, Value y) { return cmp(LLVM::FCmpPredicate::ogt, x, y); }
  Value fabs(Value x) { return b.create<LLVM::FAbsOp>(loc, x); }
  Value copysign(Value x, Value y) { return b.create<LLVM::CopySignOp>(loc, x, y); }

  // Integer operations on i32 values (or vectors of them), for the 16-bit
  // conversions: C++'s uint32_t arithmetic (wrapping, logical shifts).
  Value iadd(Value x, Value y) { return b.create<LLVM::AddOp>(loc, x, y); }
  Value isub(Value x, Value y) { return b.create<LLVM::SubOp>(loc, x, y); }
  Value iand(Value x, Value y) { return b.create<LLVM::AndOp>(loc, x, y); }
  Value ior(Value x, Value y) { return b.create<LLVM::OrOp>(loc, x, y); }
  Value shl(Value x, int32_t n) { return b.create<LLVM::ShlOp>(loc, x, cstInt(n)); }
  Value lshr(Value x, int32_t n) { return b.create<LLVM::LShrOp>(loc, x, cstInt(n)); }
  Value icmp(LLVM::ICmpPredicate p, Value x, Value y) {
    return b.create<LLVM::ICmpOp>(loc, p, x, y);
  }
  Value ucst(uint32_t v) { return cstInt(static_cast<int32_t>(v)); }
  Value bitsOf(Value x) { return b.create<LLVM::BitcastOp>(loc, intType, x); }
  Value floatOf(Value bits) { return b.create<LLVM::BitcastOp>(loc, floatType, bits); }

  /// What the interpreter's roundToStorage does: the storage dtype's
  /// rounding of x and back to f32 (nothing for f32).
  Value roundToStorage(Value x) {
    if (dtype == rt::DType::F32)
      return x;
    return dtype == rt::DType::BF16 ? bf16ToFloat(floatToBf16(x)) : f16ToFloat(floatToF16(x));
  }
  /// Storage elements (f32, or the i16 bits of a bf16/f16) to f32.
  Value widen(Value raw) {
    if (dtype == rt::DType::F32)
      return raw;
    Value bits = b.create<LLVM::ZExtOp>(loc, intType, raw);
    return dtype == rt::DType::BF16 ? bf16ToFloat(bits) : f16ToFloat(bits);
  }
  /// f32 values rounded to the storage dtype already, to storage elements.
  Value narrow(Value x) {
    if (dtype == rt::DType::F32)
      return x;
    Value bits = dtype == rt::DType::BF16 ? floatToBf16(x) : floatToF16(x);
    return b.create<LLVM::TruncOp>(loc, storageType, bits);
  }

  // Half.h's four conversions, line by line; the 16-bit patterns live in
  // the low half of i32 values.
  Value bf16ToFloat(Value h) { return floatOf(shl(h, 16)); }
  Value floatToBf16(Value f) {
    Value bits = bitsOf(f);
    Value isNan = icmp(LLVM::ICmpPredicate::ugt, iand(bits, ucst(0x7fffffffu)), ucst(0x7f800000u));
    Value quietNan = ior(lshr(bits, 16), ucst(0x40));
    Value roundingBias = iadd(ucst(0x7fffu), iand(lshr(bits, 16), ucst(1)));
    return select(isNan, quietNan, lshr(iadd(bits, roundingBias), 16));
  }
  Value f16ToFloat(Value h) {
    Value sign = shl(iand(h, ucst(0x8000u)), 16);
    Value exponent = iand(lshr(h, 10), ucst(0x1f)), mantissa = iand(h, ucst(0x3ff));
    Value subnormal =
        bitsOf(mul(b.create<LLVM::UIToFPOp>(loc, floatType, mantissa), cst(5.9604644775390625e-8f)));
    Value special = select(icmp(LLVM::ICmpPredicate::ne, mantissa, ucst(0)), ucst(0x7fc00000u),
                           ucst(0x7f800000u));
    Value normal = ior(shl(iadd(exponent, ucst(112)), 23), shl(mantissa, 13));
    Value bits = select(icmp(LLVM::ICmpPredicate::eq, exponent, ucst(0)), subnormal,
                        select(icmp(LLVM::ICmpPredicate::eq, exponent, ucst(31)), special, normal));
    return floatOf(ior(bits, sign));
  }
  Value floatToF16(Value f) {
    Value bits = bitsOf(f);
    Value sign = iand(lshr(bits, 16), ucst(0x8000u));
    Value abs = iand(bits, ucst(0x7fffffffu));
    // Subnormal (or zero): scaled to units of the smallest subnormal and
    // rounded to nearest even (rintf in the default rounding mode).
    Value scaled = mul(floatOf(abs), cst(16777216.0f));
    Value subnormal = b.create<LLVM::FPToUIOp>(loc, intType, b.create<LLVM::RoundEvenOp>(loc, scaled));
    Value rebiased = isub(abs, ucst(0x38000000u));
    Value roundingBias = iadd(ucst(0xfffu), iand(lshr(rebiased, 13), ucst(1)));
    Value normal = lshr(iadd(rebiased, roundingBias), 13);
    Value magnitude =
        select(icmp(LLVM::ICmpPredicate::ugt, abs, ucst(0x7f800000u)), ucst(0x7e00u),
               select(icmp(LLVM::ICmpPredicate::uge, abs, ucst(0x477ff000u)), ucst(0x7c00u),
                      select(icmp(LLVM::ICmpPredicate::ult, abs, ucst(0x38800000u)), subnormal,
                             normal)));
    return ior(sign, magnitude);
  }

  Value apply(int64_t op, Value x, Value y) {
    using namespace rt;
    switch (op) {
    case FusedAdd: return add(x, y);
    case FusedSub: return sub(x, y);
    case FusedMul: return mul(x, y);
    case FusedDiv: return div(x, y);
    case FusedNeg: return neg(x);
    case FusedRelu: return select(lt(x, cst(0.0f)), cst(0.0f), x); // reluOf
    case FusedExp: return fastExp(x);
    case FusedLog: return log(b, loc, x);
    case FusedSqrt: return b.create<LLVM::SqrtOp>(loc, x);
    case FusedErf: return fastErf(x);
    case FusedTanh: return fastTanh(x);
    case FusedSigmoid: return div(cst(1.0f), add(cst(1.0f), fastExp(neg(x)))); // sigmoidOf
    case FusedReluGrad: // reluGradOf(y = x, g = y)
      return select(cmp(LLVM::FCmpPredicate::ole, x, cst(0.0f)), cst(0.0f), y);
    case FusedErfGrad: { // erfGradOf: twoOverSqrtPi * expOf(-(x * x)) * g
      const float twoOverSqrtPi = static_cast<float>(2.0 / std::sqrt(M_PI));
      return mul(mul(cst(twoOverSqrtPi), fastExp(neg(mul(x, x)))), y);
    }
    case FusedTanhGrad: return mul(y, sub(cst(1.0f), mul(x, x)));          // tanhGradOf
    case FusedSigmoidGrad: return mul(mul(y, sub(cst(1.0f), x)), x);       // sigmoidGradOf
    default: break;
    }
    llvm_unreachable("decodeFusedProgram checked the op codes");
  }

  /// FastMath.h's fastExp.
  Value fastExp(Value x) {
    const float log2e = 1.44269504088896341f;
    const float ln2Hi = 0.693145751953125f, ln2Lo = 1.428606765330187e-06f;
    const float roundMagic = 12582912.0f;
    const float lo = -86.5f, hi = 88.72283935546875f;
    Value clamped = select(lt(x, cst(lo)), cst(lo), select(gt(x, cst(hi)), cst(hi), x));
    Value n = sub(add(mul(clamped, cst(log2e)), cst(roundMagic)), cst(roundMagic));
    Value r = sub(sub(clamped, mul(n, cst(ln2Hi))), mul(n, cst(ln2Lo)));
    Value p = cst(1.0f / 5040.0f);
    for (float c : {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f, 0.5f, 1.0f, 1.0f})
      p = add(mul(p, r), cst(c));
    Value n32 = b.create<LLVM::FPToSIOp>(loc, intType, n);
    Value bits = b.create<LLVM::ShlOp>(loc, b.create<LLVM::AddOp>(loc, n32, cstInt(126)),
                                       cstInt(23));
    Value half = b.create<LLVM::BitcastOp>(loc, floatType, bits);
    Value y = mul(mul(p, half), cst(2.0f));
    y = select(gt(x, cst(hi)), cst(INFINITY), y);
    y = select(lt(x, cst(lo)), cst(0.0f), y);
    return select(cmp(LLVM::FCmpPredicate::une, x, x), x, y);
  }

  /// FastMath.h's oddSeries: a * (c[0] + c[1] a^2 + ...), Horner in a^2.
  Value oddSeries(Value a, ArrayRef<float> c) {
    Value a2 = mul(a, a), sum = cst(c.back());
    for (int i = static_cast<int>(c.size()) - 2; i >= 0; --i)
      sum = add(mul(sum, a2), cst(c[i]));
    return mul(sum, a);
  }

  /// FastMath.h's fastErf.
  Value fastErf(Value x) {
    static constexpr float taylor[13] = {
        1.1283791670955126f,     -0.37612638903183754f,   0.11283791670955126f,
        -0.026866170645131252f,  0.0052239776254421879f,  -0.00085483270234508522f,
        0.00012055332981789664f, -1.492565035840625e-05f, 1.6462114365889246e-06f,
        -1.6365844691234924e-07f, 1.4807192815879218e-08f, -1.2290555301717926e-09f,
        9.4227590646504113e-11f};
    Value a = fabs(x);
    Value series = oddSeries(a, taylor);
    Value t = div(cst(1.0f), add(cst(1.0f), mul(cst(0.3275911f), a)));
    Value poly = sub(mul(cst(1.061405429f), t), cst(1.453152027f));
    poly = add(mul(poly, t), cst(1.421413741f));
    poly = sub(mul(poly, t), cst(0.284496736f));
    poly = add(mul(poly, t), cst(0.254829592f));
    poly = mul(poly, t);
    Value tail = sub(cst(1.0f), mul(poly, fastExp(neg(mul(a, a)))));
    return copysign(select(lt(a, cst(1.0f)), series, tail), x);
  }

  /// FastMath.h's fastTanh.
  Value fastTanh(Value x) {
    static constexpr float taylor[11] = {
        1.0f,                    -0.33333333333333331f,   0.13333333333333333f,
        -0.053968253968253971f,  0.021869488536155203f,   -0.0088632355299021973f,
        0.0035921280365724811f,  -0.0014558343870513183f, 0.00059002744094558595f,
        -0.00023912911424355248f, 9.6915379569294509e-05f};
    Value a = fabs(x);
    Value series = oddSeries(a, taylor);
    Value tail = sub(cst(1.0f), div(cst(2.0f), add(fastExp(mul(cst(2.0f), a)), cst(1.0f))));
    return copysign(select(lt(a, cst(0.6f)), series, tail), x);
  }

  OpBuilder &b;
  Location loc;
  int width; // 0: scalar
  LogEmitter log;
  rt::DType dtype; // the program's storage
  Type f32, i32, floatType, intType;
  Type storageType; // floatType, or i16 (vectors of them) for bf16/f16
};

/// Decodes a spec as the runtime does (decodeFusedProgram), on shapes only:
/// n elements per result, one per broadcast input.
rt::Status decodeSpec(const FusedKernelSpec &spec, FusedProgram &p) {
  constexpr int64_t kShapeN = 2; // any count other than 1: results are not scalars
  std::vector<rt::TensorRef> inputs(spec.numInputs), outputs(spec.numOutputs);
  for (rt::TensorRef &t : outputs) {
    t.rank = 1;
    t.dims[0] = kShapeN;
  }
  for (rt::TensorRef &t : outputs)
    t.dtype = spec.dtype;
  for (int i = 0; i < spec.numInputs; ++i) {
    inputs[i].dtype = spec.dtype;
    inputs[i].rank = 1;
    inputs[i].dims[0] = i < static_cast<int>(spec.scalar.size()) && spec.scalar[i] ? 1 : kShapeN;
  }
  return rt::decodeFusedProgram(inputs.data(), spec.numInputs, spec.ints.data(),
                                static_cast<int>(spec.ints.size()), outputs.data(),
                                spec.numOutputs, p);
}

LogicalResult decodeAll(ModuleOp module, ArrayRef<FusedKernelSpec> specs,
                        std::vector<FusedProgram> &programs) {
  for (const FusedKernelSpec &spec : specs) {
    programs.emplace_back();
    if (rt::Status s = decodeSpec(spec, programs.back()); !s.isOk())
      return module.emitError() << "code generation of Fused program " << fusedKernelName(spec.key)
                                << ": " << s.message();
  }
  return success();
}

bool usesLog(const FusedProgram &p) {
  for (int k = 0; k < p.numSteps; ++k)
    if (p.steps[k].op == rt::FusedLog)
      return true;
  return false;
}

Value i64Constant(OpBuilder &b, Location loc, int64_t v) {
  return b.create<LLVM::ConstantOp>(loc, b.getI64Type(), b.getI64IntegerAttr(v));
}

/// Loads pointer `index` of the pointer array `base`.
Value loadPointer(OpBuilder &b, Location loc, Value base, Value index) {
  auto ptr = cast<LLVM::LLVMPointerType>(base.getType());
  Value at = b.create<LLVM::GEPOp>(loc, ptr, ptr, base, ValueRange{index});
  return b.create<LLVM::LoadOp>(loc, ptr, at, /*alignment=*/4);
}

/// One element (or `width` elements) at `index`: every input loaded (a
/// broadcast one splat from its single element), the chain run, then every
/// result stored, so a result may overwrite its own inputs.
void emitElements(OpBuilder &b, Location loc, const FusedProgram &p, int width,
                  const LogEmitter &log, ArrayRef<Value> inputs, ArrayRef<Value> broadcast,
                  ArrayRef<Value> outputs, Value index) {
  FusedBody body(b, loc, width, log, p.dtype);
  SmallVector<Value> values;
  for (int i = 0; i < p.numInputs; ++i)
    values.push_back(p.scalar[i] ? body.splat(broadcast[i]) : body.load(inputs[i], index));
  SmallVector<Value> results = body.run(p, values);
  for (int j = 0; j < p.numOutputs; ++j)
    body.store(results[j], outputs[j], index);
}

/// Input i's one element as f32 when it is broadcast (read once, before
/// the loops), else null.
Value loadBroadcast(OpBuilder &b, Location loc, const FusedProgram &p, int i, Value base) {
  if (!p.scalar[i])
    return Value();
  return FusedBody(b, loc, 0, nullptr, p.dtype).load(base, i64Constant(b, loc, 0));
}

/// `for (i = from; i < to; i += step) emit(i)` as blocks after the current
/// one; the builder ends in the block after the loop. LLVM's loop
/// vectorizer is told to leave the loop alone: the vector loop is explicit
/// already, and the tail runs fewer iterations than a vector has lanes.
void emitLoop(OpBuilder &b, Location loc, Value from, Value to, Value step,
              const std::function<void(Value)> &emit) {
  auto noVectorizer = LLVM::LoopAnnotationAttr::get(
      b.getContext(), /*disableNonforced=*/{},
      LLVM::LoopVectorizeAttr::get(b.getContext(), /*disable=*/b.getBoolAttr(true), {}, {}, {},
                                   {}, {}, {}),
      {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  Block *current = b.getInsertionBlock();
  Region *region = current->getParent();
  Type i64 = b.getI64Type();
  Block *header = new Block(), *body = new Block(), *exit = new Block();
  region->push_back(header);
  region->push_back(body);
  region->push_back(exit);
  Value i = header->addArgument(i64, loc);
  b.create<LLVM::BrOp>(loc, ValueRange{from}, header);
  b.setInsertionPointToEnd(header);
  Value more = b.create<LLVM::ICmpOp>(loc, LLVM::ICmpPredicate::slt, i, to);
  b.create<LLVM::CondBrOp>(loc, more, body, exit);
  b.setInsertionPointToEnd(body);
  emit(i);
  Value next = b.create<LLVM::AddOp>(loc, i, step);
  b.create<LLVM::BrOp>(loc, ValueRange{next}, header).setLoopAnnotationAttr(noVectorizer);
  b.setInsertionPointToEnd(exit);
}

/// fn(const float *const *inputs, float *const *outputs, int64_t begin,
/// int64_t end) for one program at one vector width.
void buildCpuFunction(OpBuilder &b, Location loc, const FusedProgram &p, StringRef name,
                      StringRef cpu, int width) {
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, i64, i64});
  auto fn = b.create<LLVM::LLVMFuncOp>(loc, name, type);
  fn.setTargetCpuAttr(b.getStringAttr(cpu));
  // 16-lane vectors in zmm registers, not split in two ymm halves.
  fn.setPassthroughAttr(b.getArrayAttr(
      {b.getStrArrayAttr({"prefer-vector-width", std::to_string(width * 32)}),
       b.getStrArrayAttr({"min-legal-vector-width", std::to_string(width * 32)}),
       b.getStringAttr("nounwind")}));
  Block *entry = fn.addEntryBlock(b);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  Value inputsArg = entry->getArgument(0), outputsArg = entry->getArgument(1);
  Value begin = entry->getArgument(2), end = entry->getArgument(3);

  SmallVector<Value> inputs, broadcast, outputs;
  for (int i = 0; i < p.numInputs; ++i) {
    inputs.push_back(loadPointer(b, loc, inputsArg, i64Constant(b, loc, i)));
    broadcast.push_back(loadBroadcast(b, loc, p, i, inputs.back()));
  }
  for (int j = 0; j < p.numOutputs; ++j)
    outputs.push_back(loadPointer(b, loc, outputsArg, i64Constant(b, loc, j)));

  LogEmitter log = [](OpBuilder &b, Location loc, Value x) -> Value {
    return b.create<LLVM::LogOp>(loc, x); // logf per lane (no vector library)
  };
  // Whole vectors over [begin, vectorEnd), then single elements.
  Value count = b.create<LLVM::SubOp>(loc, end, begin);
  Value w = i64Constant(b, loc, width);
  Value whole = b.create<LLVM::MulOp>(loc, b.create<LLVM::SDivOp>(loc, count, w), w);
  Value vectorEnd = b.create<LLVM::AddOp>(loc, begin, whole);
  emitLoop(b, loc, begin, vectorEnd, w, [&](Value i) {
    emitElements(b, loc, p, width, log, inputs, broadcast, outputs, i);
  });
  emitLoop(b, loc, vectorEnd, end, i64Constant(b, loc, 1), [&](Value i) {
    emitElements(b, loc, p, 0, log, inputs, broadcast, outputs, i);
  });
  b.create<LLVM::ReturnOp>(loc, ValueRange{});
}

} // namespace

std::string fusedKernelName(uint64_t key) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(key));
  return std::string("fsdp_fused_") + hex;
}

std::vector<FusedKernelSpec> collectFusedKernels(const plan::Plan &plan) {
  std::vector<FusedKernelSpec> specs;
  std::set<uint64_t> seen;
  if (!plan.instructions() || !plan.buffers())
    return specs;
  const auto *buffers = plan.buffers();
  // A buffer's dtype and shape as a kernel sees them (data aside).
  auto typeOf = [&](uint32_t index, rt::TensorRef &t) {
    if (index == rt::kNoBuffer || index >= buffers->size())
      return false;
    const plan::Buffer *buffer = buffers->Get(index);
    t.dtype = rt::toDType(buffer->dtype());
    t.rank = buffer->shape() ? static_cast<int>(buffer->shape()->size()) : 0;
    if (t.rank > rt::kMaxRank)
      return false;
    for (int d = 0; d < t.rank; ++d)
      t.dims[d] = buffer->shape()->Get(d);
    return true;
  };
  for (const plan::Instruction *inst : *plan.instructions()) {
    if (inst->kernel() != plan::Kernel::Fused || !inst->inputs() || !inst->outputs() ||
        !inst->ints())
      continue;
    std::vector<rt::TensorRef> in(inst->inputs()->size()), out(inst->outputs()->size());
    bool typed = true;
    for (size_t i = 0; i < in.size(); ++i)
      typed = typed && typeOf(inst->inputs()->Get(i), in[i]);
    for (size_t i = 0; i < out.size(); ++i)
      typed = typed && typeOf(inst->outputs()->Get(i), out[i]);
    if (!typed)
      continue;
    FusedKernelSpec spec;
    spec.ints.assign(inst->ints()->begin(), inst->ints()->end());
    FusedProgram p;
    if (!rt::decodeFusedProgram(in.data(), static_cast<int>(in.size()), spec.ints.data(),
                                static_cast<int>(spec.ints.size()), out.data(),
                                static_cast<int>(out.size()), p)
             .isOk())
      continue; // the interpreter reports it when the step runs
    spec.numInputs = p.numInputs;
    spec.numOutputs = p.numOutputs;
    spec.dtype = p.dtype;
    spec.scalar.assign(p.scalar, p.scalar + p.numInputs);
    spec.key = rt::fusedProgramKey(spec.ints.data(), static_cast<int>(spec.ints.size()), p.scalar,
                                   p.numInputs, p.dtype);
    if (seen.insert(spec.key).second)
      specs.push_back(std::move(spec));
  }
  return specs;
}

LogicalResult buildCpuFusedKernels(ModuleOp module, ArrayRef<FusedKernelSpec> specs,
                                   std::vector<std::pair<std::string, std::string>> &symbols) {
  module.getContext()->loadDialect<LLVM::LLVMDialect>();
  std::vector<FusedProgram> programs;
  if (failed(decodeAll(module, specs, programs)))
    return failure();
  auto b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  for (size_t s = 0; s < specs.size(); ++s) {
    const std::string name = fusedKernelName(specs[s].key);
    symbols.emplace_back(name + "_avx2", name + "_avx512");
    if (module.lookupSymbol(symbols.back().first))
      continue; // built by an earlier call
    buildCpuFunction(b, loc, programs[s], symbols.back().first, "x86-64-v3", 8);
    buildCpuFunction(b, loc, programs[s], symbols.back().second, "x86-64-v4", 16);
  }
  return success();
}

LogicalResult buildPtxFusedKernels(ModuleOp module, ArrayRef<FusedKernelSpec> specs,
                                   std::vector<std::string> &entries) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<LLVM::LLVMDialect, NVVM::NVVMDialect>();
  std::vector<FusedProgram> programs;
  if (failed(decodeAll(module, specs, programs)))
    return failure();
  auto b = OpBuilder::atBlockEnd(module.getBody());
  Location loc = module.getLoc();
  Type f32 = b.getF32Type(), i32 = b.getI32Type(), i64 = b.getI64Type();
  auto global = LLVM::LLVMPointerType::get(ctx, /*addressSpace=*/1);

  // libdevice's logf (CUDA's logf, what the CUDA backend's kernels call).
  LLVM::LLVMFuncOp nvLogf = module.lookupSymbol<LLVM::LLVMFuncOp>("__nv_logf");
  for (const FusedProgram &p : programs)
    if (!nvLogf && usesLog(p)) {
      nvLogf = b.create<LLVM::LLVMFuncOp>(loc, "__nv_logf",
                                          LLVM::LLVMFunctionType::get(f32, {f32}));
      break;
    }
  LogEmitter log = [&](OpBuilder &b, Location loc, Value x) -> Value {
    return b.create<LLVM::CallOp>(loc, nvLogf, ValueRange{x}).getResult();
  };

  for (size_t s = 0; s < specs.size(); ++s) {
    const FusedProgram &p = programs[s];
    entries.push_back(fusedKernelName(specs[s].key));
    if (module.lookupSymbol(entries.back()))
      continue; // built by an earlier call
    SmallVector<Type> params(p.numInputs + p.numOutputs, global);
    params.push_back(i64);
    auto fn = b.create<LLVM::LLVMFuncOp>(
        loc, entries.back(), LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), params));
    fn->setAttr(NVVM::NVVMDialect::getKernelFuncAttrName(), b.getUnitAttr());
    Block *entry = fn.addEntryBlock(b);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    SmallVector<Value> inputs, broadcast, outputs;
    for (int i = 0; i < p.numInputs; ++i) {
      inputs.push_back(entry->getArgument(i));
      broadcast.push_back(loadBroadcast(b, loc, p, i, inputs.back()));
    }
    for (int j = 0; j < p.numOutputs; ++j)
      outputs.push_back(entry->getArgument(p.numInputs + j));
    Value n = entry->getArgument(p.numInputs + p.numOutputs);
    auto wide = [&](Value v) { return b.create<LLVM::ZExtOp>(loc, i64, v).getResult(); };
    Value tid = wide(b.create<NVVM::ThreadIdXOp>(loc, i32));
    Value ctaid = wide(b.create<NVVM::BlockIdXOp>(loc, i32));
    Value ntid = wide(b.create<NVVM::BlockDimXOp>(loc, i32));
    Value nctaid = wide(b.create<NVVM::GridDimXOp>(loc, i32));
    Value first = b.create<LLVM::AddOp>(loc, b.create<LLVM::MulOp>(loc, ctaid, ntid), tid);
    Value stride = b.create<LLVM::MulOp>(loc, nctaid, ntid);
    emitLoop(b, loc, first, n, stride, [&](Value i) {
      emitElements(b, loc, p, 0, log, inputs, broadcast, outputs, i);
    });
    b.create<LLVM::ReturnOp>(loc, ValueRange{});
  }
  return success();
}

LogicalResult emitFusedPtx(ModuleOp module, int sm, std::string &ptx, std::string &error) {
  const CodegenTarget target = CodegenTarget::nvptx(sm);
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> ir = translateToLlvmIr(module, context, target);
  if (!ir) {
    error = "cannot translate the Fused kernels' module to LLVM IR";
    return failure();
  }
  if (llvm::Function *logf = ir->getFunction("__nv_logf"); logf && logf->isDeclaration()) {
    // libdevice: CUDA's own math library as bitcode, linked in and then
    // internalized so the PTX defines only the kernels.
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
        llvm::MemoryBuffer::getFile(FSDP_LIBDEVICE_PATH);
    if (!bytes) {
      error = std::string("cannot read libdevice (") + FSDP_LIBDEVICE_PATH +
              ") for the log of a Fused kernel: " + bytes.getError().message();
      return failure();
    }
    llvm::Expected<std::unique_ptr<llvm::Module>> libdevice =
        llvm::parseBitcodeFile((*bytes)->getMemBufferRef(), context);
    if (!libdevice) {
      error = "cannot parse libdevice: " + llvm::toString(libdevice.takeError());
      return failure();
    }
    (*libdevice)->setTargetTriple(ir->getTargetTriple());
    (*libdevice)->setDataLayout(ir->getDataLayout());
    if (llvm::Linker::linkModules(*ir, std::move(*libdevice), llvm::Linker::LinkOnlyNeeded)) {
      error = "cannot link libdevice into the Fused kernels";
      return failure();
    }
    std::set<std::string> kernels;
    for (LLVM::LLVMFuncOp fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName()))
        kernels.insert(fn.getName().str());
    llvm::internalizeModule(*ir, [&](const llvm::GlobalValue &value) {
      return kernels.count(value.getName().str()) > 0;
    });
  }
  return emitMachineCode(*ir, target, MachineCodeKind::Assembly, ptx, error);
}

LogicalResult generateFusedPtx(MLIRContext *context, ArrayRef<FusedKernelSpec> specs,
                               FusedPtx &out, std::string &error) {
  DialectRegistry registry;
  registerLlvmTranslations(registry);
  context->appendDialectRegistry(registry);
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(context));
  if (failed(buildPtxFusedKernels(*module, specs, out.entries))) {
    error = "cannot build the Fused kernels for NVPTX";
    return failure();
  }
  for (auto [sm, ptx] : {std::pair{80, &out.sm80}, std::pair{90, &out.sm90}})
    if (failed(emitFusedPtx(*module, sm, *ptx, error))) {
      error = "PTX for sm_" + std::to_string(sm) + ": " + error;
      return failure();
    }
  return success();
}

} // namespace fsdp
