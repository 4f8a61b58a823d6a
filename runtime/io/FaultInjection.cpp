//===- FaultInjection.cpp - the FSDP_FAULT_INJECT rules and wrappers ------===//
//
// The environment is read once, on the first wrapped call (or the tools'
// start-up check); after that an unset variable costs each call one load
// of a null pointer. The trace prints with one write per line so the lines
// of in-process ranks do not interleave.
//
//===----------------------------------------------------------------------===//

#include "runtime/io/FaultInjection.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fsdp::rt {
namespace {

constexpr const char *kOpNames[kNumFileOps] = {"open", "write", "fsync", "rename", "read", "mkdir"};

struct ErrnoName {
  const char *name;
  int value;
};
constexpr ErrnoName kErrnoNames[] = {
    {"ENOSPC", ENOSPC}, {"EIO", EIO},       {"EDQUOT", EDQUOT}, {"EROFS", EROFS},
    {"EACCES", EACCES}, {"EPERM", EPERM},   {"ENOENT", ENOENT}, {"EMFILE", EMFILE},
    {"EFBIG", EFBIG},   {"EINTR", EINTR},
};

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t at; (at = text.find(sep, start)) != std::string::npos; start = at + 1)
    parts.push_back(text.substr(start, at - start));
  parts.push_back(text.substr(start));
  return parts;
}

Status parseRule(const std::string &text, FaultPlan::Rule &rule) {
  const std::vector<std::string> fields = split(text, ':');
  if (fields.size() != 3)
    return Status::error("'" + text + "': expected OP:N:ERRNO or trace");
  int op = 0;
  while (op < kNumFileOps && fields[0] != kOpNames[op])
    ++op;
  if (op == kNumFileOps)
    return Status::error("'" + text + "': unknown operation '" + fields[0] +
                         "' (open, write, fsync, rename, read, mkdir)");
  rule.op = static_cast<FileOp>(op);
  std::string count = fields[1];
  rule.onward = !count.empty() && count.back() == '+';
  if (rule.onward)
    count.pop_back();
  rule.nth = 0;
  for (char c : count) {
    if (c < '0' || c > '9' || rule.nth > 1000000000000000000ull)
      return Status::error("'" + text + "': the call number must be an integer from 1 (N or N+)");
    rule.nth = rule.nth * 10 + static_cast<uint64_t>(c - '0');
  }
  if (rule.nth == 0)
    return Status::error("'" + text + "': the call number must be an integer from 1 (N or N+)");
  for (const ErrnoName &e : kErrnoNames)
    if (fields[2] == e.name) {
      rule.error = e.value;
      return Status::ok();
    }
  std::string known;
  for (const ErrnoName &e : kErrnoNames)
    known += std::string(known.empty() ? "" : ", ") + e.name;
  return Status::error("'" + text + "': unknown errno '" + fields[2] + "' (" + known + ")");
}

/// The environment's plan, parsed on first use.
struct EnvPlan {
  std::unique_ptr<FaultPlan> plan;
  Status status = Status::ok();
};

const EnvPlan &envPlan() {
  static const EnvPlan parsed = [] {
    EnvPlan p;
    const char *spec = std::getenv(kFaultInjectEnv);
    if (spec && *spec) {
      p.status = FaultPlan::parse(spec, p.plan);
      if (!p.status)
        p.status = Status::error(std::string(kFaultInjectEnv) + "=" + spec + ": " +
                                 p.status.message());
    }
    return p;
  }();
  return parsed;
}

std::atomic<FaultPlan *> testPlan{nullptr};

/// The errno `op` on `path` must fail with, or 0: the one check an
/// unset variable costs.
int injected(FileOp op, const char *path) {
  if (FaultPlan *plan = testPlan.load(std::memory_order_relaxed))
    return plan->onCall(op, path);
  const EnvPlan &env = envPlan();
  if (env.plan)
    return env.plan->onCall(op, path);
  return env.status ? 0 : EINVAL; // a malformed rule must not test nothing
}

template <typename Call> auto unlessInjected(FileOp op, const char *path, Call call) {
  if (int error = injected(op, path)) {
    errno = error;
    return decltype(call())(-1);
  }
  return call();
}

} // namespace

const char *fileOpName(FileOp op) { return kOpNames[static_cast<int>(op)]; }

Status FaultPlan::parse(const std::string &spec, std::unique_ptr<FaultPlan> &out) {
  auto plan = std::make_unique<FaultPlan>();
  for (const std::string &text : split(spec, ',')) {
    if (text == "trace") {
      plan->trace_ = true;
      continue;
    }
    Rule rule{};
    if (Status s = parseRule(text, rule); !s) // a user's setting: no source location
      return s;
    plan->rules_.push_back(rule);
  }
  out = std::move(plan);
  return Status::ok();
}

int FaultPlan::onCall(FileOp op, const char *path) {
  const uint64_t n = counts_[static_cast<int>(op)].fetch_add(1) + 1;
  int error = 0;
  for (const Rule &rule : rules_)
    if (rule.op == op && (n == rule.nth || (rule.onward && n > rule.nth))) {
      error = rule.error;
      break;
    }
  if (trace_) {
    std::string line = std::string("fsdp-fault: ") + fileOpName(op) + " #" + std::to_string(n) +
                       " '" + (path ? path : "?") + "'" +
                       (error ? std::string(" -> ") + std::strerror(error) : "") + "\n";
    (void)!::write(STDERR_FILENO, line.data(), line.size());
  }
  return error;
}

Status checkFaultInjectionEnv() { return envPlan().status; }

void setFaultPlanForTesting(FaultPlan *plan) { testPlan.store(plan); }

namespace sysio {

int open(const char *path, int flags, mode_t mode) {
  return unlessInjected(FileOp::Open, path, [&] { return ::open(path, flags, mode); });
}
ssize_t write(int fd, const void *data, size_t size, const char *path) {
  return unlessInjected(FileOp::Write, path, [&] { return ::write(fd, data, size); });
}
int fsync(int fd, const char *path) {
  return unlessInjected(FileOp::Fsync, path, [&] { return ::fsync(fd); });
}
int rename(const char *from, const char *to) {
  return unlessInjected(FileOp::Rename, from, [&] { return ::rename(from, to); });
}
ssize_t pread(int fd, void *data, size_t size, off_t offset, const char *path) {
  return unlessInjected(FileOp::Read, path, [&] { return ::pread(fd, data, size, offset); });
}
int mkdir(const char *path, mode_t mode) {
  return unlessInjected(FileOp::Mkdir, path, [&] { return ::mkdir(path, mode); });
}

} // namespace sysio
} // namespace fsdp::rt
