//===- ContentHash.h - 64-bit identity of file contents -------------------===//
//
// The runtime identifies a plan and the weights file it was compiled with by
// a 64-bit hash of their bytes (FNV-1a over 8-byte words, the tail byte by
// byte, the length, then a murmur-style finalizer). ContentHasher takes the
// bytes in pieces, so a writer can hash what it writes and a reader what it
// reads, without a second pass over the file; any split of the same bytes
// gives the same value. Detects corruption; not cryptographic.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_CONTENTHASH_H
#define FSDP_RUNTIME_IO_CONTENTHASH_H

#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace fsdp::rt {
namespace detail {
class InputFile;
}

class ContentHasher {
public:
  void update(const void *data, size_t size);
  /// The hash of every byte passed to update, in order.
  uint64_t finish() const;

private:
  uint64_t state_ = 0xcbf29ce484222325ull;
  uint64_t length_ = 0;
  uint8_t pending_[8] = {};
  size_t pendingBytes_ = 0;
};

/// The hash of one contiguous block.
uint64_t contentHash(const void *data, size_t size);

/// The size and hash of a whole file's bytes (errors name the file).
Status hashFile(const std::string &path, uint64_t &bytes, uint64_t &hash);
/// The hash of an open file's bytes (errors name it `path`): a reader that
/// verifies a file and then reads it keeps the one descriptor it hashed,
/// so the file cannot be replaced between the check and the use.
Status hashFile(const detail::InputFile &file, const std::string &path, uint64_t &hash);

/// A hash as text: 16 lowercase hex digits, as checkpoints record them.
std::string hashHex(uint64_t hash);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_CONTENTHASH_H
