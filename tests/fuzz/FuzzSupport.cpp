//===- FuzzSupport.cpp - scratch files and input cutting for fuzz targets -===//
//
// See FuzzSupport.h. Plain POSIX calls: this code runs millions of times
// per target, and it must never be the part that fails.
//
//===----------------------------------------------------------------------===//

#include "tests/fuzz/FuzzSupport.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

namespace fsdp::fuzz {

namespace {

[[noreturn]] void die(const std::string &what) {
  std::fprintf(stderr, "fuzz support: %s: %s\n", what.c_str(), std::strerror(errno));
  std::abort();
}

bool safeName(const std::string &name) {
  if (name.empty() || name.size() > 128 || name[0] == '.')
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

} // namespace

const std::string &scratchDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string base = tmp && *tmp ? tmp : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    std::string pattern = base + "/fsdp-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data()))
      die("mkdtemp " + pattern);
    // Removed at exit, so repeated runs leave nothing behind.
    static std::string removeAtExit = pattern;
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(removeAtExit, ec);
    });
    return pattern;
  }();
  return dir;
}

std::string writeScratchFile(const std::string &name, const uint8_t *data, size_t size) {
  std::string path = scratchDir() + "/" + name;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    die("open " + path);
  while (size > 0) {
    ssize_t put = ::write(fd, data, size);
    if (put < 0 && errno == EINTR)
      continue;
    if (put <= 0)
      die("write " + path);
    data += put;
    size -= static_cast<size_t>(put);
  }
  ::close(fd);
  return path;
}

std::string freshScratchSubdir(const std::string &sub) {
  std::string path = scratchDir() + "/" + sub;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec || !std::filesystem::create_directories(path, ec) || ec)
    die("recreate " + path);
  return path;
}

std::vector<std::string> splitArguments(const uint8_t *data, size_t size) {
  std::vector<std::string> args;
  std::string current;
  for (size_t i = 0; i < size; ++i) {
    char c = static_cast<char>(data[i]);
    if (c == '\0' || c == '\n') {
      args.push_back(std::move(current));
      current.clear();
    } else {
      current.push_back(c);
    }
  }
  if (!current.empty())
    args.push_back(std::move(current));
  return args;
}

std::vector<std::pair<std::string, std::string>> splitFiles(const uint8_t *data, size_t size) {
  std::string_view input(reinterpret_cast<const char *>(data), size);
  const std::string_view separator(kFileSeparator);
  std::vector<std::pair<std::string, std::string>> files;
  while (true) {
    size_t end = input.find(separator);
    std::string_view part = input.substr(0, end);
    size_t newline = part.find('\n');
    if (newline != std::string_view::npos) {
      std::string name(part.substr(0, newline));
      if (safeName(name))
        files.emplace_back(std::move(name), std::string(part.substr(newline + 1)));
    }
    if (end == std::string_view::npos)
      break;
    input.remove_prefix(end + separator.size());
  }
  return files;
}

std::string joinFiles(const std::vector<std::pair<std::string, std::string>> &files) {
  std::string out;
  for (size_t i = 0; i < files.size(); ++i) {
    if (i)
      out += kFileSeparator;
    out += files[i].first + "\n" + files[i].second;
  }
  return out;
}

} // namespace fsdp::fuzz
