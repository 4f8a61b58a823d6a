//===- AtomicFile.h - writing a file so readers never see it torn ---------===//
//
// Every file the runtime and its tools write (plans, safetensors, .npy,
// checkpoints, exported ONNX models) is written to a temporary file beside
// it, fsynced and renamed into place: a reader, or a crash, sees the old
// file or the whole new one, never a partial one. Its system calls go
// through FaultInjection.h's wrappers, so tests can fail any of them.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_ATOMICFILE_H
#define FSDP_RUNTIME_IO_ATOMICFILE_H

#include "runtime/io/FaultInjection.h"
#include "runtime/support/Status.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fsdp::rt {

/// What a stat mode is, for messages refusing anything but a regular file.
inline const char *fileKind(mode_t mode) {
  return S_ISDIR(mode)    ? "a directory"
         : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode)  ? "a character device"
         : S_ISBLK(mode)  ? "a block device"
         : S_ISSOCK(mode) ? "a socket"
         : S_ISLNK(mode)  ? "a symbolic link"
                          : "a regular file";
}

struct ByteSpan {
  const void *data;
  size_t size;
};

/// A file written piece by piece to `path`.tmp and renamed over `path` by
/// commit(), after an fsync; destroyed uncommitted (an error, or a writer
/// that gave up), it removes the temporary file. For files too large to
/// assemble in memory first (a full checkpoint written unit by unit).
class AtomicFileWriter {
public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter &) = delete;
  AtomicFileWriter &operator=(const AtomicFileWriter &) = delete;
  ~AtomicFileWriter() { discard(); }

  /// Refuses to replace anything but a regular file (or a symbolic link,
  /// which the rename replaces without touching its target): renaming over
  /// a device node or FIFO would destroy it, and neither can take a file.
  /// The temporary name is unlinked and created afresh with O_EXCL |
  /// O_NOFOLLOW, so a symlink, hard link or FIFO left (or planted) there is
  /// never written through, truncated or waited on.
  Status open(const std::string &path) {
    discard();
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      return Status::error("'" + path + "' is " + fileKind(st.st_mode) +
                           ", not a regular file; refusing to replace it");
    path_ = path;
    const std::string tmp = path + ".tmp";
    ::unlink(tmp.c_str());
    fd_ = sysio::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0)
      return Status::error("cannot create '" + tmp + "': " + std::strerror(errno));
    tmp_ = tmp; // ours now: removed again if the write is abandoned
    return Status::ok();
  }
  Status write(const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size > 0) {
      ssize_t put = sysio::write(fd_, p, size, tmp_.c_str());
      if (put < 0 && errno == EINTR)
        continue;
      if (put <= 0)
        return fail("cannot write");
      p += put;
      size -= static_cast<size_t>(put);
    }
    return Status::ok();
  }
  Status commit() {
    if (sysio::fsync(fd_, tmp_.c_str()) != 0)
      return fail("cannot fsync");
    int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0)
      return fail("cannot close");
    if (sysio::rename(tmp_.c_str(), path_.c_str()) != 0)
      return fail("cannot rename to '" + path_ + "' from");
    tmp_.clear();
    return Status::ok();
  }

private:
  Status fail(const std::string &what) {
    std::string why = what + " '" + tmp_ + "': " + std::strerror(errno);
    discard();
    return Status::error(why);
  }
  void discard() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
    if (!tmp_.empty())
      ::unlink(tmp_.c_str());
    tmp_.clear();
  }

  std::string path_, tmp_;
  int fd_ = -1;
};

/// Writes the pieces to `path`.tmp, fsyncs it and renames it over `path`,
/// so a reader (or a crash) sees the old file or the whole new one, never
/// a torn checkpoint.
inline Status writeFileAtomic(const std::string &path, const std::vector<ByteSpan> &pieces) {
  AtomicFileWriter file;
  FSDP_RETURN_IF_ERROR(file.open(path));
  for (const ByteSpan &piece : pieces)
    FSDP_RETURN_IF_ERROR(file.write(piece.data, piece.size));
  return file.commit();
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_ATOMICFILE_H
