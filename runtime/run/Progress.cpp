//===- Progress.cpp - fsdp-run's console report of a training run ---------===//
//
// The bar is drawn with a carriage return and an erase-to-end-of-line
// escape, so a shorter line never leaves stale characters behind; nothing
// else is written to stdout while it is up.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Progress.h"

#include "runtime/support/ByteSize.h"

#include <string>

namespace fsdp::run {

Progress::Progress(FILE *out, bool terminal, int64_t firstStep, int64_t lastStep,
                   int64_t logEvery)
    : out_(out), terminal_(terminal), firstStep_(firstStep), lastStep_(lastStep),
      logEvery_(logEvery) {}

void Progress::update(const rt::StepRecord &record) {
  last_ = record;
  ++steps_;
  seconds_ += record.stepSeconds;
  // A step followed by a validation always prints its line, and on a
  // terminal keeps it above the bar.
  if (record.valLoss) {
    std::fprintf(out_, "%s%s (validation: %.2f ms)\n", terminal_ && drawn_ ? "\r\033[K" : "",
                 rt::consoleLine(record).c_str(), record.evalSeconds * 1e3);
    std::fflush(out_);
    drawn_ = false;
    return;
  }
  if (!terminal_) {
    if (rt::shouldLog(record.step, firstStep_, lastStep_, logEvery_)) {
      std::fprintf(out_, "%s\n", rt::consoleLine(record).c_str());
      std::fflush(out_);
    }
    return;
  }
  auto now = std::chrono::steady_clock::now();
  if (drawn_ && record.step != lastStep_ && now - lastDraw_ < std::chrono::milliseconds(100))
    return;
  lastDraw_ = now;
  drawn_ = true;
  constexpr int kWidth = 24;
  int64_t span = lastStep_ - firstStep_ + 1;
  int filled = span > 0 ? static_cast<int>((record.step - firstStep_ + 1) * kWidth / span) : kWidth;
  std::string bar(filled, '#');
  bar.append(kWidth - filled, '.');
  std::fprintf(out_, "\r\033[K[%s] %s", bar.c_str(), rt::consoleLine(record).c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (terminal_ && drawn_)
    std::fputc('\n', out_);
  if (steps_ == 0)
    return;
  // Throughput over the whole run: total work over total step time.
  bool tokens = last_.tokens > 0;
  double work = static_cast<double>(tokens ? last_.tokens : last_.samples) * steps_;
  std::fprintf(out_, "done: %lld steps in %.3f s, final loss %.6f, %.1f %s, peak %s\n",
               static_cast<long long>(steps_), seconds_, static_cast<double>(last_.loss),
               seconds_ > 0 ? work / seconds_ : 0.0, tokens ? "tok/s" : "samples/s",
               formatBytes(last_.peakBytes).c_str());
  std::fflush(out_);
}

} // namespace fsdp::run
