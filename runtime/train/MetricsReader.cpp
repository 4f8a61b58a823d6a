//===- MetricsReader.cpp - reading --metrics files back -------------------===//
//
// Lines are read through the runtime's strict JSON reader, so a line cut
// short by a crash or edited by hand is reported where it breaks rather
// than plotted half-read.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/MetricsReader.h"

#include "runtime/io/FileIO.h"
#include "runtime/io/JsonReader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace fsdp::rt {

std::optional<double> MetricRecord::number(const std::string &key) const {
  auto it = values.find(key);
  if (it == values.end() ||
      (it->second.kind != MetricValue::Kind::Number && it->second.kind != MetricValue::Kind::Bool))
    return std::nullopt;
  return it->second.number;
}

Status parseMetricsLine(const std::string &line, MetricRecord &out) {
  out = MetricRecord();
  detail::JsonReader json(line, "JSON");
  if (json.peek() != '{')
    return Status::error("not a JSON object");
  FSDP_RETURN_IF_ERROR(json.parseObject("key", [&](const std::string &key) -> Status {
    MetricValue &v = out.values[key];
    char next = json.peek();
    if (next == '"') {
      v.kind = MetricValue::Kind::String;
      return json.parseString(v.text);
    }
    if (json.consumeWord("null")) {
      v.kind = MetricValue::Kind::Null;
      return Status::ok();
    }
    if (json.consumeWord("true") || json.consumeWord("false")) {
      v.kind = MetricValue::Kind::Bool;
      v.number = next == 't';
      return Status::ok();
    }
    if (next == '{' || next == '[')
      return Status::error("'" + key + "': nested values are not metrics");
    v.kind = MetricValue::Kind::Number;
    return detail::withContext("'" + key + "'", json.parseNumber(v.number));
  }));
  FSDP_RETURN_IF_ERROR(json.finish("object"));
  std::optional<double> step = out.number("step");
  if (!out.has("step"))
    return Status::error("no \"step\"");
  if (!step || out.values["step"].kind != MetricValue::Kind::Number || *step < 1 ||
      *step != std::floor(*step) || *step > 9.0e15)
    return Status::error("\"step\" is not an integer >= 1");
  out.step = static_cast<int64_t>(*step);
  return Status::ok();
}

namespace {

/// A metrics line is a few hundred bytes; a longer one is not a metrics
/// file (/dev/zero has no newline at all), and is refused before it can
/// take all memory.
constexpr size_t kMaxLineBytes = 1 << 20;

/// The next line of `in` without its newline; false at the end, or with
/// `tooLong` set when a line exceeds kMaxLineBytes.
bool readLine(std::istream &in, std::string &line, bool &tooLong) {
  line.clear();
  for (int c; (c = in.get()) != std::char_traits<char>::eof();) {
    if (c == '\n')
      return true;
    if (line.size() == kMaxLineBytes) {
      tooLong = true;
      return false;
    }
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

} // namespace

Status readMetricsFile(const std::string &path, std::vector<MetricRecord> &out) {
  out.clear();
  // A pipe is fine (fsdp-plot <(ssh host cat m.jsonl)), so the file is read
  // as a stream, line by bounded line.
  std::ifstream in(path);
  if (!in)
    return Status::error("metrics file '" + path + "': cannot open: " + std::strerror(errno));
  std::string line;
  bool tooLong = false;
  int64_t number = 1;
  for (; readLine(in, line, tooLong); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos)
      continue;
    MetricRecord record;
    if (Status s = parseMetricsLine(line, record); !s)
      return Status::error(cat("metrics file '", path, "' line ", number, ": ", s.message()));
    out.push_back(std::move(record));
  }
  if (tooLong)
    return Status::error(cat("metrics file '", path, "' line ", number, ": longer than ",
                             kMaxLineBytes, " bytes (not a metrics file)"));
  if (in.bad())
    return Status::error("metrics file '" + path + "': cannot read: " + std::strerror(errno));
  if (out.empty())
    return Status::error("metrics file '" + path + "' holds no step (an empty file: did the "
                         "run take a step?)");
  return Status::ok();
}

std::vector<MetricRecord> mergeByStep(const std::vector<std::vector<MetricRecord>> &files) {
  std::map<int64_t, const MetricRecord *> byStep;
  for (const auto &file : files)
    for (const MetricRecord &r : file)
      byStep[r.step] = &r;
  std::vector<MetricRecord> merged;
  merged.reserve(byStep.size());
  for (const auto &[step, record] : byStep)
    merged.push_back(*record);
  return merged;
}

} // namespace fsdp::rt
