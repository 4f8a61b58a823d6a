//===- GeneratedFused.cpp - compiled code for Fused programs, by key ------===//
//
// Lookups run on every Fused launch, on any thread, so they take no lock:
// the registry is an immutable map published through an atomic pointer.
// Registering (rare: once per embedded step at start-up) copies the map,
// adds the entries and publishes the copy under a mutex; earlier maps are
// kept until exit, since a lookup may still be reading one.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/GeneratedFused.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

using FusedMap = std::unordered_map<uint64_t, FsdpFusedFn>;

std::atomic<const FusedMap *> published{nullptr};

/// Which generated variant this CPU runs: x86-64-v4 and v3 are the
/// generated functions' target CPUs.
enum class Variant { None, Avx2, Avx512 };
Variant cpuVariant() {
#if defined(__GNUC__) && defined(__x86_64__)
  static const bool hasV4 = __builtin_cpu_supports("avx512f") &&
                            __builtin_cpu_supports("avx512bw") &&
                            __builtin_cpu_supports("avx512dq") &&
                            __builtin_cpu_supports("avx512vl") &&
                            __builtin_cpu_supports("avx512cd");
  static const bool hasV3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                            __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
                            __builtin_cpu_supports("f16c") && __builtin_cpu_supports("movbe");
  if (hasV4 && hasV3)
    return Variant::Avx512;
  if (hasV3)
    return Variant::Avx2;
#endif
  return Variant::None;
}

/// The variant of `entry` this CPU can run (null when none).
FsdpFusedFn variantFor(const FsdpGeneratedFused &entry) {
  switch (cpuVariant()) {
  case Variant::Avx512: return entry.avx512 ? entry.avx512 : entry.avx2;
  case Variant::Avx2: return entry.avx2;
  case Variant::None: break;
  }
  return nullptr;
}

/// Publishes a copy of the current map that `change` edited.
template <typename Change> void publish(const Change &change) {
  static std::mutex mutex;
  static std::vector<std::unique_ptr<FusedMap>> kept;
  std::lock_guard<std::mutex> lock(mutex);
  const FusedMap *current = published.load(std::memory_order_acquire);
  auto next = std::make_unique<FusedMap>(current ? *current : FusedMap());
  change(*next);
  published.store(next.get(), std::memory_order_release);
  kept.push_back(std::move(next));
}

} // namespace

void registerGeneratedFused(const FsdpGeneratedFused *table, uint32_t n) {
  publish([&](FusedMap &map) {
    for (uint32_t i = 0; i < n; ++i)
      if (FsdpFusedFn fn = variantFor(table[i]))
        map[table[i].key] = fn;
  });
}

void unregisterGeneratedFused(const FsdpGeneratedFused *table, uint32_t n) {
  publish([&](FusedMap &map) {
    for (uint32_t i = 0; i < n; ++i)
      map.erase(table[i].key);
  });
}

bool hasGeneratedFused() {
  const FusedMap *map = published.load(std::memory_order_acquire);
  return map && !map->empty();
}

FsdpFusedFn lookupGeneratedFused(uint64_t key) {
  const FusedMap *map = published.load(std::memory_order_acquire);
  if (!map)
    return nullptr;
  auto found = map->find(key);
  return found == map->end() ? nullptr : found->second;
}

const char *generatedFusedVariant() {
  switch (cpuVariant()) {
  case Variant::Avx512: return "AVX-512 (x86-64-v4)";
  case Variant::Avx2: return "AVX2 (x86-64-v3)";
  case Variant::None: break;
  }
  return "none: this CPU lacks x86-64-v3, so the interpreter runs";
}

} // namespace fsdp::rt::cpu
