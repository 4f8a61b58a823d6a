//===- KernelTestUtil.h - owning test tensors for the CPU kernel tests ----===//
//
// Shared by the CPU kernel tests: `TestTensor` owns an 8-byte aligned,
// zero-initialized buffer for a dtype and shape, hands out a TensorRef over
// it, and reads and writes its elements either as double (rounded to the
// dtype as the kernels' store rounds: integers narrower than 64 bits wrap
// through int64, 16-bit floats round to nearest even) or as raw bit
// patterns, for tests that compare bit for bit. `makeRef` views caller-owned
// memory, and `numElements` counts the elements of a range of dims. Tests
// derive from TestTensor to add their own fill patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CPU_KERNELTESTUTIL_H
#define FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CPU_KERNELTESTUTIL_H

#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/support/DType.h"
#include "runtime/support/TensorRef.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <string>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace fsdp::rt::cpu::kerneltest {

using Dims = std::vector<int64_t>;

/// The product of dims[from, to) (the kernels' dimsProduct).
inline int64_t numElements(const Dims &dims, size_t from = 0, size_t to = SIZE_MAX) {
  const size_t end = std::min(to, dims.size());
  return from < end ? dimsProduct(dims.data(), static_cast<int>(from), static_cast<int>(end))
                    : 1;
}

/// A view of `data` as a dense tensor of `dtype` and `dims`.
inline TensorRef makeRef(DType dtype, const Dims &dims, void *data) {
  TensorRef t;
  t.dtype = dtype;
  t.rank = static_cast<int>(dims.size());
  std::copy(dims.begin(), dims.end(), t.dims);
  t.data = data;
  return t;
}

/// Owns a tensor's bytes and reads/writes its elements as double or bits.
struct TestTensor {
  DType dtype;
  Dims dims;
  std::vector<uint64_t> storage; // 8-byte aligned for every dtype

  TestTensor(DType t, Dims shape)
      : dtype(t), dims(std::move(shape)),
        storage((numElements(dims) * dtypeSize(dtype) + 7) / 8 + 1, 0) {}

  int64_t size() const { return numElements(dims); }
  TensorRef ref() const { return makeRef(dtype, dims, const_cast<uint64_t *>(storage.data())); }
  template <typename T> T *as() { return reinterpret_cast<T *>(storage.data()); }
  template <typename T> const T *as() const { return reinterpret_cast<const T *>(storage.data()); }

  double get(int64_t i) const {
    double v = 0;
    if (!dispatchAll(dtype, [&](auto t) {
          using T = decltype(t);
          v = static_cast<double>(load(as<T>() + i));
        }).isOk())
      ADD_FAILURE() << "unhandled dtype";
    return v;
  }
  void set(int64_t i, double v) {
    if (!dispatchAll(dtype, [&](auto t) {
          using T = decltype(t);
          if constexpr (kIsIntStorage<T> && sizeof(T) < 8)
            store(as<T>() + i, static_cast<T>(static_cast<int64_t>(v)));
          else if constexpr (kIsIntStorage<T> && std::is_unsigned_v<T>)
            // Below 0 it wraps as integers convert: a negative double to
            // uint64 is undefined (UBSan).
            store(as<T>() + i, v < 0 ? static_cast<T>(static_cast<int64_t>(v)) : static_cast<T>(v));
          else
            store(as<T>() + i, static_cast<ComputeType<T>>(v));
        }).isOk())
      ADD_FAILURE() << "unhandled dtype";
  }
  /// Uniform reals in [lo, hi), rounded to the dtype, from `seed`.
  void fillUniform(uint32_t seed, double lo, double hi) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    for (int64_t i = 0; i < size(); ++i)
      set(i, dist(rng));
  }
  std::vector<double> values() const {
    std::vector<double> v(size());
    for (int64_t i = 0; i < size(); ++i)
      v[i] = get(i);
    return v;
  }

  /// Element i's bit pattern, zero-extended to 64 bits.
  uint64_t getBits(int64_t i) const {
    uint64_t v = 0;
    size_t n = dtypeSize(dtype);
    std::memcpy(&v, reinterpret_cast<const char *>(storage.data()) + i * n, n);
    return v;
  }
  /// Stores the low dtypeSize bytes of v as element i.
  void setBits(int64_t i, uint64_t v) {
    size_t n = dtypeSize(dtype);
    std::memcpy(reinterpret_cast<char *>(storage.data()) + i * n, &v, n);
  }
};

/// Relative tolerance of a float result computed in and stored as `dtype`;
/// `slack` widens it for kernels with longer rounding chains (gradients).
inline double tolerance(DType dtype, double slack = 1.0) {
  switch (dtype) {
  case DType::F32: return 1e-5 * slack;
  case DType::F64: return 1e-12 * slack;
  case DType::F16: return 2e-3 * slack;
  default: return 1.6e-2 * slack; // bf16
  }
}

/// Every element of `got` within `tol` of `expected`: relative, and
/// absolute for values below 1.
inline void expectClose(const std::vector<double> &expected, const TestTensor &got, double tol,
                        const std::string &what) {
  ASSERT_EQ(static_cast<int64_t>(expected.size()), got.size()) << what;
  for (int64_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got.get(i), expected[i], tol * std::max(1.0, std::abs(expected[i])))
        << what << " at " << i;
}

/// A tensor of `dtype` and `dims` holding fillUniform(seed, lo, hi).
inline TestTensor uniformTensor(DType dtype, Dims dims, uint32_t seed, double lo, double hi) {
  TestTensor t(dtype, std::move(dims));
  t.fillUniform(seed, lo, hi);
  return t;
}

/// Runs an nn.fused program on the CPU interpreter: `ops` as {op, a, b}
/// triples over value ids (inputs first, then each op's result), `results`
/// the value ids written to `outputs`.
inline Status runFused(const std::vector<const TestTensor *> &inputs,
                       const std::vector<std::array<int64_t, 3>> &ops,
                       const std::vector<int64_t> &results, std::vector<TestTensor> &outputs) {
  std::vector<int64_t> ints{static_cast<int64_t>(ops.size())};
  for (const auto &op : ops)
    ints.insert(ints.end(), op.begin(), op.end());
  ints.insert(ints.end(), results.begin(), results.end());
  std::vector<TensorRef> in, out;
  for (const TestTensor *t : inputs)
    in.push_back(t->ref());
  for (TestTensor &t : outputs)
    out.push_back(t.ref());
  return fusedElementwise(in.data(), static_cast<int>(in.size()), ints.data(),
                          static_cast<int>(ints.size()), out.data(), static_cast<int>(out.size()));
}

} // namespace fsdp::rt::cpu::kerneltest

#endif // FSDP_TESTS_UNIT_RUNTIME_BACKENDS_CPU_KERNELTESTUTIL_H
