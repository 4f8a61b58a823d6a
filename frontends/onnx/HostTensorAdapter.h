//===- HostTensorAdapter.h - ONNX tensors as runtime tensors --------------===//
//
// Converts the frontend's parsed tensors (initializers, test data) into the
// runtime's HostTensor, which the plan emitter writes as weights and the
// runtime executes on. Both sides store little-endian elements of the same
// sizes, so this is a dtype mapping plus a copy.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_HOSTTENSORADAPTER_H
#define FSDP_FRONTENDS_ONNX_HOSTTENSORADAPTER_H

#include "frontends/onnx/OnnxModel.h"
#include "runtime/support/HostTensor.h"

#include <algorithm>
#include <optional>

namespace fsdp::onnx {

/// The runtime dtype of an ONNX dtype; nullopt for strings, complex, ...
inline std::optional<rt::DType> runtimeDType(DType dtype) {
  switch (dtype) {
  case DType::Float: return rt::DType::F32;
  case DType::Double: return rt::DType::F64;
  case DType::Float16: return rt::DType::F16;
  case DType::BFloat16: return rt::DType::BF16;
  case DType::Int8: return rt::DType::I8;
  case DType::Int16: return rt::DType::I16;
  case DType::Int32: return rt::DType::I32;
  case DType::Int64: return rt::DType::I64;
  case DType::UInt8: return rt::DType::U8;
  case DType::UInt16: return rt::DType::U16;
  case DType::UInt32: return rt::DType::U32;
  case DType::UInt64: return rt::DType::U64;
  case DType::Bool: return rt::DType::Bool;
  default: return std::nullopt;
  }
}

/// A view of `tensor`'s bytes (no copy); nullopt if it has no data, an
/// unsupported dtype or a rank the runtime does not hold.
inline std::optional<rt::TensorRef> toTensorRef(const Tensor &tensor) {
  std::optional<rt::DType> dtype = runtimeDType(tensor.dtype);
  if (!dtype || !tensor.hasData || tensor.dims.size() > static_cast<size_t>(rt::kMaxRank))
    return std::nullopt;
  rt::TensorRef ref;
  ref.dtype = *dtype;
  ref.rank = static_cast<int>(tensor.dims.size());
  std::copy(tensor.dims.begin(), tensor.dims.end(), ref.dims);
  ref.data = const_cast<char *>(tensor.data.data()); // read-only use
  return ref;
}

/// A copy of `tensor` as a HostTensor; nullopt where toTensorRef has none.
inline std::optional<rt::HostTensor> toHostTensor(const Tensor &tensor) {
  std::optional<rt::TensorRef> ref = toTensorRef(tensor);
  if (!ref)
    return std::nullopt;
  rt::HostTensor host;
  host.dtype = ref->dtype;
  host.shape = tensor.dims;
  host.data = tensor.data;
  return host;
}

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_HOSTTENSORADAPTER_H
