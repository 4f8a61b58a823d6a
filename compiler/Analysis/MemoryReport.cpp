//===- MemoryReport.cpp - where a plan's bytes go, per rank ---------------===//
//
// Two passes over the plan. The persistent region is classified buffer by
// buffer, measuring the union of 64-byte-aligned extents (the emitter's
// allocation unit), so views over one parameter or two bindings of one
// buffer count once. The arena is replayed in instruction order: buffers an
// instruction writes own their bytes; a buffer no instruction writes is a
// view (a reshape, a parameter inside a gathered flat buffer) and belongs
// to the owner most recently written over its first byte when it is first
// read. An owner is live from its first write to the last read of it or
// any of its views, which is exactly the lifetime the emitter's allocator
// gave it (allocated before the writing instruction, released after the
// last reader). Live bytes are measured as a union of ranges, so owners
// overlapping in the arena are never counted twice. Rendering the report
// as text or JSON is MemoryReportRender.cpp's.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/MemoryReport.h"

#include "runtime/plan/PlanDType.h"
#include "runtime/support/DType.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/plan/plan_generated.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>

namespace fsdp {
namespace {

using plan::Kernel;

uint64_t alignedExtent(uint64_t size) {
  const uint64_t a = rt::kBufferAlignment;
  return (std::max<uint64_t>(size, 1) + a - 1) / a * a;
}

template <typename T> size_t count(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// Measures the union of [offset, offset + extent) ranges given in offset
/// order; bytes covered by several ranges go to the first one listed.
/// `add(tag, bytes)` receives each range's newly covered bytes.
template <typename Range, typename Add>
void measureUnion(const std::vector<Range> &ranges, Add add) {
  uint64_t coveredEnd = 0;
  for (const Range &r : ranges) {
    uint64_t begin = std::max(r.offset, coveredEnd), end = r.offset + r.extent;
    if (end > begin) {
      add(r, end - begin);
      coveredEnd = end;
    }
  }
}

//===----------------------------------------------------------------------===//
// Persistent region
//===----------------------------------------------------------------------===//

struct PersistentRange {
  uint64_t offset, extent;
  int kind; // 0 parameters, 1 optimizer state (lower wins an overlap)
};

void classifyPersistent(const plan::Plan &p, RankMemory &row) {
  std::vector<PersistentRange> ranges;
  auto add = [&](uint32_t index, int kind) {
    if (index >= count(p.buffers()))
      return;
    const plan::Buffer *b = p.buffers()->Get(index);
    if (b->region() == plan::Region::Persistent)
      ranges.push_back({b->offset(), alignedExtent(b->size()), kind});
  };
  if (p.units())
    for (const plan::Unit *u : *p.units()) {
      add(u->shard_buffer(), 0);
      add(u->gathered_buffer(), 0);
    }
  if (p.parameters())
    for (const plan::Parameter *param : *p.parameters())
      add(param->buffer(), 0);
  if (p.state())
    for (const plan::Binding *s : *p.state())
      add(s->buffer(), 1);
  std::sort(ranges.begin(), ranges.end(), [](const PersistentRange &a, const PersistentRange &b) {
    return a.offset != b.offset ? a.offset < b.offset : a.kind < b.kind;
  });
  measureUnion(ranges, [&](const PersistentRange &r, uint64_t bytes) {
    (r.kind == 0 ? row.parameters : row.optimizerState) += bytes;
  });
  // Everything else the region holds: inputs, outputs, lr and step.
  uint64_t classified = row.parameters + row.optimizerState;
  row.io = p.persistent_bytes() > classified ? p.persistent_bytes() - classified : 0;
}

//===----------------------------------------------------------------------===//
// Arena replay
//===----------------------------------------------------------------------===//

enum class Category : uint8_t { Activations, Gradients, Communication };

struct Owner {
  uint64_t offset = 0, extent = 0;
  size_t start = 0, end = 0; // live over instructions [start, end]
  Category category = Category::Activations;
  uint32_t buffer = 0; // the buffer whose write (or first read) made it
};

/// Which owner holds each arena byte now: start offset -> (end, owner),
/// non-overlapping. Writing an owner paints its range.
class ArenaMap {
public:
  void paint(uint64_t begin, uint64_t end, size_t owner) {
    split(begin);
    split(end);
    spans_.erase(spans_.lower_bound(begin), spans_.lower_bound(end));
    spans_[begin] = {end, owner};
  }
  /// The owner of byte `at`, or npos.
  size_t ownerAt(uint64_t at) const {
    auto it = spans_.upper_bound(at);
    if (it == spans_.begin())
      return npos;
    --it;
    return at < it->second.first ? it->second.second : npos;
  }
  static constexpr size_t npos = std::numeric_limits<size_t>::max();

private:
  void split(uint64_t at) {
    auto it = spans_.upper_bound(at);
    if (it == spans_.begin())
      return;
    --it;
    auto [end, owner] = it->second;
    if (it->first < at && at < end) {
      it->second.first = at;
      spans_[at] = {end, owner};
    }
  }
  std::map<uint64_t, std::pair<uint64_t, size_t>> spans_;
};

struct ArenaResult {
  uint64_t livePeak = 0, activationsPeak = 0;
  uint64_t gradients = 0, activations = 0, communication = 0; // at livePeak
  size_t peakInstruction = 0;
  std::vector<uint64_t> liveBytes; // per instruction
  std::vector<Owner> liveAtPeak;   // largest first
};

/// Finds every arena buffer's owner and the owners' lifetimes and
/// categories.
std::vector<Owner> findOwners(const plan::Plan &p) {
  const size_t numBuffers = count(p.buffers()), numInsts = count(p.instructions());
  auto isArena = [&](uint32_t index) {
    return index < numBuffers && p.buffers()->Get(index)->region() == plan::Region::Arena;
  };
  std::vector<Owner> owners;
  std::vector<size_t> ownerOf(numBuffers, ArenaMap::npos);
  ArenaMap map;
  auto use = [&](uint32_t index, size_t t) -> Owner * {
    if (!isArena(index))
      return nullptr;
    if (ownerOf[index] == ArenaMap::npos) {
      // First seen as an operand: a view of whoever owns its first byte,
      // or (an unwritten buffer, which a valid plan does not have) its own
      // owner from here on.
      const plan::Buffer *b = p.buffers()->Get(index);
      size_t owner = map.ownerAt(b->offset());
      if (owner == ArenaMap::npos) {
        owner = owners.size();
        owners.push_back({b->offset(), alignedExtent(b->size()), t, t});
        owners.back().buffer = index;
      }
      ownerOf[index] = owner;
    }
    Owner &o = owners[ownerOf[index]];
    o.end = std::max(o.end, t);
    return &o;
  };
  for (size_t t = 0; t < numInsts; ++t) {
    const plan::Instruction *inst = p.instructions()->Get(t);
    // Operands are read before results are written: an instruction never
    // reads through a view of its own result.
    Kernel k = inst->kernel();
    // The category of the first operand when it is in the arena: a dtype
    // cast or copy of gathered parameters or of gradients (mixed
    // precision's casts around the collectives) is the same tensor in
    // another form, and an all-reduce of a gradient is a gradient (of the
    // loss, not).
    std::optional<Category> firstOperand;
    if (inst->inputs())
      for (size_t i = 0; i < inst->inputs()->size(); ++i) {
        Owner *o = use(inst->inputs()->Get(i), t);
        if (!o)
          continue;
        // An all-gather's send buffer (the cast shard) is communication;
        // what an optimizer reads as its gradient, and the parameter
        // gradients a Flatten packs for its reduce-scatter, are gradients.
        bool gradOperand =
            (i == 1 && (k == Kernel::AdamW || k == Kernel::Sgd)) || k == Kernel::Flatten;
        if (k == Kernel::AllGather)
          o->category = Category::Communication;
        else if (gradOperand && o->category == Category::Activations)
          o->category = Category::Gradients;
        if (i == 0)
          firstOperand = o->category;
      }
    if (!inst->outputs())
      continue;
    for (uint32_t index : *inst->outputs()) {
      if (!isArena(index))
        continue;
      if (ownerOf[index] == ArenaMap::npos) {
        const plan::Buffer *b = p.buffers()->Get(index);
        ownerOf[index] = owners.size();
        owners.push_back({b->offset(), alignedExtent(b->size()), t, t});
        owners.back().buffer = index;
        map.paint(b->offset(), b->offset() + alignedExtent(b->size()), ownerOf[index]);
      }
      Owner &o = owners[ownerOf[index]];
      o.end = std::max(o.end, t);
      switch (k) {
      case Kernel::AllGather:
        o.category = Category::Communication;
        break;
      case Kernel::Flatten:
      case Kernel::ReduceScatter:
        if (o.category == Category::Activations)
          o.category = Category::Gradients;
        break;
      case Kernel::AllReduce:
        if (o.category == Category::Activations)
          o.category = firstOperand.value_or(Category::Gradients);
        break;
      case Kernel::Cast:
      case Kernel::Copy:
        if (o.category == Category::Activations)
          o.category = firstOperand.value_or(Category::Activations);
        break;
      default:
        break;
      }
    }
  }
  // A parameter's gradient is often assembled before it is packed: partial
  // gradients summed (a shared embedding's two GatherGrads), a transposed
  // matmul result turned back. Walking backwards, the operands of a
  // same-shape Add, Transpose, Cast or Copy whose result is a gradient are
  // gradients too (an activation is never summed into a gradient).
  for (size_t t = numInsts; t-- > 0;) {
    const plan::Instruction *inst = p.instructions()->Get(t);
    Kernel k = inst->kernel();
    if ((k != Kernel::Add && k != Kernel::Transpose && k != Kernel::Cast && k != Kernel::Copy) ||
        !inst->inputs() || !inst->outputs() || inst->outputs()->size() != 1)
      continue;
    uint32_t out = inst->outputs()->Get(0);
    if (!isArena(out) || owners[ownerOf[out]].category != Category::Gradients)
      continue;
    for (uint32_t in : *inst->inputs())
      if (isArena(in) && owners[ownerOf[in]].category == Category::Activations)
        owners[ownerOf[in]].category = Category::Gradients;
  }
  return owners;
}

ArenaResult replayArena(const plan::Plan &p) {
  std::vector<Owner> owners = findOwners(p);
  const size_t numInsts = count(p.instructions());
  std::vector<std::vector<size_t>> starting(numInsts), ending(numInsts);
  for (size_t i = 0; i < owners.size(); ++i) {
    starting[owners[i].start].push_back(i);
    ending[owners[i].end].push_back(i);
  }
  struct Live {
    uint64_t offset, extent;
    Category category;
  };
  std::multimap<uint64_t, size_t> active; // offset -> owner
  ArenaResult result;
  std::vector<Live> live;
  // Plans the emitter writes never overlap two live owners, so running
  // per-category sums are exact; a new owner can only overlap its offset
  // neighbours while nothing overlaps yet. Once an overlap is seen (a
  // hand-built plan), every later instruction measures the union instead.
  uint64_t running[3] = {0, 0, 0};
  bool overlapSeen = false;
  auto overlapsNeighbours = [&](std::multimap<uint64_t, size_t>::iterator it) {
    uint64_t lo = it->first, hi = lo + owners[it->second].extent;
    auto next = std::next(it);
    if (next != active.end() && next->first < hi)
      return true;
    return it != active.begin() &&
           std::prev(it)->first + owners[std::prev(it)->second].extent > lo;
  };
  for (size_t t = 0; t < numInsts; ++t) {
    for (size_t i : starting[t]) {
      auto it = active.emplace(owners[i].offset, i);
      running[size_t(owners[i].category)] += owners[i].extent;
      overlapSeen = overlapSeen || overlapsNeighbours(it);
    }
    uint64_t bytes[3] = {running[0], running[1], running[2]};
    if (overlapSeen) {
      live.clear();
      for (const auto &[offset, i] : active)
        live.push_back({offset, owners[i].extent, owners[i].category});
      bytes[0] = bytes[1] = bytes[2] = 0;
      measureUnion(live, [&](const Live &l, uint64_t n) { bytes[size_t(l.category)] += n; });
    }
    uint64_t total = bytes[0] + bytes[1] + bytes[2];
    result.liveBytes.push_back(total);
    if (total > result.livePeak) {
      result.livePeak = total;
      result.peakInstruction = t;
      result.activations = bytes[size_t(Category::Activations)];
      result.gradients = bytes[size_t(Category::Gradients)];
      result.communication = bytes[size_t(Category::Communication)];
    }
    result.activationsPeak =
        std::max(result.activationsPeak, bytes[size_t(Category::Activations)]);
    for (size_t i : ending[t]) {
      auto [first, last] = active.equal_range(owners[i].offset);
      for (auto it = first; it != last; ++it)
        if (it->second == i) {
          running[size_t(owners[i].category)] -= owners[i].extent;
          active.erase(it);
          break;
        }
    }
  }
  for (const Owner &o : owners)
    if (o.start <= result.peakInstruction && result.peakInstruction <= o.end)
      result.liveAtPeak.push_back(o);
  std::stable_sort(result.liveAtPeak.begin(), result.liveAtPeak.end(),
                   [](const Owner &a, const Owner &b) { return a.extent > b.extent; });
  return result;
}

const char *categoryName(Category c) {
  switch (c) {
  case Category::Gradients:
    return "gradient";
  case Category::Communication:
    return "gathered parameters";
  case Category::Activations:
    break;
  }
  return "activation";
}

const char *dtypeName(plan::DType t) {
  return rt::dtypeName(rt::toDType(t));
}

} // namespace

MemoryReport analyzeMemory(const plan::Plan &p) {
  MemoryReport report;
  report.source = str(p.source());
  report.mode = str(p.mode());
  report.optimizer = str(p.optimizer());
  report.strategy = p.strategy() && p.strategy()->size() ? p.strategy()->str() : "unsharded";
  report.paramDtype = p.param_dtype() && p.param_dtype()->size() ? p.param_dtype()->str() : "f32";
  report.reduceDtype =
      p.reduce_dtype() && p.reduce_dtype()->size() ? p.reduce_dtype()->str() : "f32";
  report.worldSize = std::max<uint32_t>(p.world_size(), 1);
  report.gradAccum = std::max<uint32_t>(p.grad_accum(), 1);
  report.persistentBytes = p.persistent_bytes();
  report.arenaBytes = p.arena_bytes();
  report.hostBytes = p.host_bytes();
  report.constantBytes = count(p.constant_data());
  report.peakBytes = report.persistentBytes + report.arenaBytes;
  report.instructions = count(p.instructions());

  RankMemory row;
  classifyPersistent(p, row);
  ArenaResult arena = replayArena(p);
  row.gradients = arena.gradients;
  row.activations = arena.activations;
  row.communication = arena.communication;
  row.activationsPeak = arena.activationsPeak;
  // The allocator's slack: never negative for a plan the emitter wrote
  // (its arena holds every live byte), reported as 0 otherwise.
  row.fragmentation = report.arenaBytes > arena.livePeak ? report.arenaBytes - arena.livePeak : 0;
  row.peak = report.peakBytes;
  report.arenaLivePeak = arena.livePeak;
  report.peakInstruction = arena.peakInstruction;
  if (arena.peakInstruction < report.instructions)
    report.peakInstructionName = str(p.instructions()->Get(arena.peakInstruction)->name());
  report.activationsBytes = arena.activationsPeak;
  for (const Owner &o : arena.liveAtPeak) {
    if (report.largestAtPeak.size() == kLargestAtPeak)
      break;
    const plan::Buffer *b = p.buffers()->Get(o.buffer);
    report.largestAtPeak.push_back({str(b->name()), o.extent, categoryName(o.category),
                                    o.start, o.end});
  }

  // SPMD: every rank runs this plan over this layout, so each rank's row is
  // the same one.
  for (uint32_t r = 0; r < report.worldSize; ++r) {
    row.rank = r;
    report.ranks.push_back(row);
  }

  std::vector<uint64_t> perUnit(count(p.units()), 0);
  if (p.parameters())
    for (const plan::Parameter *param : *p.parameters())
      if (param->unit() < perUnit.size())
        ++perUnit[param->unit()];
  for (size_t i = 0; i < perUnit.size(); ++i) {
    const plan::Unit *u = p.units()->Get(i);
    UnitMemory unit;
    unit.name = str(u->name());
    unit.parameters = perUnit[i];
    unit.flatNumel = u->flat_numel();
    unit.paddedNumel = u->padded_numel();
    unit.shardNumel = u->shard_numel();
    unit.groupSize = u->group_size();
    unit.dtype = dtypeName(u->dtype());
    unit.bytesPerRank =
        u->shard_numel() * rt::dtypeSize(rt::toDType(u->dtype()));
    unit.gatheredInPlace = u->gathered_buffer() != rt::kNoBuffer;
    report.units.push_back(std::move(unit));
  }
  return report;
}

std::vector<uint64_t> arenaLiveBytes(const plan::Plan &p) { return replayArena(p).liveBytes; }

} // namespace fsdp
