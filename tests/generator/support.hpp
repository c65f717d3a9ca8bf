// Helpers shared by the generator tests: scratch directories, running commands, files.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>  // mkdtemp (POSIX)
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cuwrap::gen::testing {

/// A fresh directory under the system temp dir, removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cuwrap-gen-test-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  /// Return the directory.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// What a command printed (stdout and stderr together) and its exit status.
struct CommandResult {
  int exit_code = -1;
  std::string output;
};

/// Run `command` through the shell and capture its output and exit status.
inline CommandResult run_command(const std::string& command) {
  CommandResult result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) {
    return result;
  }
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) {
    result.output.append(buffer, n);
  }
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Whether `text` holds `part`.
inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// Return a file's bytes ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

/// Quote `s` for the shell.
inline std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

/// Fill `dir` with a toolkit include directory whose cuda.h does not parse: the basic
/// fixture's nvrtc.h, nvJitLink.h and cudaTypedefs.h beside fixtures/malformed/cuda.h.
/// Return `dir`.
inline const std::filesystem::path& malformed_toolkit(const std::filesystem::path& dir) {
  const std::filesystem::path fixtures = CUWRAP_FIXTURES_DIR;
  for (const char* header : {"nvrtc.h", "nvJitLink.h", "cudaTypedefs.h"}) {
    std::filesystem::copy_file(fixtures / "basic" / header, dir / header);
  }
  std::filesystem::copy_file(fixtures / "malformed" / "cuda.h", dir / "cuda.h");
  return dir;
}

}  // namespace cuwrap::gen::testing
