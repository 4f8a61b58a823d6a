//===- OnnxModel.h - a parsed ONNX model as plain C++ data ----------------===//
//
// The boundary between protobuf and the rest of the compiler. ModelReader
// parses and validates an ONNX file (with exceptions and RTTI, as the ONNX
// headers need) and fills these structs; the MLIR importer (built without
// exceptions) consumes them. Nothing here exposes protobuf types. Every
// structural check on untrusted input happens while filling these structs,
// so the importer can rely on: element counts that fit in int64, tensor data
// whose byte size matches dtype x shape, and external data read only from
// regular files inside the model's directory.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_FRONTENDS_ONNX_ONNXMODEL_H
#define FSDP_FRONTENDS_ONNX_ONNXMODEL_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::onnx {

/// ONNX TensorProto.DataType values.
enum class DType : int32_t {
  Undefined = 0, Float = 1, UInt8 = 2, Int8 = 3, UInt16 = 4, Int16 = 5,
  Int32 = 6, Int64 = 7, String = 8, Bool = 9, Float16 = 10, Double = 11,
  UInt32 = 12, UInt64 = 13, Complex64 = 14, Complex128 = 15, BFloat16 = 16,
  // Low-precision types of later ONNX versions (1.23 defines up to 28). The
  // runtime computes none of them; they are named so refusals can say which.
  Float8E4M3FN = 17, Float8E4M3FNUZ = 18, Float8E5M2 = 19, Float8E5M2FNUZ = 20,
  UInt4 = 21, Int4 = 22, Float4E2M1 = 23, Float8E8M0 = 24, UInt2 = 25,
  Int2 = 26, Float6E2M3 = 27, Float6E3M2 = 28,
};

/// "float", "int64", ... as ONNX names them; "type N" for unknown codes.
std::string dtypeName(DType type);
/// Bytes per element, or 0 for types without a fixed size (string, unknown).
size_t dtypeSize(DType type);

/// A tensor value: an initializer, a Constant's value or a test data file.
struct Tensor {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  /// Little-endian elements, dtypeSize(dtype) bytes each (bool: one byte).
  std::vector<char> data;
  /// False when the data lives in an external file that is absent and the
  /// reader was asked to allow that (shape-only import of huge models).
  bool hasData = true;

  /// 0 when any dimension is 0; saturated at INT64_MAX past int64.
  int64_t numElements() const;
  /// Element `i` widened to int64 / double (integer, bool and float dtypes).
  int64_t intAt(int64_t i) const;
  double floatAt(int64_t i) const;
  bool isInteger() const;
  bool isFloat() const;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  std::string name;
  Kind kind = Kind::Other;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<Tensor> tensor;
  /// Inside a model-local function: take the value of the caller's
  /// attribute of this name (AttributeProto.ref_attr_name).
  std::string refAttrName;
};

struct Node {
  std::string name;
  std::string opType;
  std::string domain; // "" is the default ai.onnx domain
  std::vector<std::string> inputs;  // "" marks an omitted optional input
  std::vector<std::string> outputs; // "" marks an unused optional output
  std::vector<Attribute> attributes;
  /// Picks among model-local functions of the same domain and name.
  std::string overload;
  /// Opset of the node's domain when it is not the model's: nodes inlined
  /// from a function use the function's opset_import. 0 means the model's.
  int64_t opset = 0;
  /// NodeProto.metadata_props the frontend reads (kept: the torch
  /// exporter's `pkg.torch.onnx.name_scopes` and `pkg.torch.onnx.fx_node`,
  /// which say which module and which torch parameter a node came from).
  std::vector<std::pair<std::string, std::string>> metadata;

  const Attribute *attribute(const std::string &name) const;
};

/// Type of a graph input/output/value_info entry.
struct ValueInfo {
  std::string name;
  bool isTensor = false;   // sequences, maps, optionals are not tensors
  DType dtype = DType::Undefined;
  bool hasShape = false;
  std::vector<int64_t> dims; // -1 for a symbolic or unknown dimension
};

/// A model-local function (ModelProto.functions); calls to it are inlined
/// by inlineFunctions() before import.
struct Function {
  std::string domain, name, overload;
  std::vector<std::string> inputs, outputs;
  /// Declared attribute names, and defaults (attribute_proto) where given.
  std::vector<std::string> attributeNames;
  std::vector<Attribute> attributeDefaults;
  std::map<std::string, int64_t> opsets;
  std::vector<Node> nodes;
};

struct Model {
  std::string path; // as given by the user; prefixes every diagnostic
  int64_t irVersion = 0;
  std::string producerName, producerVersion;
  std::map<std::string, int64_t> opsets; // domain ("" = ai.onnx) -> version
  std::string graphName;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  std::vector<ValueInfo> inputs, outputs, valueInfo;
  std::vector<Function> functions;
  /// GraphProto.metadata_props (the torch exporter's
  /// `pkg.torch.export.ExportedProgram.graph_signature` names each
  /// initializer's torch role); see ParameterProvenance.h.
  std::vector<std::pair<std::string, std::string>> graphMetadata;
};

struct ReadOptions {
  /// When true, initializers whose external data file is missing are kept
  /// with hasData = false instead of failing the load.
  bool allowMissingExternalData = false;
};

/// Reads and validates `path`. On failure returns nullopt and sets `error`
/// to a message starting with `path`. Never throws, never aborts.
std::optional<Model> readModel(const std::string &path,
                               const ReadOptions &options, std::string &error);

/// Reads a serialized TensorProto (the ONNX test data `input_0.pb` format).
std::optional<Tensor> readTensorFile(const std::string &path, std::string &error);

} // namespace fsdp::onnx

#endif // FSDP_FRONTENDS_ONNX_ONNXMODEL_H
