//===- AtomicFile.h - writing a file so readers never see it torn ---------===//
//
// Every file the runtime and its tools write (plans, safetensors, .npy,
// checkpoints, exported ONNX models) is written to a temporary file beside
// it, fsynced and renamed into place: a reader, or a crash, sees the old
// file or the whole new one, never a partial one.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_ATOMICFILE_H
#define FSDP_RUNTIME_ATOMICFILE_H

#include "fsdp/runtime/Status.h"

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace fsdp::rt {

struct ByteSpan {
  const void *data;
  size_t size;
};

/// Writes the pieces to `path`.tmp, fsyncs it and renames it over `path`,
/// so a reader (or a crash) sees the old file or the whole new one, never
/// a torn checkpoint.
inline Status writeFileAtomic(const std::string &path, const std::vector<ByteSpan> &pieces) {
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::error("cannot create '" + tmp + "': " + std::strerror(errno));
  auto fail = [&](const std::string &what) {
    std::string why = what + " '" + tmp + "': " + std::strerror(errno);
    if (fd >= 0)
      ::close(fd);
    ::unlink(tmp.c_str());
    return Status::error(why);
  };
  for (const ByteSpan &piece : pieces) {
    const char *p = static_cast<const char *>(piece.data);
    size_t left = piece.size;
    while (left > 0) {
      ssize_t put = ::write(fd, p, left);
      if (put < 0 && errno == EINTR)
        continue;
      if (put <= 0)
        return fail("cannot write");
      p += put;
      left -= static_cast<size_t>(put);
    }
  }
  if (::fsync(fd) != 0)
    return fail("cannot fsync");
  int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail("cannot close");
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail("cannot rename to '" + path + "' from");
  return Status::ok();
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_ATOMICFILE_H
