//===- EvalPrefixCheck.h - a plan's evaluation prefix is safe to run alone -===//
//
// fsdp-run --eval-data runs a training plan's instructions [0, eval_end)
// between steps and reads this rank's local loss from eval_loss_buffer
// (plan.fbs; compiler/Target/EvalPrefix.h). That is only sound when the
// prefix changes nothing the training keeps: checkEvalPrefix, part of
// checkPlan, proves that every instruction of the prefix writes only
// arena values, a unit's gathered copy (rewritten by its all-gather in
// every step) or an output binding (rewritten by every step), never a
// parameter, a shard, optimizer state, the lr and step scalars or the
// inputs; that every event the prefix waits for is signalled inside it
// (its streams then run to its end without the rest of the program, since
// each stream's earlier instructions are in it too); and that the loss
// buffer is a float scalar the prefix writes.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLAN_EVALPREFIXCHECK_H
#define FSDP_RUNTIME_PLAN_EVALPREFIXCHECK_H

#include "runtime/support/Status.h"

#include <string>

namespace fsdp::plan {
struct Plan;
} // namespace fsdp::plan

namespace fsdp::rt {

Status checkEvalPrefix(const plan::Plan &plan, const std::string &path);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_PLAN_EVALPREFIXCHECK_H
