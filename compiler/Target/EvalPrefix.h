//===- EvalPrefix.h - the part of a training step an evaluation runs ------===//
//
// fsdp-run --eval-data evaluates the model with the training plan itself:
// it runs the step's instructions up to the one computing this rank's
// local mean loss (the op BuildTrainStep marks with fsdp.eval_loss) and
// reads that loss, so evaluation shares the parameter shards, the gathers
// and the memory plan of the step, with no second copy of anything. What
// the plan records (plan.fbs Plan.eval_end and eval_loss_buffer) is the
// shortest prefix of the instruction stream that computes the loss: one
// past the largest index the loss instruction transitively depends on,
// through the buffers it reads (their latest earlier writer) and the
// events it waits for (their latest earlier signaller, or any signaller).
// In a plan whose order is a valid schedule that is the loss instruction
// plus one; computing it from the dependencies keeps the emitter honest if
// a schedule ever moves a producer past its reader across streams.
// runtime/plan/PlanCheck.cpp proves the prefix safe to run alone.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TARGET_EVALPREFIX_H
#define FSDP_COMPILER_TARGET_EVALPREFIX_H

#include "compiler/Target/PlanDescription.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fsdp {

/// One past the largest instruction index that instruction `lossInstruction`
/// of `instructions` transitively depends on (itself included).
uint32_t evalPrefixEnd(const std::vector<InstructionDesc> &instructions, size_t lossInstruction);

} // namespace fsdp

#endif // FSDP_COMPILER_TARGET_EVALPREFIX_H
