//===- OnnxModel.cpp - element access on parsed ONNX data -----------------===//
//
// Small accessors over the plain model structs: attribute lookup and
// reading tensor elements as int64 or double, which constant folding and
// shape operands need. Kept apart from ModelReader.cpp so it builds without
// protobuf or exceptions.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OnnxModel.h"

#include "runtime/support/ElementCount.h"
#include "runtime/support/Half.h"

#include <cmath>
#include <cstring>

namespace fsdp::onnx {

const Attribute *Node::attribute(const std::string &attrName) const {
  for (const Attribute &attr : attributes)
    if (attr.name == attrName)
      return &attr;
  return nullptr;
}

int64_t Tensor::numElements() const { return saturatedElementCount(dims); }

bool Tensor::isInteger() const {
  switch (dtype) {
  case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
  case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
  case DType::Bool:
    return true;
  default:
    return false;
  }
}

bool Tensor::isFloat() const {
  return dtype == DType::Float || dtype == DType::Double ||
         dtype == DType::Float16 || dtype == DType::BFloat16;
}

template <typename T>
static T load(const std::vector<char> &data, int64_t i) {
  T v;
  std::memcpy(&v, data.data() + i * sizeof(T), sizeof(T));
  return v;
}

int64_t Tensor::intAt(int64_t i) const {
  switch (dtype) {
  case DType::Int8: return load<int8_t>(data, i);
  case DType::Int16: return load<int16_t>(data, i);
  case DType::Int32: return load<int32_t>(data, i);
  case DType::Int64: return load<int64_t>(data, i);
  case DType::UInt8: case DType::Bool: return load<uint8_t>(data, i);
  case DType::UInt16: return load<uint16_t>(data, i);
  case DType::UInt32: return load<uint32_t>(data, i);
  case DType::UInt64: return static_cast<int64_t>(load<uint64_t>(data, i));
  default: return static_cast<int64_t>(floatAt(i));
  }
}

double Tensor::floatAt(int64_t i) const {
  switch (dtype) {
  case DType::Float: return load<float>(data, i);
  case DType::Double: return load<double>(data, i);
  // 16-bit floats decode with the runtime's conversions: one definition.
  case DType::Float16: return rt::f16ToFloat(load<uint16_t>(data, i));
  case DType::BFloat16: return rt::bf16ToFloat(load<uint16_t>(data, i));
  default: return static_cast<double>(intAt(i));
  }
}

} // namespace fsdp::onnx
