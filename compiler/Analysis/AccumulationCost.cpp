//===- AccumulationCost.cpp - what each gradient-accumulation choice costs ===//
//
// The unit's flat gradient is padded_numel elements; its reduction is the
// shard stage's (a reduce-scatter inside the shard group, plus hybrid's
// all-reduce of the shard across replicas; an all-reduce of the whole
// buffer under --shard=none), in the reduce dtype. `each` runs it K times
// and sums K reduced results (K - 1 adds of the reduced size); `last` runs
// it once and sums K flat gradients (K - 1 adds of the padded size). The
// accumulator each holds across micro-batches is one reduced result
// (a shard; the whole buffer under none, where each saves no memory) or
// one flat gradient, in the unit's dtype.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/AccumulationCost.h"

namespace fsdp {
namespace {

uint64_t dtypeBytes(const std::string &dtype) {
  return dtype == "bf16" || dtype == "f16" ? 2 : dtype == "f64" ? 8 : 4;
}

} // namespace

std::vector<UnitAccumulation>
accumulationCosts(const MemoryReport &report, uint32_t microBatches,
                  const std::map<std::string, std::string> &chosen,
                  const DeviceProfile &device) {
  std::vector<UnitAccumulation> result;
  const bool none = report.strategy == "none" || report.strategy == "unsharded";
  const double k = microBatches;
  for (const UnitMemory &u : report.units) {
    UnitAccumulation a;
    a.name = u.name;
    if (auto it = chosen.find(u.name); it != chosen.end())
      a.chosen = it->second;
    const uint64_t element = dtypeBytes(u.dtype), reduceElement = dtypeBytes(report.reduceDtype);
    const uint64_t flatBytes = u.paddedNumel * element;
    const uint64_t reducedNumel = none ? u.paddedNumel : u.shardNumel;
    // One reduction of the unit's gradient, as the shard stage builds it.
    double reduce;
    if (none) {
      reduce = collectiveSeconds(u.paddedNumel * reduceElement, report.worldSize, true, device);
    } else {
      reduce = collectiveSeconds(u.paddedNumel * reduceElement, u.groupSize, false, device);
      uint32_t replicas = report.worldSize / std::max<uint32_t>(u.groupSize, 1);
      if (replicas > 1)
        reduce += collectiveSeconds(u.shardNumel * reduceElement, replicas, true, device);
    }
    // An add reads two operands and writes one.
    auto adds = [&](uint64_t numel) {
      return (k - 1) * computeKernelCost(0, 3 * numel * element, false, device).seconds;
    };
    a.eachBytes = reducedNumel * element;
    a.eachSeconds = k * reduce + adds(reducedNumel);
    a.lastBytes = flatBytes;
    a.lastSeconds = reduce + adds(u.paddedNumel);
    result.push_back(std::move(a));
  }
  return result;
}

} // namespace fsdp
