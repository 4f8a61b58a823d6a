//===- CommTestData.h - inputs and references for communicator tests ------===//
//
// What the in-process and MPI communicator suites share: deterministic,
// uneven per-rank data that any process can regenerate for every rank from
// (dtype, rank, count, salt), and a sequential reference that adds in rank
// order in the compute type and divides once for Avg, so a suite can check
// a collective's bits without seeing the other ranks' memory; and
// runThreads, the one thread per rank that in-process groups need (every
// member of a collective must be in it at once).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTDATA_H
#define FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTDATA_H

#include "runtime/comm/Communicator.h"
#include "runtime/support/Half.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <thread>
#include <vector>

namespace fsdp::rt::commtest {

using Bytes = std::vector<uint8_t>;

/// Deterministic, uneven per-rank data: magnitudes spread over 2^-4..2^4 and
/// signs mixed, so float sums round differently in different orders; i64
/// values are large enough that a float detour would lose them.
inline Bytes rankData(DType dtype, int rank, int64_t count, uint64_t salt = 0) {
  Bytes out(static_cast<size_t>(count) * dtypeSize(dtype));
  std::mt19937_64 rng(salt * 1000003 + static_cast<uint64_t>(rank) * 7919 + 17);
  for (int64_t i = 0; i < count; ++i) {
    double v = std::ldexp(static_cast<double>(rng() % 2001) - 1000.0, static_cast<int>(rng() % 9) - 4) /
               997.0;
    switch (dtype) {
    case DType::F32: reinterpret_cast<float *>(out.data())[i] = static_cast<float>(v); break;
    case DType::F64: reinterpret_cast<double *>(out.data())[i] = v; break;
    case DType::BF16:
      reinterpret_cast<uint16_t *>(out.data())[i] = floatToBf16(static_cast<float>(v));
      break;
    case DType::I64:
      reinterpret_cast<int64_t *>(out.data())[i] =
          static_cast<int64_t>(rng() % (1ull << 50)) - (int64_t{1} << 49) + rank;
      break;
    default: out[i * dtypeSize(dtype)] = static_cast<uint8_t>(rng()); break;
    }
  }
  return out;
}

/// Sequential reference: element `offset + i` of every input, added in rank
/// order in the compute type, divided once for Avg; or their largest (Max).
inline Bytes reference(DType dtype, ReduceOp op, const std::vector<Bytes> &inputs, int64_t offset,
                int64_t count) {
  const int n = static_cast<int>(inputs.size());
  Bytes out(static_cast<size_t>(count) * dtypeSize(dtype));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t k = offset + i;
    if (dtype == DType::F32 || dtype == DType::BF16) {
      auto at = [&](int s) {
        return dtype == DType::F32 ? reinterpret_cast<const float *>(inputs[s].data())[k]
                                   : bf16ToFloat(reinterpret_cast<const uint16_t *>(inputs[s].data())[k]);
      };
      float acc = at(0);
      for (int s = 1; s < n; ++s)
        acc = op == ReduceOp::Max ? std::max(acc, at(s)) : acc + at(s);
      if (op == ReduceOp::Avg)
        acc /= static_cast<float>(n);
      if (dtype == DType::F32)
        reinterpret_cast<float *>(out.data())[i] = acc;
      else
        reinterpret_cast<uint16_t *>(out.data())[i] = floatToBf16(acc);
    } else if (dtype == DType::F64) {
      double acc = reinterpret_cast<const double *>(inputs[0].data())[k];
      for (int s = 1; s < n; ++s) {
        const double v = reinterpret_cast<const double *>(inputs[s].data())[k];
        acc = op == ReduceOp::Max ? std::max(acc, v) : acc + v;
      }
      if (op == ReduceOp::Avg)
        acc /= n;
      reinterpret_cast<double *>(out.data())[i] = acc;
    } else {
      const int64_t *first = reinterpret_cast<const int64_t *>(inputs[0].data());
      uint64_t acc = 0; // i64 wraps like the communicator's
      int64_t largest = first[k];
      for (int s = 0; s < n; ++s) {
        const int64_t v = reinterpret_cast<const int64_t *>(inputs[s].data())[k];
        acc += static_cast<uint64_t>(v);
        largest = std::max(largest, v);
      }
      reinterpret_cast<int64_t *>(out.data())[i] =
          op == ReduceOp::Max ? largest : static_cast<int64_t>(acc);
    }
  }
  return out;
}

inline std::vector<Bytes> allRanksData(DType dtype, int size, int64_t count, uint64_t salt = 0) {
  std::vector<Bytes> data;
  for (int r = 0; r < size; ++r)
    data.push_back(rankData(dtype, r, count, salt));
  return data;
}

/// Every element type a collective moves, and the ones it reduces (f32,
/// f64, f16, bf16, i64: checkReducible's).
inline const DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                                   DType::I16, DType::I32, DType::I64, DType::U8,   DType::U16,
                                   DType::U32, DType::U64, DType::Bool};
inline bool reducible(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 ||
         t == DType::I64;
}

struct TypeOp {
  DType dtype;
  ReduceOp op;
};
inline const TypeOp kReductions[] = {{DType::F32, ReduceOp::Sum}, {DType::F32, ReduceOp::Avg},
                              {DType::F64, ReduceOp::Sum}, {DType::F64, ReduceOp::Avg},
                              {DType::BF16, ReduceOp::Sum}, {DType::BF16, ReduceOp::Avg},
                              {DType::I64, ReduceOp::Sum}, {DType::F32, ReduceOp::Max},
                              {DType::F64, ReduceOp::Max}, {DType::BF16, ReduceOp::Max},
                              {DType::I64, ReduceOp::Max}};

/// The concatenation of every rank's rankData: what allGather returns.
inline Bytes concatenated(const std::vector<Bytes> &parts) {
  Bytes out;
  for (const Bytes &p : parts)
    out.insert(out.end(), p.begin(), p.end());
  return out;
}

/// Runs body(rank) for ranks 0..n-1, each on its own thread, and waits for
/// all of them.
inline void runThreads(int n, const std::function<void(int)> &body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back(body, r);
  for (auto &t : threads)
    t.join();
}

} // namespace fsdp::rt::commtest

#endif // FSDP_TESTS_UNIT_RUNTIME_COMM_COMMTESTDATA_H
