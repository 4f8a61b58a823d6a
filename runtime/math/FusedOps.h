//===- FusedOps.h - the Fused kernel's op codes and their scalar code -----===//
//
// The ops a Fused program (Kernels.def) may chain, and what each computes on
// one element: the scalar code of its unfused kernel (plain IEEE arithmetic
// and Activations.h). Both backends apply an op through withFusedOp, the CPU
// over a block of elements per op (the functor inlined into a vectorizable
// loop), the CUDA kernel per element and op, so the code-to-formula table
// exists once and fusion changes no bit on either. Only log calls a
// machine's math library (glibc on the CPU, libdevice on a GPU, both within
// an ulp; the SIMT build is glibc's bits). A bf16 or f16 program computes
// each op in f32 and rounds its result with roundToStorage, the store and
// load of an unfused op's result (ElementTypes.h, round to nearest even),
// on both backends alike.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_FUSEDOPS_H
#define FSDP_RUNTIME_MATH_FUSEDOPS_H

#include "runtime/math/Activations.h"
#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace fsdp::rt {

enum FusedOp : int64_t {
  FusedAdd, FusedSub, FusedMul, FusedDiv, FusedNeg, FusedRelu, FusedExp, FusedLog, FusedSqrt,
  FusedErf, FusedTanh, FusedSigmoid, FusedReluGrad, FusedErfGrad, FusedTanhGrad,
  FusedSigmoidGrad, NumFusedOps
};

FSDP_HD_INLINE bool isUnaryFusedOp(int64_t op) { return op >= FusedNeg && op <= FusedSigmoid; }

/// The storage dtypes a program may have: every input and result is of one.
inline bool isFusedDType(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

/// An op's f32 result as the unfused op leaves it for the next op: stored
/// in T (rounded to nearest even; NaN stays NaN) and loaded back. The
/// identity for f32.
template <typename T> FSDP_HD_INLINE float roundToStorage(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return toCompute(fromCompute<T>(v));
}

/// Calls f(T{}) with the storage type of a checked program's dtype
/// (float, BF16 or F16) and returns what f returns.
template <typename F> decltype(auto) withFusedDType(DType t, F &&f) {
  switch (t) {
  case DType::BF16: return f(BF16{});
  case DType::F16: return f(F16{});
  default: return f(float{});
  }
}

/// One functor per op: (x, y) are the op's operands a and b (a unary op
/// ignores y; a gradient op's y is the incoming gradient).
namespace fusedop {
#define FSDP_FUSED_OP(Name, ...)                                                                 \
  struct Name {                                                                                  \
    FSDP_HD_INLINE float operator()(float x, [[maybe_unused]] float y) const {                   \
      return __VA_ARGS__;                                                                        \
    }                                                                                            \
  };
FSDP_FUSED_OP(Add, x + y)
FSDP_FUSED_OP(Sub, x - y)
FSDP_FUSED_OP(Mul, x * y)
FSDP_FUSED_OP(Div, x / y)
FSDP_FUSED_OP(Neg, -x)
FSDP_FUSED_OP(Relu, reluOf(x))
FSDP_FUSED_OP(Exp, expOf(x))
FSDP_FUSED_OP(Log, std::log(x))
FSDP_FUSED_OP(Sqrt, std::sqrt(x))
FSDP_FUSED_OP(Erf, erfOf(x))
FSDP_FUSED_OP(Tanh, tanhOf(x))
FSDP_FUSED_OP(Sigmoid, sigmoidOf(x))
FSDP_FUSED_OP(ReluGrad, reluGradOf(x, y))   // x: relu's result
FSDP_FUSED_OP(ErfGrad, erfGradOf(x, y))     // x: erf's input
FSDP_FUSED_OP(TanhGrad, tanhGradOf(x, y))   // x: tanh's result
FSDP_FUSED_OP(SigmoidGrad, sigmoidGradOf(x, y)) // x: sigmoid's result
#undef FSDP_FUSED_OP
} // namespace fusedop

/// Calls f with the functor of `op` and returns what f returns. `op` must
/// be a checked code (FusedProgram.h); anything else takes the last op.
template <typename F> FSDP_HD_INLINE decltype(auto) withFusedOp(int64_t op, F &&f) {
  switch (op) {
  case FusedAdd: return f(fusedop::Add{});
  case FusedSub: return f(fusedop::Sub{});
  case FusedMul: return f(fusedop::Mul{});
  case FusedDiv: return f(fusedop::Div{});
  case FusedNeg: return f(fusedop::Neg{});
  case FusedRelu: return f(fusedop::Relu{});
  case FusedExp: return f(fusedop::Exp{});
  case FusedLog: return f(fusedop::Log{});
  case FusedSqrt: return f(fusedop::Sqrt{});
  case FusedErf: return f(fusedop::Erf{});
  case FusedTanh: return f(fusedop::Tanh{});
  case FusedSigmoid: return f(fusedop::Sigmoid{});
  case FusedReluGrad: return f(fusedop::ReluGrad{});
  case FusedErfGrad: return f(fusedop::ErfGrad{});
  case FusedTanhGrad: return f(fusedop::TanhGrad{});
  default: return f(fusedop::SigmoidGrad{});
  }
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_FUSEDOPS_H
