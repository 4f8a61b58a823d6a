//===- PlanFile.h - reading and writing plan files ------------------------===//
//
// A plan file is a 32-byte header followed by the FlatBuffer of
// runtime/plan/plan.fbs. The header carries a magic ("FSDPPLAN"), the
// format version and a 64-bit content hash of the FlatBuffer, so a file
// that is truncated, corrupted, from another version or not a plan at all
// is refused with a clear message before any field is read. Loading then
// runs the FlatBuffers verifier (every offset in bounds) and the semantic
// checks of PlanCheck (every buffer inside its region, every operand index
// valid, every kernel with the operand and attribute counts it needs).
// The compiler writes plans through writePlanFile; the runtime reads them
// through loadPlan. The content hash is also the plan's identity across
// ranks.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_PLANFILE_H
#define FSDP_RUNTIME_PLAN_PLANFILE_H

#include "runtime/io/ContentHash.h"
#include "runtime/support/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace fsdp::plan {
struct Plan;
struct Parameter;
} // namespace fsdp::plan

namespace fsdp::rt {

/// Bumped whenever plan.fbs changes incompatibly.
inline constexpr uint32_t kPlanFormatVersion = 4;
/// The buffer index of an absent optional operand.
inline constexpr uint32_t kNoBuffer = 0xFFFFFFFFu;
/// Every buffer offset and region size is a multiple of this.
inline constexpr uint64_t kBufferAlignment = 64;

/// Writes header + `flatbuffer` to `path` atomically (temporary file, fsync,
/// rename), so a crash never leaves a half-written plan under the name.
Status writePlanFile(const std::string &path, const uint8_t *flatbuffer, size_t size);

/// A verified plan in memory. The FlatBuffer lives in 64-byte-aligned
/// storage so constant data can be read in place.
class LoadedPlan {
public:
  const plan::Plan &plan() const { return *plan_; }
  uint64_t hash() const { return hash_; }
  const std::string &path() const { return path_; }
  /// Directory of the plan file (where its weights file lives).
  std::string directory() const;
  /// Whether the plan is a training step (mode "train").
  bool isTraining() const;
  /// The verified FlatBuffer, for writing the plan out again (a sharded
  /// checkpoint carries the plan that lays out its shards).
  const uint8_t *flatbuffer() const { return storage_.get(); }
  size_t flatbufferSize() const { return size_; }

private:
  friend Status adoptPlanBytes(std::shared_ptr<uint8_t> storage, size_t size, uint64_t hash,
                               const std::string &name, LoadedPlan &out);
  std::shared_ptr<uint8_t> storage_;
  const plan::Plan *plan_ = nullptr;
  uint64_t hash_ = 0;
  size_t size_ = 0;
  std::string path_;
};

/// Reads and verifies a plan file (header, hash, FlatBuffer, semantics).
Status loadPlan(const std::string &path, LoadedPlan &out);

/// Verifies a plan's FlatBuffer already in memory (a compiled step binary
/// embeds the bytes a plan file holds after its header) as loadPlan does:
/// its content hash must be `expectedHash` (what the file's header would
/// carry, so the plan's identity, and its checkpoints, are the same either
/// way), then the verifier and PlanCheck. `name` stands for the file in
/// messages and path(); directory() is its directory. The bytes are used
/// in place when 64-byte aligned (they must then outlive `out`), else
/// copied.
Status loadPlanFromMemory(const uint8_t *bytes, size_t size, uint64_t expectedHash,
                          const std::string &name, LoadedPlan &out);

/// The shared last half of both loaders: checks `storage`'s hash, structure
/// and semantics and makes it `out`'s plan.
Status adoptPlanBytes(std::shared_ptr<uint8_t> storage, size_t size, uint64_t hash,
                      const std::string &name, LoadedPlan &out);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_PLANFILE_H
