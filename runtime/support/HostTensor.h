//===- HostTensor.h - a tensor that owns its bytes in host memory ---------===//
//
// HostTensor is what the .npy and safetensors readers hand back and what
// TensorRef views point into. The file-reading machinery behind those
// readers is private to the runtime (runtime/io/FileIO.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_HOSTTENSOR_H
#define FSDP_RUNTIME_SUPPORT_HOSTTENSOR_H

#include "runtime/support/DType.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cassert>
#include <cstdint>
#include <utility>
#include <vector>

namespace fsdp::rt {

struct HostTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data;

  /// A view for kernels. Requires shape.size() <= kMaxRank, which the
  /// readers guarantee.
  TensorRef ref() { return std::as_const(*this).ref(); }
  /// A view of a const tensor (e.g. from SafetensorsFile::find): TensorRef
  /// has no const flavour, so whoever takes it must only read through it.
  TensorRef ref() const {
    assert(shape.size() <= static_cast<size_t>(kMaxRank) && "rank above kMaxRank");
    TensorRef r;
    r.dtype = dtype;
    r.rank = static_cast<int>(shape.size());
    for (int i = 0; i < r.rank; ++i)
      r.dims[i] = shape[i];
    r.data = const_cast<char *>(data.data());
    return r;
  }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SUPPORT_HOSTTENSOR_H
