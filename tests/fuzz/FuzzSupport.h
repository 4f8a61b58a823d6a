//===- FuzzSupport.h - what the libFuzzer targets share --------------------===//
//
// The fuzz targets drive the tools' own entry points, which read files by
// path (and stat, mmap or reopen them as the tools do), so each input is
// written to a file in a directory private to the fuzzing process rather
// than handed over as a buffer: the fuzzed path is the path users hit. A
// multi-file input (a checkpoint directory) is one byte string cut into
// named files; an argv is one cut into arguments. Names the fuzzer makes
// up are kept to [A-Za-z0-9._-] without a leading dot, so a fuzzed input
// never writes outside the private directory.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TESTS_FUZZ_FUZZSUPPORT_H
#define FSDP_TESTS_FUZZ_FUZZSUPPORT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fsdp::fuzz {

/// A directory of this process's own (under $TMPDIR, /dev/shm when there
/// is one), created on first use and emptied of what `clear()` is told.
const std::string &scratchDir();

/// Writes `size` bytes to scratchDir()/`name` (replacing it) and returns
/// the path; aborts on an I/O error (the fuzzing machine's fault, not the
/// input's, and it must not pass for a clean run).
std::string writeScratchFile(const std::string &name, const uint8_t *data, size_t size);
inline std::string writeScratchFile(const std::string &name, const std::string &bytes) {
  return writeScratchFile(name, reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
}

/// Removes everything under scratchDir()/`sub` and recreates it empty.
std::string freshScratchSubdir(const std::string &sub);

/// The input cut at each NUL or newline: an argv without argv[0].
std::vector<std::string> splitArguments(const uint8_t *data, size_t size);

/// The separator of files in a multi-file input (a line of its own).
inline constexpr const char *kFileSeparator = "\n--fsdp-fuzz-file--\n";

/// A multi-file input: parts separated by kFileSeparator, each "NAME\n"
/// followed by its bytes. Parts whose name is not a safe file name are
/// dropped (see above).
std::vector<std::pair<std::string, std::string>> splitFiles(const uint8_t *data, size_t size);

/// The inverse of splitFiles, for the seed corpus.
std::string joinFiles(const std::vector<std::pair<std::string, std::string>> &files);

} // namespace fsdp::fuzz

#endif // FSDP_TESTS_FUZZ_FUZZSUPPORT_H
