//===- StateLayout.cpp - where a plan keeps each tensor of the state ------===//
//
// A unit's optimizer state is one flat buffer per kind, bound as
// "<unit>.<suffix>" (exp_avg, exp_avg_sq, momentum_buffer); a parameter
// outside every sharded unit has its own, bound as "<param>.<suffix>".
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/StateLayout.h"

#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <algorithm>
#include <map>
#include <string_view>

namespace fsdp::rt {

TensorRef parameterType(const plan::Parameter &param) {
  TensorRef ref;
  ref.dtype = toDType(param.dtype());
  ref.rank = static_cast<int>(param.shape()->size());
  for (int d = 0; d < ref.rank; ++d)
    ref.dims[d] = param.shape()->Get(d);
  return ref;
}

TensorRef bufferType(const plan::Plan &p, uint32_t index) {
  const plan::Buffer *buffer = p.buffers()->Get(index);
  TensorRef ref;
  ref.dtype = toDType(buffer->dtype());
  ref.rank = static_cast<int>(buffer->shape()->size());
  for (int d = 0; d < ref.rank; ++d)
    ref.dims[d] = buffer->shape()->Get(d);
  return ref;
}

std::vector<std::pair<std::string, uint32_t>> stateBuffers(const plan::Plan &p) {
  std::vector<std::pair<std::string, uint32_t>> out;
  if (p.units())
    for (const plan::Unit *u : *p.units())
      if (u->shard_buffer() != kNoBuffer)
        out.emplace_back("unit/" + u->name()->str(), u->shard_buffer());
  if (p.state())
    for (const plan::Binding *s : *p.state())
      out.emplace_back("state/" + s->name()->str(), s->buffer());
  if (p.parameters())
    for (const plan::Parameter *param : *p.parameters())
      if (param->buffer() != kNoBuffer)
        out.emplace_back("param/" + param->name()->str(), param->buffer());
  return out;
}

std::vector<StateEntry> consolidatedLayout(const plan::Plan &p) {
  std::vector<StateEntry> out;
  std::map<std::string_view, uint32_t> shardedUnits; // name -> index
  if (p.units())
    for (uint32_t u = 0; u < p.units()->size(); ++u)
      if (p.units()->Get(u)->shard_buffer() != kNoBuffer)
        shardedUnits[p.units()->Get(u)->name()->string_view()] = u;
  if (p.parameters())
    for (const plan::Parameter *param : *p.parameters()) {
      StateEntry e;
      e.name = param->name()->str();
      e.parameter = true;
      if (param->buffer() != kNoBuffer) {
        e.stored = "param/" + e.name;
        e.buffer = param->buffer();
      } else {
        const plan::Unit *unit = p.units()->Get(param->unit());
        e.stored = "unit/" + unit->name()->str();
        e.buffer = unit->shard_buffer();
        e.slice = param;
      }
      e.type = e.slice ? parameterType(*e.slice) : bufferType(p, e.buffer);
      out.push_back(std::move(e));
    }
  if (!p.state())
    return out;
  for (const plan::Binding *s : *p.state()) {
    const std::string name = s->name()->str();
    const size_t dot = name.rfind('.');
    auto unit = dot == std::string::npos
                    ? shardedUnits.end()
                    : shardedUnits.find(std::string_view(name).substr(0, dot));
    if (unit == shardedUnits.end()) { // already one parameter's
      out.push_back({name, false, "state/" + name, s->buffer(), nullptr,
                     bufferType(p, s->buffer())});
      continue;
    }
    for (const plan::Parameter *param : *p.parameters())
      if (param->unit() == unit->second)
        out.push_back({param->name()->str() + name.substr(dot), false, "state/" + name,
                       s->buffer(), param, parameterType(*param)});
  }
  return out;
}

std::vector<StateEntry> writeOrder(std::vector<StateEntry> layout) {
  std::stable_sort(layout.begin(), layout.end(), [](const StateEntry &a, const StateEntry &b) {
    const size_t wa = dtypeSize(a.type.dtype), wb = dtypeSize(b.type.dtype);
    return wa != wb ? wa > wb : a.buffer < b.buffer;
  });
  return layout;
}

} // namespace fsdp::rt
