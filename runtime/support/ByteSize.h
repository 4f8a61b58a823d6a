//===- ByteSize.h - human-readable byte counts ----------------------------===//
//
// One way to print a byte count for people, shared by the compiler (memory
// reports, budget errors, traces) and the runtime (the step log, the flight
// recorder, device-memory errors): binary units (KiB, MiB, GiB, TiB), the
// exact count below 1 KiB, and a fixed number of decimals so columns line
// up. The report's tables keep two decimals and the step log one, as they
// always printed; formatBytesWithCount adds the exact count where a
// rounded size would hide the byte that does not fit (--mem-budget errors).
// Header-only: the compiler links no runtime library beyond the plan and io.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_BYTESIZE_H
#define FSDP_RUNTIME_SUPPORT_BYTESIZE_H

#include <cstdint>
#include <cstdio>
#include <string>

namespace fsdp {

/// "1023 B", "1.5 KiB", "80.0 GiB" (decimals = 1); TiB is the largest unit.
inline std::string formatBytes(uint64_t bytes, int decimals = 1) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, value, units[unit]);
  return buf;
}

/// formatBytes with two decimals and, once rounded, the exact count:
/// "1.50 KiB (1536 B)".
inline std::string formatBytesWithCount(uint64_t bytes) {
  std::string text = formatBytes(bytes, 2);
  return bytes < 1024 ? text : text + " (" + std::to_string(bytes) + " B)";
}

} // namespace fsdp

#endif // FSDP_RUNTIME_SUPPORT_BYTESIZE_H
