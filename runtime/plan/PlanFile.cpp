//===- PlanFile.cpp - reading and writing plan files ----------------------===//
//
// The header layout (little-endian):
//   0  char[8]  magic "FSDPPLAN"
//   8  u32      format version (kPlanFormatVersion)
//   12 u32      reserved, must be 0
//   16 u64      content hash of the FlatBuffer
//   24 u64      FlatBuffer size in bytes
//   32 ...      the FlatBuffer (root Plan, identifier "FSDP")
// Checks run cheapest first so each failure gets the most specific message.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanFile.h"

#include "runtime/io/FileIO.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/plan/plan_generated.h"

#include <cstdlib>
#include <cstring>

namespace fsdp::rt {
namespace {

constexpr char kMagic[8] = {'F', 'S', 'D', 'P', 'P', 'L', 'A', 'N'};
constexpr size_t kHeaderSize = 32;

void putU32(uint8_t *p, uint32_t v) { std::memcpy(p, &v, 4); }
void putU64(uint8_t *p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t getU32(const uint8_t *p) { uint32_t v; std::memcpy(&v, p, 4); return v; }
uint64_t getU64(const uint8_t *p) { uint64_t v; std::memcpy(&v, p, 8); return v; }


} // namespace

Status writePlanFile(const std::string &path, const uint8_t *flatbuffer, size_t size) {
  uint8_t header[kHeaderSize] = {};
  std::memcpy(header, kMagic, 8);
  putU32(header + 8, kPlanFormatVersion);
  putU64(header + 16, contentHash(flatbuffer, size));
  putU64(header + 24, size);
  return detail::withContext(path, detail::writeFileAtomic(path, {{header, kHeaderSize},
                                                                  {flatbuffer, size}}));
}

std::string LoadedPlan::directory() const {
  size_t slash = path_.find_last_of('/');
  return slash == std::string::npos ? "." : path_.substr(0, slash);
}

bool LoadedPlan::isTraining() const {
  return plan_->mode() && plan_->mode()->string_view() == "train";
}

Status loadPlan(const std::string &path, LoadedPlan &out) {
  detail::InputFile file;
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.open(path)));
  uint8_t header[kHeaderSize];
  if (file.size() < kHeaderSize || !file.readAt(0, header, kHeaderSize).isOk())
    return Status::error(path + ": not a plan file (too short for the header)");
  if (std::memcmp(header, kMagic, 8) != 0 || getU32(header + 12) != 0)
    return Status::error(path + ": not a plan file (bad magic)");
  uint32_t version = getU32(header + 8);
  if (version != kPlanFormatVersion)
    return Status::error(cat(path, ": plan format version ", version, "; this runtime reads version ",
                             kPlanFormatVersion, " (recompile the plan with this fsdp-opt)"));
  uint64_t hash = getU64(header + 16), size = getU64(header + 24);
  if (size != file.size() - kHeaderSize)
    return Status::error(cat(path, ": plan is truncated or has trailing bytes (header says ", size,
                             " bytes, file holds ", file.size() - kHeaderSize, ")"));
  // 64-byte-aligned storage so constant data is aligned for the kernels.
  void *raw = nullptr;
  if (posix_memalign(&raw, kBufferAlignment, size == 0 ? 1 : size) != 0)
    return Status::error(path + ": out of memory reading the plan");
  std::shared_ptr<uint8_t> storage(static_cast<uint8_t *>(raw), [](uint8_t *p) { std::free(p); });
  FSDP_RETURN_IF_ERROR(detail::withContext(path, file.readAt(kHeaderSize, storage.get(), size)));
  return adoptPlanBytes(std::move(storage), size, hash, path, out);
}

Status adoptPlanBytes(std::shared_ptr<uint8_t> storage, size_t size, uint64_t hash,
                      const std::string &name, LoadedPlan &out) {
  if (contentHash(storage.get(), size) != hash)
    return Status::error(name + ": plan is corrupted (content hash mismatch)");
  flatbuffers::Verifier verifier(storage.get(), size);
  if (!plan::VerifyPlanBuffer(verifier))
    return Status::error(name + ": plan structure is invalid (FlatBuffers verification failed)");
  const plan::Plan *root = plan::GetPlan(storage.get());
  FSDP_RETURN_IF_ERROR(checkPlan(*root, name));
  out.storage_ = std::move(storage);
  out.plan_ = root;
  out.hash_ = hash;
  out.size_ = size;
  out.path_ = name;
  return Status::ok();
}

Status loadPlanFromMemory(const uint8_t *bytes, size_t size, uint64_t expectedHash,
                          const std::string &name, LoadedPlan &out) {
  if (!bytes || size == 0)
    return Status::error(name + ": the embedded plan is empty");
  std::shared_ptr<uint8_t> storage;
  if (reinterpret_cast<uintptr_t>(bytes) % kBufferAlignment == 0) {
    // In place: the caller keeps the bytes (a binary's read-only data).
    storage = std::shared_ptr<uint8_t>(const_cast<uint8_t *>(bytes), [](uint8_t *) {});
  } else {
    void *raw = nullptr;
    if (posix_memalign(&raw, kBufferAlignment, size) != 0)
      return Status::error(name + ": out of memory reading the plan");
    storage = std::shared_ptr<uint8_t>(static_cast<uint8_t *>(raw), [](uint8_t *p) { std::free(p); });
    std::memcpy(storage.get(), bytes, size);
  }
  return adoptPlanBytes(std::move(storage), size, expectedHash, name, out);
}

} // namespace fsdp::rt
