//===- MetricsReader.h - reading --metrics files back ---------------------===//
//
// The one reader of the JSON lines TrainLog's metricsLine writes: flat
// objects whose values are numbers, booleans, null or strings (nested
// values are refused: the format has none). fsdp-run --plot reads its own
// lines back through it and fsdp-plot reads files, so both plot the same
// keys the same way. A resumed run writes one file per launch;
// mergeByStep puts them back together in step order.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_METRICSREADER_H
#define FSDP_RUNTIME_TRAIN_METRICSREADER_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::rt {

/// One value of a metrics line.
struct MetricValue {
  enum class Kind { Number, Bool, Null, String };
  Kind kind = Kind::Null;
  double number = 0; // Number; Bool as 0 or 1
  std::string text;  // String
};

/// One step's line: its "step" (an integer >= 1, required) and every key.
struct MetricRecord {
  int64_t step = 0;
  std::map<std::string, MetricValue> values;

  /// The key's value as a number: a number, or a boolean as 0 or 1;
  /// std::nullopt when the key is absent, null or a string.
  std::optional<double> number(const std::string &key) const;
  bool has(const std::string &key) const { return values.count(key) != 0; }
};

/// Parses one line (without its newline). Errors say what is wrong and at
/// which byte.
Status parseMetricsLine(const std::string &line, MetricRecord &out);

/// Every line of the file at `path`, in order (blank lines skipped).
/// Errors name the file and the 1-based line; a file without a single
/// record is an error too.
Status readMetricsFile(const std::string &path, std::vector<MetricRecord> &out);

/// The records of several files in step order, as one run: where files
/// repeat a step (a run resumed from a checkpoint older than its last
/// step), the later file's record is the one kept.
std::vector<MetricRecord> mergeByStep(const std::vector<std::vector<MetricRecord>> &files);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_METRICSREADER_H
