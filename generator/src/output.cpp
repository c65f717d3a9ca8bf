// Stage 4: rendered files → disk. See output.hpp.
#include "output.hpp"

#include <cerrno>
#include <cstdlib>  // mkdtemp (POSIX)
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>

namespace cuwrap::gen {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& output, const std::string& reason) {
  throw OutputFailure("cannot write output directory " + output.string() + ": " + reason);
}

// Create a fresh directory next to `output` (same file system, so rename is atomic).
fs::path make_staging_dir(const fs::path& output) {
  std::error_code ec;
  const fs::path parent = output.parent_path();
  fs::create_directories(parent, ec);
  if (ec) {
    fail(output, ec.message());
  }
  std::string pattern =
      (parent / ("." + output.filename().string() + ".cuwrap-gen-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    fail(output, std::strerror(errno));
  }
  return pattern;
}

void write_file(const fs::path& output, const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    fail(output, path.parent_path().string() + ": " + ec.message());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  if (!out) {
    fail(output, "writing " + path.string() + " failed");
  }
}

// Whether `path` is a regular file holding exactly `text`.
bool same_content(const fs::path& path, const std::string& text) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) != text.size() || ec) {
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::string existing(text.size(), '\0');
  in.read(existing.data(), static_cast<std::streamsize>(existing.size()));
  return in.gcount() == static_cast<std::streamsize>(text.size()) && existing == text;
}

}  // namespace

void write_output(const fs::path& output_arg, const std::vector<OutputFile>& files) {
  const fs::path output = fs::absolute(output_arg).lexically_normal();
  std::error_code ec;
  if (fs::exists(output, ec) && !fs::is_directory(output, ec)) {
    fail(output, "it exists and is not a directory");
  }
  const fs::path staging = make_staging_dir(output);
  try {
    for (const auto& f : files) {
      write_file(output, staging / f.path, f.text);
    }
    if (!fs::exists(output, ec)) {
      fs::rename(staging, output, ec);  // a new directory appears whole
      if (ec) {
        fail(output, ec.message());
      }
      return;
    }
    for (const auto& f : files) {
      // An unchanged file keeps its timestamp: regenerating identical bindings makes a
      // build rebuild nothing.
      if (same_content(output / f.path, f.text)) {
        continue;
      }
      fs::create_directories((output / f.path).parent_path(), ec);
      if (!ec) {
        fs::rename(staging / f.path, output / f.path, ec);
      }
      if (ec) {
        fail(output, (output / f.path).string() + ": " + ec.message());
      }
    }
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
  fs::remove_all(staging, ec);
}

}  // namespace cuwrap::gen
