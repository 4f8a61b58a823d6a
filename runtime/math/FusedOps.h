//===- FusedOps.h - the Fused kernel's op codes and their scalar code -----===//
//
// The ops a Fused program (Kernels.def) may chain, and what each computes on
// one element: the scalar code of its unfused kernel (plain IEEE arithmetic
// and Activations.h). Both backends apply an op through withFusedOp, the CPU
// over a block of elements per op (the functor inlined into a vectorizable
// loop), the CUDA kernel per element and op, so the code-to-formula table
// exists once and fusion changes no bit on either. Only log calls a
// machine's math library (glibc on the CPU, libdevice on a GPU, both within
// an ulp; the SIMT build is glibc's bits).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_FUSEDOPS_H
#define FSDP_RUNTIME_MATH_FUSEDOPS_H

#include "runtime/math/Activations.h"
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
