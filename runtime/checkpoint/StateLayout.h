//===- StateLayout.h - where a plan keeps each tensor of the state --------===//
//
// A training step hands the next its state: unit shards, optimizer state
// and parameters held whole, one buffer each, named as a sharded
// checkpoint names them (stateBuffers: "unit/U", "state/S",
// "param/P"). The same state consolidated (a full checkpoint) names every
// parameter whole and its optimizer state "<param>.<suffix>".
// consolidatedLayout maps one onto the other from the plan's tables alone:
// for each consolidated tensor, the buffer holding it and whether it is
// whole there or a slice of a unit's flat buffer at the parameter's
// flat_offset, split over the unit's group (rank r holds flat elements
// [s * shard_numel, (s + 1) * shard_numel), s = r % group_size).
// ModelState gathers and scatters by it, and a sharded checkpoint is read
// by it straight from its files, so both agree by construction.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_STATELAYOUT_H
#define FSDP_RUNTIME_CHECKPOINT_STATELAYOUT_H

#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::plan {
struct Plan;
struct Parameter;
} // namespace fsdp::plan

namespace fsdp::rt {

/// A parameter's declared dtype and shape, and a plan buffer's (no data).
TensorRef parameterType(const plan::Parameter &param);
TensorRef bufferType(const plan::Plan &p, uint32_t buffer);

/// What a step carries to the next: (name, buffer) in plan order.
std::vector<std::pair<std::string, uint32_t>> stateBuffers(const plan::Plan &p);

/// One tensor of the consolidated state.
struct StateEntry {
  std::string name;     // "<param>" or "<param>.<suffix>" (or a state name)
  bool parameter = false;
  std::string stored;   // the stateBuffers name of the buffer holding it
  uint32_t buffer = 0;  // that buffer
  /// Set when the tensor is a slice of unit param->unit()'s flat buffer
  /// (parameter-shaped, at param->flat_offset()); null when the buffer
  /// holds it whole.
  const plan::Parameter *slice = nullptr;
  TensorRef type; // its dtype and shape (no data)
};

/// Parameters in plan order, then each state buffer's tensors (a unit's
/// state: its parameters' slices in plan order).
std::vector<StateEntry> consolidatedLayout(const plan::Plan &p);

/// The layout in the order a full checkpoint's data is written: widest
/// element type first (SafetensorsWriter's alignment rule), then buffer by
/// buffer, so each unit's flat buffer is gathered once.
std::vector<StateEntry> writeOrder(std::vector<StateEntry> layout);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_STATELAYOUT_H
