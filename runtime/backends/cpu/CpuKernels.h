//===- CpuKernels.h - the CPU backend's kernels ---------------------------===//
//
// One function per nn op family, operating on TensorRefs whose memory the
// executor planned. Semantics are the nn dialect's (= ONNX's, static shapes:
// see dialects/nn/*.td); shapes were verified at compile time, so kernels
// check only what depends on run-time values (gather indices, labels,
// integer division by zero) and dtype combinations they do not implement,
// and report those as a Status, never a crash.
//
// Numerics: f16/bf16 load into float, compute in float and round to nearest
// even on store; f32 computes in float (like torch on CPU); f64 in double;
// integers in their own type (division truncates toward zero). Loops are
// contiguous where the layout allows so the compiler vectorizes them; f32
// and f64 matrix products go to OpenBLAS (cblas), bf16 and f16 ones to
// oneDNN with f32 accumulation and one rounding (GemmLibrary.h). Each
// family has a naive reference in tests/unit/runtime/ that these are
// checked against.
//
// Kernels allocate nothing on the heap unless they say so (`scratch`
// arguments are planned buffers).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_CPUKERNELS_H
#define FSDP_RUNTIME_BACKENDS_CPU_CPUKERNELS_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <optional>

namespace fsdp::rt::cpu {

// The variants (runtime/backends/KernelKinds.h) under the CPU kernels' names.
using rt::ActivationGradKind;
using rt::AdamWConfig;
using rt::BinaryKind;
using rt::ComparePredicate;
using rt::LogicalKind;
using rt::MathKind;
using rt::ReduceKind;
using rt::Reduction;
using rt::SgdConfig;
using rt::UnaryKind;

// --- Elementwise (ElementwiseKernels.cpp) -------------------------------------

/// out = a (op) b with numpy broadcasting to out's shape. a, b, out share a
/// dtype, except Pow, whose exponent b may have any numeric dtype. Max and
/// Min propagate NaN (torch.maximum / torch.minimum).
Status binary(BinaryKind kind, const TensorRef &a, const TensorRef &b, const TensorRef &out);
/// out = cond ? x : y, broadcasting all three to out's shape.
Status where(const TensorRef &cond, const TensorRef &x, const TensorRef &y, const TensorRef &out);
/// Same shape and dtype in and out (Not: bool).
Status unary(UnaryKind kind, const TensorRef &in, const TensorRef &out);
/// Any dtype to any dtype: floats round to nearest even, float -> int
/// truncates toward zero (saturating is not required by ONNX; out-of-range
/// values are unspecified but must not trap), x -> bool is x != 0.
Status cast(const TensorRef &in, const TensorRef &out);

// --- Comparisons and logic (ComparisonKernels.cpp) --------------------------------

/// out (bool) = a (predicate) b with numpy broadcasting; a and b share a
/// numeric dtype (or bool, for Eq). Comparisons with NaN are false.
Status compare(ComparePredicate predicate, const TensorRef &a, const TensorRef &b,
               const TensorRef &out);
/// out = a (op) b on bool tensors with numpy broadcasting.
Status logical(LogicalKind kind, const TensorRef &a, const TensorRef &b, const TensorRef &out);
/// out (bool, in's shape) = isnan(in) for a float tensor.
Status isNaN(const TensorRef &in, const TensorRef &out);
/// out (bool) = in is -inf (detectNegative) or +inf (detectPositive).
Status isInf(const TensorRef &in, bool detectNegative, bool detectPositive, const TensorRef &out);

// --- Data movement (ShapeKernels.cpp) --------------------------------------
/// Same element count: a row-major copy (reshape). No-op if in.data == out.data.
Status copy(const TensorRef &in, const TensorRef &out);
Status transpose(const TensorRef &in, const int64_t *perm, const TensorRef &out);
Status concat(const TensorRef *inputs, int count, int64_t axis, const TensorRef &out);
Status split(const TensorRef &in, int64_t axis, const TensorRef *outputs, int count);
/// Per dimension: out[i] = in[start + i * step] (starts/steps have in.rank
/// entries, already clamped as nn.slice documents; steps may be negative).
Status slice(const TensorRef &in, const int64_t *starts, const int64_t *steps, const TensorRef &out);
/// Broadcast in to out's shape.
Status expand(const TensorRef &in, const TensorRef &out);
/// out = data.take(indices, axis); negative indices count from the end;
/// an index outside [-dim, dim) is an error naming it.
Status gather(const TensorRef &data, const TensorRef &indices, int64_t axis, const TensorRef &out);
/// Keep j - i >= k (upper) or j - i <= k (lower) over the last two dims.
Status trilu(const TensorRef &in, bool upper, int64_t k, const TensorRef &out);
/// FSDP's flat buffer: out is zero except that input i's elements are
/// copied, row-major, to out's elements from offsets[i] on. Inputs share
/// out's dtype, fit inside it, and do not alias it.
Status flatten(const TensorRef *inputs, const int64_t *offsets, int count, const TensorRef &out);

// --- Fused elementwise (FusedKernels.cpp) -------------------------------------
/// Runs a chain of f32 elementwise ops in one pass, block by block, with
/// intermediates in stack buffers; the program layout is plan.fbs's Fused.
/// Each op computes exactly what its own kernel does, so results are the
/// same bits as running the ops one by one. A malformed program is an error.
Status fusedElementwise(const TensorRef *inputs, int numInputs, const int64_t *ints, int numInts,
                        const TensorRef *outputs, int numOutputs);

// --- Linear algebra (LinearAlgebraKernels.cpp) ---------------------------------------
/// numpy.matmul with batch broadcasting and 1-D promotion (shapes as the
/// nn.matmul verifier accepts them). With `transA` (`transB`), a (b) has
/// rank >= 2 and holds each matrix with its last two dims swapped, read
/// transposed in place by BLAS (a Linear weight, attention's k^T, the
/// transposed operands of a backward pass).
Status matmul(const TensorRef &a, const TensorRef &b, const TensorRef &out, bool transA = false,
              bool transB = false);
/// out = alpha * op(a) @ op(b) + beta * c (c optional, broadcast to out).
/// Both: an FSDP_CPU_GEMM that names no route (GemmLibrary.h) is an error.
/// The 16-bit routes keep per-thread scratch, grown once per larger
/// product (oneDNN's scratchpad, or the widened operands).
Status gemm(const TensorRef &a, const TensorRef &b, const TensorRef *c, float alpha, float beta,
            bool transA, bool transB, const TensorRef &out);

// --- Normalization (NormalizationKernels.cpp) ------------------------------------------
/// Softmax (or log-softmax when `log`) along `axis` (max-subtracted).
Status softmax(const TensorRef &in, int64_t axis, bool log, const TensorRef &out);
/// Scaled dot-product attention, flash-style (AttentionKernels.cpp):
/// q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv], an optional
/// bool or additive mask broadcasting to [B, H, Tq, Tk]; out
/// [B, H, Tq, Dv] and the rows' log-sum-exp lse [B, H, Tq] (f32, f64 for f64);
/// dropout on the probabilities as nn.dropout draws it (AttentionShape.h).
Status attention(const TensorRef &q, const TensorRef &k, const TensorRef &v, const TensorRef *mask,
                 bool causal, float scale, const AttentionDropout &dropout, const TensorRef &out,
                 const TensorRef &lse);
/// Its gradient from the forward's out and lse (and the same dropout): dq,
/// dk, dv.
Status attentionGrad(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                     const TensorRef *mask, const TensorRef &out, const TensorRef &lse,
                     const TensorRef &dout, bool causal, float scale,
                     const AttentionDropout &dropout, const TensorRef &dq, const TensorRef &dk,
                     const TensorRef &dv);

/// LayerNormalization over dims [axis, rank): y, mean and inverse std-dev
/// (shaped like x with the normalized dims set to 1). Biased variance.
Status layerNorm(const TensorRef &x, const TensorRef &scale, const TensorRef *bias, int64_t axis,
                 float epsilon, const TensorRef &y, const TensorRef &mean,
                 const TensorRef &invStdDev);

// --- Reductions (ReductionKernels.cpp) ----------------------------------------
/// Reduce over the sorted `axes` (count entries); out has the kept shape
/// (with or without the size-1 dims: only its element order matters).
Status reduce(ReduceKind kind, const TensorRef &in, const int64_t *axes, int count,
              const TensorRef &out);

// --- Losses (LossKernels.cpp) ---------------------------------------------------
/// ONNX SoftmaxCrossEntropyLoss: scores [N, C, d...], labels [N, d...]
/// (i32/i64), optional weights [C]; loss scalar or [N, d...]; log_prob like
/// scores. A label outside [0, C) that is not ignore_index is an error.
Status softmaxCrossEntropy(const TensorRef &scores, const TensorRef &labels,
                           const TensorRef *weights, Reduction reduction,
                           std::optional<int64_t> ignoreIndex, const TensorRef &loss,
                           const TensorRef &logProb);
/// ONNX NegativeLogLikelihoodLoss on log-probabilities `input`.
Status nllLoss(const TensorRef &input, const TensorRef &target, const TensorRef *weight,
               Reduction reduction, std::optional<int64_t> ignoreIndex, const TensorRef &loss);

// --- Dropout (DropoutKernels.cpp) -----------------------------------------------
/// Training with ratio > 0: keeps each element with probability 1 - ratio
/// (scaled by 1 / (1 - ratio)) using a counter-based generator keyed by
/// (seed, step, element index), so results do not depend on threads or
/// sharding. Otherwise out = in and mask is all true.
Status dropout(const TensorRef &in, float ratio, bool training, uint64_t seed, uint64_t step,
               const TensorRef &out, const TensorRef &mask);

// --- Gradients (GradientKernels.cpp, LossGradKernels.cpp) --------------------
// The backward kernels of plan.fbs (formulas there; torch 1.13's CPU
// autograd is the reference). Row sums accumulate in double in a fixed
// order, so results are deterministic and do not depend on threads.

/// What an activation's gradient reads besides dy: Relu, Tanh and Sigmoid
/// their forward result y, Erf its input x.
/// dx from the saved value and dy, all of one float dtype and shape (dx may
/// alias dy). Relu follows torch's threshold_backward, `y <= 0 ? 0 : dy`,
/// which passes dy through where y is NaN.
Status activationGrad(ActivationGradKind kind, const TensorRef &saved, const TensorRef &dy,
                      const TensorRef &dx);
/// Softmax: dx = y * (dy - sum(dy * y)); log-softmax (`log`): dx = dy -
/// exp(y) * sum(dy); sums along `axis`. dx may alias dy.
Status softmaxGrad(const TensorRef &y, const TensorRef &dy, int64_t axis, bool log,
                   const TensorRef &dx);
/// LayerNormalization over dims [axis, rank) given the forward's mean and
/// inv_std_dev (x's shape with the normalized dims 1, their own float dtype).
/// scale, dscale and dbias have exactly the normalized block's elements.
Status layerNormGrad(const TensorRef &x, const TensorRef &scale, const TensorRef &mean,
                     const TensorRef &invStdDev, const TensorRef &dy, int64_t axis,
                     const TensorRef &dx, const TensorRef &dscale, const TensorRef &dbias);
/// The adjoint of gather: ddata = 0, then ddata[.., idx[j], ..] += dy[.., j, ..]
/// for j in order. Every index is checked (as gather does) before anything
/// is written.
Status gatherGrad(const TensorRef &indices, const TensorRef &dy, int64_t axis,
                  const TensorRef &ddata);
/// The adjoint of slice: dx = 0, then dx[start + i * step] = dy[i] per dim
/// (starts/steps have dx.rank entries). A position outside dx is an error.
Status sliceGrad(const TensorRef &dy, const int64_t *starts, const int64_t *steps,
                 const TensorRef &dx);
/// The adjoint of ReduceMax over the sorted `axes`: y and dy have x's rank
/// with the reduced dims 1; dy splits evenly over the elements equal to y
/// (torch's amax backward), the rest get 0.
Status reduceMaxGrad(const TensorRef &x, const TensorRef &y, const TensorRef &dy,
                     const int64_t *axes, int count, const TensorRef &dx);
/// dx = dy * (mask ? 1 / (1 - ratio) : 0), the forward's scale expression.
Status dropoutGrad(const TensorRef &dy, const TensorRef &mask, float ratio, const TensorRef &dx);
/// The gradient of softmaxCrossEntropy with respect to the scores, from its
/// log_prob: with g = -w[t] * dloss (dloss / the summed non-ignored weights
/// for Mean), dscores[n, c, d] = (c == t ? g : 0) - exp(log_prob) * g, and 0
/// for ignored positions. dloss is a scalar for Sum and Mean, [N, d...] for
/// None. Labels are checked as in the forward.
Status softmaxCrossEntropyGrad(const TensorRef &logProb, const TensorRef &labels,
                               const TensorRef *weights, const TensorRef &dloss,
                               Reduction reduction, std::optional<int64_t> ignoreIndex,
                               const TensorRef &dscores);
/// The gradient of nllLoss with respect to its input: zeros except
/// dinput[n, t, d] = g (as above). dinput's shape gives C.
Status nllLossGrad(const TensorRef &target, const TensorRef *weight, const TensorRef &dloss,
                   Reduction reduction, std::optional<int64_t> ignoreIndex,
                   const TensorRef &dinput);

// --- Optimizers (OptimizerKernels.cpp) -------------------------------------------
// torch.optim's single-tensor update, operation for operation, on f32 or f64
// parameters: scalars in double as Python computes them, rounded to the
// tensor's type where torch rounds them, fused multiply-adds where torch's
// CPU kernels fuse, so results match torch bit for bit. Outputs may alias
// the corresponding inputs (the plans update in place). `lr` is an f64
// scalar; `step` an i64 scalar, the 1-based number of the step being taken.
// The f32 hyperparameter attributes are read as the shortest decimal that
// rounds to them (0.9f as 0.9), the Python double the user wrote.
// `foundInf`, when given, is an f32 scalar (dynamic loss scaling's flag):
// non-zero makes the update a no-op, each result keeping its operand's
// value (copied when the result is another buffer).

/// torch.optim.AdamW (amsgrad off): decoupled decay, bias-corrected moments.
Status adamw(const TensorRef &param, const TensorRef &grad, const TensorRef &expAvg,
             const TensorRef &expAvgSq, const TensorRef &lr, const TensorRef &step,
             const AdamWConfig &config, const TensorRef &paramOut, const TensorRef &expAvgOut,
             const TensorRef &expAvgSqOut, const TensorRef *foundInf = nullptr);

/// torch.optim.SGD with dampening 0. With a momentum buffer (zero before the
/// first step: momentum * 0 + d_p is torch's clone of d_p), it is updated
/// into `bufferOut`; without one, plain SGD.
Status sgd(const TensorRef &param, const TensorRef &grad, const TensorRef *momentumBuffer,
           const TensorRef &lr, const SgdConfig &config, const TensorRef &paramOut,
           const TensorRef *bufferOut, const TensorRef *foundInf = nullptr);

// --- Ops of torch 2.x exports (TorchExportKernels.cpp) ---
/// Float unary math: same shape and dtype in and out (f16/bf16 compute in
/// float). Formulas in Activations.h and Kernels.def.
Status math(MathKind kind, const TensorRef &in, const TensorRef &out);
/// torch's GeluBackward (tanh: the approximate form) from x and dy.
Status geluGrad(bool tanh, const TensorRef &x, const TensorRef &dy, const TensorRef &dx);
/// Constant pad: out is `value` (one element of in's dtype) except that in
/// is copied at offset `pads[0..rank)`; pads[rank..2 rank) are the trailing
/// counts, checked against out's shape. Any dtype.
Status pad(const TensorRef &in, const TensorRef &value, const int64_t *pads, const TensorRef &out);
/// out[j] = in[j mod in.shape]: out's dims are multiples of in's. Any dtype.
Status tile(const TensorRef &in, const TensorRef &out);
/// Cumulative sum along `axis` (floats accumulate in double as torch's CPU
/// cumsum does, integers wrap); `exclusive` leaves out the element itself,
/// `reverse` sums from the end. Numeric dtypes.
Status cumsum(const TensorRef &in, int64_t axis, bool exclusive, bool reverse,
              const TensorRef &out);

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_CPUKERNELS_H
