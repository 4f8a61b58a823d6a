//===- TensorRef.h - a typed view of planned memory -----------------------===//
//
// What kernels see: element type, static shape (rank <= kMaxRank, row-major,
// contiguous) and a pointer into memory the executor allocated up front.
// A TensorRef owns nothing and is built without allocation, so kernels can
// run on the per-step path.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_TENSORREF_H
#define FSDP_RUNTIME_SUPPORT_TENSORREF_H

#include "runtime/support/DType.h"

#include <cstdint>
#include <string>

namespace fsdp::rt {

/// ONNX tensors reach rank 7 in the node tests; 8 leaves room.
inline constexpr int kMaxRank = 8;

struct TensorRef {
  DType dtype = DType::F32;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  void *data = nullptr;

  int64_t numElements() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  size_t byteSize() const { return static_cast<size_t>(numElements()) * dtypeSize(dtype); }
  template <typename T> T *as() const { return static_cast<T *>(data); }
};

/// Whether two views have the same dtype and shape (their data aside).
inline bool sameType(const TensorRef &a, const TensorRef &b) {
  if (a.dtype != b.dtype || a.rank != b.rank)
    return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.dims[i] != b.dims[i])
      return false;
  return true;
}

/// A view's dtype and shape as errors name them: "f32[2,3]".
inline std::string shapeText(const TensorRef &t) {
  std::string s = std::string(dtypeName(t.dtype)) + "[";
  for (int i = 0; i < t.rank; ++i)
    s += (i ? "," : "") + std::to_string(t.dims[i]);
  return s + "]";
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SUPPORT_TENSORREF_H
