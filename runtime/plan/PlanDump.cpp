//===- PlanDump.cpp - a plan as text --------------------------------------===//
//
// One line per entry, fields in schema order, so FileCheck patterns stay
// short and diffs between plans read naturally.
//
//===----------------------------------------------------------------------===//

#include "runtime/plan/PlanDump.h"

#include "runtime/plan/PlanDType.h"
#include "runtime/support/DType.h"
#include "runtime/plan/PlanCheck.h"
#include "runtime/plan/plan_generated.h"

#include <sstream>

namespace fsdp::rt {
namespace {

const char *regionName(plan::Region region) {
  switch (region) {
  case plan::Region::Persistent: return "persistent";
  case plan::Region::Arena: return "arena";
  case plan::Region::Constant: return "constant";
  case plan::Region::Host: return "host";
  }
  return "?";
}

template <typename T> void list(std::ostream &os, const flatbuffers::Vector<T> *v) {
  os << "[";
  for (size_t i = 0; v && i < v->size(); ++i) {
    os << (i ? ", " : "");
    if constexpr (std::is_same_v<T, uint32_t>) {
      if (v->Get(i) == kNoBuffer) {
        os << "none";
        continue;
      }
      os << "%" << v->Get(i);
    } else {
      os << v->Get(i);
    }
  }
  os << "]";
}

} // namespace

std::string dumpPlan(const LoadedPlan &loaded) {
  const plan::Plan &p = loaded.plan();
  std::ostringstream os;
  os << "plan version=" << p.format_version() << " mode=" << (p.mode() ? p.mode()->str() : "")
     << " world_size=" << p.world_size() << " hash=" << std::hex << loaded.hash() << std::dec
     << "\n";
  if (p.num_streams() > 1)
    os << "streams " << int(p.num_streams()) << " events=" << p.num_events() << "\n";
  if (p.grad_accum() > 1)
    os << "grad_accum=" << p.grad_accum() << " (micro-batches per step, stacked in each input)\n";
  os << "memory persistent=" << p.persistent_bytes() << " arena=" << p.arena_bytes()
     << " constant=" << (p.constant_data() ? p.constant_data()->size() : 0);
  if (p.host_bytes())
    os << " host=" << p.host_bytes();
  os << "\n";
  if (p.weights_file() && p.weights_file()->size())
    os << "weights " << p.weights_file()->str() << " hash=" << std::hex << p.weights_hash()
       << std::dec << "\n";
  for (size_t i = 0; p.buffers() && i < p.buffers()->size(); ++i) {
    const plan::Buffer *b = p.buffers()->Get(i);
    os << "buffer %" << i << " " << dtypeName(toDType(b->dtype()));
    list(os, b->shape());
    os << " " << regionName(b->region()) << "+" << b->offset();
    if (b->rank_stride())
      os << "+rank%" << b->rank_group() << "*" << b->rank_stride();
    os << " size=" << b->size() << " \"" << (b->name() ? b->name()->str() : "") << "\"\n";
  }
  for (size_t i = 0; p.instructions() && i < p.instructions()->size(); ++i) {
    const plan::Instruction *inst = p.instructions()->Get(i);
    os << "inst " << i << " " << kernelName(static_cast<uint16_t>(inst->kernel())) << " ";
    list(os, inst->inputs());
    os << " -> ";
    list(os, inst->outputs());
    if (inst->ints() && inst->ints()->size()) {
      os << " ints=";
      list(os, inst->ints());
    }
    if (inst->floats() && inst->floats()->size()) {
      os << " floats=";
      list(os, inst->floats());
    }
    // Stream order (plans with a communication stream).
    if (inst->stream())
      os << " stream=" << int(inst->stream());
    if (inst->wait_events() && inst->wait_events()->size()) {
      os << " wait=[";
      for (size_t w = 0; w < inst->wait_events()->size(); ++w)
        os << (w ? ", " : "") << inst->wait_events()->Get(w);
      os << "]";
    }
    if (inst->signal_event() >= 0)
      os << " signal=" << inst->signal_event();
    os << "\n";
  }
  auto bufferOrNone = [](uint32_t buffer) {
    return buffer == kNoBuffer ? std::string("none") : "%" + std::to_string(buffer);
  };
  if (p.strategy() && p.strategy()->size())
    os << "shard strategy=" << p.strategy()->str() << " param_dtype="
       << (p.param_dtype() ? p.param_dtype()->str() : "") << " reduce_dtype="
       << (p.reduce_dtype() ? p.reduce_dtype()->str() : "") << "\n";
  for (size_t i = 0; p.units() && i < p.units()->size(); ++i) {
    const plan::Unit *u = p.units()->Get(i);
    os << "unit " << i << " \"" << (u->name() ? u->name()->str() : "") << "\" "
       << dtypeName(toDType(u->dtype())) << " flat=" << u->flat_numel()
       << " padded=" << u->padded_numel() << " shard=" << u->shard_numel()
       << " group_size=" << u->group_size() << " shard_buffer=" << bufferOrNone(u->shard_buffer());
    if (u->gathered_buffer() != kNoBuffer)
      os << " gathered_buffer=%" << u->gathered_buffer();
    os << "\n";
  }
  for (size_t i = 0; p.parameters() && i < p.parameters()->size(); ++i) {
    const plan::Parameter *param = p.parameters()->Get(i);
    os << "param \"" << param->name()->str() << "\" " << bufferOrNone(param->buffer()) << " unit="
       << (param->unit() == kNoBuffer ? std::string("none") : std::to_string(param->unit()))
       << " flat_offset=" << param->flat_offset() << "\n";
  }
  for (size_t i = 0; p.inputs() && i < p.inputs()->size(); ++i)
    os << "input \"" << p.inputs()->Get(i)->name()->str() << "\" %" << p.inputs()->Get(i)->buffer()
       << "\n";
  for (size_t i = 0; p.outputs() && i < p.outputs()->size(); ++i)
    os << "output \"" << p.outputs()->Get(i)->name()->str() << "\" %"
       << p.outputs()->Get(i)->buffer() << "\n";
  for (size_t i = 0; p.state() && i < p.state()->size(); ++i)
    os << "state \"" << p.state()->Get(i)->name()->str() << "\" %" << p.state()->Get(i)->buffer()
       << "\n";
  if (p.optimizer() && p.optimizer()->size()) {
    os << "train optimizer=" << p.optimizer()->str() << " base_lr=" << p.base_lr()
       << " loss=\"" << (p.loss_output() ? p.loss_output()->str() : "") << "\" lr="
       << bufferOrNone(p.lr_buffer()) << " step=" << bufferOrNone(p.step_buffer()) << "\n";
  }
  if (p.eval_end() > 0)
    os << "eval end=" << p.eval_end() << " loss=" << bufferOrNone(p.eval_loss_buffer()) << "\n";
  // fp16 dynamic loss scaling (plan.fbs's loss_scale_* fields).
  if (p.loss_scale_growth_interval())
    os << "loss_scaling scale=" << bufferOrNone(p.loss_scale_buffer())
       << " inv_scale=" << bufferOrNone(p.inv_loss_scale_buffer()) << " found_inf=\""
       << (p.found_inf_output() ? p.found_inf_output()->str() : "")
       << "\" growth_interval=" << p.loss_scale_growth_interval() << "\n";
  // Exact (17 digits), so a test can hold it against the report's numbers.
  if (const plan::CostPrediction *c = p.prediction()) {
    os.precision(17);
    os << "predicted device=" << (c->device() ? c->device()->str() : "")
       << " step_s=" << c->step_s() << " compute_s=" << c->compute_s()
       << " communication_s=" << c->communication_s()
       << " exposed_communication_s=" << c->exposed_communication_s() << "\n";
  }
  return os.str();
}

} // namespace fsdp::rt
