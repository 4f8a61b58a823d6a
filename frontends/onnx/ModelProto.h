//===- ModelProto.h - an ONNX file as its protobuf message ----------------===//
//
// For the few tools that must rewrite a model rather than import it
// (fsdp-ckpt export puts trained weights into the source model): the same
// bounded, hostile-input read as readModel, handing back the protobuf
// message itself. It exposes protobuf types, so only code compiled with
// exceptions and RTTI (as FSDPOnnxReader is) may include it; the compiler
// uses OnnxModel.h.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_MODELPROTO_H
#define FSDP_FRONTENDS_ONNX_MODELPROTO_H

#include <onnx/onnx_pb.h>

#include <string>

namespace fsdp::onnx {

/// Reads and parses `path` (under protobuf's 2 GiB limit, nesting bounded).
/// On failure returns false and sets `error` to a message starting with
/// `path`. May throw std::bad_alloc, as protobuf does.
bool readModelProto(const std::string &path, ::onnx::ModelProto &proto, std::string &error);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_MODELPROTO_H
