//===- ContentHash.cpp - 64-bit identity of file contents -----------------===//
//
// Whole 8-byte words are mixed as they complete (buffering a partial word
// across update calls), so the result depends only on the byte sequence.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/ContentHash.h"

#include "runtime/io/FileIO.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

namespace fsdp::rt {
namespace {

constexpr uint64_t kPrime = 0x100000001b3ull;

uint64_t mixWord(uint64_t state, const uint8_t *p) {
  uint64_t word;
  std::memcpy(&word, p, 8);
  return (state ^ word) * kPrime;
}

} // namespace

void ContentHasher::update(const void *data, size_t size) {
  const uint8_t *p = static_cast<const uint8_t *>(data);
  length_ += size;
  while (pendingBytes_ > 0 && size > 0) { // complete a word begun earlier
    pending_[pendingBytes_++] = *p++;
    --size;
    if (pendingBytes_ == 8) {
      state_ = mixWord(state_, pending_);
      pendingBytes_ = 0;
    }
  }
  for (; size >= 8; p += 8, size -= 8)
    state_ = mixWord(state_, p);
  if (size == 0)
    return; // p may be null (an empty tensor's data): memcpy must not see it
  std::memcpy(pending_ + pendingBytes_, p, size);
  pendingBytes_ += size;
}

uint64_t ContentHasher::finish() const {
  uint64_t h = state_;
  for (size_t i = 0; i < pendingBytes_; ++i)
    h = (h ^ pending_[i]) * kPrime;
  h = (h ^ length_) * kPrime;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

uint64_t contentHash(const void *data, size_t size) {
  ContentHasher hasher;
  hasher.update(data, size);
  return hasher.finish();
}

Status hashFile(const std::string &path, uint64_t &bytes, uint64_t &hash) {
  detail::InputFile file;
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.open(path)));
  bytes = file.size();
  return hashFile(file, path, hash);
}

Status hashFile(const detail::InputFile &file, const std::string &path, uint64_t &hash) {
  ContentHasher hasher;
  std::vector<char> chunk(std::min<uint64_t>(file.size(), 1 << 20));
  for (uint64_t at = 0; at < file.size(); at += chunk.size()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), file.size() - at));
    FSDP_RETURN_IF_ERROR(detail::withContext(path, file.readAt(at, chunk.data(), n)));
    hasher.update(chunk.data(), n);
  }
  hash = hasher.finish();
  return Status::ok();
}

std::string hashHex(uint64_t hash) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash));
  return buf;
}

} // namespace fsdp::rt
