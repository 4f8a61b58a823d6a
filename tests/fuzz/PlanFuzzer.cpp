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
// are loaded and checked but not allocated.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/DeviceRegistry.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/PlanDump.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "tests/fuzz/FuzzSupport.h"

using namespace fsdp;

namespace {
constexpr uint64_t kMaxAllocatedBytes = 256ull << 20;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rt::LoadedPlan plan;
  if (!rt::loadPlan(fuzz::writeScratchFile("input.fsdp", data, size), plan))
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
