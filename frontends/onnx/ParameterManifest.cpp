//===- ParameterManifest.cpp - read and check MODEL.onnx.params.json ------===//
//
// The manifest is untrusted input, read with llvm::json: every field's
// presence and type is checked and each failure names the entry
// ("parameters[2] (\"h.0.attn.w\")") so the user can find it in a file of
// thousands. Checking against the model is separate (checkManifest), so the
// parser can be fuzzed without a model.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/ParameterManifest.h"

#include "dialects/nn/ShapeRules.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <map>
#include <set>

namespace fsdp::onnx {
namespace {

constexpr const char *kFormat = "fsdp-opt.params";
constexpr int64_t kVersion = 1;
constexpr uint64_t kMaxManifestBytes = uint64_t(256) << 20;

/// Collects the first error; `where` is the entry being read.
struct Reader {
  const std::string &path;
  std::string error;

  bool fail(const std::string &where, const std::string &why) {
    if (error.empty())
      error = path + ": " + (where.empty() ? "" : where + ": ") + why;
    return false;
  }

  bool string(const llvm::json::Object &object, llvm::StringRef key,
              const std::string &where, std::string &out) {
    std::optional<llvm::StringRef> value = object.getString(key);
    if (!value)
      return fail(where, "'" + key.str() + "' must be a string");
    out = value->str();
    return true;
  }

  bool stringList(const llvm::json::Object &object, llvm::StringRef key,
                  const std::string &where, std::vector<std::string> &out) {
    const llvm::json::Array *array = object.getArray(key);
    if (!array)
      return fail(where, "'" + key.str() + "' must be a list of strings");
    for (const llvm::json::Value &item : *array) {
      std::optional<llvm::StringRef> s = item.getAsString();
      if (!s)
        return fail(where, "'" + key.str() + "' must be a list of strings");
      out.push_back(s->str());
    }
    return true;
  }

  /// The object at `list[index]`, its "name" read into `name`; `where`
  /// becomes `list[index] ("name")` for the messages about its fields.
  const llvm::json::Object *namedEntry(const llvm::json::Value &value,
                                       const std::string &list, size_t index,
                                       std::string &name, std::string &where) {
    where = list + "[" + std::to_string(index) + "]";
    const llvm::json::Object *object = value.getAsObject();
    if (!object)
      return fail(where, "must be an object"), nullptr;
    if (!string(*object, "name", where, name))
      return nullptr;
    where += " (\"" + name + "\")";
    return object;
  }

  /// Reads the list `key` of `root`, each element with `one`.
  template <typename T, typename ReadOne>
  bool list(const llvm::json::Object &root, llvm::StringRef key,
            std::vector<T> &out, ReadOne one) {
    const llvm::json::Array *array = root.getArray(key);
    if (!array)
      return fail("", "'" + key.str() + "' must be a list");
    out.resize(array->size());
    for (size_t i = 0; i < array->size(); ++i)
      if (!one((*array)[i], key.str(), i, out[i]))
        return false;
    return true;
  }

  bool parameter(const llvm::json::Value &value, const std::string &list,
                 size_t index, ManifestParameter &out) {
    std::string where;
    const llvm::json::Object *object =
        namedEntry(value, list, index, out.name, where);
    if (!object || !string(*object, "initializer", where, out.initializer) ||
        !string(*object, "dtype", where, out.dtype))
      return false;
    const llvm::json::Array *shape = object->getArray("shape");
    if (!shape)
      return fail(where, "'shape' must be a list of integers >= 0");
    for (const llvm::json::Value &dim : *shape) {
      std::optional<int64_t> d = dim.getAsInteger();
      if (!d || *d < 0)
        return fail(where, "'shape' must be a list of integers >= 0");
      out.shape.push_back(*d);
    }
    // `tied` may be left out when empty.
    if (object->get("tied") && !stringList(*object, "tied", where, out.tied))
      return false;
    return true;
  }

  bool buffer(const llvm::json::Value &value, const std::string &list,
              size_t index, ManifestBuffer &out) {
    std::string where;
    const llvm::json::Object *object =
        namedEntry(value, list, index, out.name, where);
    if (!object)
      return false;
    const llvm::json::Value *init = object->get("initializer");
    if (!init ||
        (init->kind() != llvm::json::Value::Null && !init->getAsString()))
      return fail(where, "'initializer' must be a string or null");
    if (std::optional<llvm::StringRef> s = init->getAsString())
      out.initializer = s->str();
    std::optional<bool> persistent = object->getBoolean("persistent");
    if (!persistent)
      return fail(where, "'persistent' must be true or false");
    out.persistent = *persistent;
    return true;
  }
};

} // namespace

std::string defaultManifestPath(const std::string &modelPath) {
  return modelPath + ".params.json";
}

std::string torchDtypeName(DType type) {
  switch (type) {
  case DType::Float:
    return "float32";
  case DType::Double:
    return "float64";
  case DType::Float16:
    return "float16";
  case DType::BFloat16:
    return "bfloat16";
  default:
    return dtypeName(type);
  }
}

std::optional<ParameterManifest> parseManifest(const std::string &text,
                                               const std::string &path,
                                               std::string &error) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed) {
    error = path + ": not valid JSON: " + llvm::toString(parsed.takeError());
    return std::nullopt;
  }
  Reader reader{path, {}};
  ParameterManifest manifest;
  manifest.path = path;
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root) {
    error = path + ": a parameter manifest must be a JSON object";
    return std::nullopt;
  }
  std::optional<llvm::StringRef> format = root->getString("format");
  if (!format || *format != kFormat) {
    error = path + ": not a parameter manifest ('format' must be \"" + kFormat +
            "\")";
    return std::nullopt;
  }
  std::optional<int64_t> version = root->getInteger("version");
  if (!version || *version != kVersion) {
    error = path + ": manifest version " +
            (version ? std::to_string(*version) : std::string("(missing)")) +
            " is not supported (this fsdp-opt reads version 1)";
    return std::nullopt;
  }
  // Provenance only: informative, so absent or non-string values are fine.
  if (std::optional<llvm::StringRef> torch = root->getString("torch"))
    manifest.torchVersion = torch->str();
  if (std::optional<llvm::StringRef> exporter = root->getString("exporter"))
    manifest.exporter = exporter->str();
  auto parameter = [&reader](const llvm::json::Value &value,
                             const std::string &list, size_t index,
                             ManifestParameter &out) {
    return reader.parameter(value, list, index, out);
  };
  auto buffer = [&reader](const llvm::json::Value &value,
                          const std::string &list, size_t index,
                          ManifestBuffer &out) {
    return reader.buffer(value, list, index, out);
  };
  bool ok = reader.list(*root, "parameters", manifest.parameters, parameter) &&
            reader.list(*root, "frozen", manifest.frozen, parameter) &&
            reader.list(*root, "buffers", manifest.buffers, buffer);
  if (!ok) {
    error = reader.error;
    return std::nullopt;
  }
  return manifest;
}

std::optional<ParameterManifest> readManifest(const std::string &path,
                                              std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer) {
    error = path + ": cannot read the parameter manifest: " +
            buffer.getError().message();
    return std::nullopt;
  }
  if ((*buffer)->getBufferSize() > kMaxManifestBytes) {
    error = path + ": parameter manifest is larger than 256 MiB";
    return std::nullopt;
  }
  return parseManifest((*buffer)->getBuffer().str(), path, error);
}

bool checkManifest(const ParameterManifest &manifest, const Model &model,
                   std::string &error) {
  std::map<std::string, const Tensor *> initializers;
  for (const Tensor &init : model.initializers)
    initializers.emplace(init.name, &init);
  std::set<std::string> names;                // torch names seen
  std::map<std::string, std::string> holders; // initializer -> torch name
  auto fail = [&](const std::string &where, const std::string &why) {
    error = manifest.path + ": " + where + ": " + why;
    return false;
  };
  auto checkName = [&](const std::string &where, const std::string &name) {
    return names.insert(name).second ||
           fail(where, "torch name '" + name + "' is listed more than once");
  };
  auto checkList = [&](const std::vector<ManifestParameter> &list,
                       const char *key) {
    for (size_t i = 0; i < list.size(); ++i) {
      const ManifestParameter &p = list[i];
      std::string where =
          std::string(key) + "[" + std::to_string(i) + "] (\"" + p.name + "\")";
      if (!checkName(where, p.name))
        return false;
      for (const std::string &alias : p.tied)
        if (!checkName(where, alias))
          return false;
      auto it = initializers.find(p.initializer);
      if (it == initializers.end())
        return fail(where,
                    "initializer '" + p.initializer + "' is not in " +
                        model.path +
                        " (was the model re-exported without its manifest?)");
      const Tensor &init = *it->second;
      auto [holder, inserted] = holders.emplace(p.initializer, p.name);
      if (!inserted)
        return fail(where, "initializer '" + p.initializer +
                               "' already holds '" + holder->second +
                               "'; list shared tensors once, with \"tied\"");
      if (init.dims != p.shape)
        return fail(where, "shape " + nn::formatShape(p.shape) +
                               " differs from initializer '" + init.name +
                               "' in " + model.path + ", which is " +
                               nn::formatShape(init.dims));
      if (torchDtypeName(init.dtype) != p.dtype)
        return fail(where, "dtype " + p.dtype + " differs from initializer '" +
                               init.name + "' in " + model.path +
                               ", which is " + torchDtypeName(init.dtype));
      if (!init.isFloat())
        return fail(where,
                    "initializer '" + init.name + "' is " +
                        dtypeName(init.dtype) +
                        "; only floating-point parameters can be trained");
    }
    return true;
  };
  if (!checkList(manifest.parameters, "parameters") ||
      !checkList(manifest.frozen, "frozen"))
    return false;
  for (size_t i = 0; i < manifest.buffers.size(); ++i) {
    const ManifestBuffer &b = manifest.buffers[i];
    std::string where =
        "buffers[" + std::to_string(i) + "] (\"" + b.name + "\")";
    if (b.initializer && !initializers.count(*b.initializer))
      return fail(where, "initializer '" + *b.initializer + "' is not in " +
                             model.path);
    if (b.initializer && holders.count(*b.initializer))
      return fail(where, "initializer '" + *b.initializer +
                             "' is also parameter '" + holders[*b.initializer] +
                             "'");
  }
  return true;
}

} // namespace fsdp::onnx
