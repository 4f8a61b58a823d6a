//===- MemoryReportRender.cpp - a memory report as text or JSON -----------===//
//
// The two renderings of analyzeMemory's report (MemoryReport.cpp): an
// aligned text table for people, and one JSON object for scripts, written
// through llvm::json::OStream (which keeps the keys in the order given).
// The JSON text is the one the report has always had: two-space indents,
// each element of an array on one line (`{"name": ..., "bytes": ...}`),
// times with six significant digits; OStream writes the structure, and
// llvm::json the keys and values inside each element's line.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/MemoryReport.h"

#include "compiler/Analysis/CostModel.h"
#include "runtime/support/ByteSize.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <sstream>

namespace fsdp {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

namespace json = llvm::json;

/// A time as the report prints it: six significant digits (llvm::json
/// would print a double's seventeen).
std::string jsonNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  return buf;
}

/// `s` as a JSON string value. llvm::json holds only UTF-8: a name that is
/// not (a model's bytes) has its invalid bytes replaced, as JSON requires.
json::Value jsonText(const std::string &s) {
  return json::isUTF8(s) ? json::Value(s) : json::Value(json::fixUTF8(s));
}

/// One element of an array on a line of its own, `{"key": value, ...}`,
/// as the report prints them (OStream would put each key on its own
/// line): keys and values are written by llvm::json, only the line is ours.
class InlineObject {
public:
  InlineObject &add(llvm::StringRef key, const json::Value &value) {
    begin(key) << value;
    return *this;
  }
  /// A value already written as JSON text (jsonNumber's, or "null").
  InlineObject &addRaw(llvm::StringRef key, llvm::StringRef text) {
    begin(key) << text;
    return *this;
  }
  /// The object's text, closed.
  std::string finish() {
    os_ << (open_ ? "}" : "{}");
    return std::move(os_.str());
  }

private:
  llvm::raw_string_ostream &begin(llvm::StringRef key) {
    os_ << (open_ ? ", " : "{") << json::Value(key) << ": ";
    open_ = true;
    return os_;
  }
  bool open_ = false;
  std::string text_;
  llvm::raw_string_ostream os_{text_};
};

std::string renderJson(const MemoryReport &r) {
  std::string text;
  llvm::raw_string_ostream os(text);
  json::OStream j(os, /*IndentSize=*/2);
  auto number = [&](llvm::StringRef key, double value) {
    j.attributeBegin(key);
    j.rawValue(jsonNumber(value));
    j.attributeEnd();
  };
  j.object([&] {
    j.attribute("source", jsonText(r.source));
    j.attribute("mode", jsonText(r.mode));
    j.attribute("optimizer", jsonText(r.optimizer));
    j.attribute("world_size", r.worldSize);
    j.attribute("strategy", jsonText(r.strategy));
    j.attribute("param_dtype", jsonText(r.paramDtype));
    j.attribute("reduce_dtype", jsonText(r.reduceDtype));
    j.attribute("peak_bytes", r.peakBytes);
    j.attribute("activations_bytes", r.activationsBytes);
    j.attribute("persistent_bytes", r.persistentBytes);
    j.attribute("arena_bytes", r.arenaBytes);
    j.attribute("host_bytes", r.hostBytes);
    j.attribute("arena_live_peak_bytes", r.arenaLivePeak);
    j.attribute("peak_instruction", r.peakInstruction);
    j.attribute("peak_instruction_name", jsonText(r.peakInstructionName));
    j.attribute("constant_bytes", r.constantBytes);
    j.attribute("instructions", r.instructions);
    j.attributeArray("largest_at_peak", [&] {
      for (const LiveTensor &l : r.largestAtPeak)
        j.rawValue(InlineObject()
                       .add("name", jsonText(l.name))
                       .add("bytes", l.bytes)
                       .add("category", jsonText(l.category))
                       .add("first_instruction", l.first)
                       .add("last_instruction", l.last)
                       .finish());
    });
    if (r.predicted) {
      const PredictedTime &t = *r.predicted;
      j.attribute("device", jsonText(t.device));
      number("predicted_step_s", t.stepSeconds);
      number("predicted_compute_s", t.computeSeconds);
      number("predicted_communication_s", t.communicationSeconds);
      number("predicted_exposed_communication_s", t.exposedSeconds);
      number("predicted_host_optimizer_s", t.hostSeconds);
      j.attribute("predicted_overlapped", t.overlapped);
    }
    j.attributeArray("ranks", [&] {
      for (const RankMemory &k : r.ranks)
        j.rawValue(InlineObject()
                       .add("rank", k.rank)
                       .add("parameters", k.parameters)
                       .add("gradients", k.gradients)
                       .add("optimizer_state", k.optimizerState)
                       .add("activations", k.activations)
                       .add("communication", k.communication)
                       .add("io", k.io)
                       .add("fragmentation", k.fragmentation)
                       .add("peak", k.peak)
                       .add("activations_peak", k.activationsPeak)
                       .finish());
    });
    j.attributeArray("units", [&] {
      for (const UnitMemory &u : r.units)
        j.rawValue(InlineObject()
                       .add("name", jsonText(u.name))
                       .add("parameters", u.parameters)
                       .add("flat_numel", u.flatNumel)
                       .add("padded_numel", u.paddedNumel)
                       .add("shard_numel", u.shardNumel)
                       .add("group_size", u.groupSize)
                       .add("dtype", jsonText(u.dtype))
                       .add("bytes_per_rank", u.bytesPerRank)
                       .add("gathered_in_place", u.gatheredInPlace)
                       .finish());
    });
    if (r.gradAccum > 1) {
      j.attribute("grad_accum", r.gradAccum);
      j.attributeArray("accumulation", [&] {
        for (const UnitAccumulation &a : r.accumulation)
          j.rawValue(InlineObject()
                         .add("unit", jsonText(a.name))
                         .add("chosen", jsonText(a.chosen))
                         .add("each_bytes", a.eachBytes)
                         .addRaw("each_predicted_s", jsonNumber(a.eachSeconds))
                         .add("last_bytes", a.lastBytes)
                         .addRaw("last_predicted_s", jsonNumber(a.lastSeconds))
                         .finish());
      });
    }
    if (!r.configurations.empty())
      j.attributeArray("configurations", [&] {
        for (const ConfigurationRow &c : r.configurations)
          j.rawValue(
              InlineObject()
                  .add("name", jsonText(c.name))
                  .add("flags", jsonText(c.flags))
                  .add("chosen", c.chosen)
                  .add("peak_bytes", c.peakBytes ? json::Value(*c.peakBytes) : json::Value(nullptr))
                  .addRaw("predicted_step_s", c.stepSeconds ? jsonNumber(*c.stepSeconds) : "null")
                  .add("note", jsonText(c.note))
                  .finish());
      });
  });
  os << "\n";
  return os.str();
}

/// Right-aligns `s` in `width` columns.
std::string pad(const std::string &s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

/// Prints `rows` under `headers`, each column as wide as its widest cell,
/// indented and separated by two spaces; numbers right-aligned, the first
/// column left-aligned when it holds names (`namesFirst`).
void printTable(std::ostream &os, const std::vector<std::string> &headers,
                const std::vector<std::vector<std::string>> &rows, bool namesFirst) {
  std::vector<size_t> widths;
  for (const std::string &h : headers)
    widths.push_back(h.size());
  for (const auto &row : rows)
    for (size_t c = 0; c < row.size(); ++c)
      widths[c] = std::max(widths[c], row[c].size());
  auto line = [&](const std::vector<std::string> &row) {
    for (size_t c = 0; c < row.size(); ++c)
      os << "  "
         << (c == 0 && namesFirst ? row[c] + std::string(widths[c] - row[c].size(), ' ')
                                  : pad(row[c], widths[c]));
    os << "\n";
  };
  line(headers);
  for (const auto &row : rows)
    line(row);
}

std::string renderText(const MemoryReport &r) {
  std::ostringstream os;
  os << "memory report: " << (r.source.empty() ? "(unnamed model)" : r.source) << "\n";
  os << "  mode " << r.mode << (r.optimizer.empty() ? "" : " (" + r.optimizer + ")")
     << ", world size " << r.worldSize << ", strategy " << r.strategy << ", param dtype "
     << r.paramDtype << ", reduce dtype " << r.reduceDtype << "\n\n";

  // Per rank. Every rank runs the same plan (SPMD), so the rows are equal.
  std::vector<std::vector<std::string>> rows;
  for (const RankMemory &k : r.ranks)
    rows.push_back({std::to_string(k.rank), formatBytes(k.parameters, 2), formatBytes(k.gradients, 2),
                    formatBytes(k.optimizerState, 2), formatBytes(k.activations, 2),
                    formatBytes(k.communication, 2), formatBytes(k.io, 2), formatBytes(k.fragmentation, 2),
                    formatBytes(k.peak, 2)});
  os << "per rank (every rank runs the same plan, so the rows are equal):\n";
  printTable(os,
             {"rank", "parameters", "gradients", "optimizer state", "activations",
              "communication", "io", "fragmentation", "peak"},
             rows, /*namesFirst=*/false);

  // One rank in exact bytes, with where each number comes from.
  if (!r.ranks.empty()) {
    const RankMemory &k = r.ranks.front();
    std::string at = "at instruction " + std::to_string(r.peakInstruction) +
                     (r.peakInstructionName.empty() ? "" : " '" + r.peakInstructionName + "'");
    struct Line {
      const char *name;
      uint64_t bytes;
      std::string note;
    };
    const Line lines[] = {
        {"parameters", k.parameters,
         "persistent: shards, units gathered in place, replicated parameters"},
        {"optimizer state", k.optimizerState, "persistent"},
        {"io", k.io, "persistent: inputs, outputs, lr, step"},
        {"gradients", k.gradients, "arena, live " + at},
        {"activations", k.activations, "arena, live " + at},
        {"communication", k.communication, "arena, gathered parameters live " + at},
        {"fragmentation", k.fragmentation, "arena, allocated but not live " + at},
        {"peak", k.peak,
         "persistent " + std::to_string(r.persistentBytes) + " + arena " +
             std::to_string(r.arenaBytes)},
    };
    os << "\nper rank, bytes:\n";
    size_t bytesWidth = std::to_string(k.peak).size();
    auto line = [&](const std::string &name, uint64_t bytes, const std::string &note) {
      os << "  " << name << std::string(name.size() < 18 ? 18 - name.size() : 1, ' ')
         << pad(std::to_string(bytes), bytesWidth) << "  " << pad(formatBytes(bytes, 2), 10) << "  "
         << note << "\n";
    };
    for (const Line &l : lines)
      line(l.name, l.bytes, l.note);
    line("activations peak", r.activationsBytes, "largest activation bytes live at any instruction");
    line("arena live peak", r.arenaLivePeak,
         "of arena " + std::to_string(r.arenaBytes) + ", " + at);
    line("constants", r.constantBytes, "read in place from the plan file");
    if (r.hostBytes)
      line("host", r.hostBytes,
           "host memory (--offload=cpu): shards, gradient shards, optimizer state; not in the "
           "device peak");
  }

  if (!r.largestAtPeak.empty()) {
    os << "\nlargest arena tensors live at the peak (instruction " << r.peakInstruction << "):\n";
    std::vector<std::vector<std::string>> liveRows;
    for (const LiveTensor &l : r.largestAtPeak)
      liveRows.push_back({l.name, l.category, formatBytes(l.bytes, 2),
                          std::to_string(l.first) + ".." + std::to_string(l.last)});
    printTable(os, {"tensor", "kind", "bytes", "live over"}, liveRows, /*namesFirst=*/true);
  }

  os << "\nunits (" << r.units.size() << "):\n";
  std::vector<std::vector<std::string>> unitRows;
  for (const UnitMemory &u : r.units)
    unitRows.push_back({u.name, std::to_string(u.parameters), std::to_string(u.flatNumel),
                        std::to_string(u.paddedNumel), std::to_string(u.shardNumel),
                        std::to_string(u.groupSize), u.dtype, formatBytes(u.bytesPerRank, 2),
                        std::to_string(u.bytesPerRank)});
  printTable(os,
             {"unit", "params", "flat_numel", "padded_numel", "shard_numel", "group", "dtype",
              "per rank", "bytes"},
             unitRows, /*namesFirst=*/true);

  if (r.predicted) {
    const PredictedTime &t = *r.predicted;
    os << "\npredicted step on " << t.device << " (a cost-model prediction, not a measurement; "
       << t.deviceDescription << "):\n";
    os << "  step " << formatSeconds(t.stepSeconds) << ": compute " << formatSeconds(t.computeSeconds)
       << ", communication " << formatSeconds(t.communicationSeconds) << " ("
       << formatSeconds(t.exposedSeconds) << " not hidden under compute; "
       << (t.overlapped ? "streams overlap" : "one stream, serial") << ")";
    if (t.hostSeconds > 0)
      os << "; host optimizer " << formatSeconds(t.hostSeconds) << " on its own stream";
    os << "\n";
  }
  if (r.gradAccum > 1) {
    os << "\ngradient accumulation over " << r.gradAccum
       << " micro-batches, per unit (each: reduce every micro-batch's gradient, a shard-sized "
          "accumulator; last: sum the unsharded gradient, reduce once; bytes per rank held "
          "across micro-batches, predicted reduction time per step on "
       << (r.predicted ? r.predicted->device : std::string("the device")) << "):\n";
    std::vector<std::vector<std::string>> rows;
    for (const UnitAccumulation &a : r.accumulation)
      rows.push_back({a.name, a.chosen.empty() ? "-" : a.chosen, formatBytes(a.eachBytes, 2),
                      formatSeconds(a.eachSeconds), formatBytes(a.lastBytes, 2),
                      formatSeconds(a.lastSeconds)});
    printTable(os, {"unit", "chosen", "each: bytes", "each: time", "last: bytes", "last: time"},
               rows, /*namesFirst=*/true);
  }
  if (!r.configurations.empty()) {
    os << "\nconfigurations at world size " << r.worldSize
       << " (each planned from the model; * the one reported above):\n";
    std::vector<std::vector<std::string>> configRows;
    std::string notes;
    for (const ConfigurationRow &c : r.configurations) {
      configRows.push_back({(c.chosen ? "* " : "  ") + c.name,
                            c.peakBytes ? formatBytes(*c.peakBytes, 2) : "-",
                            c.stepSeconds ? formatSeconds(*c.stepSeconds) : "-", c.flags});
      if (!c.note.empty())
        notes += "  " + c.name + ": " + c.note + "\n";
    }
    printTable(os, {"configuration", "peak per rank", "predicted step", "flags"}, configRows,
               /*namesFirst=*/true);
    os << notes;
  }
  return os.str();
}

} // namespace

std::string renderMemoryReport(const MemoryReport &report, bool json) {
  return json ? renderJson(report) : renderText(report);
}

} // namespace fsdp
