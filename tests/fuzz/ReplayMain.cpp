//===- ReplayMain.cpp - runs a fuzz target on saved inputs, without libFuzzer //
//
// The fuzz targets are also built in ordinary (GCC, unsanitized) builds,
// linked with this main instead of libFuzzer's: `fuzz-NAME FILE|DIR...`
// feeds each file (a directory's files in name order) to the target once.
// ctest runs every target on tests/fuzz/regressions/NAME, the inputs that
// once crashed it, so each fixed bug stays fixed in every build, and a
// crasher from a long fuzzing run can be replayed under a debugger.
// Arguments starting with '-' are libFuzzer's options and are ignored, so
// one command line (`fuzz-NAME -runs=0 DIR`) replays in either build.
//
//===----------------------------------------------------------------------===//

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

int main(int argc, char **argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-')
      continue;
    std::filesystem::path arg(argv[i]);
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      for (const auto &entry : std::filesystem::directory_iterator(arg))
        if (entry.is_regular_file())
          inputs.push_back(entry.path());
    } else {
      inputs.push_back(arg);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "%s: no inputs (usage: %s FILE|DIR...)\n", argv[0], argv[0]);
    return 1;
  }
  for (const std::filesystem::path &path : inputs) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.c_str());
      return 1;
    }
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  }
  std::fprintf(stderr, "%s: replayed %zu inputs\n", argv[0], inputs.size());
  return 0;
}
