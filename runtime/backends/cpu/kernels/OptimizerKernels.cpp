//===- OptimizerKernels.cpp - AdamW and SGD updates on the CPU ------------===//
//
// torch.optim.AdamW and torch.optim.SGD (single-tensor path, torch 1.13),
// reproduced bit for bit on f32 and f64 parameters: the formulas and their
// roundings are runtime/math/OptimizerUpdate.h (shared with the CUDA
// kernels); this file reads the scalars, checks operands and runs the
// element loops. Plans store hyperparameters as f32 attributes; each is
// read back as the shortest decimal that rounds to it, which is the Python
// double the user wrote (0.9f -> 0.9) for any value of at most 6
// significant digits, so 1 - beta1 and beta1 ** step come out as torch
// computes them. A non-zero found_inf flag (dynamic loss scaling) skips the
// update, as torch's GradScaler skips optimizer.step(). This file is compiled with -ffp-contract=off
// (runtime/CMakeLists.txt) so no other product gets fused behind our back.
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/OptimizerUpdate.h"
#include "runtime/backends/OptimizerOperands.h"

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <utility>

namespace fsdp::rt::cpu {
namespace {

constexpr DTypeSet kOptimizerTypes = bitOf(DType::F32) | bitOf(DType::F64);

/// One AdamW pass: the step's scalars and the operands.
template <typename T> struct AdamWStep {
  AdamWScalars<T> scalars;
  const T *p, *g, *m, *v;
  T *pOut, *mOut, *vOut;
  int64_t n;
};

/// One SGD pass; `b` (and `bOut`) null without a momentum buffer.
template <typename T> struct SgdStep {
  SgdScalars<T> scalars;
  const T *p, *g, *b;
  T *pOut, *bOut;
  int64_t n;
};

/// AdamW element by element, in torch's order of operations. Each element
/// is read before it is written, so a result may be its operand's buffer;
/// buffers are otherwise disjoint (planned), so no iteration depends on
/// another, which `ivdep` tells the vectorizer (seven pointers are more
/// than it checks for overlap at run time). Fields are copied to locals:
/// stores through the pointers could otherwise alias the struct.
template <typename T> [[gnu::always_inline]] inline void loop(const AdamWStep<T> &step) {
  const AdamWStep<T> s = step;
#pragma GCC ivdep
  for (int64_t i = 0; i < s.n; ++i)
    adamwElement(s.scalars, s.p[i], s.g[i], s.m[i], s.v[i], s.pOut[i], s.mOut[i], s.vOut[i]);
}

/// SGD element by element, in torch's order of operations.
template <typename T> [[gnu::always_inline]] inline void loop(const SgdStep<T> &step) {
  const SgdStep<T> s = step;
  for (int64_t i = 0; i < s.n; ++i)
    sgdElement(s.scalars, s.p[i], s.g[i], s.b ? s.b + i : nullptr, s.pOut[i],
               s.b ? s.bOut + i : nullptr);
}

// The build's baseline (x86-64-v2) has no FMA instruction, so std::fma is
// a libm call per element and the loops do not vectorize (~13 ns per
// element). CPUs with AVX2 and FMA run a second copy of each loop compiled
// for them; fma is exactly rounded either way, so the results are the same.
// Element ranges split across the rank's threads (each element's update
// is its own, so the bits do not depend on the split).
template <typename T> AdamWStep<T> piece(AdamWStep<T> s, int64_t begin, int64_t end) {
  s.p += begin, s.g += begin, s.m += begin, s.v += begin;
  s.pOut += begin, s.mOut += begin, s.vOut += begin;
  s.n = end - begin;
  return s;
}
template <typename T> SgdStep<T> piece(SgdStep<T> s, int64_t begin, int64_t end) {
  s.p += begin, s.g += begin, s.pOut += begin;
  if (s.b)
    s.b += begin;
  if (s.bOut)
    s.bOut += begin;
  s.n = end - begin;
  return s;
}
template <typename Step> void runLoop(const Step &s) {
  (void)parallelFor(0, s.n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    const Step part = piece(s, begin, end);
    runWideFma([&] { loop(part); });
  });
}

/// AdamW on storage T (float or double): the step's scalars as Python
/// computes them, then the element loop.
template <typename T>
void adamwImpl(const TensorRef &param, const TensorRef &grad, const TensorRef &expAvg,
               const TensorRef &expAvgSq, double lr, int64_t step, const AdamWConfig &config,
               const TensorRef &paramOut, const TensorRef &expAvgOut,
               const TensorRef &expAvgSqOut) {
  AdamWStep<T> s;
  s.scalars = adamwScalars<T>(hyperOf(config), lr, step);
  s.p = param.as<const T>();
  s.g = grad.as<const T>();
  s.m = expAvg.as<const T>();
  s.v = expAvgSq.as<const T>();
  s.pOut = paramOut.as<T>();
  s.mOut = expAvgOut.as<T>();
  s.vOut = expAvgSqOut.as<T>();
  s.n = param.numElements();
  runLoop(s);
}

/// SGD on storage T.
template <typename T>
void sgdImpl(const TensorRef &param, const TensorRef &grad, const TensorRef *buffer, double lr,
             const SgdConfig &config, const TensorRef &paramOut, const TensorRef *bufferOut) {
  SgdStep<T> s;
  s.scalars = sgdScalars<T>(hyperOf(config), lr);
  s.p = param.as<const T>();
  s.g = grad.as<const T>();
  s.b = buffer ? buffer->as<const T>() : nullptr;
  s.pOut = paramOut.as<T>();
  s.bOut = bufferOut ? bufferOut->as<T>() : nullptr;
  s.n = param.numElements();
  runLoop(s);
}

/// Whether dynamic loss scaling's flag asks to skip the update.
bool skipped(const TensorRef *foundInf) {
  return foundInf && *foundInf->as<const float>() != 0.0f;
}

/// A skipped update's results: each keeps its operand's value (nothing to
/// do in place, a copy otherwise).
void keepOperands(std::initializer_list<std::pair<const TensorRef *, const TensorRef *>> pairs) {
  for (auto [in, out] : pairs)
    if (in && out && in->data != out->data)
      std::memmove(out->data, in->data, in->byteSize());
}

} // namespace

Status adamw(const TensorRef &param, const TensorRef &grad, const TensorRef &expAvg,
             const TensorRef &expAvgSq, const TensorRef &lr, const TensorRef &step,
             const AdamWConfig &config, const TensorRef &paramOut, const TensorRef &expAvgOut,
             const TensorRef &expAvgSqOut, const TensorRef *foundInf) {
  const char *op = "adamw";
  FSDP_RETURN_IF_ERROR(checkAdamWOperands(param, grad, expAvg, expAvgSq, lr, step, paramOut,
                                          expAvgOut, expAvgSqOut, foundInf));
  const int64_t stepNumber = *step.as<const int64_t>();
  if (stepNumber < 1)
    return Status::error(cat(op, ": step ", stepNumber, " (steps count from 1)"));
  if (skipped(foundInf)) {
    keepOperands({{&param, &paramOut}, {&expAvg, &expAvgOut}, {&expAvgSq, &expAvgSqOut}});
    return Status::ok();
  }
  const double learningRate = *lr.as<const double>();
  return dispatch<kOptimizerTypes>(
      param.dtype,
      [&](auto tag) {
        adamwImpl<decltype(tag)>(param, grad, expAvg, expAvgSq, learningRate, stepNumber, config,
                                 paramOut, expAvgOut, expAvgSqOut);
      },
      op);
}

Status sgd(const TensorRef &param, const TensorRef &grad, const TensorRef *momentumBuffer,
           const TensorRef &lr, const SgdConfig &config, const TensorRef &paramOut,
           const TensorRef *bufferOut, const TensorRef *foundInf) {
  const char *op = "sgd";
  FSDP_RETURN_IF_ERROR(
      checkSgdOperands(param, grad, momentumBuffer, lr, paramOut, bufferOut, foundInf));
  if (skipped(foundInf)) {
    keepOperands({{&param, &paramOut}, {momentumBuffer, bufferOut}});
    return Status::ok();
  }
  const double learningRate = *lr.as<const double>();
  return dispatch<kOptimizerTypes>(
      param.dtype,
      [&](auto tag) {
        sgdImpl<decltype(tag)>(param, grad, momentumBuffer, learningRate, config, paramOut,
                               bufferOut);
      },
      op);
}

} // namespace fsdp::rt::cpu
