//===- StopSignals.cpp - SIGTERM and SIGINT: stop after the step ---------===//
//
// The handler forwards (signal, sender pid) through a pipe; the thread
// classifies: the MPI launcher's SIGTERM -> the watchdog's report, exit 1;
// the first stop signal -> the flag the training loop agrees on; a second
// -> exit 130 at once. The sender is read from /proc/PID/comm, which names
// Open MPI's launcher processes.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/StopSignals.h"

#include "runtime/run/Driver.h"
#include "runtime/run/Watchdog.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace fsdp::run {

namespace {

struct SignalEvent {
  int signal;
  pid_t sender;
};

int pipeWrite = -1;
std::atomic<int> firstStop{0};

void onSignal(int signal, siginfo_t *info, void *) {
  const int saved = errno;
  SignalEvent event{signal, info ? info->si_pid : 0};
  ssize_t written = ::write(pipeWrite, &event, sizeof event);
  (void)written; // a full pipe means signals are already pending
  errno = saved;
}

/// Whether `pid` is one of Open MPI's launcher processes.
bool isMpiLauncher(pid_t pid) {
  if (pid <= 0)
    return false;
  std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name == "mpirun" || name == "mpiexec" || name == "orterun" || name == "orted" ||
         name == "prterun" || name == "prted" || name == "prte";
}

void takeEvents(int pipeRead, SignalUse use) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  // This thread is always there to run the handler.
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  for (;;) {
    SignalEvent event;
    const ssize_t n = ::read(pipeRead, &event, sizeof event);
    if (n < 0 && errno == EINTR)
      continue;
    if (n != static_cast<ssize_t>(sizeof event))
      return;
    if (use.launched && event.signal == SIGTERM && (!use.stops || isMpiLauncher(event.sender)))
      reportTerminationAndExit(); // Watchdog.h
    int none = 0;
    if (firstStop.compare_exchange_strong(none, event.signal)) {
      // MPI ranks each have a stderr; the stop line (rank 0's) says it all.
      if (!use.launched)
        writeStderr(programName() + ": " + signalName(event.signal) +
                    ": stopping after the current step (a second signal exits at once)\n");
      continue;
    }
    writeStderr(programName() + ": " + signalName(event.signal) +
                " again: exiting at once (exit code 130); a checkpoint being written is left " +
                "uncommitted, earlier ones are intact\n");
    std::_Exit(130);
  }
}

} // namespace

void takeSignals(SignalUse use) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return;
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  pipeWrite = fds[1];
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  if (use.stops)
    sigaddset(&set, SIGINT);
  struct sigaction action = {};
  action.sa_sigaction = onSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&action.sa_mask);
  for (int signal : {SIGTERM, SIGINT})
    if (sigismember(&set, signal))
      sigaction(signal, &action, nullptr);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(takeEvents, fds[0], use).detach();
}

int stopSignal() { return firstStop.load(); }

const char *signalName(int signal) {
  return signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "SIGINT" : "a signal";
}

} // namespace fsdp::run
