//===- StepTrace.cpp - the planned step as a timeline picture -------------===//
//
// Both renderings walk the same timeline: instruction i on stream
// step.stream[i] from step.start[i] for step.costs[i].seconds, with
// persistent + liveBytes[i] bytes allocated while it runs. The memory
// curve is sampled at instruction starts in time order; where streams
// overlap, the sample at a time is that of the instruction issued last in
// plan order (the replay is in plan order, the liveness the allocator
// planned for).
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/StepTrace.h"

#include "compiler/Analysis/MemoryReport.h"
#include "runtime/plan/PlanDType.h"
#include "runtime/support/ByteSize.h"

#include "runtime/support/DType.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/plot/SvgChart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <sstream>

namespace fsdp {
namespace {

template <typename T> size_t count(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

std::string str(const flatbuffers::String *s) { return s ? s->str() : ""; }

/// Microseconds with nanosecond resolution, Chrome's unit for ts and dur.
std::string micros(double seconds) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.3f", seconds * 1e6);
  return buf;
}

const char *streamName(uint8_t stream) {
  switch (stream) {
  case 0: return "compute stream";
  case 1: return "communication stream";
  case 2: return "copy stream";
  case 3: return "host optimizer stream";
  default: return "stream";
  }
}

const char *boundName(CostBound bound) {
  switch (bound) {
  case CostBound::None: return "view";
  case CostBound::Compute: return "compute";
  case CostBound::Memory: return "memory";
  case CostBound::Communication: return "communication";
  case CostBound::Floor: return "launch";
  }
  return "";
}

/// "f32[2x4] 32 B" for each buffer in `list`.
std::string operandList(const plan::Plan &p, const flatbuffers::Vector<uint32_t> *list) {
  std::string out = "[";
  for (size_t i = 0; i < count(list); ++i) {
    uint32_t index = list->Get(i);
    std::string text = "none";
    if (index < count(p.buffers())) {
      const plan::Buffer *b = p.buffers()->Get(index);
      text = rt::dtypeName(rt::toDType(b->dtype()));
      text += "[";
      for (size_t d = 0; d < count(b->shape()); ++d)
        text += (d ? "x" : "") + std::to_string(b->shape()->Get(d));
      text += "] " + formatBytes(b->size(), 2);
    }
    out += (i ? ", " : "") + jsonString(text);
  }
  return out + "]";
}

/// Instruction indices in start-time order (plan order among equals).
std::vector<uint32_t> byStart(const StepPrediction &step) {
  std::vector<uint32_t> order(step.start.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return step.start[a] < step.start[b]; });
  return order;
}

std::string describeStep(const plan::Plan &p, const StepPrediction &step) {
  std::string strategy = p.strategy() && p.strategy()->size() ? p.strategy()->str() : "unsharded";
  return (p.source() && p.source()->size() ? p.source()->str() : std::string("(unnamed model)")) +
         ": " + str(p.mode()) + " step, world size " + std::to_string(p.world_size()) +
         ", strategy " + strategy + ", device " + step.device + ", predicted step " +
         formatSeconds(step.stepSeconds);
}

} // namespace

std::string renderChromeTrace(const plan::Plan &p, const StepPrediction &step,
                              const std::vector<uint64_t> &liveBytes) {
  const size_t n = step.costs.size();
  const uint32_t ranks = std::min(std::max<uint32_t>(p.world_size(), 1), kMaxTraceRanks);
  std::ostringstream os;
  os << "{\"displayTimeUnit\": \"ns\",\n";
  os << "\"otherData\": {\"description\": " << jsonString(describeStep(p, step))
     << ", \"note\": "
     << jsonString("times are cost-model predictions, not measurements; every rank runs the "
                   "same plan (SPMD), so the " +
                   std::to_string(ranks) + " ranks listed have identical tracks" +
                   (p.world_size() > ranks ? " (of " + std::to_string(p.world_size()) + ")"
                                           : std::string()))
     << ", \"device\": " << jsonString(step.device)
     << ", \"predicted_step_s\": " << step.stepSeconds << ", \"instructions\": " << n
     << ", \"ranks\": " << ranks << ", \"world_size\": " << p.world_size() << "},\n";
  os << "\"traceEvents\": [\n";
  bool first = true;
  auto event = [&](const std::string &body) {
    os << (first ? "" : ",\n") << "{" << body << "}";
    first = false;
  };
  std::vector<uint8_t> streams(step.stream.begin(), step.stream.end());
  streams.push_back(0);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  const std::vector<uint32_t> order = byStart(step);
  for (uint32_t r = 0; r < ranks; ++r) {
    std::string pid = "\"pid\": " + std::to_string(r);
    event("\"name\": \"process_name\", \"ph\": \"M\", " + pid +
          ", \"args\": {\"name\": \"rank " + std::to_string(r) + "\"}");
    event("\"name\": \"process_sort_index\", \"ph\": \"M\", " + pid +
          ", \"args\": {\"sort_index\": " + std::to_string(r) + "}");
    for (uint8_t s : streams)
      event("\"name\": \"thread_name\", \"ph\": \"M\", " + pid + ", \"tid\": " +
            std::to_string(s) + ", \"args\": {\"name\": \"" + streamName(s) + "\"}");
    for (uint32_t i = 0; i < n; ++i) {
      const plan::Instruction *inst = p.instructions()->Get(i);
      const InstructionCost &c = step.costs[i];
      std::ostringstream e;
      e << "\"name\": \"" << plan::EnumNameKernel(inst->kernel()) << "\", \"cat\": \""
        << (c.bound == CostBound::Communication ? "communication" : "compute")
        << "\", \"ph\": \"X\", " << pid << ", \"tid\": " << int(step.stream[i])
        << ", \"ts\": " << micros(step.start[i]) << ", \"dur\": " << micros(c.seconds)
        << ", \"args\": {\"instruction\": " << i << ", \"node\": " << jsonString(str(inst->name()))
        << ", \"inputs\": " << operandList(p, inst->inputs())
        << ", \"outputs\": " << operandList(p, inst->outputs()) << ", \"bytes\": " << c.bytes
        << ", \"flops\": " << c.flops << ", \"bound\": \"" << boundName(c.bound) << "\"";
      if (c.groupSize)
        e << ", \"group_size\": " << c.groupSize;
      e << ", \"arena_live_bytes\": " << (i < liveBytes.size() ? liveBytes[i] : 0) << "}";
      event(e.str());
    }
    // Memory: the persistent region for the whole step, the arena as the
    // replay finds it live at each instruction.
    auto counter = [&](double at, uint64_t arena) {
      event("\"name\": \"memory\", \"ph\": \"C\", " + pid + ", \"ts\": " + micros(at) +
            ", \"args\": {\"persistent bytes\": " + std::to_string(p.persistent_bytes()) +
            ", \"arena live bytes\": " + std::to_string(arena) + "}");
    };
    for (uint32_t i : order)
      counter(step.start[i], i < liveBytes.size() ? liveBytes[i] : 0);
    counter(step.stepSeconds, 0);
  }
  os << "\n]}\n";
  return os.str();
}

//===----------------------------------------------------------------------===//
// HTML
//===----------------------------------------------------------------------===//

namespace {

using svg::coord;
using svg::escapeXml;
using svg::tickStep;

const char *colorOf(CostBound bound) {
  switch (bound) {
  case CostBound::Compute: return "#3b6fd6";       // matmul at its flop rate
  case CostBound::Memory: return "#3fa06b";        // bytes over bandwidth
  case CostBound::Communication: return "#e08a2c"; // collectives
  case CostBound::Floor: return "#9a9a9a";         // launch floor
  case CostBound::None: return "#dddddd";
  }
  return "#000";
}

} // namespace

std::string renderTimelineHtml(const plan::Plan &p, const StepPrediction &step,
                               const std::vector<uint64_t> &liveBytes) {
  const size_t n = step.costs.size();
  const double total = step.stepSeconds > 0 ? step.stepSeconds : 1e-6;
  // Time in the unit that reads best.
  const double scale = total >= 1 ? 1 : total >= 1e-3 ? 1e3 : 1e6;
  const char *unit = total >= 1 ? "s" : total >= 1e-3 ? "ms" : "us";
  const double width = 1100, left = 170, right = 30, plotW = width - left - right;
  const double laneH = 36, laneGap = 10, top = 30;
  std::vector<uint8_t> streams(step.stream.begin(), step.stream.end());
  streams.push_back(0);
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  const double lanesBottom = top + streams.size() * (laneH + laneGap);
  const double memTop = lanesBottom + 60, memH = 260, memBottom = memTop + memH;
  const double height = memBottom + 60;
  auto x = [&](double seconds) { return left + seconds / total * plotW; };
  uint64_t maxBytes = p.persistent_bytes();
  for (uint64_t b : liveBytes)
    maxBytes = std::max<uint64_t>(maxBytes, p.persistent_bytes() + b);
  maxBytes = std::max<uint64_t>(maxBytes, 1);
  const svg::ByteUnit byteUnit = svg::byteUnitFor(static_cast<double>(maxBytes));
  const double byteScale = byteUnit.scale;
  auto y = [&](double bytes) { return memBottom - bytes / maxBytes * memH; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\""
      << height << "\" viewBox=\"0 0 " << width << " " << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg << "<text x=\"" << left << "\" y=\"18\" font-weight=\"bold\">timeline per stream (rank 0; "
      << "every rank runs the same plan)</text>\n";
  // Time axis ticks shared by both plots.
  double step10 = tickStep(total * scale, 10);
  auto timeAxis = [&](double axisY, double gridTop) {
    svg << "<line x1=\"" << left << "\" y1=\"" << axisY << "\" x2=\"" << left + plotW
        << "\" y2=\"" << axisY << "\" stroke=\"#000\"/>\n";
    for (double t = 0; t <= total * scale * 1.0001; t += step10) {
      double tx = x(t / scale);
      svg << "<line x1=\"" << coord(tx) << "\" y1=\"" << gridTop << "\" x2=\"" << coord(tx)
          << "\" y2=\"" << axisY + 4 << "\" stroke=\"#ccc\" stroke-width=\"0.5\"/>\n";
      svg << "<text x=\"" << coord(tx) << "\" y=\"" << axisY + 16
          << "\" text-anchor=\"middle\">" << coord(t) << "</text>\n";
    }
    svg << "<text x=\"" << left + plotW / 2 << "\" y=\"" << axisY + 32
        << "\" text-anchor=\"middle\">predicted time (" << unit << ")</text>\n";
  };
  for (size_t l = 0; l < streams.size(); ++l) {
    double laneY = top + l * (laneH + laneGap);
    svg << "<text x=\"" << left - 8 << "\" y=\"" << laneY + laneH / 2 + 4
        << "\" text-anchor=\"end\">" << streamName(streams[l]) << "</text>\n";
    svg << "<rect x=\"" << left << "\" y=\"" << laneY << "\" width=\"" << plotW
        << "\" height=\"" << laneH << "\" fill=\"#f6f6f6\"/>\n";
    for (uint32_t i = 0; i < n; ++i) {
      if (step.stream[i] != streams[l])
        continue;
      const InstructionCost &c = step.costs[i];
      const plan::Instruction *inst = p.instructions()->Get(i);
      double w = std::max(c.seconds / total * plotW, 0.3);
      svg << "<rect x=\"" << coord(x(step.start[i])) << "\" y=\"" << laneY << "\" width=\""
          << coord(w) << "\" height=\"" << laneH << "\" fill=\"" << colorOf(c.bound)
          << "\"><title>#" << i << " " << plan::EnumNameKernel(inst->kernel()) << " "
          << escapeXml(str(inst->name())) << ": " << formatSeconds(c.seconds) << " ("
          << boundName(c.bound) << "-bound), " << formatBytes(c.bytes, 2) << "</title></rect>\n";
    }
  }
  timeAxis(lanesBottom - laneGap + 4, top);
  // Legend.
  double legendX = left;
  for (CostBound b : {CostBound::Compute, CostBound::Memory, CostBound::Communication,
                      CostBound::Floor}) {
    const char *label = b == CostBound::Compute         ? "matmul (flop-bound)"
                        : b == CostBound::Memory        ? "memory-bound"
                        : b == CostBound::Communication ? "collective"
                                                        : "launch floor";
    svg << "<rect x=\"" << legendX << "\" y=\"" << lanesBottom + 36 << "\" width=\"10\" "
        << "height=\"10\" fill=\"" << colorOf(b) << "\"/><text x=\"" << legendX + 14
        << "\" y=\"" << lanesBottom + 45 << "\">" << label << "</text>\n";
    legendX += 170;
  }

  // Memory over time: persistent + arena live, a step curve.
  svg << "<text x=\"" << left << "\" y=\"" << memTop - 8
      << "\" font-weight=\"bold\">memory per rank over time (persistent + live arena)</text>\n";
  svg << "<line x1=\"" << left << "\" y1=\"" << memTop << "\" x2=\"" << left << "\" y2=\""
      << memBottom << "\" stroke=\"#000\"/>\n";
  double byteStep = tickStep(maxBytes / byteScale, 5);
  for (double b = 0; b <= maxBytes / byteScale * 1.0001; b += byteStep) {
    double by = y(b * byteScale);
    svg << "<line x1=\"" << left - 4 << "\" y1=\"" << coord(by) << "\" x2=\"" << left + plotW
        << "\" y2=\"" << coord(by) << "\" stroke=\"#ddd\" stroke-width=\"0.5\"/>\n";
    svg << "<text x=\"" << left - 8 << "\" y=\"" << coord(by + 4) << "\" text-anchor=\"end\">"
        << coord(b) << "</text>\n";
  }
  svg << "<text transform=\"translate(" << left - 60 << "," << (memTop + memBottom) / 2
      << ") rotate(-90)\" text-anchor=\"middle\">bytes (" << byteUnit.name
      << ")</text>\n";
  double persistentY = y(p.persistent_bytes());
  svg << "<line x1=\"" << left << "\" y1=\"" << coord(persistentY) << "\" x2=\"" << left + plotW
      << "\" y2=\"" << coord(persistentY) << "\" stroke=\"#888\" stroke-dasharray=\"4 3\"/>\n";
  svg << "<text x=\"" << left + plotW - 4 << "\" y=\"" << coord(persistentY - 4)
      << "\" text-anchor=\"end\" fill=\"#666\">persistent " << formatBytes(p.persistent_bytes(), 2)
      << "</text>\n";
  std::ostringstream path;
  path << "M" << coord(x(0)) << " " << coord(persistentY);
  for (uint32_t i : byStart(step)) {
    double at = x(step.start[i]);
    path << " H" << coord(at) << " V"
         << coord(y(p.persistent_bytes() + (i < liveBytes.size() ? liveBytes[i] : 0)));
  }
  path << " H" << coord(x(total)) << " V" << coord(persistentY);
  svg << "<path d=\"" << path.str() << "\" fill=\"none\" stroke=\"#c0392b\" "
      << "stroke-width=\"1.5\"/>\n";
  timeAxis(memBottom, memTop);
  svg << "</svg>\n";

  std::ostringstream html;
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fsdp-opt step trace: "
       << escapeXml(describeStep(p, step)) << "</title></head>\n"
       << "<body style=\"font-family: sans-serif\">\n<h2>" << escapeXml(describeStep(p, step))
       << "</h2>\n<p>Predicted by fsdp-opt's cost model, not measured: compute "
       << formatSeconds(step.computeSeconds) << ", communication "
       << formatSeconds(step.communicationSeconds) << " ("
       << formatSeconds(step.exposedCommunicationSeconds) << " not hidden under compute), "
       << n << " instructions, at most " << formatBytes(maxBytes, 2) << " live"
       << " per rank. Hover a bar for its instruction.</p>\n"
       << svg.str() << "</body></html>\n";
  return html.str();
}

} // namespace fsdp
