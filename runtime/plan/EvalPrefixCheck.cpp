//===- EvalPrefixCheck.cpp - a plan's evaluation prefix is safe to run alone ===//
//
// The rules are in EvalPrefixCheck.h. Buffers are told apart by index, not
// by bytes: arena buffers overlap by design, and the arena holds nothing
// from one step to the next, so any arena write is harmless.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/EvalPrefixCheck.h"

#include "runtime/plan/KernelTable.h"
#include "runtime/plan/PlanDType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/support/DType.h"

#include <vector>

namespace fsdp::rt {
namespace {

template <typename T> size_t count(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

std::string describe(const plan::Plan &plan, size_t i) {
  const plan::Instruction &inst = *plan.instructions()->Get(i);
  std::string text = cat("instruction ", i, " (", kernelName(static_cast<uint16_t>(inst.kernel())));
  if (inst.name() && inst.name()->size())
    text += cat(" '", inst.name()->str(), "'");
  return text + ")";
}

} // namespace

Status checkEvalPrefix(const plan::Plan &plan, const std::string &path) {
  const uint32_t end = plan.eval_end(), loss = plan.eval_loss_buffer();
  if (end == 0) {
    if (loss != kNoBuffer)
      return Status::error(cat(path, ": eval_loss_buffer is set without an evaluation prefix"));
    return Status::ok();
  }
  const std::string what = cat(path, ": the evaluation prefix (eval_end ", end, ")");
  if (!plan.mode() || plan.mode()->str() != "train")
    return Status::error(what + " is only for training plans");
  if (end > count(plan.instructions()))
    return Status::error(cat(what, " is past the plan's ", count(plan.instructions()),
                             " instructions"));
  if (loss >= count(plan.buffers()))
    return Status::error(cat(what, ": eval_loss_buffer ", loss, " is no buffer"));
  const plan::Buffer &lossBuffer = *plan.buffers()->Get(loss);
  uint64_t numel = 1;
  for (size_t d = 0; d < count(lossBuffer.shape()); ++d)
    numel *= static_cast<uint64_t>(lossBuffer.shape()->Get(d));
  if (numel != 1 || !isFloat(toDType(lossBuffer.dtype())))
    return Status::error(cat(what, ": the loss buffer ", loss, " is not a float scalar"));

  // What a step may overwrite: its gathered copies and its outputs.
  std::vector<uint8_t> rewritten(count(plan.buffers()), 0);
  for (size_t u = 0; u < count(plan.units()); ++u)
    if (uint32_t g = plan.units()->Get(u)->gathered_buffer(); g < rewritten.size())
      rewritten[g] = 1;
  for (size_t o = 0; o < count(plan.outputs()); ++o)
    if (uint32_t b = plan.outputs()->Get(o)->buffer(); b < rewritten.size())
      rewritten[b] = 1;
  std::vector<int64_t> signaller(plan.num_events(), -1);
  for (size_t i = 0; i < count(plan.instructions()); ++i)
    if (int32_t e = plan.instructions()->Get(i)->signal_event(); e >= 0)
      signaller[e] = static_cast<int64_t>(i);

  bool writesLoss = false;
  for (size_t i = 0; i < end; ++i) {
    const plan::Instruction &inst = *plan.instructions()->Get(i);
    for (size_t o = 0; o < count(inst.outputs()); ++o) {
      const uint32_t b = inst.outputs()->Get(o);
      writesLoss |= b == loss;
      const plan::Buffer &buffer = *plan.buffers()->Get(b);
      if (buffer.region() == plan::Region::Arena || rewritten[b])
        continue;
      return Status::error(cat(what, ": ", describe(plan, i), " writes buffer ", b, " '",
                               buffer.name() ? buffer.name()->str() : "", "', which the training "
                               "keeps from step to step (only arena values, gathered copies and "
                               "outputs may be written)"));
    }
    for (size_t w = 0; w < count(inst.wait_events()); ++w) {
      const uint32_t e = inst.wait_events()->Get(w);
      if (signaller[e] < 0 || signaller[e] >= static_cast<int64_t>(end))
        return Status::error(cat(what, ": ", describe(plan, i), " waits on event ", e,
                                 ", which no instruction of the prefix signals"));
    }
  }
  if (!writesLoss)
    return Status::error(cat(what, ": no instruction of the prefix writes the loss buffer ", loss));
  return Status::ok();
}

} // namespace fsdp::rt
