// Conformance test support: cuda.core's tmp_path, a fresh directory for one test's files,
// for test_program.cpp and test_module.cpp.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <ios>
#include <span>
#include <string>
#include <system_error>

namespace cuwrap::testing {

/// A fresh directory for one test's files, removed at the end; named by the process and
/// `name` so that parallel runs never share it.
class TempDir {
 public:
  /// Create the directory (emptied first, were it left over).
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("cuwrap-conformance-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// Remove the directory and all in it (never throws).
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  /// Return the directory's path.
  const std::filesystem::path& path() const { return path_; }
  /// Write `bytes` to the file `name` in the directory and return its path.
  std::filesystem::path write(const std::string& name, std::span<const char> bytes) const {
    std::filesystem::path file = path_ / name;
    std::ofstream(file, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return file;
  }

 private:
  std::filesystem::path path_;
};

}  // namespace cuwrap::testing
