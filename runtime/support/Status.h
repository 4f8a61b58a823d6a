//===- Status.h - error values of the runtime -----------------------------===//
//
// The runtime never exits or throws inside a library: every fallible call
// returns a Status that carries a message. Where it was first returned
// through FSDP_RETURN_IF_ERROR (the expression, file and line) is for
// developers, not users: as IREE does in release builds, it is added to the
// message only when the environment sets FSDP_DEBUG_STATUS=1, so the tools'
// errors read as messages ("fsdp-run: error: ...: no committed checkpoint")
// and a developer reruns with the variable to see the source location. OK
// statuses carry no allocation.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_STATUS_H
#define FSDP_RUNTIME_SUPPORT_STATUS_H

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

namespace fsdp::rt {

class [[nodiscard]] Status {
public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.message_ = std::make_shared<std::string>(std::move(message));
    return s;
  }

  bool isOk() const { return !message_; }
  explicit operator bool() const { return isOk(); }
  const std::string &message() const {
    static const std::string empty;
    return message_ ? *message_ : empty;
  }

  /// Records the first macro the error passes: with FSDP_DEBUG_STATUS=1
  /// the message gains "(at EXPR, FILE:LINE)"; otherwise it stays as is.
  Status &withOrigin(const char *expr, const char *file, int line) {
    if (message_ && !located_) {
      if (showsOrigins())
        *message_ += std::string(" (at ") + expr + ", " + file + ":" + std::to_string(line) + ")";
      located_ = true;
    }
    return *this;
  }

  /// Whether FSDP_DEBUG_STATUS=1 asks for source locations in messages
  /// (read once: the environment of a run does not change under it).
  static bool showsOrigins() {
    static const bool shows = [] {
      const char *value = std::getenv("FSDP_DEBUG_STATUS");
      return value && std::strcmp(value, "1") == 0;
    }();
    return shows;
  }

private:
  std::shared_ptr<std::string> message_;
  bool located_ = false;
};

/// Printf-free formatting helper: Status::error(cat("bad ", n, " things")).
template <typename... Args> std::string cat(const Args &...args) {
  std::string out;
  ((out += [](const auto &a) {
     if constexpr (std::is_arithmetic_v<std::decay_t<decltype(a)>>)
       return std::to_string(a);
     else
       return std::string(a);
   }(args)),
   ...);
  return out;
}

} // namespace fsdp::rt

/// Returns the error of `expr` from the enclosing function, recording where.
#define FSDP_RETURN_IF_ERROR(expr)                                             \
  do {                                                                         \
    ::fsdp::rt::Status fsdpStatus_ = (expr);                                   \
    if (!fsdpStatus_.isOk())                                                   \
      return fsdpStatus_.withOrigin(#expr, __FILE__, __LINE__);               \
  } while (false)

#endif // FSDP_RUNTIME_SUPPORT_STATUS_H
