//===- OnnxExport.cpp - trained parameters written into an ONNX model -----===//
//
// Reads the source model with the ONNX frontend's bounded reader, swaps
// each checkpoint parameter's initializer for the trained value and writes
// the model back. A parameter is matched to its initializer by name (the
// compiler names parameters after them), and dtype and shape must agree
// exactly, so exporting into another model fails naming the tensor instead
// of writing a model that no longer fits its graph. Built with exceptions
// for the ONNX headers; none escape exportOnnx.
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-ckpt/OnnxExport.h"

#include "frontends/onnx/HostTensorAdapter.h"
#include "frontends/onnx/ModelProto.h"
#include "runtime/io/AtomicFile.h"

#include <climits>
#include <map>
#include <new>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "raw_data is little-endian and checkpoint tensors are copied into it unswapped"
#endif

namespace fsdp::ckpt {
namespace {

using rt::cat;
using rt::HostTensor;
using rt::Status;
namespace pb = ::onnx;

/// Protobuf cannot parse a message of 2 GiB or more (the frontend's reader
/// refuses such files), so a model that large needs external data.
constexpr size_t kMaxProtoBytes = INT_MAX;

/// "float[64,32]": a tensor's type in ONNX's dtype names.
std::string typeText(onnx::DType dtype, const std::vector<int64_t> &dims) {
  std::string text = onnx::dtypeName(dtype) + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

/// The ONNX dtype of a runtime dtype (runtimeDType's inverse).
onnx::DType onnxDType(rt::DType dtype) {
  for (int32_t code = 1; code <= static_cast<int32_t>(onnx::DType::BFloat16); ++code)
    if (onnx::runtimeDType(static_cast<onnx::DType>(code)) == dtype)
      return static_cast<onnx::DType>(code);
  return onnx::DType::Undefined;
}

/// Replaces `init`'s value by `value` after checking they have the same
/// type, leaving raw_data as the only place its data lives.
Status replaceInitializer(pb::TensorProto &init, const HostTensor &value,
                          const std::string &modelPath) {
  const auto dtype = static_cast<onnx::DType>(init.data_type());
  const std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
  if (onnx::runtimeDType(dtype) != value.dtype || dims != value.shape)
    return Status::error(cat(modelPath, ": initializer '", init.name(), "' is ",
                             typeText(dtype, dims), " but the checkpoint's '", init.name(),
                             "' is ", typeText(onnxDType(value.dtype), value.shape),
                             " (is this the model the checkpoint was trained from?)"));
  if (init.has_segment())
    return Status::error(cat(modelPath, ": initializer '", init.name(),
                             "' is segmented; segmented tensors are not supported"));
  init.clear_float_data();
  init.clear_int32_data();
  init.clear_string_data();
  init.clear_int64_data();
  init.clear_double_data();
  init.clear_uint64_data();
  init.clear_external_data();
  init.clear_data_location();
  init.set_raw_data(value.data.data(), value.data.size());
  return Status::ok();
}

Status exportOrThrow(const std::string &modelPath,
                     const std::vector<std::pair<std::string, HostTensor>> &parameters,
                     const std::string &outPath) {
  pb::ModelProto model;
  std::string error;
  if (!onnx::readModelProto(modelPath, model, error))
    return Status::error(error);
  std::map<std::string, pb::TensorProto *> initializers;
  for (pb::TensorProto &init : *model.mutable_graph()->mutable_initializer())
    if (!initializers.emplace(init.name(), &init).second)
      return Status::error(cat(modelPath, ": two initializers are named '", init.name(), "'"));
  for (const auto &[name, value] : parameters) {
    auto it = initializers.find(name);
    if (it == initializers.end())
      return Status::error(cat(modelPath, ": has no initializer '", name,
                               "', a parameter of the checkpoint (is this the model the "
                               "checkpoint was trained from?)"));
    FSDP_RETURN_IF_ERROR(replaceInitializer(*it->second, value, modelPath));
  }
  // An untouched initializer in external data names a file relative to the
  // source model, which the exported model would not find beside itself.
  for (const pb::TensorProto &init : model.graph().initializer())
    if (init.data_location() == pb::TensorProto::EXTERNAL)
      return Status::error(cat(modelPath, ": initializer '", init.name(),
                               "' is stored as external data; exporting models with "
                               "external data is not implemented yet (external data)"));
  const size_t bytes = model.ByteSizeLong();
  if (bytes >= kMaxProtoBytes)
    return Status::error(cat(outPath, ": the trained model would be ", bytes,
                             " bytes, over protobuf's 2 GiB limit; writing its weights as "
                             "external data is not implemented yet (external data)"));
  std::string serialized;
  if (!model.SerializeToString(&serialized))
    return Status::error(cat(outPath, ": cannot serialize the trained model"));
  return rt::writeFileAtomic(outPath, {{serialized.data(), serialized.size()}});
}

} // namespace

Status exportOnnx(const std::string &modelPath,
                  const std::vector<std::pair<std::string, HostTensor>> &parameters,
                  const std::string &outPath) {
  try {
    return exportOrThrow(modelPath, parameters, outPath);
  } catch (const std::bad_alloc &) {
    return Status::error(modelPath + ": out of memory while exporting the model");
  } catch (const std::exception &e) {
    return Status::error(modelPath + ": " + e.what());
  }
}

} // namespace fsdp::ckpt
