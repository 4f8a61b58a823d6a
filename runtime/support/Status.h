//===- Status.h - error values of the runtime -----------------------------===//
//
// The runtime never exits or throws inside a library: every fallible call
// returns a Status that carries a message, plus the expression, file and
// line where it was first returned through FSDP_RETURN_IF_ERROR, so a user
// sees both what went wrong and where. OK statuses carry no allocation.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_STATUS_H
#define FSDP_RUNTIME_STATUS_H

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

  /// Adds "(at EXPR, FILE:LINE)" the first time the error passes a macro.
  Status &withOrigin(const char *expr, const char *file, int line) {
    if (message_ && !located_) {
      *message_ += std::string(" (at ") + expr + ", " + file + ":" + std::to_string(line) + ")";
      located_ = true;
    }
    return *this;
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

#endif // FSDP_RUNTIME_STATUS_H
