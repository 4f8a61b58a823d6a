//===- FileIO.h - reading untrusted files and writing atomically ----------===//
//
// Private to the runtime: what every file format here (plans, .npy,
// safetensors) needs and must agree on: one dtype name table, one
// shape/size check, one way to read a file without trusting it (every
// length checked against the file size before anything is allocated) and
// one atomic write (temporary file, fsync, rename). The formats are
// little-endian and so is every host this runtime targets, so tensor bytes
// move to and from files unswapped.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_FILEIO_H
#define FSDP_RUNTIME_IO_FILEIO_H

#include "runtime/io/AtomicFile.h"
#include "runtime/support/DType.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the tensor file formats copy bytes unswapped: a little-endian host is required"
#endif

namespace fsdp::rt {
namespace detail {

/// The one dtype table of the file formats. `numpyCode` is the descr
/// without its byte-order character (the writer picks '|' for one-byte
/// types and '<' otherwise); bf16 has no NumPy dtype, hence nullptr.
struct DTypeFileNames {
  DType dtype;
  const char *safetensors;
  const char *numpyCode;
};
inline constexpr DTypeFileNames kDTypeFileNames[kNumDTypes] = {
    {DType::F32, "F32", "f4"},  {DType::F64, "F64", "f8"},
    {DType::F16, "F16", "f2"},  {DType::BF16, "BF16", nullptr},
    {DType::I8, "I8", "i1"},    {DType::I16, "I16", "i2"},
    {DType::I32, "I32", "i4"},  {DType::I64, "I64", "i8"},
    {DType::U8, "U8", "u1"},    {DType::U16, "U16", "u2"},
    {DType::U32, "U32", "u4"},  {DType::U64, "U64", "u8"},
    {DType::Bool, "BOOL", "b1"},
};

inline bool isValidDType(DType t) { return static_cast<int>(t) < kNumDTypes; }
inline const DTypeFileNames &fileNames(DType t) {
  return kDTypeFileNames[static_cast<int>(t)];
}

/// Prefixes an error with where it happened ("npy file 'x.npy'").
inline Status withContext(const std::string &context, const Status &s) {
  return s.isOk() ? s : Status::error(context + ": " + s.message());
}

inline std::string shapeString(const int64_t *dims, size_t rank) {
  std::string out = "[";
  for (size_t i = 0; i < rank; ++i)
    out += (i ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

/// Byte size of a dense tensor, refusing ranks above kMaxRank, negative
/// dims and products that overflow: sizes come from untrusted headers and
/// are compared with the file before anything is allocated.
inline Status checkedByteSize(DType dtype, const int64_t *dims, size_t rank,
                              uint64_t &bytes) {
  if (!isValidDType(dtype))
    return Status::error(cat("invalid dtype ", static_cast<int>(dtype)));
  if (rank > static_cast<size_t>(kMaxRank))
    return Status::error(cat("rank ", rank, " exceeds the maximum of ", kMaxRank));
  int64_t n = static_cast<int64_t>(dtypeSize(dtype));
  for (size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0)
      return Status::error(cat("negative dimension ", dims[i], " in shape ",
                               shapeString(dims, rank)));
    if (__builtin_mul_overflow(n, dims[i], &n))
      return Status::error("shape " + shapeString(dims, rank) + " overflows 64-bit sizes");
  }
  bytes = static_cast<uint64_t>(n);
  return Status::ok();
}

/// Checks a caller's tensor before it is written out.
inline Status checkTensorRef(const TensorRef &t, uint64_t &bytes) {
  if (t.rank < 0)
    return Status::error(cat("negative rank ", t.rank));
  FSDP_RETURN_IF_ERROR(checkedByteSize(t.dtype, t.dims, t.rank, bytes));
  if (bytes > 0 && !t.data)
    return Status::error("tensor data pointer is null");
  return Status::ok();
}

inline std::string errnoText() { return std::strerror(errno); }

/// A read-only file whose size is known up front, so readers can check
/// every length a header claims against it before allocating. It can also
/// stand for bytes already in memory (openMemory: a file embedded in a
/// compiled step binary), so one reader validates both alike.
class InputFile {
public:
  InputFile() = default;
  InputFile(const InputFile &) = delete;
  InputFile &operator=(const InputFile &) = delete;
  ~InputFile() {
    if (fd_ >= 0)
      ::close(fd_);
  }

  /// Opens `path` once and checks what was opened (fstat on the
  /// descriptor, not the name, so nothing swapped in afterwards is read).
  /// O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever;
  /// it changes nothing for the regular files that are then accepted.
  Status open(const std::string &path) {
    path_ = path;
    fd_ = sysio::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0)
      return Status::error("cannot open: " + errnoText());
    struct stat st;
    if (::fstat(fd_, &st) != 0)
      return Status::error("cannot stat: " + errnoText());
    if (!S_ISREG(st.st_mode))
      return Status::error(std::string("not a regular file (") + fileKind(st.st_mode) + ")");
    size_ = static_cast<uint64_t>(st.st_size);
    return Status::ok();
  }
  /// `size` bytes at `data`, which must outlive this object.
  void openMemory(const uint8_t *data, uint64_t size) {
    memory_ = data;
    size_ = size;
  }
  uint64_t size() const { return size_; }

  /// Reads exactly `n` bytes at `offset`; a short file is an error.
  Status readAt(uint64_t offset, void *buffer, size_t n) const {
    if (offset > size_ || n > size_ - offset)
      return Status::error(cat("truncated: need ", n, " bytes at offset ", offset,
                               " but the file has ", size_));
    if (memory_) {
      if (n > 0)
        std::memcpy(buffer, memory_ + offset, n);
      return Status::ok();
    }
    char *out = static_cast<char *>(buffer);
    while (n > 0) {
      ssize_t got = sysio::pread(fd_, out, n, static_cast<off_t>(offset), path_.c_str());
      if (got < 0 && errno == EINTR)
        continue;
      if (got <= 0)
        return Status::error(got < 0 ? "read failed: " + errnoText()
                                     : std::string("file shrank while reading"));
      out += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<size_t>(got);
    }
    return Status::ok();
  }

private:
  std::string path_; // for the fault-injection trace (FaultInjection.h)
  int fd_ = -1;
  const uint8_t *memory_ = nullptr;
  uint64_t size_ = 0;
};

// The atomic write is public (runtime/io/AtomicFile.h): tools write
// their outputs (fsdp-ckpt export's ONNX model) the same way.
using ::fsdp::rt::ByteSpan;
using ::fsdp::rt::writeFileAtomic;

} // namespace detail
} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_FILEIO_H
