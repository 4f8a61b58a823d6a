//===- StepApi.cpp - the C entry points of runtime/embed/fsdp_step.h ------===//
//
// Thin C wrappers over fsdp-run's driver (runtime/run, FSDPRunDriver):
// fsdp_step_main is runDriver, and a session is a StepSession. Nothing
// crosses the C boundary but return codes: a Status becomes 1 and the
// thread's last error, an exception (out of memory, say) likewise. The
// file sits beside its header but is a library of its own (FSDPStepApi)
// above the driver: FSDPEmbed, which loads embedded steps, is below it.
//
//===----------------------------------------------------------------------===//

#include "runtime/embed/fsdp_step.h"

#include "runtime/run/Driver.h"
#include "runtime/run/StepSession.h"

#include <exception>
#include <memory>
#include <string>

struct fsdp_step {
  std::unique_ptr<fsdp::run::StepSession> session;
};

namespace {

thread_local std::string lastError;

/// Runs `body` (returning a Status) for a C entry point: 0, or 1 with the
/// reason kept for fsdp_step_last_error.
template <typename Body> int guarded(const char *entry, Body &&body) {
  try {
    fsdp::rt::Status s = body();
    if (s) {
      lastError.clear();
      return 0;
    }
    lastError = s.message();
  } catch (const std::exception &e) {
    lastError = std::string(entry) + ": " + e.what();
  } catch (...) {
    lastError = std::string(entry) + ": unknown exception";
  }
  return 1;
}

} // namespace

extern "C" {

int fsdp_step_main(int argc, char **argv, const FsdpEmbeddedStep *step) {
  if (!step) {
    lastError = "fsdp_step_main: no step given";
    return fsdp::run::fail(lastError);
  }
  try {
    return fsdp::run::runDriver(argc, argv, step);
  } catch (const std::exception &e) {
    return fsdp::run::fail(std::string("unexpected: ") + e.what());
  }
}

int fsdp_step_init(const FsdpEmbeddedStep *step, int argc, char **argv, fsdp_step_t **out) {
  if (out)
    *out = nullptr;
  return guarded("fsdp_step_init", [&]() -> fsdp::rt::Status {
    if (!step || !out)
      return fsdp::rt::Status::error("fsdp_step_init: step and out must not be null");
    auto handle = std::make_unique<fsdp_step>();
    FSDP_RUN_RETURN_IF_FAILED(fsdp::run::StepSession::create(*step, argc, argv, handle->session));
    *out = handle.release();
    return fsdp::rt::Status::ok();
  });
}

int fsdp_step_run(fsdp_step_t *session, int64_t steps, double *last_loss) {
  return guarded("fsdp_step_run", [&]() -> fsdp::rt::Status {
    if (!session)
      return fsdp::rt::Status::error("fsdp_step_run: no session");
    double loss = 0;
    FSDP_RUN_RETURN_IF_FAILED(session->session->run(steps, loss));
    if (last_loss)
      *last_loss = loss;
    return fsdp::rt::Status::ok();
  });
}

int64_t fsdp_step_current(const fsdp_step_t *session) {
  return session ? session->session->step() : -1;
}

int fsdp_step_save(fsdp_step_t *session, const char *dir) {
  return guarded("fsdp_step_save", [&]() -> fsdp::rt::Status {
    if (!session || !dir)
      return fsdp::rt::Status::error("fsdp_step_save: session and dir must not be null");
    return session->session->save(dir);
  });
}

int fsdp_step_finalize(fsdp_step_t *session) {
  std::unique_ptr<fsdp_step> owned(session);
  if (!owned)
    return 0;
  return guarded("fsdp_step_finalize", [&] { return owned->session->finish(); });
}

const char *fsdp_step_last_error(void) { return lastError.c_str(); }

} // extern "C"
