//===- KernelKinds.h - the kernel families' variants, shared by backends --===//
//
// The enums and configurations that select a variant within a kernel
// family (which binary op, which reduction, the optimizers' hyper-
// parameters). Both backends' kernel APIs take them (CpuKernels.h,
// CudaKernels.h), and both decode a plan's attributes into them the same
// way, so they are declared once.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_KERNELKINDS_H
#define FSDP_RUNTIME_BACKENDS_KERNELKINDS_H

#include <cstdint>

namespace fsdp::rt {

enum class BinaryKind : uint8_t { Add, Sub, Mul, Div, Pow, Max, Min };
enum class UnaryKind : uint8_t { Neg, Relu, Exp, Log, Sqrt, Erf, Tanh, Sigmoid, Not };
enum class ComparePredicate : uint8_t { Eq, Lt, Le, Gt, Ge };
enum class LogicalKind : uint8_t { And, Or, Xor };
enum class ReduceKind : uint8_t { Sum, Max, Mean };
enum class Reduction : uint8_t { None, Sum, Mean };
enum class ActivationGradKind : uint8_t { Relu, Erf, Tanh, Sigmoid };
enum class MathKind : uint8_t { Gelu, GeluTanh, Reciprocal, Cos, Sin, Softplus };

/// The kernels' names in errors ("add", "relu").
inline const char *binaryName(BinaryKind kind) {
  static const char *const names[] = {"add", "sub", "mul", "div", "pow", "max", "min"};
  return names[static_cast<int>(kind)];
}
inline const char *unaryName(UnaryKind kind) {
  static const char *const names[] = {"neg", "relu", "exp", "log", "sqrt",
                                      "erf", "tanh", "sigmoid", "not"};
  return names[static_cast<int>(kind)];
}

struct AdamWConfig {
  float beta1, beta2, eps, weightDecay;
};

struct SgdConfig {
  float momentum, weightDecay;
  bool nesterov;
};

/// nn.attention's dropout_p and seed as the plan gives them, and (CPU) the
/// step; the CUDA kernels read the step from device memory, as dropout's.
struct AttentionDropout {
  float p = 0.0f;
  uint64_t seed = 0, step = 0;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_KERNELKINDS_H
