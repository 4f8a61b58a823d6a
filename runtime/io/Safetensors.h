//===- Safetensors.h - safetensors checkpoint files -----------------------===//
//
// safetensors is the checkpoint format shared with the Hugging Face
// ecosystem: an 8-byte little-endian header size, a JSON header mapping
// each tensor name to its dtype, shape and [begin, end) byte range in the
// data buffer that follows, and an optional "__metadata__" string map. It
// is the runtime's format for named parameter sets (and the only one that
// holds bf16). Files are written atomically and read as hostile input:
// every size, offset and JSON token is validated, and errors name the file
// and the tensor.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_SAFETENSORS_H
#define FSDP_RUNTIME_IO_SAFETENSORS_H

#include "runtime/io/AtomicFile.h"
#include "runtime/io/ContentHash.h"
#include "runtime/support/HostTensor.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt {

struct NamedTensor {
  std::string name;
  TensorRef tensor;
};

/// The metadata of a file of trained parameters (fsdp-run --save-weights,
/// fsdp-ckpt export --safetensors), so both write the same bytes for the
/// same state: "format": "pt" is what transformers' loaders look for.
inline const std::map<std::string, std::string> kWeightsMetadata = {{"format", "pt"}};

/// Writes `tensors` (names unique, not "__metadata__", valid UTF-8) and
/// `metadata` to `path`. The header lists tensors sorted by name and is
/// space-padded to a multiple of 8 bytes; the data buffer holds them
/// back to back, widest element type first, so every tensor is aligned to
/// its element size without gaps. Atomic: written to `path`.tmp, fsynced,
/// then renamed over `path`. With `contentHash`, also returns the
/// ContentHasher value of the bytes written (the whole file).
Status writeSafetensors(const std::string &path, const std::vector<NamedTensor> &tensors,
                        const std::map<std::string, std::string> &metadata,
                        uint64_t *contentHash = nullptr);

/// Writes a safetensors file tensor by tensor, for files too large to
/// assemble first: begin() writes the header from `specs`, given in data
/// order, widest element type first (so every tensor lands aligned);
/// add() appends each tensor's bytes in that order; finish() checks every
/// tensor came and commits the file atomically, as writeSafetensors does.
/// Abandoned before finish(), it leaves no file.
class SafetensorsWriter {
public:
  struct Spec {
    std::string name;
    TensorRef type; // dtype and shape; data unused
  };
  Status begin(const std::string &path, const std::vector<Spec> &specs,
               const std::map<std::string, std::string> &metadata);
  Status add(const void *data, size_t bytes);
  /// With `contentHash`, also returns the ContentHasher value of the file.
  Status finish(uint64_t *contentHash = nullptr);
  /// The bytes written so far (the whole file once finished).
  uint64_t bytesWritten() const { return written_; }

private:
  Status put(const void *data, size_t bytes);
  std::string path_;
  AtomicFileWriter file_;
  ContentHasher hasher_;
  std::vector<uint64_t> sizes_;
  size_t next_ = 0;
  uint64_t written_ = 0;
};

namespace detail {
class InputFile;
}

/// A safetensors file's header, validated as SafetensorsFile validates it,
/// with tensor bytes read on demand: what reads a few tensors, or parts of
/// them, from files too large to hold (resharding a checkpoint). It does
/// not hash the file; check it whole first (hashFile) when that matters.
class SafetensorsIndex {
public:
  struct Info {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t offset = 0, bytes = 0; // in the data buffer
  };
  static Status open(const std::string &path, SafetensorsIndex &out);
  /// The same over a file already open (and verified: hashFile) as `path`.
  static Status open(std::shared_ptr<const detail::InputFile> file, const std::string &path,
                     SafetensorsIndex &out);
  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  /// The tensor called `name`, or nullptr.
  const Info *find(const std::string &name) const;
  /// Reads bytes [byteOffset, byteOffset + bytes) of tensor `name` to `out`.
  Status read(const std::string &name, uint64_t byteOffset, uint64_t bytes, void *out) const;
  const std::map<std::string, Info> &tensors() const { return tensors_; }

private:
  std::string path_;
  std::shared_ptr<const detail::InputFile> file_;
  uint64_t bufferStart_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Info> tensors_;
};

/// A safetensors file read fully into host memory.
class SafetensorsFile {
public:
  /// Reads and validates `path`; `out` is left untouched on error.
  static Status open(const std::string &path, SafetensorsFile &out);
  /// The same from `size` bytes at `data` (a file embedded in a compiled
  /// step binary); `name` stands for the file in messages.
  static Status openMemory(const uint8_t *data, uint64_t size, const std::string &name,
                           SafetensorsFile &out);
  /// The same from a file already open as `path` (a checkpoint's file, read
  /// through the descriptor its size was checked on).
  static Status open(const detail::InputFile &file, const std::string &path,
                     SafetensorsFile &out);

  const std::map<std::string, std::string> &metadata() const { return metadata_; }
  /// Tensor names, sorted.
  std::vector<std::string> names() const;
  /// The tensor called `name`, or nullptr if the file has none.
  const HostTensor *find(const std::string &name) const;
  /// ContentHasher value of the bytes read: size field, header and tensor
  /// data in file order. Equals the whole file's hash when the tensors are
  /// contiguous, as writeSafetensors lays them out.
  uint64_t contentHash() const { return contentHash_; }

private:
  uint64_t contentHash_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, HostTensor> tensors_;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_SAFETENSORS_H
