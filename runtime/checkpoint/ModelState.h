//===- ModelState.h - a plan's model state on one rank, in and out --------===//
//
// The state of a plan's model on one rank is what its executor's memory
// holds between steps: every parameter (whole, or as this rank's shard of
// its unit's flat buffer), the optimizer state laid out alike, and the
// parameters held whole (frozen ones, or all of an unsharded plan).
// ModelState moves that state in and out of an executor's buffers: it
// loads weights files, reads and writes the per-rank state a sharded
// checkpoint stores, and gathers or scatters the consolidated state, every
// parameter whole as torch names it, that weights files and full
// checkpoints hold. The executor only runs steps; this is the one place
// that knows how a rank's buffers map onto the model's tensors
// (StateLayout.h) and how shards are gathered over the units' groups.
//
// Sharded plans make some of these calls collective: the all-gathers of
// getParameter, saveWeights and visitFullState run over the communicator
// of each unit's group (Executor::unitComm), in the plan's order, so every
// rank of the world must make the same calls in the same order. None of
// them may overlap Executor::run() on the same executor: they use the
// communicators its steps use.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_CHECKPOINT_MODELSTATE_H
#define FSDP_RUNTIME_CHECKPOINT_MODELSTATE_H

#include "runtime/checkpoint/StateLayout.h"
#include "runtime/exec/Executor.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/HostTensor.h"
#include "runtime/support/Status.h"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::plan {
struct Parameter;
struct Plan;
} // namespace fsdp::plan

namespace fsdp::rt {

class SafetensorsFile;

/// Named tensors to restore from (a safetensors file's find).
using TensorLookup = std::function<const HostTensor *(const std::string &)>;

/// One rank's model state, over that rank's executor (which must outlive
/// it). Cheap to make: it holds nothing but the executor.
class ModelState {
public:
  explicit ModelState(Executor &executor) : executor_(executor) {}

  /// Loads every parameter from a safetensors file: `path`, or the plan's
  /// own weights file when empty (whose content hash must match the plan).
  /// The file holds full parameters; a sharded one fills only this rank's
  /// elements of its unit's shard.
  Status loadWeights(const std::string &path = "");
  /// Loads the plan's own weights, already read (from `name`: a file, or
  /// the bytes a compiled step binary embeds), whose content hash must
  /// match the plan's.
  Status loadOwnWeights(const SafetensorsFile &weights, const std::string &name);
  /// Copies the named parameter's full value (plan dtype and shape).
  /// Collective when the parameter is sharded: every rank of its unit's
  /// group must call it (fsdp-run calls it on every rank).
  Status getParameter(const std::string &name, HostTensor &out) const;
  /// Writes every parameter, full and named as in the plan's parameter
  /// table, to a safetensors file (torch's loader reads it). Collective on
  /// sharded plans: every rank calls it, rank 0 writes the file, the others
  /// only contribute their shards and return OK.
  Status saveWeights(const std::string &path) const;

  /// The values one step hands the next on this rank, by name: unit shards
  /// ("unit/NAME"), optimizer state ("state/NAME") and parameters held
  /// whole ("param/NAME": frozen ones, or all of an unsharded plan). A
  /// sharded checkpoint is exactly these (runtime/checkpoint/Checkpoint.cpp).
  Status readState(std::vector<std::pair<std::string, HostTensor>> &out) const;
  /// Restores them: `lookup(name)` gives each value, which must have the
  /// buffer's dtype and shape; `what` names the source in errors.
  Status writeState(const TensorLookup &lookup, const std::string &what);

  /// The same state consolidated, as torch names it (every parameter whole
  /// under its model name, its optimizer state as "<name>.exp_avg",
  /// "<name>.exp_avg_sq" or "<name>.momentum_buffer"), one tensor at a
  /// time: `visit` gets each entry of `order` (StateLayout.h) with a view of
  /// its bytes, valid during the call. Collective on sharded plans (units
  /// are gathered); a rank with `keep` false only contributes its shards.
  using FullStateVisitor = std::function<Status(const StateEntry &, const TensorRef &)>;
  Status visitFullState(const std::vector<StateEntry> &order, bool keep,
                        const FullStateVisitor &visit) const;
  /// Restores consolidated state into this plan's layout (any world size or
  /// strategy of the same model and optimizer): this rank keeps its part.
  Status writeFullState(const TensorLookup &lookup, const std::string &what);

private:
  /// All-gathers a unit's flat buffer (its shard buffer, or `buffer`: one
  /// of its optimizer state shards, laid out alike) into `flat`, padded.
  /// `flat` and `scratch` (the host copy of this rank's shard) keep their
  /// storage across calls.
  Status gatherUnit(uint32_t unit, HostTensor &flat, uint32_t buffer = kNoBuffer,
                    HostTensor *scratch = nullptr) const;
  /// The values of `entries` (visitFullState), copied out in their order.
  /// Collective; a rank with `keep` false only contributes (values empty).
  Status gatherParameters(const std::vector<StateEntry> &entries, bool keep,
                          std::vector<HostTensor> &values) const;
  /// Copies the part of a parameter-shaped `source` that falls in this
  /// rank's shard of the parameter's unit into `shardBuffer`.
  Status copyIntoShard(const plan::Parameter &param, const HostTensor &source,
                       uint32_t shardBuffer);
  /// Restores consolidated tensors (StateLayout) from `lookup`: every
  /// parameter, and with `parametersOnly` false the optimizer state too.
  Status restoreEntries(const TensorLookup &lookup, const std::string &what,
                        bool parametersOnly);
  /// `lookup(name)` when it has `type`'s dtype and shape; otherwise an
  /// error naming `what`, the tensor and what is wrong.
  static Status findTyped(const TensorLookup &lookup, const std::string &name,
                          const TensorRef &type, const std::string &what, const HostTensor *&out);
  /// Copies `value` over the whole of `buffer`.
  Status copyWhole(const HostTensor &value, uint32_t buffer);
  Status parameterIndex(const std::string &name, uint32_t &index) const;
  const plan::Plan &plan() const { return executor_.plan().plan(); }

  Executor &executor_;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_CHECKPOINT_MODELSTATE_H
