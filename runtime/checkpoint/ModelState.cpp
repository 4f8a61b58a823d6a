//===- ModelState.cpp - a plan's model state on one rank, in and out ------===//
//
// Everything here reads and writes the executor's buffers through their
// planned views and the device's copies, and moves whole tensors through
// host memory. A sharded parameter is a slice of its unit's flat buffer, of
// which this rank holds one shard: loading copies the slice's part inside
// the shard, and reading a parameter whole all-gathers the unit over its
// group's communicator (the one the executor resolved for that unit at
// creation) into a host copy of the padded flat buffer. Consolidated state
// follows StateLayout's order, the same on every rank, so the ranks'
// gathers pair up.
//
//===----------------------------------------------------------------------===//

#include "runtime/checkpoint/ModelState.h"

#include "runtime/io/Safetensors.h"
#include "runtime/plan/plan_generated.h"

#include <algorithm>

namespace fsdp::rt {

Status ModelState::loadWeights(const std::string &path) {
  const plan::Plan &plan = executor_.plan().plan();
  std::string file = path;
  bool ownWeights = file.empty();
  if (ownWeights) {
    if (!plan.weights_file() || plan.weights_file()->size() == 0) {
      if (plan.parameters() && plan.parameters()->size() > 0)
        return Status::error(executor_.plan().path() +
                             ": plan has parameters but names no weights file");
      return Status::ok();
    }
    file = executor_.plan().directory() + "/" + plan.weights_file()->str();
  }
  SafetensorsFile weights;
  FSDP_RETURN_IF_ERROR(SafetensorsFile::open(file, weights));
  if (ownWeights)
    return loadOwnWeights(weights, file);
  return restoreEntries([&](const std::string &n) { return weights.find(n); }, file,
                        /*parametersOnly=*/true);
}

Status ModelState::loadOwnWeights(const SafetensorsFile &weights, const std::string &name) {
  if (weights.contentHash() != executor_.plan().plan().weights_hash())
    return Status::error(name + ": weights file does not match the plan (content hash differs; "
                                "recompile or pass --weights)");
  return restoreEntries([&](const std::string &n) { return weights.find(n); }, name,
                        /*parametersOnly=*/true);
}

Status ModelState::getParameter(const std::string &name, HostTensor &out) const {
  uint32_t index;
  FSDP_RETURN_IF_ERROR(parameterIndex(name, index));
  std::vector<HostTensor> values;
  // The layout lists the parameters first, in plan order.
  FSDP_RETURN_IF_ERROR(gatherParameters({consolidatedLayout(plan())[index]}, true, values));
  out = std::move(values[0]);
  return Status::ok();
}

Status ModelState::saveWeights(const std::string &path) const {
  std::vector<StateEntry> params = consolidatedLayout(plan());
  params.erase(
      std::find_if(params.begin(), params.end(), [](const StateEntry &e) { return !e.parameter; }),
      params.end());
  params = writeOrder(std::move(params)); // each unit gathered once
  const bool keep = executor_.rank() == 0;
  std::vector<HostTensor> values;
  FSDP_RETURN_IF_ERROR(gatherParameters(params, keep, values));
  if (!keep)
    return Status::ok();
  std::vector<NamedTensor> tensors;
  for (size_t i = 0; i < params.size(); ++i)
    tensors.push_back({params[i].name, values[i].ref()});
  return writeSafetensors(path, tensors, kWeightsMetadata);
}

Status ModelState::readState(std::vector<std::pair<std::string, HostTensor>> &out) const {
  out.clear();
  for (const auto &[name, buffer] : stateBuffers(plan())) {
    out.emplace_back(name, HostTensor());
    FSDP_RETURN_IF_ERROR(executor_.copyToHost(buffer, out.back().second));
  }
  return Status::ok();
}

Status ModelState::writeState(const TensorLookup &lookup, const std::string &what) {
  for (const auto &[name, buffer] : stateBuffers(plan())) {
    const HostTensor *value;
    FSDP_RETURN_IF_ERROR(findTyped(lookup, name, executor_.viewOf(buffer), what, value));
    FSDP_RETURN_IF_ERROR(copyWhole(*value, buffer));
  }
  return Status::ok();
}

Status ModelState::visitFullState(const std::vector<StateEntry> &order, bool keep,
                                  const FullStateVisitor &visit) const {
  // Every rank gathers each flat buffer once (consecutive entries of one
  // buffer share it) in `order`, the same on every rank; a keeping rank
  // hands out views of the gathered bytes, no copies. After a visit fails,
  // the gathers still run to the end, so no rank is left waiting.
  HostTensor flat, shard, whole; // reused: fresh gigabytes would be zeroed and faulted in
  uint32_t gathered = kNoBuffer;
  Status visited = Status::ok();
  for (const StateEntry &e : order) {
    TensorRef view = e.type;
    if (e.slice) {
      if (e.buffer != gathered)
        FSDP_RETURN_IF_ERROR(gatherUnit(e.slice->unit(), flat, e.buffer, &shard));
      gathered = e.buffer;
      view.data = flat.data.data() + e.slice->flat_offset() * dtypeSize(e.type.dtype);
    } else if (keep) {
      FSDP_RETURN_IF_ERROR(executor_.copyToHost(e.buffer, whole));
      view.data = whole.data.data();
    }
    if (keep && visited)
      visited = visit(e, view);
  }
  return visited;
}

Status ModelState::writeFullState(const TensorLookup &lookup, const std::string &what) {
  return restoreEntries(lookup, what, /*parametersOnly=*/false);
}

Status ModelState::gatherUnit(uint32_t unit, HostTensor &flat, uint32_t buffer,
                              HostTensor *scratch) const {
  const plan::Unit *u = plan().units()->Get(unit);
  const uint32_t source = buffer == kNoBuffer ? u->shard_buffer() : buffer;
  if (!executor_.unitComm(unit)) // a group of one holds the whole flat buffer
    return executor_.copyToHost(source, flat);
  HostTensor local;
  HostTensor &shard = scratch ? *scratch : local;
  FSDP_RETURN_IF_ERROR(executor_.copyToHost(source, shard));
  flat.dtype = shard.dtype;
  flat.shape = {static_cast<int64_t>(u->padded_numel())};
  flat.data.resize(u->padded_numel() * dtypeSize(shard.dtype));
  return executor_.unitComm(unit)->allGather(shard.ref(), flat.ref());
}

Status ModelState::gatherParameters(const std::vector<StateEntry> &entries, bool keep,
                                    std::vector<HostTensor> &values) const {
  values.assign(keep ? entries.size() : 0, HostTensor());
  size_t next = 0;
  return visitFullState(entries, keep, [&](const StateEntry &, const TensorRef &view) {
    HostTensor &out = values[next++];
    out.dtype = view.dtype;
    out.shape.assign(view.dims, view.dims + view.rank);
    const char *bytes = static_cast<const char *>(view.data);
    out.data.assign(bytes, bytes + view.byteSize());
    return Status::ok();
  });
}

Status ModelState::copyIntoShard(const plan::Parameter &param, const HostTensor &source,
                                 uint32_t shardBuffer) {
  // This rank holds flat elements [first, first + shard_numel) of the
  // unit; copy the part of the parameter-shaped value inside them.
  const plan::Unit *unit = plan().units()->Get(param.unit());
  uint64_t shardNumel = unit->shard_numel();
  uint64_t first = static_cast<uint64_t>(executor_.rank() % unit->group_size()) * shardNumel;
  uint64_t begin = std::max<uint64_t>(param.flat_offset(), first);
  uint64_t end = std::min<uint64_t>(param.flat_offset() + source.numElements(), first + shardNumel);
  if (begin >= end)
    return Status::ok();
  size_t elementSize = dtypeSize(source.dtype);
  char *shard = static_cast<char *>(executor_.viewOf(shardBuffer).data);
  const char *from = source.data.data() + (begin - param.flat_offset()) * elementSize;
  return executor_.device().copyToDevice(shard + (begin - first) * elementSize, from,
                                         (end - begin) * elementSize);
}

Status ModelState::restoreEntries(const TensorLookup &lookup, const std::string &what,
                                  bool parametersOnly) {
  for (const StateEntry &e : consolidatedLayout(plan())) {
    if (parametersOnly && !e.parameter)
      break; // parameters come first
    const HostTensor *value;
    FSDP_RETURN_IF_ERROR(findTyped(lookup, e.name, e.type, what, value));
    FSDP_RETURN_IF_ERROR(e.slice ? copyIntoShard(*e.slice, *value, e.buffer)
                                 : copyWhole(*value, e.buffer));
  }
  return Status::ok();
}

Status ModelState::findTyped(const TensorLookup &lookup, const std::string &name,
                             const TensorRef &type, const std::string &what,
                             const HostTensor *&out) {
  out = lookup(name);
  if (!out)
    return Status::error(what + ": has no tensor '" + name + "'");
  if (!sameType(out->ref(), type))
    return Status::error(what + ": tensor '" + name + "' is " + shapeText(out->ref()) +
                         ", the plan needs " + shapeText(type));
  return Status::ok();
}

Status ModelState::copyWhole(const HostTensor &value, uint32_t buffer) {
  TensorRef target = executor_.viewOf(buffer);
  return executor_.device().copyToDevice(target.data, value.data.data(), target.byteSize());
}

Status ModelState::parameterIndex(const std::string &name, uint32_t &index) const {
  const auto *params = plan().parameters();
  for (uint32_t i = 0; params && i < params->size(); ++i)
    if (params->Get(i)->name()->str() == name) {
      index = i;
      return Status::ok();
    }
  return Status::error(executor_.plan().path() + ": the plan has no parameter '" + name + "'");
}

} // namespace fsdp::rt
