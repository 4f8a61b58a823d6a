//===- PlanFuzzer.cpp - libFuzzer target: plan files -----------------------===//
//
// A plan reaches fsdp-run from the compiler, possibly on another machine:
// loadPlan reads the header (magic, version, size, hash), runs the
// FlatBuffers verifier and then PlanCheck's semantic checks. What passes
// is dumped (--dump) and, for a single-rank plan, set up as fsdp-run sets
// it up: a CPU device and Executor::create, which allocates the plan's
// regions and prepares every launch, without running a step. The memory
// check fsdp-run makes before allocating (checkDeviceMemory) sees no limit
// on the host device, so plans asking for more than the fuzzer's memory
// are loaded and checked but not allocated. The header commits to the
// FlatBuffer's content hash and size, so a mutated plan would only ever
// test that check (the unit tests do): the target writes the body's real
// hash and size into the header (bytes 16-31) and fuzzes the rest, magic
// and version included.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/DeviceRegistry.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/PlanDump.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "tests/fuzz/FuzzSupport.h"

#include <cstring>
#include <vector>

using namespace fsdp;

namespace {
constexpr uint64_t kMaxAllocatedBytes = 256ull << 20;
}

namespace {
constexpr size_t kHeaderSize = 32;

void putU64(uint8_t *at, uint64_t value) { std::memcpy(at, &value, sizeof value); }
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  if (size >= kHeaderSize) {
    putU64(bytes.data() + 16, rt::contentHash(bytes.data() + kHeaderSize, size - kHeaderSize));
    putU64(bytes.data() + 24, size - kHeaderSize);
  }
  rt::LoadedPlan plan;
  if (!rt::loadPlan(fuzz::writeScratchFile("input.fsdp", bytes.data(), bytes.size()), plan))
    return 0;
  (void)rt::dumpPlan(plan);
  const plan::Plan &p = plan.plan();
  const uint64_t constants = p.constant_data() ? p.constant_data()->size() : 0;
  if (p.world_size() != 1 || p.persistent_bytes() > kMaxAllocatedBytes ||
      p.arena_bytes() > kMaxAllocatedBytes || constants > kMaxAllocatedBytes)
    return 0;
  std::unique_ptr<rt::Device> device;
  if (!rt::createDevice("cpu", rt::DeviceOptions(), device))
    return 0;
  std::unique_ptr<rt::Executor> executor;
  (void)rt::Executor::create(plan, *device, nullptr, executor);
  return 0;
}
