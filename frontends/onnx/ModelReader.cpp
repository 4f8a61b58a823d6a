//===- ModelReader.cpp - parse and validate ONNX files --------------------===//
//
// Turns an ONNX protobuf into the plain structs of OnnxModel.h. This is the
// only file that sees protobuf, and it treats every file as hostile: sizes
// are bounded before anything is allocated, element counts are checked for
// overflow and against the bytes present, and external data is read only from
// regular files inside the model's directory (no absolute paths, no `..`, no
// symlinks: ONNX CVE-2022-25882 and CVE-2024-27318 came from following such
// paths). It is compiled with exceptions because the ONNX headers need them;
// none escape.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/FunctionInliner.h"
#include "frontends/onnx/ModelProto.h"
#include "frontends/onnx/OnnxModel.h"

#include <onnx/onnx_pb.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/unknown_field_set.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <limits>
#include <sstream>

namespace fsdp::onnx {
namespace {

namespace pb = ::onnx;

/// Protobuf cannot parse messages of 2 GiB or more; larger models must use
/// external data, as torch.onnx.export does by itself.
constexpr int64_t kMaxProtoBytes = INT_MAX;

struct Failure {
  std::string message;
};

[[noreturn]] void fail(const std::string &message) { throw Failure{message}; }

/// Owns a POSIX file descriptor (closed on every exit, including failures).
struct FileDescriptor {
  int fd = -1;
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd(fd) {}
  FileDescriptor(FileDescriptor &&other) noexcept : fd(other.fd) { other.fd = -1; }
  FileDescriptor &operator=(FileDescriptor &&other) noexcept {
    std::swap(fd, other.fd);
    return *this;
  }
  FileDescriptor(const FileDescriptor &) = delete;
  FileDescriptor &operator=(const FileDescriptor &) = delete;
  ~FileDescriptor() {
    if (fd >= 0)
      close(fd);
  }
};

/// Reads a model (or tensor) file, opened once and checked on the
/// descriptor: O_NONBLOCK so a FIFO is refused rather than waited on, and
/// fstat, so a file swapped in after the check is never the one read.
std::optional<std::string> readWholeFile(const std::string &path,
                                         std::string &error) {
  FileDescriptor file(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  struct stat st;
  if (file.fd < 0 || fstat(file.fd, &st) != 0) {
    error = path + ": cannot open: " + std::strerror(errno);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    return std::nullopt;
  }
  if (st.st_size >= kMaxProtoBytes) {
    error = path + ": file is " + std::to_string(st.st_size) +
            " bytes; protobuf files must be under 2 GiB (store weights as "
            "external data)";
    return std::nullopt;
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = pread(file.fd, bytes.data() + done, bytes.size() - done,
                      static_cast<off_t>(done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = path + ": short read";
      return std::nullopt;
    }
    done += static_cast<size_t>(n);
  }
  return bytes;
}

template <typename Message>
bool parseMessage(const std::string &bytes, Message &message) {
  google::protobuf::io::CodedInputStream stream(
      reinterpret_cast<const uint8_t *>(bytes.data()), static_cast<int>(bytes.size()));
  stream.SetTotalBytesLimit(static_cast<int>(kMaxProtoBytes));
  // Deeply nested graphs (If/Loop bodies) are legal but a hostile file can
  // nest without end; protobuf's default depth of 100 bounds the recursion.
  return message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

int64_t checkedElementCount(const std::vector<int64_t> &dims,
                            const std::string &what) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0)
      fail(what + ": negative dimension " + std::to_string(d));
    if (d != 0 && count > std::numeric_limits<int64_t>::max() / d)
      fail(what + ": element count overflows");
    count *= d;
  }
  return count;
}

/// Copies a repeated numeric field into `out`, converting each element to
/// the tensor's dtype (ONNX stores e.g. int8 and float16 in int32_data).
template <typename Field>
void copyTypedField(const Field &field, DType dtype, int64_t count,
                    std::vector<char> &out, const std::string &what) {
  if (static_cast<int64_t>(field.size()) != count)
    fail(what + ": has " + std::to_string(field.size()) + " values for " +
         std::to_string(count) + " elements");
  size_t size = dtypeSize(dtype);
  out.resize(static_cast<size_t>(count) * size);
  for (int64_t i = 0; i < count; ++i) {
    char *dst = out.data() + i * size;
    auto v = field.Get(static_cast<int>(i));
    switch (dtype) {
    case DType::Float: { float f = static_cast<float>(v); std::memcpy(dst, &f, 4); break; }
    case DType::Double: { double d = static_cast<double>(v); std::memcpy(dst, &d, 8); break; }
    case DType::Bool: { uint8_t b = v != 0; std::memcpy(dst, &b, 1); break; }
    default: {
      // Integers and 16-bit floats (stored as their bit pattern): keep the
      // low `size` bytes of the little-endian value.
      uint64_t bits = static_cast<uint64_t>(static_cast<int64_t>(v));
      std::memcpy(dst, &bits, size);
      break;
    }
    }
  }
}

/// Reads the external data of `proto` from a regular file inside `baseDir`.
void readExternalData(const pb::TensorProto &proto, const std::string &baseDir,
                      int64_t expectedBytes, const ReadOptions &options,
                      Tensor &tensor, const std::string &what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : proto.external_data()) {
    const std::string &key = entry.key(), &value = entry.value();
    auto parseInt = [&](const std::string &text) {
      try {
        size_t used = 0;
        long long v = std::stoll(text, &used);
        if (used != text.size() || v < 0)
          throw std::invalid_argument("");
        return static_cast<int64_t>(v);
      } catch (const std::exception &) {
        fail(what + ": external data " + key + " '" + text + "' is not a non-negative integer");
      }
    };
    if (key == "location")
      location = value;
    else if (key == "offset")
      offset = parseInt(value);
    else if (key == "length")
      length = parseInt(value);
  }
  if (location.empty())
    fail(what + ": external data has no location");
  if (location[0] == '/' || location.find('\\') != std::string::npos)
    fail(what + ": external data location '" + location +
         "' must be a relative path inside the model's directory");
  std::stringstream parts(location);
  for (std::string part; std::getline(parts, part, '/');)
    if (part == "..")
      fail(what + ": external data location '" + location +
           "' must not contain '..'");
  // Open component by component with O_NOFOLLOW from the model directory:
  // a symlink anywhere below it is refused, and because every check is made
  // on the opened descriptor, nothing can be swapped in between a check and
  // the read.
  FileDescriptor dir(open(baseDir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.fd < 0)
    fail(what + ": cannot open the model directory '" + baseDir + "'");
  std::vector<std::string> components;
  std::stringstream walk(location);
  for (std::string part; std::getline(walk, part, '/');)
    if (!part.empty() && part != ".")
      components.push_back(part);
  if (components.empty())
    fail(what + ": external data location '" + location + "' names no file");
  FileDescriptor file;
  for (size_t i = 0; i < components.size(); ++i) {
    bool last = i + 1 == components.size();
    int flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? O_NONBLOCK : O_DIRECTORY);
    FileDescriptor next(openat(dir.fd, components[i].c_str(), flags));
    if (next.fd < 0) {
      int openError = errno;
      if (openError == ENOENT && options.allowMissingExternalData) {
        tensor.hasData = false;
        return;
      }
      if (openError == ENOENT)
        fail(what + ": external data file '" + location + "' is missing");
      struct stat link;
      // O_NOFOLLOW | O_DIRECTORY reports a symlinked directory as ENOTDIR;
      // look (without following) only to word the message.
      bool isLink = fstatat(dir.fd, components[i].c_str(), &link, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISLNK(link.st_mode);
      if (openError == ELOOP || isLink)
        fail(what + ": external data location '" + location +
             "' goes through a symlink; refusing to follow it");
      if (openError == ENOTDIR)
        fail(what + ": external data location '" + location +
             "' goes through something that is not a directory");
      fail(what + ": cannot open external data '" + location + "': " +
           std::strerror(openError));
    }
    (last ? file : dir) = std::move(next);
  }
  struct stat st;
  if (fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode))
    fail(what + ": external data location '" + location + "' is not a regular file");
  if (length >= 0 && length != expectedBytes)
    fail(what + ": external data length " + std::to_string(length) +
         " does not match the " + std::to_string(expectedBytes) +
         " bytes its shape needs");
  if (offset > st.st_size || expectedBytes > st.st_size - offset)
    fail(what + ": external data [" + std::to_string(offset) + ", +" +
         std::to_string(expectedBytes) + ") lies outside '" + location + "' (" +
         std::to_string(st.st_size) + " bytes)");
  tensor.data.resize(static_cast<size_t>(expectedBytes));
  int64_t done = 0;
  while (done < expectedBytes) {
    ssize_t n = pread(file.fd, tensor.data.data() + done,
                      static_cast<size_t>(expectedBytes - done), offset + done);
    if (n <= 0)
      fail(what + ": short read from external data '" + location + "'");
    done += n;
  }
}

Tensor convertTensor(const pb::TensorProto &proto, const std::string &baseDir,
                     const ReadOptions &options, const std::string &context) {
  Tensor tensor;
  tensor.name = proto.name();
  tensor.dtype = static_cast<DType>(proto.data_type());
  std::string what = context + (proto.name().empty() ? "" : " '" + proto.name() + "'");
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  int64_t count = checkedElementCount(tensor.dims, what);
  if (proto.has_segment())
    fail(what + ": segmented tensors are not supported");
  size_t size = dtypeSize(tensor.dtype);
  if (size == 0)
    fail(what + ": element type " + dtypeName(tensor.dtype) + " is not supported");
  if (count > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(size))
    fail(what + ": byte size overflows");
  int64_t bytes = count * static_cast<int64_t>(size);

  if (proto.data_location() == pb::TensorProto::EXTERNAL) {
    readExternalData(proto, baseDir, bytes, options, tensor, what);
    return tensor;
  }
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes)
      fail(what + ": raw data has " + std::to_string(proto.raw_data().size()) +
           " bytes, its shape " + "and type need " + std::to_string(bytes));
    tensor.data.assign(proto.raw_data().begin(), proto.raw_data().end());
    return tensor;
  }
  switch (tensor.dtype) {
  case DType::Float:
    copyTypedField(proto.float_data(), tensor.dtype, count, tensor.data, what);
    break;
  case DType::Double:
    copyTypedField(proto.double_data(), tensor.dtype, count, tensor.data, what);
    break;
  case DType::Int64:
    copyTypedField(proto.int64_data(), tensor.dtype, count, tensor.data, what);
    break;
  case DType::UInt32:
  case DType::UInt64:
    copyTypedField(proto.uint64_data(), tensor.dtype, count, tensor.data, what);
    break;
  default:
    copyTypedField(proto.int32_data(), tensor.dtype, count, tensor.data, what);
    break;
  }
  return tensor;
}

ValueInfo convertValueInfo(const pb::ValueInfoProto &proto) {
  ValueInfo info;
  info.name = proto.name();
  if (!proto.has_type() || !proto.type().has_tensor_type())
    return info;
  const auto &tensorType = proto.type().tensor_type();
  info.isTensor = true;
  info.dtype = static_cast<DType>(tensorType.elem_type());
  if (tensorType.has_shape()) {
    info.hasShape = true;
    for (const auto &dim : tensorType.shape().dim())
      info.dims.push_back(dim.has_dim_value() && dim.dim_value() >= 0 ? dim.dim_value() : -1);
  }
  return info;
}

Attribute convertAttribute(const pb::AttributeProto &proto,
                           const std::string &baseDir, const ReadOptions &options,
                           const std::string &context) {
  Attribute attr;
  attr.name = proto.name();
  attr.refAttrName = proto.ref_attr_name();
  switch (proto.type()) {
  case pb::AttributeProto::FLOAT: attr.kind = Attribute::Kind::Float; attr.f = proto.f(); break;
  case pb::AttributeProto::INT: attr.kind = Attribute::Kind::Int; attr.i = proto.i(); break;
  case pb::AttributeProto::STRING: attr.kind = Attribute::Kind::String; attr.s = proto.s(); break;
  case pb::AttributeProto::TENSOR:
    attr.kind = Attribute::Kind::Tensor;
    attr.tensor = std::make_shared<Tensor>(convertTensor(
        proto.t(), baseDir, options, context + " attribute '" + proto.name() + "'"));
    break;
  case pb::AttributeProto::FLOATS:
    attr.kind = Attribute::Kind::Floats;
    attr.floats.assign(proto.floats().begin(), proto.floats().end());
    break;
  case pb::AttributeProto::INTS:
    attr.kind = Attribute::Kind::Ints;
    attr.ints.assign(proto.ints().begin(), proto.ints().end());
    break;
  case pb::AttributeProto::STRINGS:
    attr.kind = Attribute::Kind::Strings;
    attr.strings.assign(proto.strings().begin(), proto.strings().end());
    break;
  default:
    attr.kind = Attribute::Kind::Other; // graphs, sparse tensors, type protos
    break;
  }
  return attr;
}

/// Length-delimited values of field `number` among a message's unknown
/// fields. The ONNX headers we build against (1.12) predate some fields
/// newer exporters write (NodeProto.overload, FunctionProto.overload and
/// attribute_proto); protobuf keeps them as unknown fields, read here.
std::vector<std::string> unknownStrings(const google::protobuf::UnknownFieldSet &unknown,
                                        int number) {
  std::vector<std::string> values;
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField &field = unknown.field(i);
    if (field.number() == number &&
        field.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      values.push_back(field.length_delimited());
  }
  return values;
}

/// GraphProto.metadata_props (field 16) and NodeProto.metadata_props
/// (field 9) are unknown fields too; each is a StringStringEntryProto. Only
/// entries whose key `keep` accepts are returned: the exporter's stack
/// traces would otherwise cost a kilobyte per node.
std::vector<std::pair<std::string, std::string>>
metadataProps(const google::protobuf::UnknownFieldSet &unknown, int number,
              bool (*keep)(const std::string &key)) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const std::string &bytes : unknownStrings(unknown, number)) {
    pb::StringStringEntryProto entry;
    if (parseMessage(bytes, entry) && keep(entry.key()))
      entries.emplace_back(entry.key(), entry.value());
  }
  return entries;
}

bool keepNodeMetadata(const std::string &key) {
  return key == "pkg.torch.onnx.name_scopes" || key == "pkg.torch.onnx.fx_node";
}

bool keepAll(const std::string &) { return true; }

Node convertNode(const pb::NodeProto &proto, const std::string &baseDir,
                 const ReadOptions &options, const std::string &where) {
  Node node;
  node.name = proto.name();
  node.opType = proto.op_type();
  node.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  node.inputs.assign(proto.input().begin(), proto.input().end());
  node.outputs.assign(proto.output().begin(), proto.output().end());
  std::string context = where + " '" + node.name + "' (" + node.opType + ")";
  for (const auto &attr : proto.attribute())
    node.attributes.push_back(convertAttribute(attr, baseDir, options, context));
  std::vector<std::string> overload = unknownStrings(proto.unknown_fields(), 8);
  if (!overload.empty())
    node.overload = overload.back();
  node.metadata = metadataProps(proto.unknown_fields(), 9, keepNodeMetadata);
  return node;
}

Function convertFunction(const pb::FunctionProto &proto, const std::string &baseDir,
                         const ReadOptions &options, const std::string &path) {
  Function function;
  function.domain = proto.domain() == "ai.onnx" ? "" : proto.domain();
  function.name = proto.name();
  std::string what = path + ": function '" + function.name + "'";
  for (const std::string &overload : unknownStrings(proto.unknown_fields(), 13))
    function.overload = overload;
  function.inputs.assign(proto.input().begin(), proto.input().end());
  function.outputs.assign(proto.output().begin(), proto.output().end());
  function.attributeNames.assign(proto.attribute().begin(), proto.attribute().end());
  for (const std::string &bytes : unknownStrings(proto.unknown_fields(), 11)) {
    pb::AttributeProto attr;
    if (!parseMessage(bytes, attr))
      fail(what + ": malformed attribute default");
    function.attributeDefaults.push_back(
        convertAttribute(attr, baseDir, options, what + " default"));
  }
  for (const auto &opset : proto.opset_import())
    function.opsets[opset.domain() == "ai.onnx" ? "" : opset.domain()] = opset.version();
  for (const auto &nodeProto : proto.node())
    function.nodes.push_back(convertNode(nodeProto, baseDir, options, what + ": node"));
  return function;
}

Model convertModel(const pb::ModelProto &proto, const std::string &path,
                   const ReadOptions &options) {
  Model model;
  model.path = path;
  model.irVersion = proto.ir_version();
  model.producerName = proto.producer_name();
  model.producerVersion = proto.producer_version();
  for (const auto &opset : proto.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    model.opsets[domain] = opset.version();
  }
  if (proto.opset_import().empty())
    model.opsets[""] = 1; // ONNX: no opset_import means opset 1 (IR < 3)

  const pb::GraphProto &graph = proto.graph();
  model.graphName = graph.name();
  std::string baseDir = dirName(path);
  if (graph.sparse_initializer_size() > 0)
    fail(path + ": sparse initializers are not supported");
  for (const auto &init : graph.initializer()) {
    if (init.name().empty())
      fail(path + ": an initializer has no name");
    model.initializers.push_back(convertTensor(init, baseDir, options, path + ": initializer"));
  }
  for (const auto &input : graph.input())
    model.inputs.push_back(convertValueInfo(input));
  for (const auto &output : graph.output())
    model.outputs.push_back(convertValueInfo(output));
  for (const auto &info : graph.value_info())
    model.valueInfo.push_back(convertValueInfo(info));
  model.graphMetadata = metadataProps(graph.unknown_fields(), 16, keepAll);
  for (const auto &nodeProto : graph.node())
    model.nodes.push_back(convertNode(nodeProto, baseDir, options, path + ": node"));
  for (const auto &function : proto.functions())
    model.functions.push_back(convertFunction(function, baseDir, options, path));
  if (std::string error = inlineFunctions(model); !error.empty())
    fail(error);
  return model;
}

} // namespace

std::string dtypeName(DType type) {
  switch (type) {
  case DType::Float: return "float";
  case DType::UInt8: return "uint8";
  case DType::Int8: return "int8";
  case DType::UInt16: return "uint16";
  case DType::Int16: return "int16";
  case DType::Int32: return "int32";
  case DType::Int64: return "int64";
  case DType::String: return "string";
  case DType::Bool: return "bool";
  case DType::Float16: return "float16";
  case DType::Double: return "double";
  case DType::UInt32: return "uint32";
  case DType::UInt64: return "uint64";
  case DType::Complex64: return "complex64";
  case DType::Complex128: return "complex128";
  case DType::BFloat16: return "bfloat16";
  case DType::Float8E4M3FN: return "float8e4m3fn";
  case DType::Float8E4M3FNUZ: return "float8e4m3fnuz";
  case DType::Float8E5M2: return "float8e5m2";
  case DType::Float8E5M2FNUZ: return "float8e5m2fnuz";
  case DType::UInt4: return "uint4";
  case DType::Int4: return "int4";
  case DType::Float4E2M1: return "float4e2m1";
  case DType::Float8E8M0: return "float8e8m0";
  case DType::UInt2: return "uint2";
  case DType::Int2: return "int2";
  case DType::Float6E2M3: return "float6e2m3";
  case DType::Float6E3M2: return "float6e3m2";
  case DType::Undefined: return "undefined";
  }
  return "type " + std::to_string(static_cast<int32_t>(type));
}

size_t dtypeSize(DType type) {
  switch (type) {
  case DType::UInt8: case DType::Int8: case DType::Bool: return 1;
  case DType::UInt16: case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
  case DType::Float: case DType::Int32: case DType::UInt32: return 4;
  case DType::Double: case DType::Int64: case DType::UInt64: return 8;
  default: return 0;
  }
}

bool readModelProto(const std::string &path, pb::ModelProto &proto, std::string &error) {
  std::optional<std::string> bytes = readWholeFile(path, error);
  if (!bytes)
    return false;
  if (bytes->empty()) {
    error = path + ": file is empty";
    return false;
  }
  if (!parseMessage(*bytes, proto)) {
    error = path + ": not a valid ONNX protobuf (truncated or corrupt)";
    return false;
  }
  // Many byte strings parse as some protobuf message; these two fields
  // tell a model from another file.
  if (!proto.has_graph() || proto.ir_version() <= 0) {
    error = path + ": not an ONNX model (" +
            (proto.has_graph() ? "missing ir_version" : "no graph") + ")";
    return false;
  }
  return true;
}

std::optional<Model> readModel(const std::string &path, const ReadOptions &options,
                               std::string &error) {
  try {
    pb::ModelProto proto;
    if (!readModelProto(path, proto, error))
      return std::nullopt;
    return convertModel(proto, path, options);
  } catch (const Failure &f) {
    error = f.message;
  } catch (const std::bad_alloc &) {
    error = path + ": out of memory while reading the model";
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
  }
  return std::nullopt;
}

std::optional<Tensor> readTensorFile(const std::string &path, std::string &error) {
  std::optional<std::string> bytes = readWholeFile(path, error);
  if (!bytes)
    return std::nullopt;
  try {
    pb::TensorProto proto;
    if (!parseMessage(*bytes, proto)) {
      error = path + ": not a valid TensorProto";
      return std::nullopt;
    }
    return convertTensor(proto, dirName(path), ReadOptions(), path + ": tensor");
  } catch (const Failure &f) {
    error = f.message;
  } catch (const std::exception &e) {
    error = path + ": " + e.what();
  }
  return std::nullopt;
}

} // namespace fsdp::onnx
