//===- FaultInjection.h - failing chosen file system calls on purpose -----===//
//
// Every file the runtime and its tools write or read back as a checkpoint
// goes through the thin wrappers below (sysio::open, write, fsync, rename,
// pread, mkdir) instead of the system calls, so one switch can make any of
// them fail the way a full disk or a dying one does, and tests can check
// what each failure leaves behind. The switch is the environment variable
//
//   FSDP_FAULT_INJECT=RULE[,RULE...]
//   RULE = OP:N:ERRNO    the Nth call of OP in this process fails with ERRNO
//        | OP:N+:ERRNO   the Nth and every later call fails (a disk that
//                        stays full)
//        | trace         print each counted call to stderr, numbered:
//                        "fsdp-fault: write #3 '/ckpt/.tmp-step-00000004/...'"
//   OP    = open | write | fsync | rename | read | mkdir
//   ERRNO = ENOSPC | EIO | EDQUOT | EROFS | EACCES | EPERM | ENOENT | EMFILE
//         | EFBIG | EINTR
//
// for example FSDP_FAULT_INJECT=write:3:ENOSPC,fsync:1:EIO. Calls are
// counted per operation across the whole process (every in-process rank and
// every file alike, reads and writes of `open`), from 1, with a
// trace run telling which number a call gets. `read` counts each pread of
// a file being read (checkpoints, plans, safetensors, npy, token files);
// `fsync` counts files and directories alike. A value that does not parse
// is never ignored: the tools refuse to start (checkFaultInjectionEnv, exit
// 1), and a program that did not ask has every wrapped call fail with
// EINVAL. Unset, each wrapper costs one test of a cached pointer.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_IO_FAULTINJECTION_H
#define FSDP_RUNTIME_IO_FAULTINJECTION_H

#include "runtime/support/Status.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <sys/types.h>

namespace fsdp::rt {

inline constexpr const char *kFaultInjectEnv = "FSDP_FAULT_INJECT";

enum class FileOp : uint8_t { Open, Write, Fsync, Rename, Read, Mkdir };
inline constexpr int kNumFileOps = 6;
const char *fileOpName(FileOp op);

/// The parsed rules and the per-operation call counts they are matched
/// against (atomic: in-process ranks are threads of one process).
class FaultPlan {
public:
  struct Rule {
    FileOp op;
    uint64_t nth;  // from 1
    bool onward;   // N+: the Nth call and every later one
    int error;     // the errno the call fails with
  };
  /// Parses FSDP_FAULT_INJECT's syntax (above); an error names the rule.
  static Status parse(const std::string &spec, std::unique_ptr<FaultPlan> &out);

  /// Counts one call of `op` on `path` (for the trace; may be null) and
  /// returns the errno it must fail with, or 0 to let it run.
  int onCall(FileOp op, const char *path);

  const std::vector<Rule> &rules() const { return rules_; }
  bool tracing() const { return trace_; }
  /// Calls of `op` counted so far.
  uint64_t calls(FileOp op) const { return counts_[static_cast<int>(op)].load(); }

private:
  std::vector<Rule> rules_;
  bool trace_ = false;
  std::array<std::atomic<uint64_t>, kNumFileOps> counts_{};
};

/// Whether FSDP_FAULT_INJECT parses (ok when unset): what the tools check
/// first, so a mistyped rule stops them instead of testing nothing.
Status checkFaultInjectionEnv();

/// Tests only: counts against `plan` instead of the environment's until
/// called again with nullptr. Not for use while wrapped calls run.
void setFaultPlanForTesting(FaultPlan *plan);

/// The wrapped calls: the system call of the same name, unless a rule
/// fails it (then -1 with errno set, as the system call fails).
namespace sysio {
int open(const char *path, int flags, mode_t mode = 0);
ssize_t write(int fd, const void *data, size_t size, const char *path);
int fsync(int fd, const char *path);
int rename(const char *from, const char *to);
ssize_t pread(int fd, void *data, size_t size, off_t offset, const char *path);
int mkdir(const char *path, mode_t mode);
} // namespace sysio

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_IO_FAULTINJECTION_H
