//===- Watchdog.cpp - fsdp-run's side of the collective watchdog ----------===//
//
// The launcher's SIGTERM is taken by StopSignals.cpp's thread, so the
// report runs as ordinary code: it may lock the recorder and format its
// lines. mpirun leaves a second between SIGTERM and SIGKILL
// (odls_base_sigkill_timeout), plenty for 64 lines.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Watchdog.h"

#include "runtime/comm/StallingCommunicator.h"
#include "runtime/run/Driver.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

// Held from reading the recorder to _Exit: a rank that unregisters its
// recorder before destroying it waits out a report (ASan found the signal
// thread formatting a recorder the returning rank had freed).
std::mutex terminationMutex;
std::atomic<int> terminatedRank{-1};
std::atomic<FlightRecorder *> terminatedRecorder{nullptr};
std::atomic<bool> alreadyPrinted{false};

} // namespace

void reportTerminationAndExit() {
  terminationMutex.lock(); // never released: the process ends here
  if (!alreadyPrinted.load()) {
    const int rank = terminatedRank.load();
    std::string text = cat(programName(), ": error: rank ", rank,
                           ": ended by SIGTERM (mpirun ends the job when a rank aborts, fails "
                           "or dies, or when it is cancelled)\n");
    if (FlightRecorder *recorder = terminatedRecorder.load())
      text += recorder->format(rank);
    writeStderr(text);
  }
  std::_Exit(1);
}

void reportTerminationOf(int rank, FlightRecorder *recorder) {
  std::lock_guard<std::mutex> lock(terminationMutex);
  terminatedRank.store(rank);
  terminatedRecorder.store(recorder);
}

void recorderPrinted() { alreadyPrinted.store(true); }

Status applyStallTestHook(std::vector<std::unique_ptr<Communicator>> &ranks) {
  const char *spec = std::getenv("FSDP_TEST_STALL_COLLECTIVE");
  if (!spec)
    return Status::ok();
  int rank = 0;
  int64_t call = 0;
  FSDP_RETURN_IF_ERROR(comm::parseStallSpec(spec, static_cast<int>(ranks.size()), rank, call));
  comm::stallForTesting(ranks, rank, call);
  return Status::ok();
}

} // namespace fsdp::run
